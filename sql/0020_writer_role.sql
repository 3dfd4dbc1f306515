-- simhash-pg revision 0020: the writer role simhash_writer (issue 29, item 2:
-- `simhash-pg serve` never connects as the superuser). Applied by
-- migrations/versions/0020_writer_role.py; undone by
-- sql/0020_writer_role_drop.sql.
--
-- simhash_writer is a NOLOGIN group role, next to simhash_reader (revision
-- 0002): grant it to a login role (GRANT simhash_writer TO crawler) to let
-- that role add, search and remove documents without owning anything.
-- `simhash-pg serve` logs in as such a member (docs/operations.md, "Roles").
-- What it holds, and nothing more:
--
-- - everything simhash_reader holds (it is a member): USAGE on the schema,
--   SELECT on the tables, EXECUTE on the read functions;
-- - INSERT, UPDATE (backfill-keys sets sentence_hashes) and DELETE (remove,
--   purge) on simhash_documents, and USAGE on its id sequence. The key
--   tables are kept by SECURITY DEFINER triggers;
-- - INSERT on simhash_meta: the first store opened records the scheme, the
--   verify mode, the probes, the rule and the partition interval, and that
--   may be a writer's (serve --dsn on a store just upgraded). Recorded once
--   (ON CONFLICT DO NOTHING): no UPDATE or DELETE, a record stays the owner's;
-- - EXECUTE on simhash_add and simhash_writer_lock (PUBLIC's too; granted
--   by name so that they stay the writer's if PUBLIC's grant goes), and on
--   simhash_ensure_partitions, which makes the partitions ahead. It becomes
--   SECURITY DEFINER with the search path pinned (the partition functions
--   take the maintenance lock, whose function is not PUBLIC, and create
--   tables, which only the owner may); called by anyone but the owner it
--   keeps the store's layout: the recorded interval, at most 7 days ahead.
--   The reader does not get it, nor do the other partition functions
--   (drop, set interval) change hands: a writer's purge deletes in batches.
--
-- The role is cluster-wide, as simhash_reader is: created only if absent
-- and marked as ours with a comment; the downgrade drops it only if
-- simhash-pg created it and no other database still grants it anything.

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'simhash_writer') THEN
        BEGIN
            CREATE ROLE simhash_writer NOLOGIN;
            COMMENT ON ROLE simhash_writer
                IS 'simhash-pg: writer role (created by migration 0020)';
        EXCEPTION WHEN duplicate_object OR unique_violation THEN
            NULL;  -- another database's migration made it at the same moment
        END;
    END IF;
END
$$;

-- a writer reads what a reader reads, also what later revisions grant it
GRANT simhash_reader TO simhash_writer;
GRANT INSERT, UPDATE, DELETE ON simhash_documents TO simhash_writer;
GRANT INSERT ON simhash_meta TO simhash_writer;
GRANT USAGE ON SEQUENCE simhash_documents_id_seq TO simhash_writer;
GRANT EXECUTE ON FUNCTION
    simhash_add(bigint, text, jsonb, integer, text),
    simhash_writer_lock(text, integer[], integer[], text[], integer[])
TO simhash_writer;

-- The partitions ahead: the owner's, and a writer's within the store's layout.
CREATE OR REPLACE FUNCTION simhash_ensure_partitions(days_ahead integer DEFAULT 1,
                                                     p_interval text DEFAULT NULL)
RETURNS SETOF text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER AS $$
DECLARE
    v_today date := (now() AT TIME ZONE 'UTC')::date;
    v_interval text := coalesce(p_interval, simhash_partition_interval());
    v_name text;
BEGIN
    IF days_ahead IS NULL OR days_ahead < 0 OR days_ahead > 366 THEN
        RAISE EXCEPTION 'simhash: days_ahead must be between 0 and 366, got %',
            coalesce(days_ahead::text, 'NULL') USING ERRCODE = '22023';
    END IF;
    -- session_user: the caller, which current_user is not in here
    IF (days_ahead > 7 OR v_interval IS DISTINCT FROM simhash_partition_interval())
       AND NOT pg_has_role(session_user, (SELECT c.relowner FROM pg_class c
                                          WHERE c.oid = 'simhash_documents'::regclass),
                           'USAGE') THEN
        RAISE EXCEPTION 'permission denied for function simhash_ensure_partitions'
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = format('role %s does not own the store: it may make the %s '
                                  'partitions of the store''s interval, at most 7 days ahead',
                                  session_user, simhash_partition_interval());
    END IF;
    FOR d IN 0..days_ahead LOOP
        v_name := simhash_create_partition(v_today + d, v_interval);
        IF v_name IS NOT NULL THEN
            RETURN NEXT v_name;
        END IF;
    END LOOP;
END
$$;

DO $$
BEGIN
    -- SECURITY DEFINER: no schema on the search path but ours
    EXECUTE format('ALTER FUNCTION simhash_ensure_partitions(integer, text)'
                   ' SET search_path = %I, pg_temp', current_schema());
END
$$;
GRANT EXECUTE ON FUNCTION simhash_ensure_partitions(integer, text) TO simhash_writer;
