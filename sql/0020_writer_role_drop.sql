-- Undo revision 0020: simhash_ensure_partitions as revision 0019 left it (the
-- caller's rights, the owner's alone), this database's grants to
-- simhash_writer revoked, and the role dropped only if simhash-pg created
-- it (its comment says so) and no other database (another store on the same
-- server) still grants it anything. Its membership in simhash_reader and its
-- members' in it go with it; while another database keeps it, they stay.
-- Run by migrations/versions/0020_writer_role.py downgrade().

CREATE OR REPLACE FUNCTION simhash_ensure_partitions(days_ahead integer DEFAULT 1,
                                                     p_interval text DEFAULT NULL)
RETURNS SETOF text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_today date := (now() AT TIME ZONE 'UTC')::date;
    v_interval text := coalesce(p_interval, simhash_partition_interval());
    v_name text;
BEGIN
    IF days_ahead IS NULL OR days_ahead < 0 OR days_ahead > 366 THEN
        RAISE EXCEPTION 'simhash: days_ahead must be between 0 and 366, got %',
            coalesce(days_ahead::text, 'NULL') USING ERRCODE = '22023';
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
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'simhash_writer') THEN
        RETURN;
    END IF;
    REVOKE ALL ON simhash_documents FROM simhash_writer;
    REVOKE ALL ON simhash_meta FROM simhash_writer;
    REVOKE ALL ON SEQUENCE simhash_documents_id_seq FROM simhash_writer;
    REVOKE ALL ON FUNCTION
        simhash_add(bigint, text, jsonb, integer, text),
        simhash_writer_lock(text, integer[], integer[], text[], integer[]),
        simhash_ensure_partitions(integer, text)
    FROM simhash_writer;
    IF shobj_description((SELECT oid FROM pg_roles WHERE rolname = 'simhash_writer'), 'pg_authid')
       LIKE 'simhash-pg:%' THEN
        BEGIN
            DROP ROLE simhash_writer;
        EXCEPTION WHEN dependent_objects_still_exist THEN
            -- another database still grants it something: the last one drops it
            RAISE NOTICE 'simhash_writer is still used by another database, not dropped: %',
                SQLERRM;
        END;
    END IF;
END
$$;
