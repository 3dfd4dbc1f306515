-- simhash-pg, today's SQL: one row per key across partitions (simhash_keys).
--
-- Today's definitions, exactly as `alembic upgrade head` leaves them (see
-- sql/current/hamming.sql; tests/test_sql_current.py keeps them equal).
--
-- simhash_documents is partitioned by day (partitions.sql), and a
-- partitioned table's unique indexes must contain the partition key: a key
-- is unique through simhash_keys instead, whatever inserts the row (the
-- store, COPY, an analyst's INSERT). Row triggers on the partitioned table
-- (cloned to every partition, present and future) keep it. SECURITY
-- DEFINER: a role allowed to write simhash_documents needs no grant on
-- simhash_keys. AFTER, not BEFORE, row triggers: a BEFORE row trigger would
-- turn off COPY's multi-row inserts, for every row. The delete trigger also
-- does what a foreign key's ON DELETE SET NULL on duplicate_of did.
-- (docs/design.md, "Time: partitions by day, week or month"; docs/operations.md,
-- "Retention".)

CREATE OR REPLACE FUNCTION simhash_keys_on_insert() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER AS $$
BEGIN
    -- The same id again is the same row moved to another partition (an
    -- UPDATE of created_at): follow it. Another id is a duplicate key.
    INSERT INTO simhash_keys AS k (key, id, created_at)
    VALUES (NEW.key, NEW.id, NEW.created_at)
    ON CONFLICT (key) DO UPDATE SET created_at = EXCLUDED.created_at WHERE k.id = EXCLUDED.id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'duplicate key value violates unique constraint "simhash_keys_pkey"'
            USING ERRCODE = 'unique_violation', CONSTRAINT = 'simhash_keys_pkey',
                  TABLE = 'simhash_keys', DETAIL = format('Key (key)=(%s) already exists.', NEW.key);
    END IF;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION simhash_keys_on_delete() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER AS $$
BEGIN
    IF OLD.key IS NOT NULL THEN
        DELETE FROM simhash_keys k
        WHERE k.key = OLD.key AND k.id = OLD.id AND k.created_at = OLD.created_at;
    END IF;
    -- what the foreign key's ON DELETE SET NULL did (not while
    -- simhash_create_partition moves rows out of the default partition)
    IF current_setting('simhash.moving_rows', true) IS DISTINCT FROM 'on' THEN
        UPDATE simhash_documents d SET duplicate_of = NULL WHERE d.duplicate_of = OLD.id;
    END IF;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION simhash_keys_on_update() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER AS $$
BEGIN
    IF OLD.key IS NOT NULL THEN
        DELETE FROM simhash_keys k
        WHERE k.key = OLD.key AND k.id = OLD.id AND k.created_at = OLD.created_at;
    END IF;
    IF NEW.key IS NOT NULL THEN
        INSERT INTO simhash_keys (key, id, created_at) VALUES (NEW.key, NEW.id, NEW.created_at);
    END IF;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION simhash_keys_on_truncate() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER AS $$
BEGIN
    TRUNCATE simhash_keys;
    RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER simhash_keys_insert AFTER INSERT ON simhash_documents
    FOR EACH ROW WHEN (NEW.key IS NOT NULL) EXECUTE FUNCTION simhash_keys_on_insert();
CREATE OR REPLACE TRIGGER simhash_keys_delete AFTER DELETE ON simhash_documents
    FOR EACH ROW EXECUTE FUNCTION simhash_keys_on_delete();
CREATE OR REPLACE TRIGGER simhash_keys_update AFTER UPDATE OF key, id, created_at ON simhash_documents
    FOR EACH ROW WHEN (OLD.key IS DISTINCT FROM NEW.key OR OLD.id <> NEW.id
                       OR OLD.created_at <> NEW.created_at)
    EXECUTE FUNCTION simhash_keys_on_update();
CREATE OR REPLACE TRIGGER simhash_keys_truncate AFTER TRUNCATE ON simhash_documents
    FOR EACH STATEMENT EXECUTE FUNCTION simhash_keys_on_truncate();

-- Trigger functions only: nobody calls them.
REVOKE EXECUTE ON FUNCTION
    simhash_keys_on_insert(),
    simhash_keys_on_delete(),
    simhash_keys_on_update(),
    simhash_keys_on_truncate()
FROM PUBLIC;
DO $$
BEGIN
    -- SECURITY DEFINER: no schema on the search path but ours
    EXECUTE format('ALTER FUNCTION simhash_keys_on_insert() SET search_path = %I, pg_temp',
                   current_schema());
    EXECUTE format('ALTER FUNCTION simhash_keys_on_delete() SET search_path = %I, pg_temp',
                   current_schema());
    EXECUTE format('ALTER FUNCTION simhash_keys_on_update() SET search_path = %I, pg_temp',
                   current_schema());
    EXECUTE format('ALTER FUNCTION simhash_keys_on_truncate() SET search_path = %I, pg_temp',
                   current_schema());
END
$$;
