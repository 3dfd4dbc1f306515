-- simhash-pg, today's SQL: daily partitions of simhash_documents.
--
-- Today's definitions, exactly as `alembic upgrade head` leaves them (see
-- sql/current/hamming.sql; tests/test_sql_current.py keeps them equal).
--
-- simhash_documents is PARTITION BY RANGE (created_at), one partition per
-- UTC day (simhash_documents_pYYYYMMDD), made ahead of time; a table made
-- before revision 0005 is attached as simhash_documents_legacy, and
-- simhash_documents_default catches rows no daily partition covers, so an
-- insert never fails. Retention drops whole days (docs/design.md, "Time:
-- daily partitions"; docs/operations.md, "Retention"). Partition
-- maintenance is the owner's: nobody else may run these, but the analyst may
-- list the partitions. Lock key (1397246981, 0): one maintenance at a time.

-- The partitions and their bounds (UTC; -infinity for MINVALUE; the default
-- partition has NULL bounds).
CREATE OR REPLACE FUNCTION simhash_partitions()
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
CREATE OR REPLACE FUNCTION simhash_create_partition(p_day date) RETURNS text
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
CREATE OR REPLACE FUNCTION simhash_ensure_partitions(days_ahead integer DEFAULT 2)
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
    simhash_create_partition(date),
    simhash_ensure_partitions(integer),
    simhash_drop_partitions(interval)
FROM PUBLIC;
GRANT EXECUTE ON FUNCTION simhash_partitions() TO simhash_reader;
