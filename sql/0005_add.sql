-- simhash-pg SQL function simhash_add, revision 0005: without ON CONFLICT
-- (key), since the partitioned table has no unique index on key.
-- Applied by migrations/versions/0005_partitions.py after
-- sql/0005_partitions.sql, and again by the downgrade of revision 0008.
--
-- Same signature and results as revision 0001's: a key already
-- stored returns that row, inserted = false, distance NULL; a key stored
-- concurrently (by an add, a COPY, anyone) is caught as the unique_violation
-- of simhash_keys and that row returned.
CREATE OR REPLACE FUNCTION simhash_add(
    p_fingerprint bigint,
    p_key text DEFAULT NULL,
    p_meta jsonb DEFAULT NULL,
    p_k integer DEFAULT 3,
    p_on_duplicate text DEFAULT 'skip'
)
RETURNS TABLE (id bigint, fingerprint bigint, duplicate_of bigint, distance integer,
               inserted boolean, duplicate_key text)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_id bigint;
    v_fp bigint;
    v_dup bigint;
    v_dist integer;
    v_dup_key text;
BEGIN
    PERFORM simhash_check_k(p_k);
    IF p_fingerprint IS NULL THEN
        RAISE EXCEPTION 'simhash: fingerprint must not be NULL' USING ERRCODE = '22004';
    END IF;
    IF p_on_duplicate IS NULL OR p_on_duplicate NOT IN ('skip', 'link', 'insert') THEN
        RAISE EXCEPTION 'simhash: on_duplicate must be skip, link or insert, got %',
            coalesce(p_on_duplicate, 'NULL') USING ERRCODE = '22023';
    END IF;

    IF p_key IS NOT NULL THEN
        -- by the documents' key index (one probe per partition), not through
        -- simhash_keys: a writer role has no grant on that table
        SELECT d.id, d.fingerprint, d.duplicate_of INTO v_id, v_fp, v_dup
        FROM simhash_documents d WHERE d.key = p_key;
        IF FOUND THEN
            RETURN QUERY SELECT v_id, v_fp, v_dup, NULL::integer, false, NULL::text;
            RETURN;
        END IF;
    END IF;

    IF p_on_duplicate <> 'insert' THEN
        IF p_k <= 3 THEN
            -- shared: many adds at once; excluded only by a locked add_many batch
            PERFORM pg_advisory_xact_lock_shared(1397246980, 0);
            PERFORM pg_advisory_xact_lock(1397246976, simhash_block(p_fingerprint, 0));
            PERFORM pg_advisory_xact_lock(1397246977, simhash_block(p_fingerprint, 1));
            PERFORM pg_advisory_xact_lock(1397246978, simhash_block(p_fingerprint, 2));
            PERFORM pg_advisory_xact_lock(1397246979, simhash_block(p_fingerprint, 3));
        ELSE
            -- above k = 3 near-duplicates may share no block: one at a time
            PERFORM pg_advisory_xact_lock(1397246980, 0);
        END IF;
        SELECT n.id, n.distance, n.key INTO v_dup, v_dist, v_dup_key
        FROM simhash_near(p_fingerprint, p_k) AS n LIMIT 1;
        IF FOUND AND p_on_duplicate = 'skip' THEN
            RETURN QUERY SELECT v_dup, p_fingerprint, v_dup, v_dist, false, v_dup_key;
            RETURN;
        END IF;
    END IF;

    IF p_key IS NULL THEN
        INSERT INTO simhash_documents AS d (key, fingerprint, duplicate_of, meta)
        VALUES (NULL, p_fingerprint, v_dup, p_meta)
        RETURNING d.id INTO v_id;
    ELSE
        BEGIN
            INSERT INTO simhash_documents AS d (key, fingerprint, duplicate_of, meta)
            VALUES (p_key, p_fingerprint, v_dup, p_meta)
            RETURNING d.id INTO v_id;
        EXCEPTION WHEN unique_violation THEN
            -- the same key was stored concurrently: return that row
            SELECT d.id, d.fingerprint, d.duplicate_of INTO v_id, v_fp, v_dup
            FROM simhash_documents d WHERE d.key = p_key;
            IF NOT FOUND THEN
                RAISE;  -- not the key after all
            END IF;
            RETURN QUERY SELECT v_id, v_fp, v_dup, NULL::integer, false, NULL::text;
            RETURN;
        END;
    END IF;
    RETURN QUERY SELECT v_id, p_fingerprint, v_dup, v_dist, true, v_dup_key;
END
$$;
