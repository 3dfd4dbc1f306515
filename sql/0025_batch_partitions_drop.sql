-- simhash-pg revision 0025, undone: a batch look-up probes every partition
-- again (revision 0006's simhash_near_many). Run by
-- migrations/versions/0025_batch_partitions.py downgrade().

-- Many queries in one round trip: query is the 1-based position in fps.
-- Set-based for k <= 15 (one join over all queries: a per-query function
-- call cost ~3x more, measured on add_many batches), with the same forms as
-- simhash_near; each query's probes are built once, in q. Per query above.
CREATE OR REPLACE FUNCTION simhash_near_many(fps bigint[], k integer DEFAULT 3)
RETURNS TABLE (query integer, id bigint, key text, distance integer)
LANGUAGE plpgsql STABLE PARALLEL SAFE ROWS 100
SET plan_cache_mode = force_generic_plan
SET search_path FROM CURRENT
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
