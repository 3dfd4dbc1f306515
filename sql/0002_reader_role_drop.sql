-- Undo revision 0002: revoke this database's grants to simhash_reader; drop
-- the role only if simhash-pg created it (its comment says so) and no other
-- database (another store on the same server) still grants it anything.

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'simhash_reader') THEN
        RETURN;
    END IF;
    EXECUTE format('REVOKE ALL ON SCHEMA %I FROM simhash_reader', current_schema());
    REVOKE ALL ON simhash_documents, simhash_meta, alembic_version FROM simhash_reader;
    REVOKE ALL ON FUNCTION
        simhash_check_k(integer),
        simhash_bad_block_number(integer),
        simhash_hamming(bigint, bigint),
        simhash_block(bigint, integer),
        simhash_masks(integer),
        simhash_probes(smallint, integer),
        simhash_near(bigint, integer),
        simhash_near_id(bigint, integer),
        simhash_near_many(bigint[], integer),
        simhash_pairs(integer)
    FROM simhash_reader;
    IF shobj_description((SELECT oid FROM pg_roles WHERE rolname = 'simhash_reader'), 'pg_authid')
       LIKE 'simhash-pg:%' THEN
        BEGIN
            DROP ROLE simhash_reader;
        EXCEPTION WHEN dependent_objects_still_exist THEN
            -- another database still grants it something: the last one drops it
            RAISE NOTICE 'simhash_reader is still used by another database, not dropped: %',
                SQLERRM;
        END;
    END IF;
END
$$;
