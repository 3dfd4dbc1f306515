-- simhash-pg revision 0004: simhash_near and simhash_near_many with the pair
-- form of k <= 3 (the lemma is in 0004_pair_indexes.sql). Applied by
-- migrations/versions/0004_pair_indexes.py after that file; run again by the
-- downgrade of revision 0006 to restore these bodies.
--
-- Same signatures as revision 0001: CREATE OR REPLACE keeps the grants of
-- revision 0002. The join back from a matching fingerprint to its row gives
-- b0 and b1, the two leading columns of the b0 index: one index descent.
-- (The 0001 join, on b0 and fingerprint only, matches no index prefix past
-- b0 here: at 50M rows its generic plan for k = 6 became a parallel hash
-- join over the whole table, 6.4 s.)
CREATE OR REPLACE FUNCTION simhash_near(fp bigint, k integer DEFAULT 3)
RETURNS TABLE (id bigint, key text, distance integer)
LANGUAGE plpgsql STABLE PARALLEL SAFE ROWS 10
-- Generic plans, always (see 0001_functions.sql): each branch below is a
-- static query, planned once per session.
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
BEGIN
    IF k IS NULL OR k < 0 OR k > 64 THEN
        PERFORM simhash_check_k(k);  -- raises; the IF is a cheap simple expression
    END IF;
    IF k <= 3 AND (SELECT coalesce(max(greatest(t.reltuples, 0)), 0)
            FROM (SELECT 'simhash_documents'::regclass::oid AS oid
                  UNION ALL
                  SELECT i.inhrelid FROM pg_catalog.pg_inherits i
                  WHERE i.inhparent = 'simhash_documents'::regclass) AS r
            JOIN pg_catalog.pg_class t ON t.oid = r.oid
            WHERE t.relkind = 'r')
           >= coalesce(nullif(current_setting('simhash.pair_probe_min_rows', true), '')::real,
                       1e7) THEN
        -- the lemma above: block i equal, block i+1 within (k + 2) / 4 bits
        -- (1 bit for k = 2, 3; equal for k = 0, 1)
        RETURN QUERY
        SELECT d.id, d.key, simhash_hamming(d.fingerprint, fp)
        FROM (
            SELECT c.fingerprint FROM simhash_documents c
            WHERE c.b0 = simhash_block(fp, 0)
              AND c.b1 = ANY (simhash_probes(simhash_block(fp, 1), (k + 2) / 4))
              AND simhash_hamming(c.fingerprint, fp) <= k
            UNION
            SELECT c.fingerprint FROM simhash_documents c
            WHERE c.b1 = simhash_block(fp, 1)
              AND c.b2 = ANY (simhash_probes(simhash_block(fp, 2), (k + 2) / 4))
              AND simhash_hamming(c.fingerprint, fp) <= k
            UNION
            SELECT c.fingerprint FROM simhash_documents c
            WHERE c.b2 = simhash_block(fp, 2)
              AND c.b3 = ANY (simhash_probes(simhash_block(fp, 3), (k + 2) / 4))
              AND simhash_hamming(c.fingerprint, fp) <= k
            UNION
            SELECT c.fingerprint FROM simhash_documents c
            WHERE c.b3 = simhash_block(fp, 3)
              AND c.b0 = ANY (simhash_probes(simhash_block(fp, 0), (k + 2) / 4))
              AND simhash_hamming(c.fingerprint, fp) <= k
        ) AS f
        JOIN simhash_documents d
          ON d.b0 = simhash_block(f.fingerprint, 0) AND d.b1 = simhash_block(f.fingerprint, 1)
         AND d.fingerprint = f.fingerprint
        ORDER BY 3, 1;
    ELSIF k <= 3 THEN
        -- small table: a match shares at least one whole block (pigeonhole)
        RETURN QUERY
        SELECT d.id, d.key, simhash_hamming(d.fingerprint, fp)
        FROM (
            SELECT c.fingerprint FROM simhash_documents c
            WHERE c.b0 = simhash_block(fp, 0)
              AND simhash_hamming(c.fingerprint, fp) <= k
            UNION
            SELECT c.fingerprint FROM simhash_documents c
            WHERE c.b1 = simhash_block(fp, 1)
              AND simhash_hamming(c.fingerprint, fp) <= k
            UNION
            SELECT c.fingerprint FROM simhash_documents c
            WHERE c.b2 = simhash_block(fp, 2)
              AND simhash_hamming(c.fingerprint, fp) <= k
            UNION
            SELECT c.fingerprint FROM simhash_documents c
            WHERE c.b3 = simhash_block(fp, 3)
              AND simhash_hamming(c.fingerprint, fp) <= k
        ) AS f
        JOIN simhash_documents d
          ON d.b0 = simhash_block(f.fingerprint, 0) AND d.b1 = simhash_block(f.fingerprint, 1)
         AND d.fingerprint = f.fingerprint
        ORDER BY 3, 1;
    ELSIF k <= 15 THEN
        -- some block is within floor(k/4) bits: probe every such block value
        RETURN QUERY
        SELECT d.id, d.key, simhash_hamming(d.fingerprint, fp)
        FROM (
            SELECT c.fingerprint FROM simhash_documents c
            WHERE c.b0 = ANY (simhash_probes(simhash_block(fp, 0), k / 4))
              AND simhash_hamming(c.fingerprint, fp) <= k
            UNION
            SELECT c.fingerprint FROM simhash_documents c
            WHERE c.b1 = ANY (simhash_probes(simhash_block(fp, 1), k / 4))
              AND simhash_hamming(c.fingerprint, fp) <= k
            UNION
            SELECT c.fingerprint FROM simhash_documents c
            WHERE c.b2 = ANY (simhash_probes(simhash_block(fp, 2), k / 4))
              AND simhash_hamming(c.fingerprint, fp) <= k
            UNION
            SELECT c.fingerprint FROM simhash_documents c
            WHERE c.b3 = ANY (simhash_probes(simhash_block(fp, 3), k / 4))
              AND simhash_hamming(c.fingerprint, fp) <= k
        ) AS f
        JOIN simhash_documents d
          ON d.b0 = simhash_block(f.fingerprint, 0) AND d.b1 = simhash_block(f.fingerprint, 1)
         AND d.fingerprint = f.fingerprint
        ORDER BY 3, 1;
    ELSE
        -- probing would read most of the indexes: scanning the table is cheaper
        RETURN QUERY
        SELECT d.id, d.key, simhash_hamming(d.fingerprint, fp)
        FROM simhash_documents d
        WHERE simhash_hamming(d.fingerprint, fp) <= k
        ORDER BY 3, 1;
    END IF;
