-- simhash-pg revision 0004: pair block indexes (issue 6).
-- Applied by migrations/versions/0004_pair_indexes.py, undone by
-- sql/0004_pair_indexes_drop.sql (the 0001 indexes and functions again).
--
-- The k <= 3 search of revision 0001 looks up each of the four blocks by
-- equality and checks every row sharing it: N / 65536 index tuples per block
-- (763 at 50M rows, ~3,050 per query). A second block in each index lets the
-- search reach the ~0.01 rows that can match instead:
--
-- Lemma. Blocks b0..b3 in cyclic order (b3 is followed by b0). If
-- hamming(a, q) <= 3, then for some i block i of a and q is equal and block
-- i+1 (mod 4) differs in at most 1 bit; if hamming(a, q) <= 1, for some i
-- both are equal.
-- Proof. At most 3 differing bits over 4 blocks leave a block with none (a
-- zero block). Suppose every zero block's successor differs in >= 2 bits.
-- Two or more zero blocks have distinct successors, all non-zero: >= 2 + 2 =
-- 4 bits. Exactly one zero block: its successor has >= 2 bits, the other two
-- blocks >= 1 each: >= 4 bits. Both contradict <= 3. For <= 1 bit, at most
-- one block differs and the two blocks after it are equal.
--
-- So each block index becomes (b_i, b_(i+1 mod 4), fingerprint), and the
-- k <= 3 search probes, per i, b_i = q_i AND b_(i+1) = ANY (the 17 values
-- within 1 bit of q_(i+1); 1 value for k <= 1), with the Hamming check on the
-- fingerprint inside the index-only scan. The smallint fits in the alignment
-- padding before the bigint: the indexes are exactly as large as before
-- (measured: 31.50 vs 31.53 bytes/row at 10M, docs/scaling.md). Probes by
-- the leading block alone (k = 4..15) use the same indexes unchanged.
--
-- 17 values per index cost more to set up than a handful of rows per block
-- value cost to check: on small tables the single-block form stays faster
-- (pair / single p50, same run: 1.8x at 1M rows, 1.25x at 5M, 1.0x at 10M,
-- 0.37x at 50M). The functions choose by the table's size, pg_class.reltuples
-- (kept by ANALYZE and autovacuum; -1, never counted, is taken as 0): the
-- pair form from 10,000,000 rows on. Once the table is partitioned (revision
-- 0005) each partition's indexes are probed on their own, so the size that
-- counts is the largest partition's (autovacuum never analyses the parent). The setting
-- simhash.pair_probe_min_rows overrides that threshold (SET
-- simhash.pair_probe_min_rows = 0: always the pair form; the tests force
-- both forms this way). Both forms are exact.

DROP INDEX simhash_documents_b0_idx;
DROP INDEX simhash_documents_b1_idx;
DROP INDEX simhash_documents_b2_idx;
DROP INDEX simhash_documents_b3_idx;
CREATE INDEX simhash_documents_b0_idx ON simhash_documents (b0, b1, fingerprint)
    WITH (deduplicate_items = off);
CREATE INDEX simhash_documents_b1_idx ON simhash_documents (b1, b2, fingerprint)
    WITH (deduplicate_items = off);
CREATE INDEX simhash_documents_b2_idx ON simhash_documents (b2, b3, fingerprint)
    WITH (deduplicate_items = off);
CREATE INDEX simhash_documents_b3_idx ON simhash_documents (b3, b0, fingerprint)
    WITH (deduplicate_items = off);

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
