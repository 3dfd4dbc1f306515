-- simhash-pg revision 0002: the read-only analyst role simhash_reader.
-- Applied by migrations/versions/0002_reader_role.py.
--
-- simhash_reader is a NOLOGIN group role: grant it to a login role
-- (GRANT simhash_reader TO alice) to let that role read the store with psql.
-- It gets USAGE on the schema, SELECT on the tables and EXECUTE on the
-- read-only functions, nothing more: no INSERT/UPDATE/DELETE/TRUNCATE, and no
-- grant on simhash_add (PostgreSQL lets PUBLIC execute functions by default,
-- but simhash_add runs with the caller's rights, so it fails on the INSERT).
--
-- Roles are cluster-wide, databases are not: two simhash-pg databases on one
-- server share the role. It is created only if absent, and then marked as
-- ours with a comment on the role (shared by all databases, unlike a row in
-- simhash_meta). The downgrade (0002_reader_role_drop.sql) revokes this
-- database's grants, then drops the role only if simhash-pg created it and no
-- other database still grants it anything: the last store downgraded drops
-- it, and a simhash_reader an operator made beforehand is never dropped.

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'simhash_reader') THEN
        BEGIN
            CREATE ROLE simhash_reader NOLOGIN;
            COMMENT ON ROLE simhash_reader
                IS 'simhash-pg: read-only analyst role (created by migration 0002)';
        EXCEPTION WHEN duplicate_object OR unique_violation THEN
            NULL;  -- another database's migration made it at the same moment
        END;
    END IF;
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO simhash_reader', current_schema());
END
$$;

-- alembic_version too: a store opened by the analyst reads the revision.
GRANT SELECT ON simhash_documents, simhash_meta, alembic_version TO simhash_reader;
GRANT EXECUTE ON FUNCTION
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
TO simhash_reader;
