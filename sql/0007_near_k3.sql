-- simhash-pg revision 0007: k <= 3 always in the pair form on PostgreSQL 17+
-- (issue 6). Applied by migrations/versions/0007_near_k3.py; its downgrade
-- runs sql/0006_functions.sql again.
--
-- At k = 3 a search at 50M rows costs about 0.2 ms in the server, and 0006
-- spent 25-30 us of it (11%, measured alternating per query) in
-- simhash_use_pairs: a catalog query (pg_inherits, pg_class) whose pages are
-- rarely in the CPU cache between calls. For k <= 3 the answer hardly
-- matters below the threshold either: the pair form costs 1.05x the single
-- form at 1M rows and 0.82x at 10M (docs/scaling.md), tens of microseconds
-- both. So from 0007, on PostgreSQL 17+, k <= 3 uses the pair form at every
-- size, decided without the catalog, unless simhash.pair_probe_min_rows is
-- set (the tests force either form with it; then it decides, as before).
-- Before PostgreSQL 17 each array value of block i+1 costs a descent, so the
-- size rule of 0006 stays there. k >= 4 is unchanged.

CREATE OR REPLACE FUNCTION simhash_use_pairs(k integer) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT (k <= 3 AND current_setting('server_version_num')::integer >= 170000
            AND coalesce(current_setting('simhash.pair_probe_min_rows', true), '') = '')
        OR ((k <= 3 OR current_setting('server_version_num')::integer >= 170000)
            AND coalesce(max(greatest(t.reltuples, 0)), 0)
                >= coalesce(nullif(current_setting('simhash.pair_probe_min_rows', true), '')::real,
                            CASE WHEN k <= 7 THEN 1e7 ELSE 2e7 END))
    FROM (SELECT 'simhash_documents'::regclass::oid AS oid
          UNION ALL
          SELECT i.inhrelid FROM pg_catalog.pg_inherits i
          WHERE i.inhparent = 'simhash_documents'::regclass) AS r
    JOIN pg_catalog.pg_class t ON t.oid = r.oid
    WHERE t.relkind = 'r'
$$;

-- As in 0006, but the test above comes first, as a plain expression: with it
-- true, simhash_use_pairs (and its catalog query) is not called at all.
-- CREATE OR REPLACE keeps the grants of 0002.
CREATE OR REPLACE FUNCTION simhash_near(fp bigint, k integer DEFAULT 3)
RETURNS TABLE (id bigint, key text, distance integer)
LANGUAGE plpgsql STABLE PARALLEL SAFE ROWS 10
-- Generic plans, always (see 0001_functions.sql): each branch below is a
-- static query, planned once per session.
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
    a smallint[];  -- row i + 1: block i's values within k/4 bits
    p smallint[];  -- row i + 1: block i's values within k/2 bits
