-- simhash-pg, today's SQL: the exact radius searches.
--
-- Today's definitions, exactly as `alembic upgrade head` leaves them (see
-- sql/current/hamming.sql; tests/test_sql_current.py keeps them equal).
--
-- Every stored row within Hamming distance k of a fingerprint, for every k
-- in 0..64, found by pigeonhole on the four block indexes
-- (b_i, b_(i+1 mod 4), fingerprint) (docs/design.md, "Probe forms"):
--
--   * single-block form: some block is within floor(k/4) bits of the
--     query's; every block value within that radius is probed in block i's
--     index, and every row found is checked against hamming <= k inside the
--     index-only scan, so only the matches visit the table;
--   * pair form: for some cyclic i, block i is within floor(k/4) bits AND
--     block i+1 within floor(k/2) (the lemma: sql/0006_probe_forms.sql;
--     tests/test_store_sql.py checks every spread of bits over the blocks);
--     both are array keys of one index, and PostgreSQL 17+ skips the
--     entries of a wrong b_(i+1) inside the btree. For k <= 3 block i is
--     matched by equality and block i+1 within 1 bit;
--   * above k = 15 (radius 4: 2,517 probes per block, ~15% of a uniform
--     table per block) a sequential scan is cheaper than probing.
--
-- Which form: simhash_use_pairs. Both forms are exact; the pair form costs
-- more to set up than it saves on small tables (docs/scaling.md, 0 and 0b).

-- Which form the searches use for k (0..15) on this table. On PostgreSQL 17+
-- k <= 3 takes the pair form at every size, decided without the catalog
-- query (simhash_near tests that first, as a plain expression). Otherwise
-- by the largest partition's pg_class.reltuples (kept by ANALYZE and
-- autovacuum; -1, never counted, is taken as 0): the pair form from
-- 10,000,000 rows for k <= 7 and from 20,000,000 for k = 8..15. Before
-- PostgreSQL 17 a btree scan descends once per combination of array values
-- (17 x 697 per block at k = 6): there the pair form serves k <= 3 only.
-- simhash.pair_probe_min_rows, if set, is the threshold for every k (0:
-- always pairs; the tests force both forms this way).
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

