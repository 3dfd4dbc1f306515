-- Undo revision 0001 (alembic downgrade base).
DROP FUNCTION IF EXISTS simhash_add(bigint, text, jsonb, integer, text);
DROP FUNCTION IF EXISTS simhash_pairs(integer);
DROP FUNCTION IF EXISTS simhash_near_many(bigint[], integer);
DROP FUNCTION IF EXISTS simhash_near_id(bigint, integer);
DROP FUNCTION IF EXISTS simhash_near(bigint, integer);
DROP FUNCTION IF EXISTS simhash_probes(smallint, integer);
DROP FUNCTION IF EXISTS simhash_masks(integer);
DROP FUNCTION IF EXISTS simhash_block(bigint, integer);
DROP FUNCTION IF EXISTS simhash_hamming(bigint, bigint);
DROP FUNCTION IF EXISTS simhash_bad_block_number(integer);
DROP FUNCTION IF EXISTS simhash_check_k(integer);
DROP TABLE IF EXISTS simhash_meta;
DROP TABLE IF EXISTS simhash_documents;
