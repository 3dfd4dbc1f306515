-- simhash-pg, today's SQL: a text's keys in a table of their own (simhash_text_keys).
--
-- Today's definitions, exactly as `alembic upgrade head` leaves them (see
-- sql/current/hamming.sql; tests/test_sql_current.py keeps them equal).
--
-- A row's keys (its sentence hashes, min-hash keys and title keys, all in
-- simhash_documents.sentence_hashes) are looked up by value, and a key held
-- by more than 16 rows is boilerplate that finds nothing. Until revision 0017
-- a GIN index on the array served the look-up. GIN gives bitmap scans only,
-- so a look-up could not stop at the holder cap, and under a generic plan the
-- planner could not see the key: it assumed 0.5% of rows hold it, and once a
-- store passed about 3M rows a sequential scan that stops after 17 matches
-- looked cheaper (25 s a query at 50M rows; issue 28). Here each (key, row)
-- is a row with a btree on the key: an equality the planner estimates at
-- 1 / n_distinct whatever the value, and a scan that stops at the 17th row.
--
-- Partitioned like simhash_documents, partition for partition (same bounds,
-- names simhash_text_keys_<suffix> for simhash_documents_<suffix>), so that
-- retention drops a day's keys with its rows; row triggers on
-- simhash_documents (cloned to every partition) keep it, whatever writes the
-- rows (the store, COPY, an analyst's INSERT, a backfill's UPDATE). SECURITY
-- DEFINER, as the key triggers (keys.sql): a role allowed to write
-- simhash_documents needs no grant here.

-- One function for the three row triggers: the rows of a document's keys are
-- those of its sentence_hashes, distinct, NULLs left out, each with the
-- document's fingerprint (revision 0018: a popular key's look-up ranks its
-- holders by distance without reading them; an UPDATE that moves a row to
-- another partition fires the delete and insert triggers instead).
CREATE OR REPLACE FUNCTION simhash_text_keys_on_write() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        DELETE FROM simhash_text_keys k
        WHERE k.hash = ANY (OLD.sentence_hashes) AND k.id = OLD.id
          AND k.created_at = OLD.created_at;
    END IF;
    IF TG_OP <> 'DELETE' THEN
        INSERT INTO simhash_text_keys (hash, id, created_at, fingerprint)
        SELECT DISTINCT h, NEW.id, NEW.created_at, NEW.fingerprint
        FROM unnest(NEW.sentence_hashes) AS h
        WHERE h IS NOT NULL;
    END IF;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION simhash_text_keys_on_truncate() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER AS $$
BEGIN
    TRUNCATE simhash_text_keys;
    RETURN NULL;
END
$$;

-- WHEN: rows without keys (a fingerprint-only load) cost one NULL test.
CREATE OR REPLACE TRIGGER simhash_text_keys_insert AFTER INSERT ON simhash_documents
    FOR EACH ROW WHEN (NEW.sentence_hashes IS NOT NULL)
    EXECUTE FUNCTION simhash_text_keys_on_write();
CREATE OR REPLACE TRIGGER simhash_text_keys_delete AFTER DELETE ON simhash_documents
    FOR EACH ROW WHEN (OLD.sentence_hashes IS NOT NULL)
    EXECUTE FUNCTION simhash_text_keys_on_write();
CREATE OR REPLACE TRIGGER simhash_text_keys_update
    AFTER UPDATE OF sentence_hashes, id, created_at, fingerprint ON simhash_documents
    FOR EACH ROW WHEN (OLD.sentence_hashes IS DISTINCT FROM NEW.sentence_hashes
                       OR OLD.id <> NEW.id OR OLD.created_at <> NEW.created_at
                       OR OLD.fingerprint <> NEW.fingerprint)
    EXECUTE FUNCTION simhash_text_keys_on_write();
CREATE OR REPLACE TRIGGER simhash_text_keys_truncate AFTER TRUNCATE ON simhash_documents
    FOR EACH STATEMENT EXECUTE FUNCTION simhash_text_keys_on_truncate();

-- The key table's rows of the documents with first_id <= id <= last_id
-- (NULL: no bound), as the insert trigger makes them: for a bulk fill (an
-- upgrade, a benchmark's store) after the documents went in without the
-- trigger. Returns the rows inserted. Rows already there are not checked:
-- fill a range once.
CREATE OR REPLACE FUNCTION simhash_text_keys_fill(first_id bigint DEFAULT NULL,
                                                  last_id bigint DEFAULT NULL)
RETURNS bigint
LANGUAGE sql VOLATILE
SET search_path FROM CURRENT AS $$
    WITH made AS (
        INSERT INTO simhash_text_keys (hash, id, created_at, fingerprint)
        SELECT h.h, d.id, d.created_at, d.fingerprint FROM simhash_documents d
        CROSS JOIN LATERAL (SELECT DISTINCT x AS h FROM unnest(d.sentence_hashes) AS x
                            WHERE x IS NOT NULL) AS h
        WHERE d.sentence_hashes IS NOT NULL
          AND (first_id IS NULL OR d.id >= first_id) AND (last_id IS NULL OR d.id <= last_id)
        RETURNING 1
    ) SELECT count(*) FROM made
$$;
REVOKE EXECUTE ON FUNCTION simhash_text_keys_fill(bigint, bigint) FROM PUBLIC;

-- Trigger functions only: nobody calls them.
REVOKE EXECUTE ON FUNCTION
    simhash_text_keys_on_write(),
    simhash_text_keys_on_truncate()
FROM PUBLIC;
DO $$
BEGIN
    -- SECURITY DEFINER: no schema on the search path but ours
    EXECUTE format('ALTER FUNCTION simhash_text_keys_on_write() SET search_path = %I, pg_temp',
                   current_schema());
    EXECUTE format('ALTER FUNCTION simhash_text_keys_on_truncate() SET search_path = %I, pg_temp',
                   current_schema());
END
$$;
