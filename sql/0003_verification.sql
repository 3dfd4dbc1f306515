-- simhash-pg revision 0003: what verification needs (issue 7).
-- Applied by migrations/versions/0003_verification.py.
--
-- verify_text: the document's verification text (simhash_pg.verify:
-- normalised, letters, digits and marks only), kept only when the store's
-- verify mode asks for it: under 'short' for texts under 100 characters,
-- under 'all' for every text. NULL otherwise, and for rows added as bare
-- fingerprints. A column rather than a side table: it goes with its row when
-- a row is deleted or a partition dropped, and costs nothing when NULL.
-- Long values are compressed and moved out of line (TOAST) by PostgreSQL.
--
-- sentence_sig: a 64-bit hash of the document's three longest sentences
-- (simhash_pg.signatures), matched by equality: it finds a reprint whose
-- boilerplate changed but whose core sentences did not. Kept under 'all'.
-- The index is partial: rows without a signature cost nothing in it.
ALTER TABLE simhash_documents ADD COLUMN verify_text text NULL;
ALTER TABLE simhash_documents ADD COLUMN sentence_sig bigint NULL;
CREATE INDEX simhash_documents_sentence_sig_idx ON simhash_documents (sentence_sig)
    WHERE sentence_sig IS NOT NULL;

-- Rows already here (a store made before 0003, or one re-upgraded after a
-- downgrade dropped these columns) have no verification data, and it cannot
-- be recomputed: the texts themselves are not kept. Record which rows they
-- are, ids up to max_id stored until now (both: ids start again after
-- TRUNCATE ... RESTART IDENTITY), so that verification judges them by their
-- fingerprint alone (simhash_pg.verify.TEXT_LOST) instead of rejecting a
-- short text that is identical to one of them.
DELETE FROM simhash_meta WHERE name = 'unverified_rows';
INSERT INTO simhash_meta (name, value)
SELECT 'unverified_rows', jsonb_build_object('max_id', max(id), 'stored_until', now())
FROM simhash_documents
HAVING count(*) > 0;
