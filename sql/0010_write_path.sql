-- simhash-pg revision 0010: the k <= 3 probe sets without a function call
-- (issue 17, item 1). Applied by migrations/versions/0010_write_path.py.
--
-- add_many(dedup=True) looks up a batch's fingerprints with
-- simhash_near_many, which builds each fingerprint's probe sets with
-- simhash_probe_sets: a SQL function reading simhash_mask_sets, never
-- inlined, 15-20 us a call. Measured on 5000 fingerprints at 2M rows:
-- 90 ms of the look-up's 230 ms. Written out for r <= 1 it is inlined, and
-- the look-up takes 0.65x the time. Same values for every radius (tests/
-- test_write_path.py); the general form is simhash_mask_probe_sets.

-- The probes of all four blocks at once, as a 4 x V(16, r) array: row i + 1
-- holds block i's values within r bits, from the masks table (any radius).
CREATE OR REPLACE FUNCTION simhash_mask_probe_sets(fp bigint, r integer) RETURNS smallint[]
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

GRANT EXECUTE ON FUNCTION simhash_mask_probe_sets(bigint, integer) TO simhash_reader;

-- simhash_mask_probe_sets' answer, written out for r <= 1 (the k <= 3 pair
-- form's: block i+1 within 1 bit). A body of one expression without FROM is
-- inlined by the planner, so a call costs no function call: 1-3 us against
-- 15-20 us, which was 40% of simhash_near_many over an add_many batch of 5000
-- fingerprints (revision 0010, issue 17). STABLE, not IMMUTABLE: the ELSE
-- branch reads the masks table, and an IMMUTABLE body that calls a STABLE
-- function is never inlined.
CREATE OR REPLACE FUNCTION simhash_probe_sets(fp bigint, r integer) RETURNS smallint[]
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT CASE
        WHEN r <= 0 THEN
            ARRAY[ARRAY[(((fp >> 48) & 65535)::integer - 32768)::smallint],
                   ARRAY[(((fp >> 32) & 65535)::integer - 32768)::smallint],
                   ARRAY[(((fp >> 16) & 65535)::integer - 32768)::smallint],
                   ARRAY[((fp & 65535)::integer - 32768)::smallint]]
        WHEN r = 1 THEN
            ARRAY[
               ARRAY[(((fp >> 48) & 65535)::integer - 32768)::smallint,
                   ((((fp >> 48) & 65535)::integer # 1) - 32768)::smallint,
                   ((((fp >> 48) & 65535)::integer # 2) - 32768)::smallint,
                   ((((fp >> 48) & 65535)::integer # 4) - 32768)::smallint,
                   ((((fp >> 48) & 65535)::integer # 8) - 32768)::smallint,
                   ((((fp >> 48) & 65535)::integer # 16) - 32768)::smallint,
                   ((((fp >> 48) & 65535)::integer # 32) - 32768)::smallint,
                   ((((fp >> 48) & 65535)::integer # 64) - 32768)::smallint,
                   ((((fp >> 48) & 65535)::integer # 128) - 32768)::smallint,
                   ((((fp >> 48) & 65535)::integer # 256) - 32768)::smallint,
                   ((((fp >> 48) & 65535)::integer # 512) - 32768)::smallint,
                   ((((fp >> 48) & 65535)::integer # 1024) - 32768)::smallint,
                   ((((fp >> 48) & 65535)::integer # 2048) - 32768)::smallint,
                   ((((fp >> 48) & 65535)::integer # 4096) - 32768)::smallint,
                   ((((fp >> 48) & 65535)::integer # 8192) - 32768)::smallint,
                   ((((fp >> 48) & 65535)::integer # 16384) - 32768)::smallint,
                   ((((fp >> 48) & 65535)::integer # 32768) - 32768)::smallint],
               ARRAY[(((fp >> 32) & 65535)::integer - 32768)::smallint,
                   ((((fp >> 32) & 65535)::integer # 1) - 32768)::smallint,
                   ((((fp >> 32) & 65535)::integer # 2) - 32768)::smallint,
                   ((((fp >> 32) & 65535)::integer # 4) - 32768)::smallint,
                   ((((fp >> 32) & 65535)::integer # 8) - 32768)::smallint,
                   ((((fp >> 32) & 65535)::integer # 16) - 32768)::smallint,
                   ((((fp >> 32) & 65535)::integer # 32) - 32768)::smallint,
                   ((((fp >> 32) & 65535)::integer # 64) - 32768)::smallint,
                   ((((fp >> 32) & 65535)::integer # 128) - 32768)::smallint,
                   ((((fp >> 32) & 65535)::integer # 256) - 32768)::smallint,
                   ((((fp >> 32) & 65535)::integer # 512) - 32768)::smallint,
                   ((((fp >> 32) & 65535)::integer # 1024) - 32768)::smallint,
                   ((((fp >> 32) & 65535)::integer # 2048) - 32768)::smallint,
                   ((((fp >> 32) & 65535)::integer # 4096) - 32768)::smallint,
                   ((((fp >> 32) & 65535)::integer # 8192) - 32768)::smallint,
                   ((((fp >> 32) & 65535)::integer # 16384) - 32768)::smallint,
                   ((((fp >> 32) & 65535)::integer # 32768) - 32768)::smallint],
               ARRAY[(((fp >> 16) & 65535)::integer - 32768)::smallint,
                   ((((fp >> 16) & 65535)::integer # 1) - 32768)::smallint,
                   ((((fp >> 16) & 65535)::integer # 2) - 32768)::smallint,
                   ((((fp >> 16) & 65535)::integer # 4) - 32768)::smallint,
                   ((((fp >> 16) & 65535)::integer # 8) - 32768)::smallint,
                   ((((fp >> 16) & 65535)::integer # 16) - 32768)::smallint,
                   ((((fp >> 16) & 65535)::integer # 32) - 32768)::smallint,
                   ((((fp >> 16) & 65535)::integer # 64) - 32768)::smallint,
                   ((((fp >> 16) & 65535)::integer # 128) - 32768)::smallint,
                   ((((fp >> 16) & 65535)::integer # 256) - 32768)::smallint,
                   ((((fp >> 16) & 65535)::integer # 512) - 32768)::smallint,
                   ((((fp >> 16) & 65535)::integer # 1024) - 32768)::smallint,
                   ((((fp >> 16) & 65535)::integer # 2048) - 32768)::smallint,
                   ((((fp >> 16) & 65535)::integer # 4096) - 32768)::smallint,
                   ((((fp >> 16) & 65535)::integer # 8192) - 32768)::smallint,
                   ((((fp >> 16) & 65535)::integer # 16384) - 32768)::smallint,
                   ((((fp >> 16) & 65535)::integer # 32768) - 32768)::smallint],
               ARRAY[((fp & 65535)::integer - 32768)::smallint,
                   (((fp & 65535)::integer # 1) - 32768)::smallint,
                   (((fp & 65535)::integer # 2) - 32768)::smallint,
                   (((fp & 65535)::integer # 4) - 32768)::smallint,
                   (((fp & 65535)::integer # 8) - 32768)::smallint,
                   (((fp & 65535)::integer # 16) - 32768)::smallint,
                   (((fp & 65535)::integer # 32) - 32768)::smallint,
                   (((fp & 65535)::integer # 64) - 32768)::smallint,
                   (((fp & 65535)::integer # 128) - 32768)::smallint,
                   (((fp & 65535)::integer # 256) - 32768)::smallint,
                   (((fp & 65535)::integer # 512) - 32768)::smallint,
                   (((fp & 65535)::integer # 1024) - 32768)::smallint,
                   (((fp & 65535)::integer # 2048) - 32768)::smallint,
                   (((fp & 65535)::integer # 4096) - 32768)::smallint,
                   (((fp & 65535)::integer # 8192) - 32768)::smallint,
                   (((fp & 65535)::integer # 16384) - 32768)::smallint,
                   (((fp & 65535)::integer # 32768) - 32768)::smallint]]
        ELSE simhash_mask_probe_sets(fp, r) END
$$;
