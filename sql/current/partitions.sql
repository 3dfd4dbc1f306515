-- simhash-pg, today's SQL: the partitions of simhash_documents.
--
-- Today's definitions, exactly as `alembic upgrade head` leaves them (see
-- sql/current/hamming.sql; tests/test_sql_current.py keeps them equal).
--
-- simhash_documents is PARTITION BY RANGE (created_at), one partition per
-- UTC day, week (from Monday) or month: the store's interval, recorded in
-- simhash_meta 'partition_interval' (revision 0013; 'day' if not recorded).
-- Partitions are named by their lower bound (simhash_documents_pYYYYMMDD)
-- and made ahead of time; a table made before revision 0005 is attached as
-- simhash_documents_legacy, and simhash_documents_default catches rows no
-- other partition covers, so an insert never fails. Retention drops whole
-- partitions (docs/design.md, "Time: partitions"; docs/operations.md,
-- "Retention"). Partition maintenance is the owner's: nobody else may run
-- these, but the analyst may list the partitions, and a writer
-- (simhash_writer, revision 0020) may make the partitions ahead. Lock key
-- (1397246981, 0): one maintenance at a time.

-- The partitions and their bounds (UTC; -infinity for MINVALUE; the default
-- partition has NULL bounds).
CREATE OR REPLACE FUNCTION simhash_partitions()
RETURNS TABLE (partition regclass, lower_bound timestamptz, upper_bound timestamptz,
               is_default boolean)
LANGUAGE sql STABLE
-- the bounds are read back from their text form: one fixed format
SET "TimeZone" = 'UTC' SET "DateStyle" = 'ISO, YMD'
SET search_path FROM CURRENT
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

-- The store's partition interval: 'day', 'week' or 'month', as recorded in
-- simhash_meta 'partition_interval' (revision 0013); 'day' if none is (a
-- store made before: it keeps daily partitions).
CREATE OR REPLACE FUNCTION simhash_partition_interval() RETURNS text
LANGUAGE sql STABLE
SET search_path FROM CURRENT AS $$
    SELECT coalesce((SELECT value #>> '{}' FROM simhash_meta WHERE name = 'partition_interval'),
                    'day')
$$;

-- The bounds of the interval ('day', 'week' from Monday, 'month') that holds
-- p_at, in UTC: lower_bound <= p_at < upper_bound.
CREATE OR REPLACE FUNCTION simhash_partition_bounds(p_at timestamptz, p_interval text)
RETURNS TABLE (lower_bound timestamptz, upper_bound timestamptz)
LANGUAGE plpgsql IMMUTABLE
SET search_path FROM CURRENT AS $$
DECLARE
    v_start timestamp;
BEGIN
    IF p_interval IS NULL OR p_interval NOT IN ('day', 'week', 'month') THEN
        RAISE EXCEPTION 'simhash: the partition interval is day, week or month, got %',
            coalesce(p_interval, 'NULL') USING ERRCODE = '22023';
    END IF;
    IF p_at IS NULL OR NOT isfinite(p_at) THEN
        RAISE EXCEPTION 'simhash: a partition holds a finite time, got %',
            coalesce(p_at::text, 'NULL') USING ERRCODE = '22023';
    END IF;
    v_start := date_trunc(p_interval, p_at AT TIME ZONE 'UTC');
    lower_bound := v_start AT TIME ZONE 'UTC';
    upper_bound := (v_start + ('1 ' || p_interval)::interval) AT TIME ZONE 'UTC';
    RETURN NEXT;
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
LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT AS $$
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
            RETURNING k.hash, k.id, k.created_at, k.fingerprint
        ) SELECT * FROM moved;
        EXECUTE format('CREATE TABLE %I PARTITION OF simhash_text_keys %s'
                       ' WITH (autovacuum_vacuum_insert_scale_factor = 0.01,'
                       ' autovacuum_vacuum_insert_threshold = 10000)', r.name, r.bound);
        INSERT INTO simhash_text_keys (hash, id, created_at, fingerprint)
        SELECT * FROM simhash_text_keys_moving;
        DROP TABLE simhash_text_keys_moving;
        action := 'create';
        relation := r.name;
        RETURN NEXT;
    END LOOP;
END
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
LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT AS $$
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

-- Make the partitions that hold every UTC day from today to today +
-- days_ahead (by default tomorrow: one empty partition ahead, as each costs
-- every search), those missing; returns the ones made. Weekly or monthly, the
-- next interval's partition is made only once it is days_ahead away.
-- Idempotent, safe to run at once from several sessions (they take turns).
-- The store runs it on open when it has a retention window, `simhash-pg
-- purge` before purging (simhash_pg.store.retention.DAYS_AHEAD days ahead).
-- SECURITY DEFINER (revision 0020): simhash_writer may run it too, but only
-- the owner may lay out another interval or more than 7 days ahead.
CREATE OR REPLACE FUNCTION simhash_ensure_partitions(days_ahead integer DEFAULT 1,
                                                     p_interval text DEFAULT NULL)
RETURNS SETOF text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER AS $$
DECLARE
    v_today date := (now() AT TIME ZONE 'UTC')::date;
    v_interval text := coalesce(p_interval, simhash_partition_interval());
    v_name text;
BEGIN
    IF days_ahead IS NULL OR days_ahead < 0 OR days_ahead > 366 THEN
        RAISE EXCEPTION 'simhash: days_ahead must be between 0 and 366, got %',
            coalesce(days_ahead::text, 'NULL') USING ERRCODE = '22023';
    END IF;
    -- session_user: the caller, which current_user is not in here
    IF (days_ahead > 7 OR v_interval IS DISTINCT FROM simhash_partition_interval())
       AND NOT pg_has_role(session_user, (SELECT c.relowner FROM pg_class c
                                          WHERE c.oid = 'simhash_documents'::regclass),
                           'USAGE') THEN
        RAISE EXCEPTION 'permission denied for function simhash_ensure_partitions'
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = format('role %s does not own the store: it may make the %s '
                                  'partitions of the store''s interval, at most 7 days ahead',
                                  session_user, simhash_partition_interval());
    END IF;
    FOR d IN 0..days_ahead LOOP
        v_name := simhash_create_partition(v_today + d, v_interval);
        IF v_name IS NOT NULL THEN
            RETURN NEXT v_name;
        END IF;
    END LOOP;
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
LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT AS $$
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
LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT AS $$
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

REVOKE EXECUTE ON FUNCTION
    simhash_text_keys_follow_partitions(),
    simhash_create_partition(date, text),
    simhash_ensure_partitions(integer, text),
    simhash_set_partition_interval(text, integer),
    simhash_drop_partitions(interval)
FROM PUBLIC;
GRANT EXECUTE ON FUNCTION simhash_partitions() TO simhash_reader;

DO $$
BEGIN
    -- SECURITY DEFINER: no schema on the search path but ours
    EXECUTE format('ALTER FUNCTION simhash_ensure_partitions(integer, text)'
                   ' SET search_path = %I, pg_temp', current_schema());
END
$$;
-- the partitions ahead: a writer's too (revision 0020), within the store's layout
GRANT EXECUTE ON FUNCTION simhash_ensure_partitions(integer, text) TO simhash_writer;
