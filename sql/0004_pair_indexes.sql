-- simhash-pg revision 0004: pair block indexes (issue 6).
-- Applied by migrations/versions/0004_pair_indexes.py (then 0004_functions.sql), undone by
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

