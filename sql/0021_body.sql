-- simhash-pg revision 0021: each row keeps its text as written (issue 32,
-- "the text as written"). Applied by migrations/versions/0021_body.py; undone
-- by sql/0021_body_drop.sql.
--
-- body: the visible text the fingerprint was taken from (markup stripped,
-- entities decoded, spaces, punctuation and case kept), for people: the web
-- page shows it and marks the passages two documents share. verify_text
-- (revision 0003) stays what verification compares. NULL for fingerprints
-- (ints), for rows stored before this revision, and in a store opened with
-- keep_text=False. Nothing searches it, so it has no index.
--
-- Added to the partitioned parent, so every partition (made before or
-- after) has it. A nullable column without a default: a catalog change, no
-- row is rewritten.
ALTER TABLE simhash_documents ADD COLUMN body text;

COMMENT ON COLUMN simhash_documents.body IS
    'simhash-pg: the text as written (its visible text, markup stripped); NULL: a fingerprint, '
    'a row stored before revision 0021, or a store with keep_text=False';