BEGIN
    IF k IS NULL OR k < 0 OR k > 64 THEN
        PERFORM simhash_check_k(k);  -- raises; the IF is a cheap simple expression
    END IF;
    IF k > 15 THEN
        -- probing would read most of the indexes: scanning the table is cheaper
        RETURN QUERY
        SELECT d.id, d.key, simhash_hamming(d.fingerprint, fp)
        FROM simhash_documents d
        WHERE simhash_hamming(d.fingerprint, fp) <= k
        ORDER BY 3, 1;
    ELSIF NOT ((k <= 3 AND current_setting('server_version_num')::integer >= 170000
                AND coalesce(current_setting('simhash.pair_probe_min_rows', true), '') = '')
               OR simhash_use_pairs(k)) THEN
        -- pigeonhole: some block is within k/4 bits; every row of each probed
        -- block value is checked
        a := simhash_probe_sets(fp, k / 4);
        RETURN QUERY
        SELECT d.id, d.key, simhash_hamming(d.fingerprint, fp)
        FROM (
            SELECT c.fingerprint FROM simhash_documents c
            WHERE c.b0 = ANY (a[1:1])
              AND simhash_hamming(c.fingerprint, fp) <= k
            UNION
            SELECT c.fingerprint FROM simhash_documents c
            WHERE c.b1 = ANY (a[2:2])
              AND simhash_hamming(c.fingerprint, fp) <= k
            UNION
            SELECT c.fingerprint FROM simhash_documents c
            WHERE c.b2 = ANY (a[3:3])
              AND simhash_hamming(c.fingerprint, fp) <= k
            UNION
            SELECT c.fingerprint FROM simhash_documents c
            WHERE c.b3 = ANY (a[4:4])
              AND simhash_hamming(c.fingerprint, fp) <= k
        ) AS f
        JOIN simhash_documents d
          ON d.b0 = simhash_block(f.fingerprint, 0) AND d.b1 = simhash_block(f.fingerprint, 1)
         AND d.fingerprint = f.fingerprint
        ORDER BY 3, 1;
    ELSIF k <= 3 THEN
        -- the lemma with k/4 = 0: block i equal, block i+1 within 1 bit.
        -- Block i by equality to a scalar, as in 0004: given a (generic)
        -- array there, the planner may prefer block i+1's own index on a
        -- small table or partition.
        p := simhash_probe_sets(fp, k / 2);
        RETURN QUERY
        SELECT d.id, d.key, simhash_hamming(d.fingerprint, fp)
        FROM (
            SELECT c.fingerprint FROM simhash_documents c
            WHERE c.b0 = simhash_block(fp, 0) AND c.b1 = ANY (p[2:2])
              AND simhash_hamming(c.fingerprint, fp) <= k
            UNION
            SELECT c.fingerprint FROM simhash_documents c
            WHERE c.b1 = simhash_block(fp, 1) AND c.b2 = ANY (p[3:3])
              AND simhash_hamming(c.fingerprint, fp) <= k
            UNION
            SELECT c.fingerprint FROM simhash_documents c
            WHERE c.b2 = simhash_block(fp, 2) AND c.b3 = ANY (p[4:4])
              AND simhash_hamming(c.fingerprint, fp) <= k
            UNION
            SELECT c.fingerprint FROM simhash_documents c
            WHERE c.b3 = simhash_block(fp, 3) AND c.b0 = ANY (p[1:1])
              AND simhash_hamming(c.fingerprint, fp) <= k
        ) AS f
        JOIN simhash_documents d
          ON d.b0 = simhash_block(f.fingerprint, 0) AND d.b1 = simhash_block(f.fingerprint, 1)
         AND d.fingerprint = f.fingerprint
        ORDER BY 3, 1;
    ELSE
        -- the lemma above: block i within k/4 bits, block i+1 within k/2
        a := simhash_probe_sets(fp, k / 4);
        p := simhash_probe_sets(fp, k / 2);
        RETURN QUERY
        SELECT d.id, d.key, simhash_hamming(d.fingerprint, fp)
        FROM (
            SELECT c.fingerprint FROM simhash_documents c
            WHERE c.b0 = ANY (a[1:1]) AND c.b1 = ANY (p[2:2])
              AND simhash_hamming(c.fingerprint, fp) <= k
            UNION
            SELECT c.fingerprint FROM simhash_documents c
            WHERE c.b1 = ANY (a[2:2]) AND c.b2 = ANY (p[3:3])
              AND simhash_hamming(c.fingerprint, fp) <= k
            UNION
            SELECT c.fingerprint FROM simhash_documents c
            WHERE c.b2 = ANY (a[3:3]) AND c.b3 = ANY (p[4:4])
              AND simhash_hamming(c.fingerprint, fp) <= k
            UNION
            SELECT c.fingerprint FROM simhash_documents c
            WHERE c.b3 = ANY (a[4:4]) AND c.b0 = ANY (p[1:1])
              AND simhash_hamming(c.fingerprint, fp) <= k
        ) AS f
        JOIN simhash_documents d
          ON d.b0 = simhash_block(f.fingerprint, 0) AND d.b1 = simhash_block(f.fingerprint, 1)
         AND d.fingerprint = f.fingerprint
        ORDER BY 3, 1;
    END IF;
END
$$;
