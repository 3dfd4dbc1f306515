-- Undo revision 0011: simhash_writer_lock without signature locks (0008's).

DROP FUNCTION simhash_writer_lock(text, integer[], integer[], text[], integer[]);

CREATE FUNCTION simhash_writer_lock(
    p_mode text,
    p_block_key1 integer[] DEFAULT NULL,
    p_block_key2 integer[] DEFAULT NULL,
    p_keys text[] DEFAULT NULL
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

DO $$
BEGIN
    -- SECURITY DEFINER: no schema on the search path but ours
    EXECUTE format('ALTER FUNCTION simhash_writer_lock(text, integer[], integer[], text[])'
                   ' SET search_path = %I, pg_temp', current_schema());
END
$$;
