-- Undo revision 0004: the (b_i, fingerprint) block indexes and the
-- simhash_near / simhash_near_many of revision 0001, verbatim (same
-- signatures: CREATE OR REPLACE keeps the grants of revision 0002).

DROP INDEX simhash_documents_b0_idx;
DROP INDEX simhash_documents_b1_idx;
DROP INDEX simhash_documents_b2_idx;
DROP INDEX simhash_documents_b3_idx;
CREATE INDEX simhash_documents_b0_idx ON simhash_documents (b0, fingerprint)
    WITH (deduplicate_items = off);
CREATE INDEX simhash_documents_b1_idx ON simhash_documents (b1, fingerprint)
    WITH (deduplicate_items = off);
CREATE INDEX simhash_documents_b2_idx ON simhash_documents (b2, fingerprint)
    WITH (deduplicate_items = off);
CREATE INDEX simhash_documents_b3_idx ON simhash_documents (b3, fingerprint)
    WITH (deduplicate_items = off);

-- Stored documents within Hamming distance k of fingerprint fp, nearest first.
--
-- plpgsql rather than an inlinable SQL function, by measurement: inlined, the
-- UNION query was planned at every call (0.5-0.7 ms, 5x the execution time),
-- and its generic plan went parallel because of the scan branch (22 ms). Here
-- each k range is its own static query, planned once per session and cached.
-- (The function's SET also keeps it from being inlined; that is the point.)
-- Candidates are checked inside index-only scans of the (b_i, fingerprint)
-- indexes; only the matches are then read from the table.
CREATE OR REPLACE FUNCTION simhash_near(fp bigint, k integer DEFAULT 3)
RETURNS TABLE (id bigint, key text, distance integer)
LANGUAGE plpgsql STABLE PARALLEL SAFE ROWS 10
-- Generic plans, always: custom plans cost more to make than to run, and
-- their estimates never let the plan cache settle on the generic plan.
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
BEGIN
    IF k IS NULL OR k < 0 OR k > 64 THEN
        PERFORM simhash_check_k(k);  -- raises; the IF is a cheap simple expression
    END IF;
    IF k <= 3 THEN
        -- pigeonhole: a match shares at least one whole block
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
          ON d.b0 = simhash_block(f.fingerprint, 0) AND d.fingerprint = f.fingerprint
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
          ON d.b0 = simhash_block(f.fingerprint, 0) AND d.fingerprint = f.fingerprint
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

-- Many queries in one round trip: query is the 1-based position in fps.
-- Set-based for k <= 15 (one join over all queries: a per-query function
-- call cost ~3x more, measured on add_many batches), per query above.
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
    IF k <= 3 THEN
        RETURN QUERY
        SELECT f.ord::integer, d.id, d.key, simhash_hamming(d.fingerprint, fps[f.ord])
        FROM (
            SELECT q.ord, c.fingerprint
            FROM unnest(fps) WITH ORDINALITY AS q (fp, ord)
            JOIN simhash_documents c
              ON c.b0 = simhash_block(q.fp, 0) AND simhash_hamming(c.fingerprint, q.fp) <= k
            UNION
            SELECT q.ord, c.fingerprint
            FROM unnest(fps) WITH ORDINALITY AS q (fp, ord)
            JOIN simhash_documents c
              ON c.b1 = simhash_block(q.fp, 1) AND simhash_hamming(c.fingerprint, q.fp) <= k
            UNION
            SELECT q.ord, c.fingerprint
            FROM unnest(fps) WITH ORDINALITY AS q (fp, ord)
            JOIN simhash_documents c
              ON c.b2 = simhash_block(q.fp, 2) AND simhash_hamming(c.fingerprint, q.fp) <= k
            UNION
            SELECT q.ord, c.fingerprint
            FROM unnest(fps) WITH ORDINALITY AS q (fp, ord)
            JOIN simhash_documents c
              ON c.b3 = simhash_block(q.fp, 3) AND simhash_hamming(c.fingerprint, q.fp) <= k
        ) AS f
        JOIN simhash_documents d
          ON d.b0 = simhash_block(f.fingerprint, 0) AND d.fingerprint = f.fingerprint
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
          ON d.b0 = simhash_block(f.fingerprint, 0) AND d.fingerprint = f.fingerprint
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