-- Stored documents within Hamming distance k of fingerprint fp, nearest
-- first, ties by id.
--
-- plpgsql rather than an inlinable SQL function, by measurement: inlined, the
-- UNION query was planned at every call (0.5-0.7 ms, 5x the execution time),
-- and its generic plan went parallel because of the scan branch (22 ms). Here
-- each branch is its own static query, planned once per session and cached;
-- plan_cache_mode = force_generic_plan because custom plans cost more to make
-- than to run, and their estimates never let the plan cache settle on the
-- generic plan. (The function's SET also keeps it from being inlined.) The
-- join back from a matching fingerprint to its row gives b0 and b1, the two
-- leading columns of the b0 index: one index descent.
CREATE OR REPLACE FUNCTION simhash_near(fp bigint, k integer DEFAULT 3)
RETURNS TABLE (id bigint, key text, distance integer)
LANGUAGE plpgsql STABLE PARALLEL SAFE ROWS 10
-- generic plans, always: see above
SET plan_cache_mode = force_generic_plan
SET search_path FROM CURRENT
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

-- The neighbours of a stored document, leaving out the document itself.
CREATE OR REPLACE FUNCTION simhash_near_id(doc_id bigint, k integer DEFAULT 3)
RETURNS TABLE (id bigint, key text, distance integer)
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path FROM CURRENT AS $$
    SELECT n.id, n.key, n.distance
    FROM simhash_documents s
    CROSS JOIN LATERAL simhash_near(s.fingerprint, k) AS n
    WHERE s.id = doc_id AND n.id <> s.id
    ORDER BY n.distance, n.id
$$;

-- Many queries in one round trip: query is the 1-based position in fps.
-- Set-based for k <= 15 (one join over all queries: a per-query function
-- call cost ~3x more, measured on add_many batches), with the same forms as
-- simhash_near; each query's probes are built once, in q. Per query above.
--
-- A batch of 200 or more at k <= 3 by pairs (add_many's look-up; the pair
-- form serves k <= 3 on PostgreSQL 17+, and before it from 10M rows) skips the
-- partitions that hold no page (revision 0025): the cached generic plan probes every
-- partition's index for every query and block, and a store usually has two
-- empty ones (tomorrow's, the default), a third of a batch's look-up at 2M
-- rows. Such a batch's query is planned per call over the partitions that
-- hold pages, each named (~1 ms of planning, repaid from ~100 queries:
-- sql/0025_batch_partitions.sql). A partition of no page holds no row this
-- query's snapshot sees: a row committed before the snapshot was written to
-- a page, and VACUUM cuts off only pages whose rows no snapshot needs; and
-- pg_partition_tree locks every leaf until the transaction ends, so none can
-- be dropped or detached between the check and the query. The
-- cached plan still serves a batch when every leaf holds pages, or a leaf is
-- not a plain table (a foreign shard: its size says nothing of its rows), or
-- the caller may not read a partition by name (the roles read the parent).
CREATE OR REPLACE FUNCTION simhash_near_many(fps bigint[], k integer DEFAULT 3)
RETURNS TABLE (query integer, id bigint, key text, distance integer)
LANGUAGE plpgsql STABLE PARALLEL SAFE ROWS 100
SET plan_cache_mode = force_generic_plan
-- no JIT: a big batch's plan, made per call for the batch's size, passes
-- jit_above_cost (5,000 fingerprints at 2M rows: 386k), and a server built
-- with LLVM would compile it at every call (the candidates forms: 1.7 s)
SET jit = off
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
DECLARE
    v_parts regclass[];  -- a big batch's partitions that hold pages, when some do not
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
        IF cardinality(fps) >= 200 THEN
            SELECT CASE WHEN bool_and(l.plain AND (l.size = 0 OR l.readable))
                             AND bool_or(l.size = 0)
                        THEN array_agg(l.relid ORDER BY l.relid) FILTER (WHERE l.size > 0) END
            INTO v_parts
            FROM (SELECT t.relid, c.relkind = 'r' AS plain,
                         has_table_privilege(t.relid, 'SELECT') AS readable,
                         pg_relation_size(t.relid) AS size
                  FROM pg_partition_tree('simhash_documents'::regclass) t
                  JOIN pg_catalog.pg_class c ON c.oid = t.relid
                  WHERE t.isleaf) AS l;
        END IF;
        IF v_parts IS NOT NULL THEN
            -- the pair form below, over each partition that holds pages; each
            -- probe a subquery of its own (OFFSET 0: not pulled up), so that
            -- the plan stays the cached one's whatever the batch's size (a
            -- custom plan of 50,000 queries merge-joined whole indexes)
            RETURN QUERY EXECUTE
                'WITH q AS MATERIALIZED ('
                '    SELECT x.ord, x.fp, simhash_probe_sets(x.fp, $2 / 2) AS p'
                '    FROM unnest($1) WITH ORDINALITY AS x (fp, ord)'
                ') SELECT r.ord::integer, r.id, r.key, r.distance FROM ('
                || (SELECT string_agg(format(
                    'SELECT f.ord, d.id, d.key, simhash_hamming(d.fingerprint, $1[f.ord]) AS distance'
                    ' FROM ('
                    '  SELECT q.ord, c.fingerprint FROM q CROSS JOIN LATERAL ('
                    '    SELECT c.fingerprint FROM %1$s c'
                    '    WHERE c.b0 = simhash_block(q.fp, 0) AND c.b1 = ANY (q.p[2:2])'
                    '      AND simhash_hamming(c.fingerprint, q.fp) <= $2 OFFSET 0) AS c'
                    '  UNION'
                    '  SELECT q.ord, c.fingerprint FROM q CROSS JOIN LATERAL ('
                    '    SELECT c.fingerprint FROM %1$s c'
                    '    WHERE c.b1 = simhash_block(q.fp, 1) AND c.b2 = ANY (q.p[3:3])'
                    '      AND simhash_hamming(c.fingerprint, q.fp) <= $2 OFFSET 0) AS c'
                    '  UNION'
                    '  SELECT q.ord, c.fingerprint FROM q CROSS JOIN LATERAL ('
                    '    SELECT c.fingerprint FROM %1$s c'
                    '    WHERE c.b2 = simhash_block(q.fp, 2) AND c.b3 = ANY (q.p[4:4])'
                    '      AND simhash_hamming(c.fingerprint, q.fp) <= $2 OFFSET 0) AS c'
                    '  UNION'
                    '  SELECT q.ord, c.fingerprint FROM q CROSS JOIN LATERAL ('
                    '    SELECT c.fingerprint FROM %1$s c'
                    '    WHERE c.b3 = simhash_block(q.fp, 3) AND c.b0 = ANY (q.p[1:1])'
                    '      AND simhash_hamming(c.fingerprint, q.fp) <= $2 OFFSET 0) AS c'
                    ' ) AS f CROSS JOIN LATERAL ('
                    '  SELECT d.id, d.key, d.fingerprint FROM %1$s d'
                    '  WHERE d.b0 = simhash_block(f.fingerprint, 0)'
                    '    AND d.b1 = simhash_block(f.fingerprint, 1)'
                    '    AND d.fingerprint = f.fingerprint OFFSET 0) AS d', p), ' UNION ALL ')
                    FROM unnest(v_parts) AS p)
                || ') AS r ORDER BY 1, 4, 2'
                USING fps, k;
            RETURN;
        END IF;
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

GRANT EXECUTE ON FUNCTION
    simhash_use_pairs(integer),
    simhash_near(bigint, integer),
    simhash_near_id(bigint, integer),
    simhash_near_many(bigint[], integer)
TO simhash_reader;
