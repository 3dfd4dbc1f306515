-- simhash-pg, today's SQL: every near-duplicate pair in the store.
--
-- Today's definition, exactly as `alembic upgrade head` leaves it (see
-- sql/current/hamming.sql; tests/test_sql_current.py keeps it equal).

-- The first of the eight 24-bit keys of simhash_pairs that two fingerprints
-- share, given their XOR (0..7; NULL if none): block i, and the high (2i)
-- or the low (2i + 1) byte of block i+1. Each pair comes from this key only.
CREATE OR REPLACE FUNCTION simhash_pair_branch(x bigint) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE
        WHEN x & x'FFFFFF0000000000'::bit(64)::bigint = 0 THEN 0  -- b0 and the high byte of b1
        WHEN x & x'FFFF00FF00000000'::bit(64)::bigint = 0 THEN 1  -- b0 and the low byte of b1
        WHEN x & x'0000FFFFFF000000'::bit(64)::bigint = 0 THEN 2  -- b1 and the high byte of b2
        WHEN x & x'0000FFFF00FF0000'::bit(64)::bigint = 0 THEN 3  -- b1 and the low byte of b2
        WHEN x & x'00000000FFFFFF00'::bit(64)::bigint = 0 THEN 4  -- b2 and the high byte of b3
        WHEN x & x'00000000FFFF00FF'::bit(64)::bigint = 0 THEN 5  -- b2 and the low byte of b3
        WHEN x & x'FF0000000000FFFF'::bit(64)::bigint = 0 THEN 6  -- b3 and the high byte of b0
        WHEN x & x'00FF00000000FFFF'::bit(64)::bigint = 0 THEN 7  -- b3 and the low byte of b0
    END
$$;

