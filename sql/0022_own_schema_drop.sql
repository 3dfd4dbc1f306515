-- simhash-pg revision 0022, undone: every object of ours moves back from the
-- store's schema (the setting simhash.schema) into public, as an older
-- simhash-pg expects it; the functions pinned by 0022 are unpinned, the
-- SECURITY DEFINER ones pinned to public and pg_temp as before. The schema
-- itself stays: it holds the version table until the migration environment
-- gives the revision back to public.alembic_version
-- (simhash_pg.db.layout.settle), and then goes if nothing else is in it.

DO $$
DECLARE
    v_schema text := current_setting('simhash.schema');
    r record;
BEGIN
    FOR r IN SELECT c.relname FROM pg_class c
             WHERE c.relnamespace = v_schema::regnamespace AND c.relkind IN ('r', 'p')
               AND c.relname LIKE 'simhash\_%' ORDER BY c.relname LOOP
        EXECUTE format('ALTER TABLE %I.%I SET SCHEMA public', v_schema, r.relname);
    END LOOP;
    FOR r IN SELECT c.relname FROM pg_class c
             WHERE c.relnamespace = v_schema::regnamespace AND c.relkind = 'S'
               AND c.relname LIKE 'simhash\_%' LOOP
        EXECUTE format('ALTER SEQUENCE %I.%I SET SCHEMA public', v_schema, r.relname);
    END LOOP;
    FOR r IN SELECT p.oid::regprocedure AS f, p.prosecdef, p.proconfig FROM pg_proc p
             WHERE p.pronamespace = v_schema::regnamespace AND p.proname LIKE 'simhash\_%' LOOP
        IF r.prosecdef THEN
            EXECUTE format('ALTER FUNCTION %s SET search_path = public, pg_temp', r.f);
        ELSIF r.proconfig IS NOT NULL THEN
            EXECUTE format('ALTER FUNCTION %s RESET search_path', r.f);
        END IF;
        EXECUTE format('ALTER FUNCTION %s SET SCHEMA public', r.f);
    END LOOP;
    -- the schema's grants go (the analysts' role is dropped by 0002's
    -- downgrade only if nothing grants it anything any more)
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'simhash_reader') THEN
        EXECUTE format('REVOKE USAGE ON SCHEMA %I FROM simhash_reader', v_schema);
        IF to_regclass(format('%I.alembic_version', v_schema)) IS NOT NULL THEN
            EXECUTE format('REVOKE SELECT ON %I.alembic_version FROM simhash_reader', v_schema);
        END IF;
    END IF;
    -- the older revisions' objects are in public, their version table here
    PERFORM set_config('search_path', format('public, %I', v_schema), true);
END
$$;
