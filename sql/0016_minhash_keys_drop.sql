-- simhash-pg revision 0016, undone: no min-hash look-up. The forms of
-- revision 0015 search on their own again (their definitions as 0015 made
-- them), and the forms with min-hash keys go. Stored rows keep their keys in
-- sentence_hashes, where they are looked up like sentence hashes, with no cap.
-- Run by migrations/versions/0016_minhash_keys.py downgrade().

-- A batch's candidates, with sentence hashes: hashes[q] is query q's row of
-- hashes, NULL-padded (NULL: no query has any). The batch form of revision
-- 0009 plus simhash_sentence_matches per query.
CREATE OR REPLACE FUNCTION simhash_near_probes_candidates(
    fps bigint[], probes smallint[], caps integer[], sigs bigint[], hashes bigint[]
)
RETURNS TABLE (query integer, id bigint, key text, distance integer, meta jsonb,
               verify_text text, sentence_sig bigint, sentence_hashes bigint[],
               text_lost boolean)
LANGUAGE plpgsql STABLE PARALLEL SAFE ROWS 100
SET plan_cache_mode = force_generic_plan
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
        UNION
        SELECT q.o::integer, d.id, d.key, simhash_hamming(d.fingerprint, fps[q.o]), d.meta,
               d.verify_text, d.sentence_sig, d.sentence_hashes,
               coalesce(d.verify_text IS NULL AND d.id <= v_lost_max
                        AND d.created_at <= v_lost_until, false)
        FROM generate_subscripts(fps, 1) AS q (o)
        CROSS JOIN LATERAL simhash_sentence_matches(hashes[q.o:q.o][:]) AS d
        WHERE hashes IS NOT NULL
    )
    SELECT * FROM near
    UNION ALL
    SELECT k.* FROM keyed k
    WHERE NOT EXISTS (SELECT 1 FROM near n WHERE n.query = k.query AND n.id = k.id)
    ORDER BY 1, 4, 2;
END
$$;

-- One query's candidates, with sentence hashes: the rows within cap that
-- share a probed value in some block, the rows whose sentence_sig equals sig
-- (NULL: none) and the rows simhash_sentence_matches(hashes) finds, each
-- once, with what the store's verification reads; nearest first, ties by id.
CREATE OR REPLACE FUNCTION simhash_near_probes_candidates(
    fp bigint, p0 smallint[], p1 smallint[], p2 smallint[], p3 smallint[], cap integer,
    sig bigint, hashes bigint[]
)
RETURNS TABLE (id bigint, key text, distance integer, meta jsonb, verify_text text,
               sentence_sig bigint, sentence_hashes bigint[], text_lost boolean)
LANGUAGE plpgsql STABLE PARALLEL SAFE ROWS 10
SET plan_cache_mode = force_generic_plan
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
        UNION
        SELECT d.id, d.key, d.fingerprint, d.meta, d.verify_text, d.sentence_sig,
               d.sentence_hashes, d.created_at
        FROM simhash_documents d WHERE d.sentence_sig = sig
        UNION
        SELECT s.id, s.key, s.fingerprint, s.meta, s.verify_text, s.sentence_sig,
               s.sentence_hashes, s.created_at
        FROM simhash_sentence_matches(hashes) AS s
    )
    -- text_lost as in the batch form: stored before revision 0003's columns
    SELECT f.id, f.key, simhash_hamming(f.fingerprint, fp), f.meta, f.verify_text,
           f.sentence_sig, f.sentence_hashes,
           coalesce(f.verify_text IS NULL AND f.id <= (u.value->>'max_id')::bigint
                    AND f.created_at <= (u.value->>'stored_until')::timestamptz, false)
    FROM found f LEFT JOIN simhash_meta u ON u.name = 'unverified_rows'
    ORDER BY 3, 1;
END
$$;

DROP FUNCTION simhash_near_probes_candidates(
    bigint[], smallint[], integer[], bigint[], bigint[], bigint[], integer);
DROP FUNCTION simhash_near_probes_candidates(
    bigint, smallint[], smallint[], smallint[], smallint[], integer, bigint, bigint[], bigint[],
    integer);
