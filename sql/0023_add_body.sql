-- simhash-pg revision 0023: simhash_add stores the text as written itself.
-- Applied by migrations/versions/0023_add_body.py; undone by
-- sql/0023_add_body_drop.sql.
--
-- Revision 0021 gave each row its text as written (body). A text add of a
-- store that does not verify (verify="off") goes through simhash_add, which
-- had no parameter for it, so the store set the body with an UPDATE in a
-- transaction of its own: BEGIN, simhash_add, UPDATE, COMMIT, four round
-- trips where a fingerprint add takes one. Now simhash_add takes the body as
-- its last parameter, p_body (DEFAULT NULL: every call written for five
-- arguments, by name or by position, means what it meant), and stores it on
-- the row it inserts; a row it does not insert (a key already stored, a
-- near-duplicate skipped) keeps its own body. Nothing else changes: the
-- checks, the locks, the results.
--
-- A new parameter is a new signature, so the old function is dropped, not
-- replaced (CREATE OR REPLACE would leave both, and a five-argument call
-- would then be ambiguous). The new one has what the old one had: it runs
-- with the caller's rights (not SECURITY DEFINER), its search_path pinned to
-- the store's schema as revision 0022 pinned it (SET ... FROM CURRENT: the
-- migration runs with that search_path),
-- and it gets the old one's owner and grants: PUBLIC's EXECUTE (a reader
-- still cannot INSERT, so it still cannot add), simhash_writer's (revision
-- 0020), and any an operator gave or revoked. No other object depends on it
-- (the store calls it by name).

-- Its owner and its grants, for the function that replaces it.
CREATE TEMP TABLE simhash_add_was AS
    SELECT p.proowner, p.proacl FROM pg_proc p
    WHERE p.oid = 'simhash_add(bigint, text, jsonb, integer, text)'::regprocedure;

DROP FUNCTION simhash_add(bigint, text, jsonb, integer, text);

CREATE FUNCTION simhash_add(
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

-- The owner and the grants of the function it replaces: revision 0020's
-- EXECUTE to simhash_writer, PUBLIC's (or its revocation), an operator's.
-- The owner's own entry comes with ownership; NULL grants are the defaults a
-- new function has already.
DO $$
DECLARE
    v_new regprocedure := 'simhash_add(bigint, text, jsonb, integer, text, text)'::regprocedure;
    v_owner oid := (SELECT proowner FROM simhash_add_was);
    v_acl aclitem[] := (SELECT proacl FROM simhash_add_was);
    r record;
BEGIN
    IF v_owner IS DISTINCT FROM (SELECT oid FROM pg_roles WHERE rolname = current_user) THEN
        EXECUTE format('ALTER FUNCTION %s OWNER TO %s', v_new, v_owner::regrole);
    END IF;
    IF v_acl IS NULL THEN
        RETURN;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM aclexplode(v_acl) a WHERE a.grantee = 0) THEN
        EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', v_new);
    END IF;
    FOR r IN SELECT a.grantee, a.is_grantable FROM aclexplode(v_acl) a
             WHERE a.grantee <> v_owner ORDER BY a.grantee LOOP
        EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %s%s', v_new,
                       CASE r.grantee WHEN 0 THEN 'PUBLIC' ELSE r.grantee::regrole::text END,
                       CASE WHEN r.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
    END LOOP;
END
$$;
DROP TABLE simhash_add_was;
