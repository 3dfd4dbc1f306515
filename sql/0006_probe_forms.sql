-- simhash-pg revision 0006: the pair form for every k <= 15, and probe values
-- from a table (issue 6). Applied by migrations/versions/0006_probe_forms.py,
-- with sql/0006_functions.sql (the search functions) after it; its downgrade
-- runs 0001_functions.sql and 0004_functions.sql again, then
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

-- Every role that may search reads the masks: constant, public data (a
-- writer granted only SELECT on simhash_documents must not fail here).
GRANT SELECT ON simhash_mask_sets TO PUBLIC;
GRANT EXECUTE ON FUNCTION simhash_probe_sets(bigint, integer) TO simhash_reader;
