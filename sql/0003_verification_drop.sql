-- Undo revision 0003: the verification columns and their index go (the
-- texts are not kept, so a re-upgrade cannot recompute them: it records the
-- rows as unverified instead, see 0003_verification.sql). The verify mode
-- the store recorded stays in simhash_meta, so that a re-upgraded store
-- verifies and keeps texts as before; revision 0002 does not read it.
DROP INDEX IF EXISTS simhash_documents_sentence_sig_idx;
ALTER TABLE simhash_documents DROP COLUMN IF EXISTS sentence_sig;
ALTER TABLE simhash_documents DROP COLUMN IF EXISTS verify_text;
DELETE FROM simhash_meta WHERE name = 'unverified_rows';
