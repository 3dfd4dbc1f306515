-- Undo revision 0010: simhash_probe_sets reads the masks table again.

CREATE OR REPLACE FUNCTION simhash_probe_sets(fp bigint, r integer) RETURNS smallint[]
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT ARRAY[
        ARRAY(SELECT ((((fp >> 48) & 65535)::integer # m) - 32768)::smallint
              FROM unnest(s.masks) AS m),
        ARRAY(SELECT ((((fp >> 32) & 65535)::integer # m) - 32768)::smallint
              FROM unnest(s.masks) AS m),
        ARRAY(SELECT ((((fp >> 16) & 65535)::integer # m) - 32768)::smallint
              FROM unnest(s.masks) AS m),
        ARRAY(SELECT (((fp & 65535)::integer # m) - 32768)::smallint
              FROM unnest(s.masks) AS m)]
    FROM simhash_mask_sets s WHERE s.radius = least(greatest(r, 0), 16)
$$;

DROP FUNCTION simhash_mask_probe_sets(bigint, integer);
