-- simhash-pg revision 0014: one text query's candidates in a lean call (issue 14).
-- Applied by migrations/versions/0014_probes_one.py; undone by
-- sql/0014_probes_one_drop.sql.
--
-- A text near() or add() under the default asks for one query's probe
-- matches, signature rows and what verification reads. The batch form
-- (simhash_near_probes_candidates over arrays, revision 0009) slices a 3-D
-- array per query, materialises it, and checks every dimension: measured at
-- 1M rows from Python, interleaved, 0.30-0.33 ms a call against 0.22-0.24 ms
-- for this form, with equal rows. So a single query gets its own overload,
-- as simhash_near has simhash_near_many; simhash_near_probes, the analysts'
-- single search, becomes its id, key and distance.

-- One query: the rows within cap that share a probed value in some block,
-- and the rows whose sentence_sig equals sig (NULL: none), each once, with
-- what the store's verification reads; nearest first, ties by id. The
-- columns of the batch form without its query number.
CREATE OR REPLACE FUNCTION simhash_near_probes_candidates(
    fp bigint, p0 smallint[], p1 smallint[], p2 smallint[], p3 smallint[], cap integer,
    sig bigint DEFAULT NULL
)
RETURNS TABLE (id bigint, key text, distance integer, meta jsonb, verify_text text,
               sentence_sig bigint, text_lost boolean)
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
        SELECT d.id, d.key, d.fingerprint, d.meta, d.verify_text, d.sentence_sig, d.created_at
        FROM m JOIN simhash_documents d
          ON d.b0 = simhash_block(m.fingerprint, 0) AND d.b1 = simhash_block(m.fingerprint, 1)
         AND d.fingerprint = m.fingerprint
        UNION
        SELECT d.id, d.key, d.fingerprint, d.meta, d.verify_text, d.sentence_sig, d.created_at
        FROM simhash_documents d WHERE d.sentence_sig = sig
    )
    -- text_lost as in the batch form: stored before revision 0003's columns
    SELECT f.id, f.key, simhash_hamming(f.fingerprint, fp), f.meta, f.verify_text,
           f.sentence_sig,
           coalesce(f.verify_text IS NULL AND f.id <= (u.value->>'max_id')::bigint
                    AND f.created_at <= (u.value->>'stored_until')::timestamptz, false)
    FROM found f LEFT JOIN simhash_meta u ON u.name = 'unverified_rows'
    ORDER BY 3, 1;
END
$$;

-- One query: the rows within cap that share a probed value in some block.
-- Since revision 0014 the id, key and distance of the single-query
-- candidates' form, without signature rows: one definition of the search.
CREATE OR REPLACE FUNCTION simhash_near_probes(
    fp bigint, p0 smallint[], p1 smallint[], p2 smallint[], p3 smallint[], cap integer
)
RETURNS TABLE (id bigint, key text, distance integer)
LANGUAGE sql STABLE PARALLEL SAFE ROWS 10 AS $$
    SELECT c.id, c.key, c.distance
    FROM simhash_near_probes_candidates(fp, p0, p1, p2, p3, cap) AS c
    ORDER BY 3, 1
$$;

GRANT EXECUTE ON FUNCTION simhash_near_probes_candidates(
    bigint, smallint[], smallint[], smallint[], smallint[], integer, bigint
) TO simhash_reader;
