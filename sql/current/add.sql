-- simhash-pg, today's SQL: adding a document, and the writers' locks.
--
-- Today's definitions, exactly as `alembic upgrade head` leaves them (see
-- sql/current/hamming.sql; tests/test_sql_current.py keeps them equal).
--
-- The locking protocol (docs/design.md, "Concurrent writers";
-- simhash_pg/store/locking.py states it at its top): every advisory lock a writer
-- takes, in one global order, so that writers never deadlock:
--
--   (1397246980, 0)                    the whole store: shared by every
--                                      writer, exclusive for a dedup above
--                                      k = 3 or a locked add_many batch
--   (1397246976 + i, block i)          block i of a fingerprint (i = 0..3):
--                                      two fingerprints within 3 share a
--                                      block, hence a lock
--   (1397246983, signature key)        a sentence signature folded to int4
--                                      (a probed text add's; revision 0011),
--                                      ascending
--   (1397246982, hashtext(key))        a key, ascending by hash
--   (1397246981, 0)                    partition maintenance (partitions.sql)
--
-- The advisory-lock functions of two int4 keys are not PUBLIC (revision
-- 0008, step 4, if a superuser ran it): a read-only role cannot hold a
-- writers' lock, and writers take theirs through simhash_writer_lock.

-- Every advisory lock a writer takes, in the order above. The block locks
-- come sorted by (key1, key2) from the caller (simhash_add and
-- simhash_pg/store/locking.py; taken in that order, without a sort here), the key
-- locks are sorted here, by hash. The waits are bounded: the shorter of the
-- session's lock_timeout and simhash.lock_timeout (set by the store; 30s
-- when unset). SECURITY DEFINER (the lock functions are not PUBLIC), and it
-- serves only roles that may INSERT into simhash_documents: session_user, or
-- a role it is a member of (a NOINHERIT member that SETs ROLE counts).
-- Returns the number of locks taken.
CREATE OR REPLACE FUNCTION simhash_writer_lock(
    p_mode text,
    p_block_key1 integer[] DEFAULT NULL,
    p_block_key2 integer[] DEFAULT NULL,
    p_keys text[] DEFAULT NULL,
    p_signatures integer[] DEFAULT NULL
) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER AS $$
DECLARE
    v_saved text := current_setting('lock_timeout');
    v_wait text := coalesce(nullif(current_setting('simhash.lock_timeout', true), ''), '30s');
    v_n integer := 1;
