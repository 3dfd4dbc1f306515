-- simhash-pg revision 0025: a big batch's look-up skips the partitions that
-- hold no page (issue 28, item 6: add_many(dedup=True) against the plain-COPY
-- floor). Applied by migrations/versions/0025_batch_partitions.py; undone by
-- sql/0025_batch_partitions_drop.sql.
--
-- simhash_near_many's queries are planned once per session and cached
-- (force_generic_plan), so they probe every partition: for each query and
-- block, tomorrow's and the default partition's indexes too, which a store
-- keeps empty but for the minutes around midnight. Since partitions emptied
-- by bulk_load and purge are truncated (their planner statistics then read
-- "never counted", so that a cached plan never scans a partition that
-- fills), those probes are index descents: 80,000 of a 5,000-fingerprint
-- look-up's 144,000 buffer hits at 2M rows.
--
-- Measured on a 2M-row store of three partitions, two empty (bench store
-- --n 2000000 --keep; 5,000 fingerprints, half of them near copies of
-- stored rows, median of 12 interleaved rounds): 194.8 ms before, 146.5 ms
-- with this revision (0.75x); the same query over the one partition alone
-- 136.6 ms. By batch size, random fingerprints, planned per call for every
-- size: 1 query 0.56 against 1.40 ms (the planning), 10: 1.24 / 1.88, 100:
-- 5.56 / 5.18, 300: 17.3 / 13.2, 1,000: 45.1 / 34.8, 3,000: 136 / 92. So
-- from 200 queries. The revision as built, against 0006's function
-- (lab/experiments/batch_partitions.py): 0.65-0.72x at 5,000; add_many
-- against the plain-COPY floor at 2M / 10M / 50M rows 0.66x / 0.89x / 0.93x
-- (0.60x / 0.84x / 0.88x before; docs/benchmarks.md).
--
-- Only k <= 3's pair form (add_many's default look-up); the other forms
-- are unchanged. Nothing stored changes.

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
