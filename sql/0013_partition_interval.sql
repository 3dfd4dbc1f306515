-- simhash-pg revision 0013: the partition interval, a store option (issue 17).
--
-- Until now every partition of simhash_documents held one UTC day. A store
-- that keeps a month pays every partition's index descents in every search
-- (docs/scaling.md, "0e. Writes"); weekly (or monthly) partitions cut that
-- to 5 (or 2). The store records its interval in simhash_meta
-- 'partition_interval' ("day", "week" or "month"); a store without the
-- record keeps 'day'. The partition functions take the interval (NULL: the
-- recorded one); simhash_set_partition_interval records a new one and lays
-- the partitions ahead out by it. simhash_drop_partitions is unchanged: it
-- drops a partition once its upper bound is past the cutoff, whatever its
-- length. Partitions are made one day ahead by default, not two. Undone by
-- sql/0013_partition_interval_drop.sql.

DROP FUNCTION simhash_ensure_partitions(integer);
DROP FUNCTION simhash_create_partition(date);

-- The store's partition interval: 'day', 'week' or 'month', as recorded in
-- simhash_meta 'partition_interval' (revision 0013); 'day' if none is (a
-- store made before: it keeps daily partitions).
CREATE FUNCTION simhash_partition_interval() RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT coalesce((SELECT value #>> '{}' FROM simhash_meta WHERE name = 'partition_interval'),
                    'day')
$$;

-- The bounds of the interval ('day', 'week' from Monday, 'month') that holds
-- p_at, in UTC: lower_bound <= p_at < upper_bound.
CREATE FUNCTION simhash_partition_bounds(p_at timestamptz, p_interval text)
RETURNS TABLE (lower_bound timestamptz, upper_bound timestamptz)
LANGUAGE plpgsql IMMUTABLE AS $$
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

-- The partition that holds the start of UTC day p_day: the interval's (by
-- default the store's) bounds around it, cut short where existing partitions
-- already cover part of them (the legacy partition, days made before the
-- interval changed); NULL if a partition already holds that instant. Named
-- by its lower bound (simhash_documents_pYYYYMMDD). Rows waiting in the
-- default partition for its range are moved into it (same ids, keys and
-- links).
CREATE FUNCTION simhash_create_partition(p_day date, p_interval text DEFAULT NULL)
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
CREATE FUNCTION simhash_ensure_partitions(days_ahead integer DEFAULT 1,
                                                     p_interval text DEFAULT NULL)
RETURNS SETOF text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_today date := (now() AT TIME ZONE 'UTC')::date;
    v_interval text := coalesce(p_interval, simhash_partition_interval());
    v_name text;
BEGIN
    IF days_ahead IS NULL OR days_ahead < 0 OR days_ahead > 366 THEN
        RAISE EXCEPTION 'simhash: days_ahead must be between 0 and 366, got %',
            coalesce(days_ahead::text, 'NULL') USING ERRCODE = '22023';
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
CREATE FUNCTION simhash_set_partition_interval(p_interval text,
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
    RETURN QUERY SELECT simhash_ensure_partitions(days_ahead, p_interval);
END
$$;

-- Partitions are made one day ahead from now on, not two (revision 0005):
-- every empty partition costs every search its index descents (docs/scaling.md,
-- "near() end to end"). The empty ones from the day after tomorrow on go; a
-- row that comes for their days waits in the default partition until its
-- partition is made (and is moved into it then).
DO $$
DECLARE
    v_from timestamptz := ((now() AT TIME ZONE 'UTC')::date + 2)::timestamp AT TIME ZONE 'UTC';
    v_empty boolean;
    r record;
BEGIN
    -- the parent first, as every insert locks it before its partition
    LOCK TABLE simhash_documents IN ACCESS EXCLUSIVE MODE;
    FOR r IN SELECT p.partition::text AS name FROM simhash_partitions() p
             WHERE NOT p.is_default AND p.lower_bound >= v_from LOOP
        EXECUTE format('SELECT NOT EXISTS (SELECT 1 FROM %s)', r.name) INTO v_empty;
        IF v_empty THEN
            EXECUTE format('DROP TABLE %s', r.name);
        END IF;
    END LOOP;
END
$$;

REVOKE EXECUTE ON FUNCTION
    simhash_create_partition(date, text),
    simhash_ensure_partitions(integer, text),
    simhash_set_partition_interval(text, integer)
FROM PUBLIC;
