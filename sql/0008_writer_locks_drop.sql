-- Undo revision 0008 (after sql/0005_add.sql has put 0005's simhash_add
-- back): the links trigger, simhash_writer_lock, and the advisory-lock
-- functions of two int4 keys executable by PUBLIC again (PostgreSQL's
-- default), if a superuser runs this.

DROP TRIGGER simhash_links_insert ON simhash_documents;
DROP FUNCTION simhash_links_on_insert();
DROP FUNCTION simhash_writer_lock(text, integer[], integer[], text[]);

DO $$
DECLARE
    v_owner name := (SELECT r.rolname FROM pg_class c JOIN pg_roles r ON r.oid = c.relowner
                     WHERE c.oid = 'simhash_documents'::regclass);
    v_functions text := 'pg_catalog.pg_advisory_lock(integer, integer),'
        ' pg_catalog.pg_advisory_lock_shared(integer, integer),'
        ' pg_catalog.pg_advisory_xact_lock(integer, integer),'
        ' pg_catalog.pg_advisory_xact_lock_shared(integer, integer),'
        ' pg_catalog.pg_try_advisory_lock(integer, integer),'
        ' pg_catalog.pg_try_advisory_lock_shared(integer, integer),'
        ' pg_catalog.pg_try_advisory_xact_lock(integer, integer),'
        ' pg_catalog.pg_try_advisory_xact_lock_shared(integer, integer)';
BEGIN
    IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        RETURN;  -- the upgrade could not revoke them either
    END IF;
    EXECUTE 'GRANT EXECUTE ON FUNCTION ' || v_functions || ' TO PUBLIC';
    IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = v_owner) THEN
        EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM %I', v_functions, v_owner);
    END IF;
END
$$;
