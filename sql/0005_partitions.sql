-- simhash-pg revision 0005: simhash_documents partitioned by day (issue 5).
-- Applied by migrations/versions/0005_partitions.py; undone by
-- sql/0005_partitions_drop.sql.
--
-- At 20-50 million rows a day, deleting old rows bloats the table and its
-- indexes; dropping a whole day's partition costs nothing. So:
--
--   simhash_documents            PARTITION BY RANGE (created_at), no rows of its own
--     simhash_documents_legacy   the table as it was (if it held rows), attached
--                                without copying: FROM (MINVALUE) TO (the day
--                                after its newest row, at least today)
--     simhash_documents_pYYYYMMDD  one per UTC day, made ahead of time by
--                                simhash_ensure_partitions()
--     simhash_documents_default  catches rows no daily partition covers, so an
--                                insert never fails; empty in normal operation
--   simhash_keys                 one row per stored key: "one row per key"
--                                across partitions, kept by triggers
--
-- What changes for users of the table (docs/operations.md):
--   * primary key (id, created_at): a partitioned table's unique constraints
--     must contain the partition key. id comes from one sequence, so it stays
--     unique in practice; the database no longer enforces it alone.
--   * key: unique through simhash_keys (whatever inserts the row: the store,
--     COPY, an analyst's INSERT); the documents keep a plain index on key.
--   * duplicate_of: no FOREIGN KEY (the referenced id is not unique alone).
--     Deleting a row still clears the links to it (a trigger does what ON
--     DELETE SET NULL did); dropping a partition does not, so after a purge a
--     duplicate_of may name a row that is gone: LEFT JOIN.
--   * the SQL search functions (simhash_near, ...) are unchanged and exact:
--     the planner scans every partition's block indexes.
--
-- The indexes of the partitioned table are re-created from the old table's
-- own definitions (pg_get_indexdef), whatever revision made them, so this
-- migration does not depend on the exact block index definitions.

LOCK TABLE simhash_documents IN ACCESS EXCLUSIVE MODE;

-- 1. Take the old table apart: what it holds, its id counter, its indexes.
CREATE TEMP TABLE simhash_0005_state (name text PRIMARY KEY, value text);
CREATE TEMP TABLE simhash_0005_indexes (name text PRIMARY KEY, def text NOT NULL);

DO $$
DECLARE
    v_seq text := pg_get_serial_sequence('simhash_documents', 'id');
    v_last bigint;
    v_called boolean;
    v_upper timestamptz;
    r record;
BEGIN
    EXECUTE format('SELECT last_value, is_called FROM %s', v_seq) INTO v_last, v_called;
    INSERT INTO simhash_0005_state VALUES ('last_value', v_last), ('is_called', v_called);

    -- Secondary indexes other than the unique key index, as defined now
    -- (names and definitions name the table simhash_documents).
    INSERT INTO simhash_0005_indexes
    SELECT i.relname, pg_get_indexdef(x.indexrelid)
    FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
    WHERE x.indrelid = 'simhash_documents'::regclass
      AND NOT x.indisprimary AND NOT x.indisunique;

    -- Foreign keys (duplicate_of -> id) cannot stay: id is no longer unique alone.
    FOR r IN SELECT conname FROM pg_constraint
             WHERE conrelid = 'simhash_documents'::regclass AND contype = 'f' LOOP
        EXECUTE format('ALTER TABLE simhash_documents DROP CONSTRAINT %I', r.conname);
    END LOOP;
    -- Identity on a partitioned table needs PostgreSQL 17: a sequence instead
    -- (made below with the same name, and set to the same value).
    ALTER TABLE simhash_documents ALTER COLUMN id DROP IDENTITY;

    IF NOT EXISTS (SELECT 1 FROM simhash_documents) THEN
        -- Nothing to keep: a fresh store starts with daily partitions only.
        DROP TABLE simhash_documents;
        RETURN;
    END IF;

    -- The legacy partition's upper bound: the UTC day after its newest row,
    -- and at least today (then today's rows get a daily partition).
    SELECT greatest(date_trunc('day', now() AT TIME ZONE 'UTC'),
                    date_trunc('day', max(created_at) AT TIME ZONE 'UTC') + interval '1 day')
           AT TIME ZONE 'UTC'
    INTO v_upper FROM simhash_documents;
    INSERT INTO simhash_0005_state VALUES ('legacy_upper', v_upper::text);

    ALTER TABLE simhash_documents RENAME TO simhash_documents_legacy;
    -- its indexes and primary key take the partition's name
    FOR r IN SELECT i.relname, x.indisprimary
             FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
             WHERE x.indrelid = 'simhash_documents_legacy'::regclass
               AND i.relname LIKE 'simhash\_documents\_%' LOOP
        IF r.indisprimary THEN
            EXECUTE format('ALTER TABLE simhash_documents_legacy RENAME CONSTRAINT %I TO %I',
                           r.relname, 'simhash_documents_legacy_pkey');
        ELSE
            EXECUTE format('ALTER INDEX %I RENAME TO %I', r.relname,
                           'simhash_documents_legacy_' || substr(r.relname, 19));
        END IF;
    END LOOP;
    -- The unique key index and the primary key on id alone cannot be attached
    -- to the partitioned table's (key) and (id, created_at) indexes: build
    -- those two (the only index builds of the migration).
    FOR r IN SELECT i.relname FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
             WHERE x.indrelid = 'simhash_documents_legacy'::regclass
               AND x.indisunique AND NOT x.indisprimary LOOP
        EXECUTE format('DROP INDEX %I', r.relname);
    END LOOP;
    ALTER TABLE simhash_documents_legacy DROP CONSTRAINT simhash_documents_legacy_pkey;
    ALTER TABLE simhash_documents_legacy
        ADD CONSTRAINT simhash_documents_legacy_pkey PRIMARY KEY (id, created_at);
    CREATE INDEX simhash_documents_legacy_key_idx ON simhash_documents_legacy (key)
        WHERE key IS NOT NULL;
    -- A validated CHECK that implies the partition bound: ATTACH then skips
    -- its own scan of the table.
    EXECUTE format('ALTER TABLE simhash_documents_legacy ADD CONSTRAINT'
                   ' simhash_documents_legacy_bound CHECK (created_at < %L)', v_upper);
END
$$;

-- 2. The partitioned table: the same columns, in the same order.
CREATE SEQUENCE simhash_documents_id_seq AS bigint;
CREATE TABLE simhash_documents (
    id           bigint NOT NULL DEFAULT nextval('simhash_documents_id_seq'),
    key          text NULL,
    fingerprint  bigint NOT NULL,
    b0           smallint GENERATED ALWAYS AS ((((fingerprint >> 48) & 65535) - 32768)::smallint) STORED,
    b1           smallint GENERATED ALWAYS AS ((((fingerprint >> 32) & 65535) - 32768)::smallint) STORED,
    b2           smallint GENERATED ALWAYS AS ((((fingerprint >> 16) & 65535) - 32768)::smallint) STORED,
    b3           smallint GENERATED ALWAYS AS (((fingerprint & 65535) - 32768)::smallint) STORED,
    duplicate_of bigint NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    meta         jsonb NULL,
    verify_text  text NULL,
    sentence_sig bigint NULL,
    CONSTRAINT simhash_documents_pkey PRIMARY KEY (id, created_at)
) PARTITION BY RANGE (created_at);
ALTER SEQUENCE simhash_documents_id_seq OWNED BY simhash_documents.id;

-- A plain index on key: look-ups by key (uniqueness is simhash_keys' job).
CREATE INDEX simhash_documents_key_idx ON ONLY simhash_documents (key) WHERE key IS NOT NULL;

DO $$
DECLARE
    v_upper text := (SELECT value FROM simhash_0005_state WHERE name = 'legacy_upper');
    r record;
BEGIN
    PERFORM setval('simhash_documents_id_seq',
                   (SELECT value::bigint FROM simhash_0005_state WHERE name = 'last_value'),
                   (SELECT value::boolean FROM simhash_0005_state WHERE name = 'is_called'));
    -- the old table's secondary indexes, on the parent only (ON ONLY): every
    -- partition then gets its own, the legacy table's are attached
    FOR r IN SELECT name, def FROM simhash_0005_indexes ORDER BY name LOOP
        EXECUTE regexp_replace(r.def, ' ON (\S+) USING ', ' ON ONLY \1 USING ');
    END LOOP;
    IF v_upper IS NULL THEN
        RETURN;
    END IF;
    EXECUTE format('ALTER TABLE simhash_documents ATTACH PARTITION simhash_documents_legacy'
                   ' FOR VALUES FROM (MINVALUE) TO (%L)', v_upper);
    ALTER TABLE simhash_documents_legacy DROP CONSTRAINT simhash_documents_legacy_bound;
    FOR r IN SELECT name FROM simhash_0005_indexes ORDER BY name LOOP
        EXECUTE format('ALTER INDEX %I ATTACH PARTITION %I', r.name,
                       'simhash_documents_legacy_' || substr(r.name, 19));
    END LOOP;
    ALTER INDEX simhash_documents_key_idx ATTACH PARTITION simhash_documents_legacy_key_idx;
    -- the analyst reads every partition through the parent
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'simhash_reader') THEN
        REVOKE ALL ON simhash_documents_legacy FROM simhash_reader;
    END IF;
END
$$;
DROP TABLE simhash_0005_state, simhash_0005_indexes;

-- Rows of days without a partition land here (a day not made ahead of time);
-- simhash_ensure_partitions moves them into their day's partition.
CREATE TABLE simhash_documents_default PARTITION OF simhash_documents DEFAULT
    WITH (autovacuum_vacuum_insert_scale_factor = 0.01, autovacuum_vacuum_insert_threshold = 10000);

-- 3. Keys: unique across partitions.
CREATE TABLE simhash_keys (
    key        text PRIMARY KEY,
    id         bigint NOT NULL,
    created_at timestamptz NOT NULL
);
-- purges delete keys by time; they are appended in time order, as the rows
CREATE INDEX simhash_keys_created_at_idx ON simhash_keys USING brin (created_at);
INSERT INTO simhash_keys (key, id, created_at)
SELECT key, id, created_at FROM simhash_documents WHERE key IS NOT NULL;

-- Triggers on the partitioned table (cloned to every partition, present and
-- future). SECURITY DEFINER: a role allowed to write simhash_documents needs
-- no grant on simhash_keys. AFTER, not BEFORE, row triggers: a BEFORE row
-- trigger would turn off COPY's multi-row inserts, for every row.
CREATE FUNCTION simhash_keys_on_insert() RETURNS trigger
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

CREATE FUNCTION simhash_keys_on_delete() RETURNS trigger
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

CREATE FUNCTION simhash_keys_on_update() RETURNS trigger
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

CREATE FUNCTION simhash_keys_on_truncate() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER AS $$
BEGIN
    TRUNCATE simhash_keys;
    RETURN NULL;
END
$$;

CREATE TRIGGER simhash_keys_insert AFTER INSERT ON simhash_documents
    FOR EACH ROW WHEN (NEW.key IS NOT NULL) EXECUTE FUNCTION simhash_keys_on_insert();
CREATE TRIGGER simhash_keys_delete AFTER DELETE ON simhash_documents
    FOR EACH ROW EXECUTE FUNCTION simhash_keys_on_delete();
CREATE TRIGGER simhash_keys_update AFTER UPDATE OF key, id, created_at ON simhash_documents
    FOR EACH ROW WHEN (OLD.key IS DISTINCT FROM NEW.key OR OLD.id <> NEW.id
                       OR OLD.created_at <> NEW.created_at)
    EXECUTE FUNCTION simhash_keys_on_update();
CREATE TRIGGER simhash_keys_truncate AFTER TRUNCATE ON simhash_documents
    FOR EACH STATEMENT EXECUTE FUNCTION simhash_keys_on_truncate();

-- 4. Partition maintenance.

-- The partitions and their bounds (UTC; -infinity for MINVALUE; the default
-- partition has NULL bounds).
CREATE FUNCTION simhash_partitions()
RETURNS TABLE (partition regclass, lower_bound timestamptz, upper_bound timestamptz,
               is_default boolean)
LANGUAGE sql STABLE
-- the bounds are read back from their text form: one fixed format
SET "TimeZone" = 'UTC' SET "DateStyle" = 'ISO, YMD'
AS $$
    SELECT c.oid::regclass,
           CASE WHEN m.b[1] = 'MINVALUE' THEN '-infinity'::timestamptz
                ELSE btrim(m.b[1], '''')::timestamptz END,
           CASE WHEN m.b[2] = 'MAXVALUE' THEN 'infinity'::timestamptz
                ELSE btrim(m.b[2], '''')::timestamptz END,
           m.b IS NULL
    FROM pg_inherits i
    JOIN pg_class c ON c.oid = i.inhrelid
    LEFT JOIN LATERAL regexp_match(pg_get_expr(c.relpartbound, c.oid),
                                   '^FOR VALUES FROM \((.+)\) TO \((.+)\)$') AS m (b) ON true
    WHERE i.inhparent = 'simhash_documents'::regclass
    ORDER BY 2 NULLS LAST
$$;

-- The partition of one UTC day; NULL if a partition already covers part of
-- it (the legacy partition, or an existing one). Rows of that day waiting in
-- the default partition are moved into it (same ids, keys and links).
-- Lock key (1397246981, 0): one partition maintenance at a time.
CREATE FUNCTION simhash_create_partition(p_day date) RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_name text := 'simhash_documents_p' || to_char(p_day, 'YYYYMMDD');
    v_lo timestamptz := p_day::timestamp AT TIME ZONE 'UTC';
    v_hi timestamptz := (p_day + 1)::timestamp AT TIME ZONE 'UTC';
    v_default regclass;
    v_cols text;
    v_waiting boolean := false;
BEGIN
    IF p_day IS NULL THEN
        RAISE EXCEPTION 'simhash: day must not be NULL' USING ERRCODE = '22004';
    END IF;
    PERFORM pg_advisory_xact_lock(1397246981, 0);
    IF EXISTS (SELECT 1 FROM simhash_partitions() p
               WHERE NOT p.is_default AND p.lower_bound < v_hi AND p.upper_bound > v_lo) THEN
        RETURN NULL;
    END IF;
    SELECT p.partition INTO v_default FROM simhash_partitions() p WHERE p.is_default;
    IF v_default IS NOT NULL THEN
        EXECUTE format('SELECT EXISTS (SELECT 1 FROM %s WHERE created_at >= $1 AND created_at < $2)',
                       v_default) INTO v_waiting USING v_lo, v_hi;
    END IF;
    IF v_waiting THEN
        SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) INTO v_cols
        FROM pg_attribute
        WHERE attrelid = 'simhash_documents'::regclass AND attnum > 0
          AND NOT attisdropped AND attgenerated = '';
        EXECUTE format('CREATE TEMP TABLE simhash_moving ON COMMIT DROP AS SELECT %s FROM %s'
                       ' WHERE created_at >= %L AND created_at < %L', v_cols, v_default,
                       v_lo, v_hi);
        PERFORM set_config('simhash.moving_rows', 'on', true);
        EXECUTE format('DELETE FROM %s WHERE created_at >= $1 AND created_at < $2', v_default)
            USING v_lo, v_hi;
        PERFORM set_config('simhash.moving_rows', 'off', true);
    END IF;
    EXECUTE format('CREATE TABLE %I PARTITION OF simhash_documents FOR VALUES FROM (%L) TO (%L)'
                   ' WITH (autovacuum_vacuum_insert_scale_factor = 0.01,'
                   ' autovacuum_vacuum_insert_threshold = 10000)', v_name, v_lo, v_hi);
    IF v_waiting THEN
        EXECUTE format('INSERT INTO simhash_documents (%s) SELECT %s FROM simhash_moving',
                       v_cols, v_cols);
        DROP TABLE simhash_moving;
    END IF;
    RETURN v_name;
END
$$;

-- Make the daily partitions from today (UTC) to today + days_ahead that do
-- not exist yet; returns the ones made. Idempotent, safe to run at once from
-- several sessions (they take turns). The store runs it on open when it has
-- a retention window, `simhash-pg purge` before purging.
CREATE FUNCTION simhash_ensure_partitions(days_ahead integer DEFAULT 2)
RETURNS SETOF text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_today date := (now() AT TIME ZONE 'UTC')::date;
    v_name text;
BEGIN
    IF days_ahead IS NULL OR days_ahead < 0 OR days_ahead > 366 THEN
        RAISE EXCEPTION 'simhash: days_ahead must be between 0 and 366, got %',
            coalesce(days_ahead::text, 'NULL') USING ERRCODE = '22023';
    END IF;
    FOR d IN 0..days_ahead LOOP
        v_name := simhash_create_partition(v_today + d);
        IF v_name IS NOT NULL THEN
            RETURN NEXT v_name;
        END IF;
    END LOOP;
END
$$;

-- Drop every partition whose upper bound is at or before now() - older_than
-- (the legacy one too, once all of it is old), with their keys, and delete
-- the default partition's rows older than that. Rows of a partition only
-- partly old stay: `simhash-pg purge` deletes them in batches. Returns one
-- row per step (action, relation, n_rows): ('drop', partition, its rows),
-- ('delete', default partition, rows deleted), ('keys', 'simhash_keys', keys
-- deleted).
CREATE FUNCTION simhash_drop_partitions(older_than interval)
RETURNS TABLE (action text, relation text, n_rows bigint)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_cutoff timestamptz;
    v_upper timestamptz;
    r record;
BEGIN
    IF older_than IS NULL OR older_than < interval '0' THEN
        RAISE EXCEPTION 'simhash: older_than must be an interval >= 0, got %',
            coalesce(older_than::text, 'NULL') USING ERRCODE = '22023';
    END IF;
    v_cutoff := now() - older_than;
    PERFORM pg_advisory_xact_lock(1397246981, 0);
    FOR r IN SELECT p.partition::text AS name, p.upper_bound FROM simhash_partitions() p
             WHERE NOT p.is_default AND p.upper_bound <= v_cutoff ORDER BY p.upper_bound LOOP
        action := 'drop';
        relation := r.name;
        EXECUTE format('SELECT count(*) FROM %s', r.name) INTO n_rows;
        EXECUTE format('DROP TABLE %s', r.name);
        v_upper := r.upper_bound;
        RETURN NEXT;
    END LOOP;
    FOR r IN SELECT p.partition::text AS name FROM simhash_partitions() p WHERE p.is_default LOOP
        action := 'delete';
        relation := r.name;
        EXECUTE format('DELETE FROM %s WHERE created_at < $1', r.name) USING v_cutoff;
        GET DIAGNOSTICS n_rows = ROW_COUNT;
        RETURN NEXT;
    END LOOP;
    IF v_upper IS NOT NULL THEN
        -- every row before v_upper was in a dropped partition or just deleted
        DELETE FROM simhash_keys k WHERE k.created_at < v_upper;
        action := 'keys';
        relation := 'simhash_keys';
        GET DIAGNOSTICS n_rows = ROW_COUNT;
        RETURN NEXT;
    END IF;
END
$$;

-- 5. simhash_add without ON CONFLICT (key): sql/0005_add.sql, which the
-- migration runs after this file.

-- 6. Today's partition and two days ahead.
SELECT simhash_ensure_partitions(2);

-- 7. Roles: the analyst reads the new tables (every partition through the
-- parent; partitions inherit no grants, and need none for that) and never
-- runs the maintenance functions, nor does anyone else but the owner.
REVOKE EXECUTE ON FUNCTION
    simhash_create_partition(date),
    simhash_ensure_partitions(integer),
    simhash_drop_partitions(interval),
    simhash_keys_on_insert(),
    simhash_keys_on_delete(),
    simhash_keys_on_update(),
    simhash_keys_on_truncate()
FROM PUBLIC;
DO $$
BEGIN
    -- SECURITY DEFINER functions: no schema on the search path but ours
    EXECUTE format('ALTER FUNCTION simhash_keys_on_insert() SET search_path = %I, pg_temp',
                   current_schema());
    EXECUTE format('ALTER FUNCTION simhash_keys_on_delete() SET search_path = %I, pg_temp',
                   current_schema());
    EXECUTE format('ALTER FUNCTION simhash_keys_on_update() SET search_path = %I, pg_temp',
                   current_schema());
    EXECUTE format('ALTER FUNCTION simhash_keys_on_truncate() SET search_path = %I, pg_temp',
                   current_schema());
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'simhash_reader') THEN
        GRANT SELECT ON simhash_documents, simhash_keys TO simhash_reader;
        GRANT EXECUTE ON FUNCTION simhash_partitions() TO simhash_reader;
    END IF;
END
$$;
