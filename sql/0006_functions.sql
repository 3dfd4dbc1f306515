-- simhash-pg revision 0006, its search functions: which form serves k, and
-- simhash_near / simhash_near_many in both forms. Run by
-- migrations/versions/0006_probe_forms.py after sql/0006_probe_forms.sql (the
-- mask table and probe helpers, and the lemma these rely on), and again by
-- 0007's downgrade. CREATE OR REPLACE throughout, so running it again keeps
-- the grants.

-- Which form the searches use for k (0..15) on this table, as above. Before
-- PostgreSQL 17 a btree scan descends once per combination of array values
-- (17 x 697 per block at k = 6): there the pair form serves k <= 3 only.
CREATE OR REPLACE FUNCTION simhash_use_pairs(k integer) RETURNS boolean
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

GRANT EXECUTE ON FUNCTION simhash_use_pairs(integer) TO simhash_reader;
