-- simhash-pg, today's SQL: links (duplicate_of) survive no DELETE of the row
-- they name.
--
-- Today's definition, exactly as `alembic upgrade head` leaves it (see
-- sql/current/hamming.sql; tests/test_sql_current.py keeps it equal).
--
-- duplicate_of has no foreign key since the table is partitioned (id alone
-- is not unique). The insert trigger holds the linked row FOR KEY SHARE, as
-- a foreign key would, so a concurrent DELETE waits for the linking
-- transaction and then clears the link (keys.sql, simhash_keys_on_delete); a
-- row already deleted gets its link cleared at once. AFTER, as the keys
-- triggers: COPY keeps its multi-row inserts. Rows moved out of the default
-- partition (simhash_create_partition) pass here too: a link of theirs to a
-- row gone with a dropped partition is cleared then.

CREATE OR REPLACE FUNCTION simhash_links_on_insert() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER AS $$
BEGIN
    -- FOR KEY SHARE: a DELETE of the linked row waits for this transaction,
    -- then its trigger (simhash_keys_on_delete) sees this row and clears the
    -- link. Not found: deleted already (its DELETE committed, or committed
    -- while this waited): clear the link as that DELETE would have.
    PERFORM 1 FROM simhash_documents d WHERE d.id = NEW.duplicate_of FOR KEY SHARE;
    IF NOT FOUND THEN
        UPDATE simhash_documents d SET duplicate_of = NULL
        WHERE d.id = NEW.id AND d.created_at = NEW.created_at;
    END IF;
    RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER simhash_links_insert AFTER INSERT ON simhash_documents
    FOR EACH ROW WHEN (NEW.duplicate_of IS NOT NULL) EXECUTE FUNCTION simhash_links_on_insert();

REVOKE EXECUTE ON FUNCTION simhash_links_on_insert() FROM PUBLIC;
DO $$
BEGIN
    -- SECURITY DEFINER: no schema on the search path but ours
    EXECUTE format('ALTER FUNCTION simhash_links_on_insert() SET search_path = %I, pg_temp',
                   current_schema());
END
$$;
