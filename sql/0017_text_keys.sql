-- simhash-pg revision 0017: a text's keys in a table of their own, looked up
-- by btree (issue 28). Applied by migrations/versions/0017_text_keys.py;
-- undone by sql/0017_text_keys_drop.sql.
--
-- Until now a GIN index on simhash_documents.sentence_hashes served the key
-- look-up (simhash_sentence_matches). GIN gives bitmap scans only: a look-up
-- cannot stop at the holder cap, and in the candidate functions' generic
-- plans the planner cannot see the key, assumes 0.5% of rows hold it, and
-- past about 3M rows prefers a sequential scan that stops after 17 matches
-- (measured: 3M narrow rows, two absent keys 3.0 s; 50M rows, 25 s a text
-- query). Now every (key, row) is a row of simhash_text_keys with a btree on
-- the key: the planner estimates an equality at 1 / n_distinct whatever the
-- key, and the scan stops at the 17th row. Triggers on simhash_documents keep
-- it; it is partitioned like simhash_documents, partition for partition, so
-- retention drops a day's keys with the day. The GIN index goes.
--
-- Filling it reads every keyed row once and builds one index: on a big store
-- this upgrade takes minutes (docs/operations.md, "Upgrading to 0017: the key
-- table").

CREATE TABLE simhash_text_keys (
    hash bigint NOT NULL,
    id bigint NOT NULL,
    created_at timestamptz NOT NULL
) PARTITION BY RANGE (created_at);
COMMENT ON TABLE simhash_text_keys IS
    'simhash-pg: one row per key of a stored text (simhash_documents.sentence_hashes), kept by triggers';
CREATE TABLE simhash_text_keys_default PARTITION OF simhash_text_keys DEFAULT;

-- One function for the three row triggers: the rows of a document's keys are
-- those of its sentence_hashes, distinct, NULLs left out (an UPDATE that moves
-- a row to another partition fires the delete and insert triggers instead).
CREATE OR REPLACE FUNCTION simhash_text_keys_on_write() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        DELETE FROM simhash_text_keys k
        WHERE k.hash = ANY (OLD.sentence_hashes) AND k.id = OLD.id
          AND k.created_at = OLD.created_at;
    END IF;
    IF TG_OP <> 'DELETE' THEN
        INSERT INTO simhash_text_keys (hash, id, created_at)
        SELECT DISTINCT h, NEW.id, NEW.created_at FROM unnest(NEW.sentence_hashes) AS h
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

-- Make simhash_text_keys's partitions those of simhash_documents: one with the
-- same bounds for each document partition (keys that waited in the default
-- partition for its range move in), and none for a partition that is gone.
-- The partition functions (partitions.sql) call it after they make or drop
-- partitions, under their maintenance lock; so may an operator who made or
-- dropped one by hand. Returns the partitions made and dropped.
CREATE OR REPLACE FUNCTION simhash_text_keys_follow_partitions()
RETURNS TABLE (action text, relation text)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT c.oid::regclass::text AS name FROM pg_inherits i
             JOIN pg_class c ON c.oid = i.inhrelid
             WHERE i.inhparent = 'simhash_text_keys'::regclass
               AND c.relname <> 'simhash_text_keys_default'
               AND to_regclass(quote_ident(
                       replace(c.relname, 'simhash_text_keys_', 'simhash_documents_'))) IS NULL
    LOOP
        EXECUTE format('DROP TABLE %s', r.name);
        action := 'drop';
        relation := r.name;
        RETURN NEXT;
    END LOOP;
    FOR r IN SELECT replace(c.relname, 'simhash_documents_', 'simhash_text_keys_') AS name,
                    pg_get_expr(c.relpartbound, c.oid) AS bound, p.lower_bound, p.upper_bound
             FROM simhash_partitions() p JOIN pg_class c ON c.oid = p.partition
             WHERE NOT p.is_default
               AND to_regclass(quote_ident(
                       replace(c.relname, 'simhash_documents_', 'simhash_text_keys_'))) IS NULL
    LOOP
        CREATE TEMP TABLE simhash_text_keys_moving ON COMMIT DROP AS
        WITH moved AS (
            DELETE FROM simhash_text_keys_default k
            WHERE k.created_at >= r.lower_bound AND k.created_at < r.upper_bound
            RETURNING k.hash, k.id, k.created_at
        ) SELECT * FROM moved;
        EXECUTE format('CREATE TABLE %I PARTITION OF simhash_text_keys %s'
                       ' WITH (autovacuum_vacuum_insert_scale_factor = 0.01,'
                       ' autovacuum_vacuum_insert_threshold = 10000)', r.name, r.bound);
        INSERT INTO simhash_text_keys SELECT * FROM simhash_text_keys_moving;
        DROP TABLE simhash_text_keys_moving;
        action := 'create';
        relation := r.name;
        RETURN NEXT;
    END LOOP;
END
$$;

-- The rows that hold one of hashes (NULL entries ignored), once per hash
-- they hold. A hash held by more than 16 rows is boilerplate (a licence
-- line, a footer repeated on every page of a site) and finds nothing: each
-- hash's index scan stops at 17 rows, so a long text's seven keys cost at
-- most 7 x 17 key rows and 7 x 16 candidates to verify (each a long text to
-- read and compare); a title's keys (up to 44 of them, each nearly the whole
-- title) find short texts.
-- simhash_pg.text.signatures.SHARED_SENTENCE_CAP is the same number.
-- LANGUAGE sql: inlined, so a caller's LATERAL call becomes one index scan
-- per hash and partition, and one primary-key look-up per row found.
CREATE OR REPLACE FUNCTION simhash_sentence_matches(hashes bigint[])
RETURNS TABLE (id bigint, key text, fingerprint bigint, meta jsonb, verify_text text,
               sentence_sig bigint, sentence_hashes bigint[], created_at timestamptz)