-- Every pair of stored documents within Hamming distance k, a < b, each
-- unordered pair once, in no particular order (ORDER BY what you need).
--
-- For k <= 3 the pair form, by pigeonhole (docs/design.md, "Probe forms"):
-- some block b_i is equal and b_(i+1 mod 4) differs in at most one bit, so
-- one of its two bytes is equal too. Hence every pair within 3 shares one of
-- eight 24-bit keys (b_i, one byte of b_(i+1)), and each key is a prefix of
-- block i's index (b_i, b_(i+1), fingerprint) up to an in-group sort: eight
-- passes, each an index-only scan in index order, a sort within each b_i
-- value (Incremental Sort), and a window over the rows sharing the key (0.6
-- rows a key at 10M rows, 3 at 50M): no hash table, nothing spilled, no
-- sort of the whole table, and the rows stream out as they are found.
-- A pair of distinct fingerprints is emitted only by the first of the eight
-- keys it shares (simhash_pair_branch), so never twice; then joined to its
-- rows, as are the fingerprints stored more than once (distance 0, found by
-- a window in index order). The rows of a fingerprint come from a subquery
-- (ARRAY(...)), planned on its own as an index scan: as a join, the planner
-- trusted its estimate of few pairs and scanned the table once per pair
-- (minutes at 200k rows under a cursor). Cost at 10M rows: docs/scaling.md
-- ("All pairs").
--
-- Inlined into the caller's query (a single SELECT, no SET, not STRICT), so
-- a cursor over SELECT * FROM simhash_pairs(3) gets rows while the scan
-- runs (the store's pairs() reads it so); a plpgsql function would first
-- collect every row.
--
-- Above k = 3 a simhash_near per row (the pair form's pigeonhole needs an
-- equal block, which k >= 4 does not promise).
CREATE OR REPLACE FUNCTION simhash_pairs(k integer DEFAULT 3)
RETURNS TABLE (a bigint, b bigint, distance integer)
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT least(x.id, y.id), greatest(x.id, y.id), f.distance
    FROM (
        SELECT e.fa, e.fb, simhash_hamming(e.fa, e.fb) AS distance FROM (
            SELECT s.fa, unnest(s.f) AS fb, 0 AS branch FROM (
                SELECT u.fingerprint AS fa, array_agg(u.fingerprint) OVER w AS f,
                       count(*) OVER w AS c
                FROM (SELECT DISTINCT b0, b1, fingerprint FROM simhash_documents) AS u
                WINDOW w AS (PARTITION BY u.b0, u.b1 >> 8)
            ) AS s WHERE s.c > 1
            UNION ALL
            SELECT s.fa, unnest(s.f) AS fb, 1 AS branch FROM (
                SELECT u.fingerprint AS fa, array_agg(u.fingerprint) OVER w AS f,
                       count(*) OVER w AS c
                FROM (SELECT DISTINCT b0, b1, fingerprint FROM simhash_documents) AS u
                WINDOW w AS (PARTITION BY u.b0, u.b1 & 255)
            ) AS s WHERE s.c > 1
            UNION ALL
            SELECT s.fa, unnest(s.f) AS fb, 2 AS branch FROM (
                SELECT u.fingerprint AS fa, array_agg(u.fingerprint) OVER w AS f,
                       count(*) OVER w AS c
                FROM (SELECT DISTINCT b1, b2, fingerprint FROM simhash_documents) AS u
                WINDOW w AS (PARTITION BY u.b1, u.b2 >> 8)
            ) AS s WHERE s.c > 1
            UNION ALL
            SELECT s.fa, unnest(s.f) AS fb, 3 AS branch FROM (
                SELECT u.fingerprint AS fa, array_agg(u.fingerprint) OVER w AS f,
                       count(*) OVER w AS c
                FROM (SELECT DISTINCT b1, b2, fingerprint FROM simhash_documents) AS u
                WINDOW w AS (PARTITION BY u.b1, u.b2 & 255)
            ) AS s WHERE s.c > 1
            UNION ALL
            SELECT s.fa, unnest(s.f) AS fb, 4 AS branch FROM (
                SELECT u.fingerprint AS fa, array_agg(u.fingerprint) OVER w AS f,
                       count(*) OVER w AS c
                FROM (SELECT DISTINCT b2, b3, fingerprint FROM simhash_documents) AS u
                WINDOW w AS (PARTITION BY u.b2, u.b3 >> 8)
            ) AS s WHERE s.c > 1
            UNION ALL
            SELECT s.fa, unnest(s.f) AS fb, 5 AS branch FROM (
                SELECT u.fingerprint AS fa, array_agg(u.fingerprint) OVER w AS f,
                       count(*) OVER w AS c
                FROM (SELECT DISTINCT b2, b3, fingerprint FROM simhash_documents) AS u
                WINDOW w AS (PARTITION BY u.b2, u.b3 & 255)
            ) AS s WHERE s.c > 1
            UNION ALL
            SELECT s.fa, unnest(s.f) AS fb, 6 AS branch FROM (
                SELECT u.fingerprint AS fa, array_agg(u.fingerprint) OVER w AS f,
                       count(*) OVER w AS c
                FROM (SELECT DISTINCT b3, b0, fingerprint FROM simhash_documents) AS u
                WINDOW w AS (PARTITION BY u.b3, u.b0 >> 8)
            ) AS s WHERE s.c > 1
            UNION ALL
            SELECT s.fa, unnest(s.f) AS fb, 7 AS branch FROM (
                SELECT u.fingerprint AS fa, array_agg(u.fingerprint) OVER w AS f,
                       count(*) OVER w AS c
                FROM (SELECT DISTINCT b3, b0, fingerprint FROM simhash_documents) AS u
                WINDOW w AS (PARTITION BY u.b3, u.b0 & 255)
            ) AS s WHERE s.c > 1
        ) AS e
        WHERE e.fa < e.fb AND simhash_hamming(e.fa, e.fb) <= k
          AND simhash_pair_branch(e.fa # e.fb) = e.branch
        UNION ALL
        SELECT d.fingerprint, d.fingerprint, 0 FROM (
            SELECT u.fingerprint, row_number() OVER w AS r
            FROM simhash_documents AS u WINDOW w AS (PARTITION BY u.b0, u.b1, u.fingerprint)
        ) AS d WHERE d.r = 2
    ) AS f
    CROSS JOIN LATERAL unnest(ARRAY(
        SELECT x.id FROM simhash_documents x WHERE x.b0 = simhash_block(f.fa, 0)
           AND x.b1 = simhash_block(f.fa, 1) AND x.fingerprint = f.fa)) AS x (id)
    CROSS JOIN LATERAL unnest(ARRAY(
        SELECT y.id FROM simhash_documents y WHERE y.b0 = simhash_block(f.fb, 0)
           AND y.b1 = simhash_block(f.fb, 1) AND y.fingerprint = f.fb)) AS y (id)
    WHERE simhash_check_k(k) < 4 AND (f.fa < f.fb OR x.id < y.id)
    UNION ALL
    SELECT x.id, n.id, n.distance
    FROM simhash_documents x CROSS JOIN LATERAL simhash_near(x.fingerprint, k) AS n
    WHERE simhash_check_k(k) >= 4 AND n.id > x.id
$$;


GRANT EXECUTE ON FUNCTION simhash_pair_branch(bigint) TO simhash_reader;
GRANT EXECUTE ON FUNCTION simhash_pairs(integer) TO simhash_reader;