END
$$;

-- Many queries in one round trip, set-based for k <= 15 (see 0001), with the
-- same choice of form as simhash_near.
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
    IF k <= 3 AND (SELECT coalesce(max(greatest(t.reltuples, 0)), 0)
            FROM (SELECT 'simhash_documents'::regclass::oid AS oid
                  UNION ALL
                  SELECT i.inhrelid FROM pg_catalog.pg_inherits i
                  WHERE i.inhparent = 'simhash_documents'::regclass) AS r
            JOIN pg_catalog.pg_class t ON t.oid = r.oid
            WHERE t.relkind = 'r')
           >= coalesce(nullif(current_setting('simhash.pair_probe_min_rows', true), '')::real,
                       1e7) THEN
        RETURN QUERY
        SELECT f.ord::integer, d.id, d.key, simhash_hamming(d.fingerprint, fps[f.ord])
        FROM (
            SELECT q.ord, c.fingerprint
            FROM unnest(fps) WITH ORDINALITY AS q (fp, ord)
            JOIN simhash_documents c
              ON c.b0 = simhash_block(q.fp, 0)
             AND c.b1 = ANY (simhash_probes(simhash_block(q.fp, 1), (k + 2) / 4))
             AND simhash_hamming(c.fingerprint, q.fp) <= k
            UNION
            SELECT q.ord, c.fingerprint
            FROM unnest(fps) WITH ORDINALITY AS q (fp, ord)
            JOIN simhash_documents c
              ON c.b1 = simhash_block(q.fp, 1)
             AND c.b2 = ANY (simhash_probes(simhash_block(q.fp, 2), (k + 2) / 4))
             AND simhash_hamming(c.fingerprint, q.fp) <= k
            UNION
            SELECT q.ord, c.fingerprint
            FROM unnest(fps) WITH ORDINALITY AS q (fp, ord)
            JOIN simhash_documents c
              ON c.b2 = simhash_block(q.fp, 2)
             AND c.b3 = ANY (simhash_probes(simhash_block(q.fp, 3), (k + 2) / 4))
             AND simhash_hamming(c.fingerprint, q.fp) <= k
            UNION
            SELECT q.ord, c.fingerprint
            FROM unnest(fps) WITH ORDINALITY AS q (fp, ord)
            JOIN simhash_documents c
              ON c.b3 = simhash_block(q.fp, 3)
             AND c.b0 = ANY (simhash_probes(simhash_block(q.fp, 0), (k + 2) / 4))
             AND simhash_hamming(c.fingerprint, q.fp) <= k
        ) AS f
        JOIN simhash_documents d
          ON d.b0 = simhash_block(f.fingerprint, 0) AND d.b1 = simhash_block(f.fingerprint, 1)
         AND d.fingerprint = f.fingerprint
        ORDER BY 1, 4, 2;
    ELSIF k <= 3 THEN
        RETURN QUERY
        SELECT f.ord::integer, d.id, d.key, simhash_hamming(d.fingerprint, fps[f.ord])
        FROM (
            SELECT q.ord, c.fingerprint
            FROM unnest(fps) WITH ORDINALITY AS q (fp, ord)
            JOIN simhash_documents c
              ON c.b0 = simhash_block(q.fp, 0)
             AND simhash_hamming(c.fingerprint, q.fp) <= k
            UNION
            SELECT q.ord, c.fingerprint
            FROM unnest(fps) WITH ORDINALITY AS q (fp, ord)
            JOIN simhash_documents c
              ON c.b1 = simhash_block(q.fp, 1)
             AND simhash_hamming(c.fingerprint, q.fp) <= k
            UNION
            SELECT q.ord, c.fingerprint
            FROM unnest(fps) WITH ORDINALITY AS q (fp, ord)
            JOIN simhash_documents c
              ON c.b2 = simhash_block(q.fp, 2)
             AND simhash_hamming(c.fingerprint, q.fp) <= k
            UNION
            SELECT q.ord, c.fingerprint
            FROM unnest(fps) WITH ORDINALITY AS q (fp, ord)
            JOIN simhash_documents c
              ON c.b3 = simhash_block(q.fp, 3)
             AND simhash_hamming(c.fingerprint, q.fp) <= k
        ) AS f
        JOIN simhash_documents d
          ON d.b0 = simhash_block(f.fingerprint, 0) AND d.b1 = simhash_block(f.fingerprint, 1)
         AND d.fingerprint = f.fingerprint
        ORDER BY 1, 4, 2;
    ELSIF k <= 15 THEN
        RETURN QUERY
        SELECT f.ord::integer, d.id, d.key, simhash_hamming(d.fingerprint, fps[f.ord])
        FROM (
            SELECT q.ord, c.fingerprint
            FROM unnest(fps) WITH ORDINALITY AS q (fp, ord)
            JOIN simhash_documents c
              ON c.b0 = ANY (simhash_probes(simhash_block(q.fp, 0), k / 4)) AND simhash_hamming(c.fingerprint, q.fp) <= k
            UNION
            SELECT q.ord, c.fingerprint
            FROM unnest(fps) WITH ORDINALITY AS q (fp, ord)
            JOIN simhash_documents c
              ON c.b1 = ANY (simhash_probes(simhash_block(q.fp, 1), k / 4)) AND simhash_hamming(c.fingerprint, q.fp) <= k
            UNION
            SELECT q.ord, c.fingerprint
            FROM unnest(fps) WITH ORDINALITY AS q (fp, ord)
            JOIN simhash_documents c
              ON c.b2 = ANY (simhash_probes(simhash_block(q.fp, 2), k / 4)) AND simhash_hamming(c.fingerprint, q.fp) <= k
            UNION
            SELECT q.ord, c.fingerprint
            FROM unnest(fps) WITH ORDINALITY AS q (fp, ord)
            JOIN simhash_documents c
              ON c.b3 = ANY (simhash_probes(simhash_block(q.fp, 3), k / 4)) AND simhash_hamming(c.fingerprint, q.fp) <= k
        ) AS f
        JOIN simhash_documents d
          ON d.b0 = simhash_block(f.fingerprint, 0) AND d.b1 = simhash_block(f.fingerprint, 1)
         AND d.fingerprint = f.fingerprint
        ORDER BY 1, 4, 2;
    ELSE
        RETURN QUERY
        SELECT q.ord::integer, n.id, n.key, n.distance
        FROM unnest(fps) WITH ORDINALITY AS q (fp, ord)
        CROSS JOIN LATERAL simhash_near(q.fp, k) AS n
        ORDER BY 1, 4, 2;
    END IF;
END
$$;
