-- Undo revision 0013: the partition functions of revision 0005 again (one
-- partition per UTC day, made by day), not reading the recorded interval.
-- Partitions made weekly or monthly stay as they are (simhash_partitions
-- reads any bounds; simhash_create_partition skips a day they cover): only
-- the partitions made from now on are daily. The record in simhash_meta
-- 'partition_interval' stays (nothing before 0013 reads it): a re-upgrade
-- makes partitions by it again.

DROP FUNCTION simhash_set_partition_interval(text, integer);
DROP FUNCTION simhash_ensure_partitions(integer, text);
DROP FUNCTION simhash_create_partition(date, text);
DROP FUNCTION simhash_partition_bounds(timestamptz, text);
DROP FUNCTION simhash_partition_interval();

-- As sql/0005_partitions.sql made them.
-- The partition of one UTC day; NULL if a partition already covers part of
-- it (the legacy partition, or an existing one). Rows of that day waiting in
-- the default partition are moved into it (same ids, keys and links).
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

REVOKE EXECUTE ON FUNCTION
    simhash_create_partition(date),
    simhash_ensure_partitions(integer)
FROM PUBLIC;
