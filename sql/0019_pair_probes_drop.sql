-- simhash-pg revision 0019, undone: every text query searches by single
-- blocks again (revision 0018's definitions), and the pair forms go. Nothing
-- stored changes. Run by migrations/versions/0019_pair_probes.py downgrade().

-- The matching fingerprints of a batch, (query, fingerprint), without
-- checks: the one place the batch forms below probe. LANGUAGE sql, so that
-- it is inlined into their queries.
CREATE OR REPLACE FUNCTION simhash_probe_matches(fps bigint[], probes smallint[], caps integer[])
RETURNS TABLE (query integer, fingerprint bigint)
LANGUAGE sql STABLE PARALLEL SAFE ROWS 100 AS $$
    WITH q AS MATERIALIZED (
        SELECT x.ord::integer AS ord, x.fp, caps[x.ord] AS cap,
               probes[x.ord:x.ord][1:1] AS p0, probes[x.ord:x.ord][2:2] AS p1,
               probes[x.ord:x.ord][3:3] AS p2, probes[x.ord:x.ord][4:4] AS p3
        FROM unnest(fps) WITH ORDINALITY AS x (fp, ord)
    )
    SELECT q.ord, c.fingerprint
    FROM q JOIN simhash_documents c
      ON c.b0 = ANY (q.p0) AND simhash_hamming(c.fingerprint, q.fp) <= q.cap
    UNION
    SELECT q.ord, c.fingerprint
    FROM q JOIN simhash_documents c
      ON c.b1 = ANY (q.p1) AND simhash_hamming(c.fingerprint, q.fp) <= q.cap
    UNION
    SELECT q.ord, c.fingerprint
    FROM q JOIN simhash_documents c
      ON c.b2 = ANY (q.p2) AND simhash_hamming(c.fingerprint, q.fp) <= q.cap
    UNION
    SELECT q.ord, c.fingerprint
    FROM q JOIN simhash_documents c
      ON c.b3 = ANY (q.p3) AND simhash_hamming(c.fingerprint, q.fp) <= q.cap
$$;

CREATE OR REPLACE FUNCTION simhash_near_probes_candidates(
    fps bigint[], probes smallint[], caps integer[], sigs bigint[], hashes bigint[],
    minhash bigint[], minhash_cap integer
)
RETURNS TABLE (query integer, id bigint, key text, distance integer, meta jsonb,
               verify_text text, sentence_sig bigint, sentence_hashes bigint[],
               text_lost boolean)
LANGUAGE plpgsql STABLE PARALLEL SAFE ROWS 100
SET plan_cache_mode = force_generic_plan
-- no JIT: its estimates (a generic plan's, over every key partition) pass
-- jit_above_cost, and compiling cost 1.7 s a call on PostgreSQL 15 with LLVM
-- for a look-up that runs in a millisecond (revision 0018)
SET jit = off
AS $$
#variable_conflict use_column
DECLARE
    v_lost_max bigint;
    v_lost_until timestamptz;
BEGIN
    IF simhash_check_probes(fps, probes, caps, sigs) = 0 THEN
        RETURN;
    END IF;
    IF hashes IS NOT NULL AND (array_ndims(hashes) <> 2
                               OR array_length(hashes, 1) <> cardinality(fps)
                               OR array_lower(hashes, 1) <> 1) THEN
        RAISE EXCEPTION 'simhash: hashes must be a bigint[] [query][hash] with one row per '
            'fingerprint (% of them), got %', cardinality(fps), array_dims(hashes)
            USING ERRCODE = '22023', HINT = 'pad short rows with NULL';
    END IF;
    IF minhash IS NOT NULL AND (array_ndims(minhash) <> 2
                                OR array_length(minhash, 1) <> cardinality(fps)
                                OR array_lower(minhash, 1) <> 1) THEN
        RAISE EXCEPTION 'simhash: minhash must be a bigint[] [query][key] with one row per '
            'fingerprint (% of them), got %', cardinality(fps), array_dims(minhash)
            USING ERRCODE = '22023', HINT = 'pad short rows with NULL';
    END IF;
    IF minhash IS NOT NULL AND (minhash_cap IS NULL OR minhash_cap < 0 OR minhash_cap > 64) THEN
        RAISE EXCEPTION 'simhash: minhash_cap must be between 0 and 64, got %',
            coalesce(minhash_cap::text, 'NULL') USING ERRCODE = '22023';
    END IF;
    SELECT (u.value->>'max_id')::bigint, (u.value->>'stored_until')::timestamptz
    INTO v_lost_max, v_lost_until
    FROM simhash_meta u WHERE u.name = 'unverified_rows';
    RETURN QUERY
    WITH near AS MATERIALIZED (
        SELECT m.query, d.id, d.key, simhash_hamming(d.fingerprint, fps[m.query]) AS distance,
               d.meta, d.verify_text, d.sentence_sig, d.sentence_hashes,
               coalesce(d.verify_text IS NULL AND d.id <= v_lost_max
                        AND d.created_at <= v_lost_until, false) AS text_lost
        FROM simhash_probe_matches(fps, probes, caps) AS m
        JOIN simhash_documents d
          ON d.b0 = simhash_block(m.fingerprint, 0) AND d.b1 = simhash_block(m.fingerprint, 1)
         AND d.fingerprint = m.fingerprint
    ), keyed AS MATERIALIZED (
        SELECT s.o::integer AS query, d.id, d.key,
               simhash_hamming(d.fingerprint, s.fp) AS distance, d.meta, d.verify_text,
               d.sentence_sig, d.sentence_hashes,
               coalesce(d.verify_text IS NULL AND d.id <= v_lost_max
                        AND d.created_at <= v_lost_until, false) AS text_lost
        FROM unnest(fps, sigs) WITH ORDINALITY AS s (fp, sig, o)
        JOIN simhash_documents d ON d.sentence_sig = s.sig
        WHERE sigs IS NOT NULL
        UNION ALL
        SELECT q.o::integer, d.id, d.key, simhash_hamming(d.fingerprint, fps[q.o]), d.meta,
               d.verify_text, d.sentence_sig, d.sentence_hashes,
               coalesce(d.verify_text IS NULL AND d.id <= v_lost_max
                        AND d.created_at <= v_lost_until, false)
        FROM generate_subscripts(fps, 1) AS q (o)
        CROSS JOIN LATERAL simhash_sentence_matches(hashes[q.o:q.o][:], fps[q.o]) AS d
        WHERE hashes IS NOT NULL
        UNION ALL
        SELECT q.o::integer, d.id, d.key, simhash_hamming(d.fingerprint, fps[q.o]), d.meta,
               d.verify_text, d.sentence_sig, d.sentence_hashes,
               coalesce(d.verify_text IS NULL AND d.id <= v_lost_max
                        AND d.created_at <= v_lost_until, false)
        FROM generate_subscripts(fps, 1) AS q (o)
        CROSS JOIN LATERAL simhash_sentence_matches(minhash[q.o:q.o][:], fps[q.o]) AS d
        WHERE minhash IS NOT NULL
          AND simhash_hamming(d.fingerprint, fps[q.o]) <= minhash_cap
    )
    SELECT * FROM near
    UNION ALL
    -- a row several keys find, once: by (query, id) alone, since a UNION's
    -- comparison of whole rows compared their texts (~10 us a pair)
    SELECT k.* FROM (SELECT DISTINCT ON (x.query, x.id) x.* FROM keyed x
                     ORDER BY x.query, x.id) AS k
    WHERE NOT EXISTS (SELECT 1 FROM near n WHERE n.query = k.query AND n.id = k.id)
    ORDER BY 1, 4, 2;
END
$$;

CREATE OR REPLACE FUNCTION simhash_near_probes_candidates(
    fp bigint, p0 smallint[], p1 smallint[], p2 smallint[], p3 smallint[], cap integer,
    sig bigint, hashes bigint[], minhash bigint[], minhash_cap integer
)
RETURNS TABLE (id bigint, key text, distance integer, meta jsonb, verify_text text,
               sentence_sig bigint, sentence_hashes bigint[], text_lost boolean)
LANGUAGE plpgsql STABLE PARALLEL SAFE ROWS 10
SET plan_cache_mode = force_generic_plan
-- no JIT: its estimates (a generic plan's, over every key partition) pass
-- jit_above_cost, and compiling cost 1.7 s a call on PostgreSQL 15 with LLVM
-- for a look-up that runs in a millisecond (revision 0018)
SET jit = off
AS $$
#variable_conflict use_column
BEGIN
    IF fp IS NULL THEN
        RAISE EXCEPTION 'simhash: the fingerprint must not be NULL' USING ERRCODE = '22004';
    END IF;
    IF p0 IS NULL OR p1 IS NULL OR p2 IS NULL OR p3 IS NULL THEN
        RAISE EXCEPTION 'simhash: the probe values of block % must not be NULL',
            CASE WHEN p0 IS NULL THEN 0 WHEN p1 IS NULL THEN 1 WHEN p2 IS NULL THEN 2 ELSE 3 END
            USING ERRCODE = '22004', HINT = 'an empty array probes no value of its block';
    END IF;
    IF cap IS NULL OR cap < 0 OR cap > 64 THEN
        RAISE EXCEPTION 'simhash: cap must be between 0 and 64 (a 64-bit fingerprint), got %',
            coalesce(cap::text, 'NULL') USING ERRCODE = '22023';
    END IF;
    IF minhash IS NOT NULL AND (minhash_cap IS NULL OR minhash_cap < 0 OR minhash_cap > 64) THEN
        RAISE EXCEPTION 'simhash: minhash_cap must be between 0 and 64, got %',
            coalesce(minhash_cap::text, 'NULL') USING ERRCODE = '22023';
    END IF;
    RETURN QUERY
    WITH m AS (
        SELECT c.fingerprint FROM simhash_documents c
        WHERE c.b0 = ANY (p0) AND simhash_hamming(c.fingerprint, fp) <= cap
        UNION
        SELECT c.fingerprint FROM simhash_documents c
        WHERE c.b1 = ANY (p1) AND simhash_hamming(c.fingerprint, fp) <= cap
        UNION
        SELECT c.fingerprint FROM simhash_documents c
        WHERE c.b2 = ANY (p2) AND simhash_hamming(c.fingerprint, fp) <= cap
        UNION
        SELECT c.fingerprint FROM simhash_documents c
        WHERE c.b3 = ANY (p3) AND simhash_hamming(c.fingerprint, fp) <= cap
    ), found AS (
        SELECT d.id, d.key, d.fingerprint, d.meta, d.verify_text, d.sentence_sig,
               d.sentence_hashes, d.created_at
        FROM m JOIN simhash_documents d
          ON d.b0 = simhash_block(m.fingerprint, 0) AND d.b1 = simhash_block(m.fingerprint, 1)
         AND d.fingerprint = m.fingerprint
        UNION ALL
        SELECT d.id, d.key, d.fingerprint, d.meta, d.verify_text, d.sentence_sig,
               d.sentence_hashes, d.created_at
        FROM simhash_documents d WHERE d.sentence_sig = sig
        UNION ALL
        SELECT s.id, s.key, s.fingerprint, s.meta, s.verify_text, s.sentence_sig,
               s.sentence_hashes, s.created_at
        FROM simhash_sentence_matches(hashes, fp) AS s
        UNION ALL
        SELECT s.id, s.key, s.fingerprint, s.meta, s.verify_text, s.sentence_sig,
               s.sentence_hashes, s.created_at
        FROM simhash_sentence_matches(minhash, fp) AS s
        WHERE simhash_hamming(s.fingerprint, fp) <= minhash_cap
    )
    -- text_lost as in the batch form: stored before revision 0003's columns
    SELECT f.id, f.key, simhash_hamming(f.fingerprint, fp), f.meta, f.verify_text,
           f.sentence_sig, f.sentence_hashes,
           coalesce(f.verify_text IS NULL AND f.id <= (u.value->>'max_id')::bigint
                    AND f.created_at <= (u.value->>'stored_until')::timestamptz, false)
    -- a row several keys find, once: by id alone (see the batch form)
    FROM (SELECT DISTINCT ON (a.id) a.* FROM found a ORDER BY a.id) AS f
    LEFT JOIN simhash_meta u ON u.name = 'unverified_rows'
    ORDER BY 3, 1;
END
$$;

DROP FUNCTION simhash_near_probes_candidates(bigint, smallint[], smallint[], smallint[],
                                             smallint[], integer, bigint, bigint[], bigint[],
                                             integer, boolean);
DROP FUNCTION simhash_near_probes_candidates(bigint[], smallint[], integer[], bigint[],
                                             bigint[], bigint[], integer, boolean[]);
DROP FUNCTION simhash_probe_matches(bigint[], smallint[], integer[], boolean[]);
DROP FUNCTION simhash_block_near1(bigint, integer);
