-- simhash-pg revision 0014, undone: simhash_near_probes searches on its own
-- again (0009's), and simhash_near_probes_candidates has no single-query
-- form (the batch form serves one query too).
-- Run by migrations/versions/0014_probes_one.py downgrade().

-- simhash_near_probes as revision 0009 made it
-- One query: the rows within cap that share a probed value in some block.
CREATE OR REPLACE FUNCTION simhash_near_probes(
    fp bigint, p0 smallint[], p1 smallint[], p2 smallint[], p3 smallint[], cap integer
)
RETURNS TABLE (id bigint, key text, distance integer)
LANGUAGE plpgsql STABLE PARALLEL SAFE ROWS 10
-- generic plans, always: one static query, planned once per session (as
-- simhash_near, sql/0001_functions.sql)
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
    SELECT d.id, d.key, simhash_hamming(d.fingerprint, fp)
    FROM (
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
    ) AS f
    JOIN simhash_documents d
      ON d.b0 = simhash_block(f.fingerprint, 0) AND d.b1 = simhash_block(f.fingerprint, 1)
     AND d.fingerprint = f.fingerprint
    ORDER BY 3, 1;
END
$$;

DROP FUNCTION simhash_near_probes_candidates(
    bigint, smallint[], smallint[], smallint[], smallint[], integer, bigint
);
