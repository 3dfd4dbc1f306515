-- Undo revision 0004: the (b_i, fingerprint) block indexes. The migration
-- then runs 0001_functions.sql again for the simhash_near / simhash_near_many
-- of revision 0001 (same signatures: CREATE OR REPLACE keeps the grants of
-- revision 0002).

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
