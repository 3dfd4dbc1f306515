-- simhash-pg SQL function simhash_add, revision 0001.
-- Applied by migrations/versions/0001_initial.py after 0001_functions.sql; run
-- again by the downgrade of revision 0005, which replaced it.

-- Check-and-insert in one call (one round trip from the store).
--   on_duplicate = 'skip'   a near-duplicate (<= k) is not stored; the
--                           nearest stored document is returned (default);
--                  'link'   it is stored with duplicate_of = nearest;
--                  'insert' no near-duplicate check at all.
-- A key already stored returns that row (idempotent), inserted = false.
-- Race-free: for k <= 3, transaction-level advisory locks on the four
-- (block number, block value) pairs, taken in block order, serialise
-- concurrent adds that could be near-duplicates of each other (any two share
-- a block), so two near-identical documents arriving at once end up as one.
-- Lock keys (int4, int4): (1397246976 + i, block i) for i = 0..3, and
-- (1397246980, 0) for the whole store: adds hold it shared (k <= 3) or
-- exclusive (k > 3); a locked add_many batch holds it exclusive.
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

    INSERT INTO simhash_documents AS d (key, fingerprint, duplicate_of, meta)
    VALUES (p_key, p_fingerprint, v_dup, p_meta)
    ON CONFLICT (key) WHERE key IS NOT NULL DO NOTHING
    RETURNING d.id INTO v_id;
    IF v_id IS NULL THEN
        -- the same key was stored concurrently: return that row
        SELECT d.id, d.fingerprint, d.duplicate_of INTO v_id, v_fp, v_dup
        FROM simhash_documents d WHERE d.key = p_key;
        RETURN QUERY SELECT v_id, v_fp, v_dup, NULL::integer, false, NULL::text;
        RETURN;
    END IF;
    RETURN QUERY SELECT v_id, p_fingerprint, v_dup, v_dist, true, v_dup_key;
END
$$;
