-- simhash-pg revision 0006: the pair form for every k <= 15, and probe values
-- from a table (issue 6). Applied by migrations/versions/0006_probe_forms.py;
-- its downgrade runs 0001_functions.sql and 0004_functions.sql again, then
-- sql/0006_probe_forms_drop.sql.
--
-- Lemma (0004's, for every k). Blocks b0..b3 in cyclic order. If
-- hamming(a, q) <= k, then for some i block i differs in at most floor(k/4)
-- bits and block i+1 (mod 4) in at most floor(k/2).
-- Proof. Write k = 4m + s, 0 <= s <= 3, so floor(k/2) = 2m + floor(s/2); let
-- h = floor(k/2) + 1, and call a block low if it differs in <= m bits. Some
-- block i is low, or all four differ in >= m + 1 bits, 4m + 4 > k in all.
-- Suppose the successor of every low block differs in >= h bits (h > m, so
-- it is not low). Then block i+1 differs in >= h. If block i+2 is low, block
-- i+3 differs in >= h too: >= 2h = 4m + 2 floor(s/2) + 2 > k. If only block
-- i+3 is low, its successor, block i, is low: a contradiction. If neither is
-- low: >= h + 2m + 2 = 4m + floor(s/2) + 3 > k. (k = 3 gives 0004's lemma;
-- tests/test_store_sql.py checks every spread of <= 11 bits over the blocks.)
--
-- So, for every k <= 15, block i is probed over the V(16, k/4) values within
-- k/4 bits (17 for k = 4..7) and block i+1 is constrained to the V(16, k/2)
-- values within k/2 bits (697 for k = 6, 7), both as arrays on the
-- (b_i, b_(i+1), fingerprint) indexes of 0004. Rows sharing a probed b_i but
-- not an allowed b_(i+1) are skipped inside the btree scan (PostgreSQL 17+
-- advances multi-column array keys within a leaf page), so the executor sees
-- and Hamming-checks ~V(16, k/4) V(16, k/2) N / 2^32 rows per block instead of
-- V(16, k/4) N / 65536. Measured at 50M rows, p50 of simhash_near from
-- Python, 0005 against 0006 (with the mask table below) alternating per query
-- (docs/experiments/probe_forms.py): k = 3 0.337 -> 0.297 ms, k = 6 8.52 ->
-- 4.12 ms, k = 10 57.7 -> 48.2 ms.
--
-- The arrays of the second column cost about 0.11 us per value to build and
-- to search, which small tables do not repay: the single-block form (block i
-- within k/4 bits, every row of each value checked) stays faster below the
-- crossover (pair / single p50 at 1M rows: 1.05 for k = 3, 1.93 for k = 6,
-- 3.37 for k = 10; at 10M: 0.82, 0.92, 1.36; k = 10 crosses near 23M;
-- docs/scaling.md). The functions choose by the largest partition's
-- pg_class.reltuples, as in 0004: the pair form from 10,000,000 rows for
-- k <= 7 and from 20,000,000 for k = 8..15. simhash.pair_probe_min_rows, if
-- set, is the threshold for every k (0: always pairs; the tests force both
-- forms this way). Above k = 15 a scan is cheaper than either, as before.
--
-- simhash_masks built its masks with a recursive CTE at every call: 14 us at
-- r = 1, 0.42 ms at r = 3, 20 ms at r = 7, paid four or eight times per
-- query. The masks of every radius (0..16, 600,000 values, 2.4 MB) now live
-- in simhash_mask_sets, filled once here; simhash_probe_sets XORs them with
-- the four blocks (15 us at r = 1, 0.24 ms at r = 3).

CREATE TABLE simhash_mask_sets (
    radius integer PRIMARY KEY CHECK (radius BETWEEN 0 AND 16),
    masks integer[] NOT NULL
);
COMMENT ON TABLE simhash_mask_sets IS
    'simhash-pg: every 16-bit mask with at most radius bits set, fewest bits first'
    ' (read by simhash_masks and simhash_probe_sets; never changes)';
INSERT INTO simhash_mask_sets (radius, masks)
WITH m AS (SELECT m, bit_count(m::bit(16)) AS n FROM generate_series(0, 65535) AS m)
SELECT r, array_agg(m.m ORDER BY m.n, m.m)
FROM generate_series(0, 16) AS r JOIN m ON m.n <= r
GROUP BY r;

-- STABLE now that they read a table. (A radius below 0 is 0, above 16 is 16.)
CREATE OR REPLACE FUNCTION simhash_masks(r integer) RETURNS integer[]
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT s.masks FROM simhash_mask_sets s WHERE s.radius = least(greatest(r, 0), 16)
$$;

CREATE OR REPLACE FUNCTION simhash_probes(b smallint, r integer) RETURNS smallint[]
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN r <= 0 THEN ARRAY[b]
                ELSE ARRAY(SELECT (((b::integer + 32768) # m) - 32768)::smallint
                           FROM unnest(simhash_masks(r)) AS m) END
$$;

-- The probes of all four blocks at once, as a 4 x V(16, r) array: row i + 1
-- holds block i's values within r bits. One call, reading the table itself:
-- every SQL function call that cannot be inlined costs 5-20 us (4 calls of
-- simhash_probes at r = 1: 21 us; this: 15 us).
CREATE FUNCTION simhash_probe_sets(fp bigint, r integer) RETURNS smallint[]
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT ARRAY[
        ARRAY(SELECT ((((fp >> 48) & 65535)::integer # m) - 32768)::smallint
              FROM unnest(s.masks) AS m),
        ARRAY(SELECT ((((fp >> 32) & 65535)::integer # m) - 32768)::smallint
              FROM unnest(s.masks) AS m),
        ARRAY(SELECT ((((fp >> 16) & 65535)::integer # m) - 32768)::smallint
              FROM unnest(s.masks) AS m),
        ARRAY(SELECT (((fp & 65535)::integer # m) - 32768)::smallint
              FROM unnest(s.masks) AS m)]
    FROM simhash_mask_sets s WHERE s.radius = least(greatest(r, 0), 16)
$$;

-- Which form the searches use for k (0..15) on this table, as above. Before
-- PostgreSQL 17 a btree scan descends once per combination of array values
-- (17 x 697 per block at k = 6): there the pair form serves k <= 3 only.
CREATE FUNCTION simhash_use_pairs(k integer) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT (k <= 3 OR current_setting('server_version_num')::integer >= 170000)
       AND coalesce(max(greatest(t.reltuples, 0)), 0)
           >= coalesce(nullif(current_setting('simhash.pair_probe_min_rows', true), '')::real,
                       CASE WHEN k <= 7 THEN 1e7 ELSE 2e7 END)
    FROM (SELECT 'simhash_documents'::regclass::oid AS oid
          UNION ALL
          SELECT i.inhrelid FROM pg_catalog.pg_inherits i
          WHERE i.inhparent = 'simhash_documents'::regclass) AS r
    JOIN pg_catalog.pg_class t ON t.oid = r.oid
    WHERE t.relkind = 'r'
$$;

-- Same signatures as before: CREATE OR REPLACE keeps the grants of 0002.
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
    ELSIF NOT simhash_use_pairs(k) THEN
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

-- Many queries in one round trip, set-based for k <= 15, with the same forms
-- as simhash_near; each query's probes are built once, in q.
CREATE OR REPLACE FUNCTION simhash_near_many(fps bigint[], k integer DEFAULT 3)
RETURNS TABLE (query integer, id bigint, key text, distance integer)
LANGUAGE plpgsql STABLE PARALLEL SAFE ROWS 100
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
BEGIN
    IF k IS NULL OR k < 0 OR k > 64 THEN
        PERFORM simhash_check_k(k);  -- raises; the IF is a cheap simple expression
    END IF;
    IF k > 15 THEN
        RETURN QUERY
        SELECT q.ord::integer, n.id, n.key, n.distance
        FROM unnest(fps) WITH ORDINALITY AS q (fp, ord)
        CROSS JOIN LATERAL simhash_near(q.fp, k) AS n
        ORDER BY 1, 4, 2;
    ELSIF NOT simhash_use_pairs(k) THEN
        RETURN QUERY
        WITH q AS MATERIALIZED (
            SELECT x.ord, x.fp, simhash_probe_sets(x.fp, k / 4) AS a
            FROM unnest(fps) WITH ORDINALITY AS x (fp, ord)
        )
        SELECT f.ord::integer, d.id, d.key, simhash_hamming(d.fingerprint, fps[f.ord])
        FROM (
            SELECT q.ord, c.fingerprint
            FROM q JOIN simhash_documents c
              ON c.b0 = ANY (q.a[1:1])
             AND simhash_hamming(c.fingerprint, q.fp) <= k
            UNION
            SELECT q.ord, c.fingerprint
            FROM q JOIN simhash_documents c
              ON c.b1 = ANY (q.a[2:2])
             AND simhash_hamming(c.fingerprint, q.fp) <= k
            UNION
            SELECT q.ord, c.fingerprint
            FROM q JOIN simhash_documents c
              ON c.b2 = ANY (q.a[3:3])
             AND simhash_hamming(c.fingerprint, q.fp) <= k
            UNION
            SELECT q.ord, c.fingerprint
            FROM q JOIN simhash_documents c
              ON c.b3 = ANY (q.a[4:4])
             AND simhash_hamming(c.fingerprint, q.fp) <= k
        ) AS f
        JOIN simhash_documents d
          ON d.b0 = simhash_block(f.fingerprint, 0) AND d.b1 = simhash_block(f.fingerprint, 1)
         AND d.fingerprint = f.fingerprint
        ORDER BY 1, 4, 2;
    ELSIF k <= 3 THEN
        RETURN QUERY
        WITH q AS MATERIALIZED (
            SELECT x.ord, x.fp, simhash_probe_sets(x.fp, k / 2) AS p
            FROM unnest(fps) WITH ORDINALITY AS x (fp, ord)
        )
        SELECT f.ord::integer, d.id, d.key, simhash_hamming(d.fingerprint, fps[f.ord])
        FROM (
            SELECT q.ord, c.fingerprint
            FROM q JOIN simhash_documents c
              ON c.b0 = simhash_block(q.fp, 0) AND c.b1 = ANY (q.p[2:2])
             AND simhash_hamming(c.fingerprint, q.fp) <= k
            UNION
            SELECT q.ord, c.fingerprint
            FROM q JOIN simhash_documents c
              ON c.b1 = simhash_block(q.fp, 1) AND c.b2 = ANY (q.p[3:3])
             AND simhash_hamming(c.fingerprint, q.fp) <= k
            UNION
            SELECT q.ord, c.fingerprint
            FROM q JOIN simhash_documents c
              ON c.b2 = simhash_block(q.fp, 2) AND c.b3 = ANY (q.p[4:4])
             AND simhash_hamming(c.fingerprint, q.fp) <= k
            UNION
            SELECT q.ord, c.fingerprint
            FROM q JOIN simhash_documents c
              ON c.b3 = simhash_block(q.fp, 3) AND c.b0 = ANY (q.p[1:1])
             AND simhash_hamming(c.fingerprint, q.fp) <= k
        ) AS f
        JOIN simhash_documents d
          ON d.b0 = simhash_block(f.fingerprint, 0) AND d.b1 = simhash_block(f.fingerprint, 1)
         AND d.fingerprint = f.fingerprint
        ORDER BY 1, 4, 2;
    ELSE
        RETURN QUERY
        WITH q AS MATERIALIZED (
            SELECT x.ord, x.fp, simhash_probe_sets(x.fp, k / 4) AS a,
                   simhash_probe_sets(x.fp, k / 2) AS p
            FROM unnest(fps) WITH ORDINALITY AS x (fp, ord)
        )
        SELECT f.ord::integer, d.id, d.key, simhash_hamming(d.fingerprint, fps[f.ord])
        FROM (
            SELECT q.ord, c.fingerprint
            FROM q JOIN simhash_documents c
              ON c.b0 = ANY (q.a[1:1]) AND c.b1 = ANY (q.p[2:2])
             AND simhash_hamming(c.fingerprint, q.fp) <= k
            UNION
            SELECT q.ord, c.fingerprint
            FROM q JOIN simhash_documents c
              ON c.b1 = ANY (q.a[2:2]) AND c.b2 = ANY (q.p[3:3])
             AND simhash_hamming(c.fingerprint, q.fp) <= k
            UNION
            SELECT q.ord, c.fingerprint
            FROM q JOIN simhash_documents c
              ON c.b2 = ANY (q.a[3:3]) AND c.b3 = ANY (q.p[4:4])
             AND simhash_hamming(c.fingerprint, q.fp) <= k
            UNION
            SELECT q.ord, c.fingerprint
            FROM q JOIN simhash_documents c
              ON c.b3 = ANY (q.a[4:4]) AND c.b0 = ANY (q.p[1:1])
             AND simhash_hamming(c.fingerprint, q.fp) <= k
        ) AS f
        JOIN simhash_documents d
          ON d.b0 = simhash_block(f.fingerprint, 0) AND d.b1 = simhash_block(f.fingerprint, 1)
         AND d.fingerprint = f.fingerprint
        ORDER BY 1, 4, 2;
    END IF;
END
$$;

-- Every role that may search reads the masks: constant, public data (a
-- writer granted only SELECT on simhash_documents must not fail here).
GRANT SELECT ON simhash_mask_sets TO PUBLIC;
GRANT EXECUTE ON FUNCTION simhash_use_pairs(integer), simhash_probe_sets(bigint, integer)
    TO simhash_reader;