LANGUAGE sql STABLE PARALLEL SAFE ROWS 3 AS $$
    SELECT d.id, d.key, d.fingerprint, d.meta, d.verify_text, d.sentence_sig,
           d.sentence_hashes, d.created_at
    FROM unnest(hashes) AS h
    CROSS JOIN LATERAL (
        SELECT c.id, c.created_at, count(*) OVER () AS n
        FROM (SELECT k.id, k.created_at FROM simhash_text_keys k
              WHERE k.hash = h
              LIMIT 17) AS c
    ) AS m
    -- LATERAL ... LIMIT 1: always one primary-key look-up per row found; a
    -- join here became a hash join over a scan of every partition whenever a
    -- batch's estimate (1,000 rows per set-returning call) outweighed the store
    CROSS JOIN LATERAL (
        SELECT x.* FROM simhash_documents x
        WHERE x.id = m.id AND x.created_at = m.created_at
        LIMIT 1
    ) AS d
    WHERE h IS NOT NULL AND m.n <= 16
$$;


-- The partition that holds the start of UTC day p_day: the interval's (by
-- default the store's) bounds around it, cut short where existing partitions
-- already cover part of them (the legacy partition, days made before the
-- interval changed); NULL if a partition already holds that instant. Named
-- by its lower bound (simhash_documents_pYYYYMMDD). Rows waiting in the
-- default partition for its range are moved into it (same ids, keys and
-- links).
CREATE OR REPLACE FUNCTION simhash_create_partition(p_day date, p_interval text DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_at timestamptz := p_day::timestamp AT TIME ZONE 'UTC';
    v_lo timestamptz;
    v_hi timestamptz;
    v_name text;
    v_default regclass;
    v_cols text;
    v_waiting boolean := false;
BEGIN
    IF p_day IS NULL THEN
        RAISE EXCEPTION 'simhash: day must not be NULL' USING ERRCODE = '22004';
    END IF;
    SELECT b.lower_bound, b.upper_bound INTO v_lo, v_hi
    FROM simhash_partition_bounds(v_at, coalesce(p_interval, simhash_partition_interval())) b;
    PERFORM pg_advisory_xact_lock(1397246981, 0);
    IF EXISTS (SELECT 1 FROM simhash_partitions() p
               WHERE NOT p.is_default AND p.lower_bound <= v_at AND p.upper_bound > v_at) THEN
        RETURN NULL;
    END IF;
    -- the gap around v_at within the interval: partitions never overlap
    SELECT greatest(v_lo, max(p.upper_bound)) INTO v_lo FROM simhash_partitions() p
    WHERE NOT p.is_default AND p.upper_bound <= v_at;
    SELECT least(v_hi, min(p.lower_bound)) INTO v_hi FROM simhash_partitions() p
    WHERE NOT p.is_default AND p.lower_bound > v_at;
    v_name := 'simhash_documents_p' || to_char(v_lo AT TIME ZONE 'UTC', 'YYYYMMDD')
              || CASE WHEN (v_lo AT TIME ZONE 'UTC')::time = '00:00' THEN ''
                      ELSE to_char(v_lo AT TIME ZONE 'UTC', '_HH24MISS') END;
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
    -- its keys' partition (revision 0017), before rows come in
    PERFORM simhash_text_keys_follow_partitions();
    IF v_waiting THEN
        EXECUTE format('INSERT INTO simhash_documents (%s) SELECT %s FROM simhash_moving',
                       v_cols, v_cols);
        DROP TABLE simhash_moving;
    END IF;
    RETURN v_name;
END
$$;

-- Record the store's partition interval and lay out the partitions ahead by
-- it: the empty partitions of today and later (made ahead under the old
-- interval) are dropped, then made again as simhash_ensure_partitions does.
-- A partition holding rows stays, and the new interval's partitions fill the
-- gaps beside it. Returns the partitions made.
CREATE OR REPLACE FUNCTION simhash_set_partition_interval(p_interval text,
                                                          days_ahead integer DEFAULT 1)
RETURNS SETOF text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    r record;
    v_empty boolean;
BEGIN
    PERFORM simhash_partition_bounds(now(), p_interval);  -- the interval's name, checked
    PERFORM pg_advisory_xact_lock(1397246981, 0);
    INSERT INTO simhash_meta (name, value) VALUES ('partition_interval', to_jsonb(p_interval))
    ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value;
    -- the parent first, as every insert locks it before its partition: no deadlock
    LOCK TABLE simhash_documents IN ACCESS EXCLUSIVE MODE;
    FOR r IN SELECT p.partition::text AS name FROM simhash_partitions() p
             WHERE NOT p.is_default AND p.upper_bound > now() LOOP
        EXECUTE format('SELECT NOT EXISTS (SELECT 1 FROM %s)', r.name) INTO v_empty;
        IF v_empty THEN
            EXECUTE format('DROP TABLE %s', r.name);
        END IF;
    END LOOP;
    PERFORM simhash_text_keys_follow_partitions();
    RETURN QUERY SELECT simhash_ensure_partitions(days_ahead, p_interval);
END
$$;

-- Drop every partition whose upper bound is at or before now() - older_than
-- (the legacy one too, once all of it is old), with their keys, and delete
-- the default partition's rows older than that. Rows of a partition only
-- partly old stay: `simhash-pg purge` deletes them in batches. Returns one
-- row per step (action, relation, n_rows): ('drop', partition, its rows),
-- ('drop keys', its text keys' partition, NULL), ('delete', default
-- partition, rows deleted), ('keys', 'simhash_keys', keys deleted).
CREATE OR REPLACE FUNCTION simhash_drop_partitions(older_than interval)
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
    -- their keys' partitions (revision 0017), not counted: rows are
    FOR r IN SELECT f.relation FROM simhash_text_keys_follow_partitions() f
             WHERE f.action = 'drop' LOOP
        action := 'drop keys';
        relation := r.relation;
        n_rows := NULL;
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

-- The keys of the rows stored so far, then the index (a build beats inserts)
-- and the triggers that keep it from now on.
SELECT simhash_text_keys_follow_partitions();
INSERT INTO simhash_text_keys (hash, id, created_at)
SELECT h.h, d.id, d.created_at
FROM simhash_documents d
CROSS JOIN LATERAL (SELECT DISTINCT x AS h FROM unnest(d.sentence_hashes) AS x
                    WHERE x IS NOT NULL) AS h
WHERE d.sentence_hashes IS NOT NULL;
CREATE INDEX simhash_text_keys_hash_idx ON simhash_text_keys (hash);
ANALYZE simhash_text_keys;

-- WHEN: rows without keys (a fingerprint-only load) cost one NULL test.
CREATE OR REPLACE TRIGGER simhash_text_keys_insert AFTER INSERT ON simhash_documents
    FOR EACH ROW WHEN (NEW.sentence_hashes IS NOT NULL)
    EXECUTE FUNCTION simhash_text_keys_on_write();
CREATE OR REPLACE TRIGGER simhash_text_keys_delete AFTER DELETE ON simhash_documents
    FOR EACH ROW WHEN (OLD.sentence_hashes IS NOT NULL)
    EXECUTE FUNCTION simhash_text_keys_on_write();
CREATE OR REPLACE TRIGGER simhash_text_keys_update
    AFTER UPDATE OF sentence_hashes, id, created_at ON simhash_documents
    FOR EACH ROW WHEN (OLD.sentence_hashes IS DISTINCT FROM NEW.sentence_hashes
                       OR OLD.id <> NEW.id OR OLD.created_at <> NEW.created_at)
    EXECUTE FUNCTION simhash_text_keys_on_write();
CREATE OR REPLACE TRIGGER simhash_text_keys_truncate AFTER TRUNCATE ON simhash_documents
    FOR EACH STATEMENT EXECUTE FUNCTION simhash_text_keys_on_truncate();

DROP INDEX simhash_documents_sentence_hashes_idx;

-- Trigger functions only: nobody calls them. The partitions' follower is
-- maintenance, the owner's.
REVOKE EXECUTE ON FUNCTION
    simhash_text_keys_on_write(),
    simhash_text_keys_on_truncate(),
    simhash_text_keys_follow_partitions()
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

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'simhash_reader') THEN
        GRANT SELECT ON simhash_text_keys TO simhash_reader;
    END IF;
END
$$;
