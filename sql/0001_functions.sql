-- simhash-pg SQL functions, revision 0001 (simhash_add: 0001_add.sql).
-- Applied by migrations/versions/0001_initial.py. CREATE OR REPLACE: the
-- downgrade of revision 0004 runs this file again to restore these bodies
-- (same signatures, so the grants of revision 0002 stay). Fingerprints are bigint
-- (the unsigned 64-bit value in two's complement), blocks smallint
-- (16-bit block value - 32768), as in docs/design.md ("Where the bits live").
--
-- Search strategy (exact for every k in 0..64):
--   * pigeonhole: if hamming(a, b) <= k, some 16-bit block differs in at most
--     floor(k/4) bits, so probing every block value within that radius of the
--     query's block, in all four block indexes, finds every match;
--   * candidates are checked against hamming <= k inside index-only scans of
--     the (b_i, fingerprint) indexes, and only the matches visit the table
--     (the plans: EXPLAIN through auto_explain, see the README);
--   * above k = 15 (radius 4: 2,517 probes per block, ~15% of a uniform table
--     per block) a sequential scan is cheaper than probing; measured by
--     `simhash-pg bench store`, see the README.

-- Errors are raised by small plpgsql helpers: LANGUAGE sql cannot RAISE.
-- IMMUTABLE so that calling SQL functions stay inlinable; they only ever
-- raise or return their argument.
CREATE OR REPLACE FUNCTION simhash_check_k(k integer) RETURNS integer
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
    IF k IS NULL OR k < 0 OR k > 64 THEN
        RAISE EXCEPTION 'simhash: k must be between 0 and 64 (a 64-bit fingerprint), got %',
            coalesce(k::text, 'NULL')
            USING ERRCODE = '22023';  -- invalid_parameter_value
    END IF;
    RETURN k;
END
$$;

CREATE OR REPLACE FUNCTION simhash_bad_block_number(i integer) RETURNS smallint
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
    RAISE EXCEPTION 'simhash: block number must be 0, 1, 2 or 3, got %', coalesce(i::text, 'NULL')
        USING ERRCODE = '22023';
END
$$;

-- popcount(a XOR b). PostgreSQL has no bit_count(bigint): cast to bit(64).
CREATE OR REPLACE FUNCTION simhash_hamming(a bigint, b bigint) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT bit_count((a # b)::bit(64))::integer
$$;

-- Block i (0 = bits 48-63 ... 3 = bits 0-15) as stored in column b<i>.
CREATE OR REPLACE FUNCTION simhash_block(fp bigint, i integer) RETURNS smallint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN i BETWEEN 0 AND 3
                THEN (((fp >> (48 - 16 * i)) & 65535) - 32768)::smallint
                ELSE simhash_bad_block_number(i) END
$$;

-- Every 16-bit mask with at most r bits set, fewest bits first
-- (1, 17, 137, 697, 2517 ... values for r = 0, 1, 2, 3, 4).
CREATE OR REPLACE FUNCTION simhash_masks(r integer) RETURNS integer[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    WITH RECURSIVE m (mask, top, n) AS (
        SELECT 0, -1, 0
        UNION ALL
        SELECT m.mask | (1 << b.b), b.b, m.n + 1
        FROM m, generate_series(m.top + 1, 15) AS b (b)
        WHERE m.n < least(r, 16)
    )
    SELECT array_agg(mask ORDER BY n, mask) FROM m
$$;

-- The block values (as stored smallints) within radius r of block value b.
CREATE OR REPLACE FUNCTION simhash_probes(b smallint, r integer) RETURNS smallint[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN r <= 0 THEN ARRAY[b]
                ELSE ARRAY(SELECT (((b::integer + 32768) # m) - 32768)::smallint
                           FROM unnest(simhash_masks(r)) AS m) END
$$;

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

-- The neighbours of a stored document, leaving out the document itself.
CREATE OR REPLACE FUNCTION simhash_near_id(doc_id bigint, k integer DEFAULT 3)
RETURNS TABLE (id bigint, key text, distance integer)
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT n.id, n.key, n.distance
    FROM simhash_documents s
    CROSS JOIN LATERAL simhash_near(s.fingerprint, k) AS n
    WHERE s.id = doc_id AND n.id <> s.id
    ORDER BY n.distance, n.id
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

-- Every pair of stored documents within k, a < b. Block self-joins (hash
-- joins on equal blocks for k <= 3, probes for k <= 15), a nested scan above.
CREATE OR REPLACE FUNCTION simhash_pairs(k integer DEFAULT 3)
RETURNS TABLE (a bigint, b bigint, distance integer)
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT p.a, p.b, p.distance FROM (
        SELECT x.id AS a, y.id AS b, simhash_hamming(x.fingerprint, y.fingerprint) AS distance
        FROM simhash_documents x JOIN simhash_documents y ON y.b0 = x.b0 AND y.id > x.id
        WHERE simhash_check_k(k) < 4 AND simhash_hamming(x.fingerprint, y.fingerprint) <= k
        UNION
        SELECT x.id, y.id, simhash_hamming(x.fingerprint, y.fingerprint)
        FROM simhash_documents x JOIN simhash_documents y ON y.b1 = x.b1 AND y.id > x.id
        WHERE simhash_check_k(k) < 4 AND simhash_hamming(x.fingerprint, y.fingerprint) <= k
        UNION
        SELECT x.id, y.id, simhash_hamming(x.fingerprint, y.fingerprint)
        FROM simhash_documents x JOIN simhash_documents y ON y.b2 = x.b2 AND y.id > x.id
        WHERE simhash_check_k(k) < 4 AND simhash_hamming(x.fingerprint, y.fingerprint) <= k
        UNION
        SELECT x.id, y.id, simhash_hamming(x.fingerprint, y.fingerprint)
        FROM simhash_documents x JOIN simhash_documents y ON y.b3 = x.b3 AND y.id > x.id
        WHERE simhash_check_k(k) < 4 AND simhash_hamming(x.fingerprint, y.fingerprint) <= k
        UNION
        SELECT x.id, n.id, n.distance
        FROM simhash_documents x CROSS JOIN LATERAL simhash_near(x.fingerprint, k) AS n
        WHERE simhash_check_k(k) >= 4 AND n.id > x.id
    ) AS p
    ORDER BY p.a, p.b
$$;
