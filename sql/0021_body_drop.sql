-- Undo revision 0021: the texts as written go (they cannot be rebuilt from
-- what stays; the web page shows the verification text again). Run by
-- migrations/versions/0021_body.py downgrade().
ALTER TABLE simhash_documents DROP COLUMN IF EXISTS body;
