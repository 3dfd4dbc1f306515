-- Undo revision 0003: the verification columns and their index go, and with
-- them the verify mode the store recorded.
DROP INDEX IF EXISTS simhash_documents_sentence_sig_idx;
ALTER TABLE simhash_documents DROP COLUMN IF EXISTS sentence_sig;
ALTER TABLE simhash_documents DROP COLUMN IF EXISTS verify_text;
DELETE FROM simhash_meta WHERE name = 'verify';
