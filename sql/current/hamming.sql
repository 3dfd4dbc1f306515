-- simhash-pg, today's SQL: distances, blocks and probe values.
--
-- sql/current/ holds today's definition of every SQL function, one file per
-- family, exactly as `alembic upgrade head` leaves them: a test
-- (tests/test_sql_current.py) compares them with the database. The numbered
-- files in sql/ are frozen history that the migrations and their downgrades
-- run; a change is a new revision (and its numbered file), then this copy.
-- The files run in name order on a database at head; each only calls
-- functions of files before it, or of its own.
--
-- Fingerprints are bigint (the unsigned 64-bit value in two's complement),
-- blocks smallint (16-bit block value - 32768): docs/design.md, "Where the
-- bits live". The probe values are read from simhash_mask_sets, every 16-bit
-- mask of each popcount, filled once by revision 0006.

-- Errors are raised by small plpgsql helpers: LANGUAGE sql cannot RAISE.
-- IMMUTABLE so that calling SQL functions stay inlinable; they only ever
-- raise or return their argument.
CREATE OR REPLACE FUNCTION simhash_check_k(k integer) RETURNS integer
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path FROM CURRENT AS $$
BEGIN
    IF k IS NULL OR k < 0 OR k > 64 THEN
        RAISE EXCEPTION 'simhash: k must be between 0 and 64 (a 64-bit fingerprint), got %',
            coalesce(k::text, 'NULL')
            USING ERRCODE = '22023';  -- invalid_parameter_value
    END IF;
    RETURN k;
END
$$;

CREATE OR REPLACE FUNCTION simhash_bad_block_number(i integer) RETURNS smallint
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path FROM CURRENT AS $$
BEGIN
    RAISE EXCEPTION 'simhash: block number must be 0, 1, 2 or 3, got %', coalesce(i::text, 'NULL')
        USING ERRCODE = '22023';
END
$$;

-- popcount(a XOR b). PostgreSQL has no bit_count(bigint): cast to bit(64).
CREATE OR REPLACE FUNCTION simhash_hamming(a bigint, b bigint) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT bit_count((a # b)::bit(64))::integer
$$;

-- Block i (0 = bits 48-63 ... 3 = bits 0-15) as stored in column b<i>.
CREATE OR REPLACE FUNCTION simhash_block(fp bigint, i integer) RETURNS smallint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN i BETWEEN 0 AND 3
                THEN (((fp >> (48 - 16 * i)) & 65535) - 32768)::smallint
                ELSE simhash_bad_block_number(i) END
$$;

-- Every 16-bit mask with at most r bits set, fewest bits first (1, 17, 137,
-- 697, 2517 ... values for r = 0, 1, 2, 3, 4), from simhash_mask_sets. A
-- radius below 0 is 0, above 16 is 16.
CREATE OR REPLACE FUNCTION simhash_masks(r integer) RETURNS integer[]
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT s.masks FROM simhash_mask_sets s WHERE s.radius = least(greatest(r, 0), 16)
$$;

-- The block values (as stored smallints) within radius r of block value b.
CREATE OR REPLACE FUNCTION simhash_probes(b smallint, r integer) RETURNS smallint[]
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN r <= 0 THEN ARRAY[b]
                ELSE ARRAY(SELECT (((b::integer + 32768) # m) - 32768)::smallint
                           FROM unnest(simhash_masks(r)) AS m) END
$$;

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

-- The analyst (sql/0002_reader_role.sql) may call every one of them.
GRANT EXECUTE ON FUNCTION
    simhash_check_k(integer),
    simhash_bad_block_number(integer),
    simhash_hamming(bigint, bigint),
    simhash_block(bigint, integer),
    simhash_masks(integer),
    simhash_probes(smallint, integer),
    simhash_mask_probe_sets(bigint, integer),
    simhash_probe_sets(bigint, integer)
TO simhash_reader;
