-- simhash-pg revision 0015: each of a text's longest sentences as a key of
-- its own (issue 14). Applied by migrations/versions/0015_sentence_hashes.py;
-- undone by sql/0015_sentence_hashes_drop.sql.
--
-- The sentence signature (revision 0003) hashes a text's three longest
-- sentences together, so a reprint that rewrote one of them no longer
-- matches. Measured on ../shared/eval's long pairs (both directions), the
-- default's candidates missed 136 of 3,760 duplicates; matching the three
-- sentences one by one (any in common) leaves 34. A row keeps the signed
-- 64-bit hashes of its longest sentences of 30 characters or more
-- (simhash_pg/text/signatures.py) in sentence_hashes, and a text query also
-- finds the rows that hold one of its hashes.

ALTER TABLE simhash_documents ADD COLUMN sentence_hashes bigint[] NULL;
-- fastupdate off: with it, every search also reads the pending list (up to
-- gin_pending_list_limit, 4 MB) that inserts fill between vacuums; measured
-- on a freshly filled store, 51 buffer reads a hash instead of about 3.
CREATE INDEX simhash_documents_sentence_hashes_idx ON simhash_documents
    USING gin (sentence_hashes) WITH (fastupdate = off) WHERE sentence_hashes IS NOT NULL;

-- The rows that hold one of hashes (NULL entries ignored), once per hash
-- they hold. A hash held by more than 16 rows is boilerplate (a licence
-- line, a footer repeated on every page of a site) and finds nothing: each
-- hash's scan stops at 17 rows, so a query's hashes cost at most 51 row
-- visits and 48 candidates to verify (each a long text to read and compare).
-- simhash_pg.text.signatures.SHARED_SENTENCE_CAP is the same number.
-- LANGUAGE sql: inlined, so a caller's LATERAL call becomes one index scan
-- per hash.
CREATE OR REPLACE FUNCTION simhash_sentence_matches(hashes bigint[])
RETURNS TABLE (id bigint, key text, fingerprint bigint, meta jsonb, verify_text text,
               sentence_sig bigint, sentence_hashes bigint[], created_at timestamptz)
LANGUAGE sql STABLE PARALLEL SAFE ROWS 3 AS $$
    SELECT m.id, m.key, m.fingerprint, m.meta, m.verify_text, m.sentence_sig,
           m.sentence_hashes, m.created_at
    FROM unnest(hashes) AS h
    CROSS JOIN LATERAL (
        SELECT c.*, count(*) OVER () AS n
        FROM (SELECT d.id, d.key, d.fingerprint, d.meta, d.verify_text, d.sentence_sig,
                     d.sentence_hashes, d.created_at
              FROM simhash_documents d
              WHERE d.sentence_hashes @> ARRAY[h]
              LIMIT 17) AS c
    ) AS m
    WHERE h IS NOT NULL AND m.n <= 16
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

-- The single form without hashes (revision 0014's arguments and columns):
-- the form above with none, so that the search has one definition.
CREATE OR REPLACE FUNCTION simhash_near_probes_candidates(
    fp bigint, p0 smallint[], p1 smallint[], p2 smallint[], p3 smallint[], cap integer,
    sig bigint DEFAULT NULL
)
RETURNS TABLE (id bigint, key text, distance integer, meta jsonb, verify_text text,
               sentence_sig bigint, text_lost boolean)
LANGUAGE sql STABLE PARALLEL SAFE ROWS 10 AS $$
    SELECT c.id, c.key, c.distance, c.meta, c.verify_text, c.sentence_sig, c.text_lost
    FROM simhash_near_probes_candidates(fp, p0, p1, p2, p3, cap, sig, NULL::bigint[]) AS c
    ORDER BY 3, 1
$$;

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

-- The batch form without hashes (revision 0009's arguments and columns).
CREATE OR REPLACE FUNCTION simhash_near_probes_candidates(
    fps bigint[], probes smallint[], caps integer[], sigs bigint[] DEFAULT NULL
)
RETURNS TABLE (query integer, id bigint, key text, distance integer, meta jsonb,
               verify_text text, sentence_sig bigint, text_lost boolean)
LANGUAGE sql STABLE PARALLEL SAFE ROWS 100 AS $$
    SELECT c.query, c.id, c.key, c.distance, c.meta, c.verify_text, c.sentence_sig,
           c.text_lost
    FROM simhash_near_probes_candidates(fps, probes, caps, sigs, NULL::bigint[]) AS c
    ORDER BY 1, 4, 2
$$;

GRANT EXECUTE ON FUNCTION
    simhash_sentence_matches(bigint[]),
    simhash_near_probes_candidates(bigint[], smallint[], integer[], bigint[], bigint[]),
    simhash_near_probes_candidates(bigint, smallint[], smallint[], smallint[], smallint[],
                                   integer, bigint, bigint[])
TO simhash_reader;
