-- simhash-pg revision 0022: the store lives in a PostgreSQL schema of its own
-- (issue 31), "simhash" unless its operator chose another name; nothing of
-- ours stays in public, where an application keeps its own tables. Applied by
-- migrations/versions/0022_own_schema.py; undone by sql/0022_own_schema_drop.sql.
--
-- The schema's name comes from the setting simhash.schema, which the
-- migration environment sets (simhash_pg.db.layout.prepare, with the
-- search_path these files run under). A store made by an older simhash-pg
-- has its objects in public: they move here (ALTER ... SET SCHEMA keeps
-- every row, index, grant and dependency; a partition moves on its own, its
-- indexes with it). A store made by this simhash-pg was created in the
-- schema from revision 0001 on: nothing moves then.
--
-- Function bodies name our tables and functions unqualified, so they are
-- resolved through the search_path: each function that reads a table or
-- calls another of ours is pinned to the schema (SET search_path), so that
-- an analyst's simhash.simhash_near(...) works from any search_path. Left
-- unpinned: the SQL helpers the planner inlines into the query that calls
-- them (a pinned function cannot be inlined); they resolve through the
-- caller's search_path, which our sessions and our pinned functions set.
-- simhash_pg.db.layout.INLINED lists them too (tests/test_own_schema.py
-- keeps the two lists equal).

DO $$
DECLARE
    v_schema text := current_setting('simhash.schema');
    r record;
BEGIN
    EXECUTE format('CREATE SCHEMA IF NOT EXISTS %I', v_schema);
    FOR r IN SELECT c.relname FROM pg_class c
             WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p')
               AND c.relname LIKE 'simhash\_%' ORDER BY c.relname LOOP
        EXECUTE format('ALTER TABLE public.%I SET SCHEMA %I', r.relname, v_schema);
    END LOOP;
    -- sequences no table owns (an owned one moved with its table)
    FOR r IN SELECT c.relname FROM pg_class c
             WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'S'
               AND c.relname LIKE 'simhash\_%' LOOP
        EXECUTE format('ALTER SEQUENCE public.%I SET SCHEMA %I', r.relname, v_schema);
    END LOOP;
    FOR r IN SELECT p.oid::regprocedure AS f FROM pg_proc p
             WHERE p.pronamespace = 'public'::regnamespace AND p.proname LIKE 'simhash\_%' LOOP
        EXECUTE format('ALTER FUNCTION %s SET SCHEMA %I', r.f, v_schema);
    END LOOP;

    -- later revisions create their objects here, and the pins below take it
    PERFORM set_config('search_path', format('%I, public', v_schema), true);

    -- pin every function of ours but the inlined helpers: to the schema, then
    -- public (the search_path just set: SET search_path FROM CURRENT, as
    -- sql/current writes it); a SECURITY DEFINER one (pinned to the old
    -- schema and pg_temp) to this schema and pg_temp
    FOR r IN SELECT p.oid::regprocedure AS f, p.prosecdef FROM pg_proc p
             WHERE p.pronamespace = v_schema::regnamespace AND p.proname LIKE 'simhash\_%'
               AND p.proname NOT IN (
                   'simhash_hamming', 'simhash_block', 'simhash_masks', 'simhash_probes',
                   'simhash_mask_probe_sets', 'simhash_probe_sets', 'simhash_block_near1',
                   'simhash_pair_branch', 'simhash_probe_matches', 'simhash_sentence_matches',
                   'simhash_near_probes', 'simhash_use_pairs', 'simhash_pairs')
               AND NOT (p.proname = 'simhash_near_probes_candidates'
                        AND p.prolang = (SELECT oid FROM pg_language WHERE lanname = 'sql'))
    LOOP
        IF r.prosecdef THEN
            EXECUTE format('ALTER FUNCTION %s SET search_path = %I, pg_temp', r.f, v_schema);
        ELSE
            EXECUTE format('ALTER FUNCTION %s SET search_path FROM CURRENT', r.f);
        END IF;
    END LOOP;

    -- the roles reach the schema; the version table is a new one here
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'simhash_reader') THEN
        EXECUTE format('GRANT USAGE ON SCHEMA %I TO simhash_reader', v_schema);
        IF to_regclass(format('%I.alembic_version', v_schema)) IS NOT NULL THEN
            EXECUTE format('GRANT SELECT ON %I.alembic_version TO simhash_reader', v_schema);
        END IF;
    END IF;
END
$$;