BEGIN
    IF p_mode IS NULL OR p_mode NOT IN ('shared', 'exclusive') THEN
        RAISE EXCEPTION 'simhash: lock mode must be shared or exclusive, got %',
            coalesce(p_mode, 'NULL') USING ERRCODE = '22023';
    END IF;
    -- session_user: the caller, which current_user is not in here. A
    -- NOINHERIT member of a writer role (SET ROLE) counts as a writer.
    -- (two IFs: the first is a simple expression, evaluated without the executor)
    IF NOT has_table_privilege(session_user, 'simhash_documents'::regclass, 'INSERT') THEN
        IF NOT EXISTS (SELECT 1 FROM pg_roles r
                       WHERE pg_has_role(session_user, r.oid, 'MEMBER')
                         AND has_table_privilege(r.oid, 'simhash_documents'::regclass,
                                                 'INSERT')) THEN
            RAISE EXCEPTION 'permission denied for function simhash_writer_lock'
                USING ERRCODE = 'insufficient_privilege',
                      DETAIL = format('role %s may not insert into simhash_documents: the '
                                      'writers'' locks are for writers', session_user);
        END IF;
    END IF;
    IF cardinality(p_block_key1) IS DISTINCT FROM cardinality(p_block_key2)
       OR NOT p_block_key1 <@ ARRAY[1397246976, 1397246977, 1397246978, 1397246979]
       OR array_position(p_block_key2, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'simhash: block locks are pairs (1397246976 + block number, block value)'
            USING ERRCODE = '22023';
    END IF;
    -- the shorter of the two, "0" being no limit (compared as intervals only
    -- when both are set: '1min' and '60s' are equal)
    IF v_wait = '0' OR (v_saved <> '0' AND v_saved::interval <= v_wait::interval) THEN
        v_wait := NULL;
    ELSE
        PERFORM set_config('lock_timeout', v_wait, true);
    END IF;
    IF p_mode = 'exclusive' THEN
        -- every other writer holds it shared while it takes blocks or keys
        PERFORM pg_advisory_xact_lock(1397246980, 0);
    ELSE
        PERFORM pg_advisory_xact_lock_shared(1397246980, 0);
        IF cardinality(p_block_key1) > 0 THEN
            SELECT v_n + count(pg_advisory_xact_lock(l.a, l.b)) INTO v_n FROM (
                SELECT u.a, u.b FROM unnest(p_block_key1, p_block_key2) WITH ORDINALITY
                    AS u (a, b, o) ORDER BY u.o
            ) AS l;
        END IF;
        IF cardinality(p_signatures) > 0 THEN
            SELECT v_n + count(pg_advisory_xact_lock(1397246983, l.s)) INTO v_n FROM (
                SELECT DISTINCT s FROM unnest(p_signatures) AS s WHERE s IS NOT NULL ORDER BY 1
            ) AS l;
        END IF;
        IF cardinality(p_keys) = 1 AND p_keys[1] IS NOT NULL THEN
            PERFORM pg_advisory_xact_lock(1397246982, hashtext(p_keys[1]));
            v_n := v_n + 1;
        ELSIF cardinality(p_keys) > 1 THEN
            SELECT v_n + count(pg_advisory_xact_lock(1397246982, l.h)) INTO v_n FROM (
                SELECT DISTINCT hashtext(k) AS h FROM unnest(p_keys) AS k
                WHERE k IS NOT NULL ORDER BY 1
            ) AS l;
        END IF;
    END IF;
    IF v_wait IS NOT NULL THEN
        PERFORM set_config('lock_timeout', v_saved, true);
    END IF;
    RETURN v_n;
END
$$;

-- Check-and-insert in one call (one round trip from the store).
--   on_duplicate = 'skip'   a near-duplicate (<= k) is not stored; the
--                           nearest stored document is returned (default);
--                  'link'   it is stored with duplicate_of = nearest;
--                  'insert' no near-duplicate check at all.
-- p_body: the text as written, stored on the row if one is inserted (NULL:
-- a fingerprint, or a store with keep_text=False; revision 0022).
-- A key already stored returns that row (idempotent), inserted = false,
-- distance NULL. Race-free: the store lock shared and the four block locks
-- (k <= 3) or the store lock exclusive (k > 3), and the key's lock, all
-- through simhash_writer_lock; two adds of near-duplicates or of one key
-- take turns. A key stored concurrently by a writer outside the protocol (a
-- raw INSERT or COPY) is caught as the unique_violation of simhash_keys and
-- that row returned. No ON CONFLICT (key): the partitioned table has no
-- unique index on key (keys.sql).
CREATE OR REPLACE FUNCTION simhash_add(
    p_fingerprint bigint,
    p_key text DEFAULT NULL,
    p_meta jsonb DEFAULT NULL,
    p_k integer DEFAULT 3,
    p_on_duplicate text DEFAULT 'skip',
    p_body text DEFAULT NULL
)
RETURNS TABLE (id bigint, fingerprint bigint, duplicate_of bigint, distance integer,
               inserted boolean, duplicate_key text)
LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT AS $$
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
        -- a key already stored answers at once, without waiting for a lock (by
        -- the documents' key index: a writer role has no grant on simhash_keys)
        SELECT d.id, d.fingerprint, d.duplicate_of INTO v_id, v_fp, v_dup
        FROM simhash_documents d WHERE d.key = p_key;
        IF FOUND THEN
            RETURN QUERY SELECT v_id, v_fp, v_dup, NULL::integer, false, NULL::text;
            RETURN;
        END IF;
    END IF;

    IF p_on_duplicate <> 'insert' AND p_k <= 3 THEN
        -- shared store lock, the four blocks, the key: adds of near-duplicates
        -- or of one key take turns
        PERFORM simhash_writer_lock('shared',
            ARRAY[1397246976, 1397246977, 1397246978, 1397246979],
            ARRAY[simhash_block(p_fingerprint, 0), simhash_block(p_fingerprint, 1),
                  simhash_block(p_fingerprint, 2), simhash_block(p_fingerprint, 3)]::integer[],
            ARRAY[p_key]);
    ELSIF p_on_duplicate <> 'insert' THEN
        -- above k = 3 near-duplicates may share no block: one at a time
        PERFORM simhash_writer_lock('exclusive');
    ELSIF p_key IS NOT NULL THEN
        PERFORM simhash_writer_lock('shared', NULL, NULL, ARRAY[p_key]);
    END IF;

    IF p_key IS NOT NULL THEN
        -- again, under the key's lock: stored meanwhile by another writer?
        SELECT d.id, d.fingerprint, d.duplicate_of INTO v_id, v_fp, v_dup
        FROM simhash_documents d WHERE d.key = p_key;
        IF FOUND THEN
            RETURN QUERY SELECT v_id, v_fp, v_dup, NULL::integer, false, NULL::text;
            RETURN;
        END IF;
    END IF;

    IF p_on_duplicate <> 'insert' THEN
        SELECT n.id, n.distance, n.key INTO v_dup, v_dist, v_dup_key
        FROM simhash_near(p_fingerprint, p_k) AS n LIMIT 1;
        IF FOUND AND p_on_duplicate = 'skip' THEN
            RETURN QUERY SELECT v_dup, p_fingerprint, v_dup, v_dist, false, v_dup_key;
            RETURN;
        END IF;
    END IF;

    IF p_key IS NULL THEN
        INSERT INTO simhash_documents AS d (key, fingerprint, duplicate_of, meta, body)
        VALUES (NULL, p_fingerprint, v_dup, p_meta, p_body)
        RETURNING d.id INTO v_id;
    ELSE
        BEGIN
            INSERT INTO simhash_documents AS d (key, fingerprint, duplicate_of, meta, body)
            VALUES (p_key, p_fingerprint, v_dup, p_meta, p_body)
            RETURNING d.id INTO v_id;
        EXCEPTION WHEN unique_violation THEN
            -- stored concurrently by a writer outside the lock protocol (a raw
            -- INSERT or COPY): return that row
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

DO $$
BEGIN
    -- SECURITY DEFINER: no schema on the search path but ours
    EXECUTE format('ALTER FUNCTION simhash_writer_lock(text, integer[], integer[], text[], integer[])'
                   ' SET search_path = %I, pg_temp', current_schema());
END
$$;
-- PUBLIC may run both (simhash_writer_lock serves writers only, simhash_add
-- runs with the caller's rights); the writer role holds them by name too
-- (revision 0020)
GRANT EXECUTE ON FUNCTION
    simhash_add(bigint, text, jsonb, integer, text, text),
    simhash_writer_lock(text, integer[], integer[], text[], integer[])
TO simhash_writer;
