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
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
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
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
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
-- holds block i's values within r bits. One call, reading the table itself:
-- every SQL function call that cannot be inlined costs 5-20 us (4 calls of
-- simhash_probes at r = 1: 21 us; this: 15 us).
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

-- The analyst (sql/0002_reader_role.sql) may call every one of them.
GRANT EXECUTE ON FUNCTION
    simhash_check_k(integer),
    simhash_bad_block_number(integer),
    simhash_hamming(bigint, bigint),
    simhash_block(bigint, integer),
    simhash_masks(integer),
    simhash_probes(smallint, integer),
    simhash_probe_sets(bigint, integer)
TO simhash_reader;
