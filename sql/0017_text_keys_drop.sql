-- simhash-pg revision 0017, undone: the keys are looked up through a GIN
-- index on simhash_documents.sentence_hashes again (revision 0016's
-- definitions), and simhash_text_keys, its triggers and functions go.
-- Nothing stored is lost: the keys stay in sentence_hashes.
-- Run by migrations/versions/0017_text_keys.py downgrade().

-- The rows that hold one of hashes (NULL entries ignored), once per hash
-- they hold. A hash held by more than 16 rows is boilerplate (a licence
-- line, a footer repeated on every page of a site) and finds nothing: each
-- hash's scan stops at 17 rows, so a long text's three hashes cost at most
-- 51 row visits and 48 candidates to verify (each a long text to read and
-- compare); a title's keys (up to 44 of them, each nearly the whole title)
-- find short texts.
-- simhash_pg.text.signatures.SHARED_SENTENCE_CAP is the same number.
-- LANGUAGE sql: inlined, so a caller's LATERAL call becomes one index scan
-- per hash.
CREATE OR REPLACE FUNCTION simhash_sentence_matches(hashes bigint[])
RETURNS TABLE (id bigint, key text, fingerprint bigint, meta jsonb, verify_text text,
               sentence_sig bigint, sentence_hashes bigint[], created_at timestamptz)
LANGUAGE sql STABLE PARALLEL SAFE ROWS 3 AS $$
    SELECT m.id, m.key, m.fingerprint, m.meta, m.verify_text, m.sentence_sig,
           m.sentence_hashes, m.created_at
    FROM unnest(hashes) AS h
    CROSS JOIN LATERAL (
        SELECT c.*, count(*) OVER () AS n
        FROM (SELECT d.id, d.key, d.fingerprint, d.meta, d.verify_text, d.sentence_sig,
                     d.sentence_hashes, d.created_at
              FROM simhash_documents d
              WHERE d.sentence_hashes @> ARRAY[h]
              LIMIT 17) AS c
    ) AS m
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
    RETURN QUERY SELECT simhash_ensure_partitions(days_ahead, p_interval);
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

DROP TRIGGER simhash_text_keys_insert ON simhash_documents;
DROP TRIGGER simhash_text_keys_delete ON simhash_documents;
DROP TRIGGER simhash_text_keys_update ON simhash_documents;
DROP TRIGGER simhash_text_keys_truncate ON simhash_documents;
DROP FUNCTION simhash_text_keys_on_write();
DROP FUNCTION simhash_text_keys_on_truncate();
DROP FUNCTION simhash_text_keys_follow_partitions();
DROP TABLE simhash_text_keys;

-- as revision 0015 made it
CREATE INDEX simhash_documents_sentence_hashes_idx ON simhash_documents
    USING gin (sentence_hashes) WITH (fastupdate = off) WHERE sentence_hashes IS NOT NULL;
