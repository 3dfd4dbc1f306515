-- simhash-pg, today's SQL: searches by explicit probe values per block.
--
-- Today's definitions, exactly as `alembic upgrade head` leaves them (see
-- sql/current/hamming.sql; tests/test_sql_current.py keeps them equal).
--
-- The caller chooses, per block, the values to probe (margin-ranked probes:
-- simhash_pg/text/probes.py; docs/design.md, "Probe forms") and a Hamming cap;
-- these return every stored row with
--
--     b_i = ANY (p_i) for some block i   AND   hamming(fingerprint, fp) <= cap
--
-- deduplicated, nearest first, ties by id: exact for what they promise,
-- whatever the values (a value may repeat; NULL values match nothing, so a
-- batch pads its ragged probe lists with NULL). Each branch is an
-- index(-only) scan of block i's index (b_i, b_(i+1 mod 4), fingerprint)
-- with the array as its key and the Hamming check inside; only the matches
-- visit the table. The radius functions (near.sql) stay exact for
-- fingerprint queries and analysts.
--
-- Cost: one index descent per probe value, and the ~N / 65536 rows under
-- each value Hamming-checked inside the index. Measured at 1M rows, p50 of
-- one call from Python (lab/bench/near_probes.py: interleaved per query, 2
-- shared cores), T = 11 values per block and cap 13 against the radius
-- searches: PostgreSQL 18 0.63 ms, simhash_near(fp, 3) 0.34 ms,
-- simhash_near(fp, 11) 2.71 ms, the batch form 0.38 ms per query (100 a
-- call); PostgreSQL 15 0.64, 0.75, 3.00 and 0.33 ms.
--
-- A batch's probes are one smallint[] of three dimensions, [query][block][value]:
-- probes[q][i + 1] holds block i's values for query q (the 1-based position
-- in fps), NULL-padded to the longest list. caps[q] is query q's cap.

-- The batches' argument checks (a plpgsql helper: the checks read arrays,
-- and their messages name what is wrong). Returns the number of queries.
CREATE OR REPLACE FUNCTION simhash_check_probes(
    fps bigint[], probes smallint[], caps integer[], sigs bigint[] DEFAULT NULL
) RETURNS integer
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path FROM CURRENT AS $$
BEGIN
    IF fps IS NULL OR probes IS NULL OR caps IS NULL THEN
        RAISE EXCEPTION 'simhash: fingerprints, probes and caps must not be NULL (got %, %, %)',
            coalesce(cardinality(fps)::text || ' fingerprints', 'NULL'),
            coalesce(cardinality(probes)::text || ' probe values', 'NULL'),
            coalesce(cardinality(caps)::text || ' caps', 'NULL')
            USING ERRCODE = '22004';  -- null_value_not_allowed
    END IF;
    IF array_position(fps, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'simhash: fingerprint % is NULL', array_position(fps, NULL)
            USING ERRCODE = '22004';
    END IF;
    IF cardinality(fps) = 0 THEN
        RETURN 0;
    END IF;
    IF array_ndims(probes) IS DISTINCT FROM 3 OR array_length(probes, 2) <> 4
       OR array_length(probes, 1) <> cardinality(fps) THEN
        RAISE EXCEPTION 'simhash: probes must be a smallint[] [query][block][value] of '
            '% x 4 x n (4 blocks per fingerprint), got %', cardinality(fps),
            coalesce(array_dims(probes), 'an empty array')
            USING ERRCODE = '22023',  -- invalid_parameter_value
                  HINT = 'one row of 4 blocks per fingerprint; pad short lists with NULL';
    END IF;
    IF array_lower(probes, 1) <> 1 OR array_lower(probes, 2) <> 1
       OR array_lower(fps, 1) <> 1 OR array_lower(caps, 1) <> 1 THEN
        RAISE EXCEPTION 'simhash: arrays must start at subscript 1, got fps %, probes %, caps %',
            array_dims(fps), array_dims(probes), array_dims(caps) USING ERRCODE = '22023';
    END IF;
    IF cardinality(caps) <> cardinality(fps) OR array_ndims(caps) <> 1 THEN
        RAISE EXCEPTION 'simhash: one cap per fingerprint: % fingerprint(s), caps %',
            cardinality(fps), array_dims(caps) USING ERRCODE = '22023';
    END IF;
    IF EXISTS (SELECT 1 FROM unnest(caps) AS c WHERE c IS NULL OR c < 0 OR c > 64) THEN
        RAISE EXCEPTION 'simhash: cap must be between 0 and 64 (a 64-bit fingerprint), got %',
            (SELECT coalesce(c::text, 'NULL') FROM unnest(caps) AS c
             WHERE c IS NULL OR c < 0 OR c > 64 LIMIT 1)
            USING ERRCODE = '22023';
    END IF;
    IF sigs IS NOT NULL AND (cardinality(sigs) <> cardinality(fps) OR array_ndims(sigs) <> 1
                             OR array_lower(sigs, 1) <> 1) THEN
        RAISE EXCEPTION 'simhash: one signature (or NULL) per fingerprint: % fingerprint(s), '
            'signatures %', cardinality(fps), array_dims(sigs) USING ERRCODE = '22023';
    END IF;
    RETURN cardinality(fps);
END
$$;

-- Block i's value of fp (0: b0 ... 3: b3) and its 16 one-bit flips, as the
-- smallints the block columns hold: the second block of a pair probe
-- (revision 0019) always takes them, so that a pair search finds every row
-- within 3 bits whatever values the caller probes (the pair lemma:
-- sql/0006_probe_forms.sql).
CREATE OR REPLACE FUNCTION simhash_block_near1(fp bigint, i integer) RETURNS smallint[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT array_agg(((((fp >> (48 - 16 * i)) & 65535)::integer # m) - 32768)::smallint
                     ORDER BY m)
    FROM unnest(ARRAY[0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192,
                      16384, 32768]) AS m
$$;

-- The matching fingerprints of a batch, (query, fingerprint), without
-- checks: the one place the batch forms below probe. LANGUAGE sql, so that
-- it is inlined into their queries. A query with pairs[q] true is searched by
-- pairs of blocks (revision 0019): for some cyclic i, b_i among its block i
-- values or its own, and b_(i+1) among its block i+1 values, its own or a
-- one-bit flip of it; both are keys of block i's index, so the btree drops the
-- entries of an unprobed b_(i+1) before the visibility-map check and the
-- Hamming filter, and the cost no longer grows with the rows under a block
-- value (docs/scaling.md, "Text queries at scale"). NULL pairs: every query by
-- single blocks. lead (revision 0024): a pair's block i takes only the first
-- lead of its values (and its own), block i+1 all of them; NULL: all lead.
-- A second list of at most 96 values is written out as an ARRAY[...] of its
-- elements (revision 0026), so that the planner counts them: a plain array
-- counts as 10, and on a small store that made block i+1's index look
-- cheaper than block i's (block i then checked in the table). Longer lists
-- (an owner's larger 'pairs') take the array as it is.
CREATE OR REPLACE FUNCTION simhash_probe_matches(
    fps bigint[], probes smallint[], caps integer[], pairs boolean[],
    lead integer
)
RETURNS TABLE (query integer, fingerprint bigint)
LANGUAGE sql STABLE PARALLEL SAFE ROWS 100 AS $$
    WITH q AS MATERIALIZED (
        SELECT x.ord::integer AS ord, x.fp, caps[x.ord] AS cap,
               coalesce(pairs[x.ord], false) AS pair,
               coalesce(lead, array_upper(probes, 3)) AS n_lead,
               probes[x.ord:x.ord][1:1] AS p0, probes[x.ord:x.ord][2:2] AS p1,
               probes[x.ord:x.ord][3:3] AS p2, probes[x.ord:x.ord][4:4] AS p3
        FROM unnest(fps) WITH ORDINALITY AS x (fp, ord)
    ), qp AS MATERIALIZED (
        -- a pair query's leading values (its first lead probes, all with NULL
        -- lead, and its own value) and second values (its probes, its own value
        -- and its one-bit flips)
        SELECT q.ord, q.fp, q.cap,
               array(SELECT unnest(q.p0[1:1][1:1][1:q.n_lead])) || simhash_block(q.fp, 0) AS a0,
               array(SELECT unnest(q.p1[1:1][1:1][1:q.n_lead])) || simhash_block(q.fp, 1) AS a1,
               array(SELECT unnest(q.p2[1:1][1:1][1:q.n_lead])) || simhash_block(q.fp, 2) AS a2,
               array(SELECT unnest(q.p3[1:1][1:1][1:q.n_lead])) || simhash_block(q.fp, 3) AS a3,
               array(SELECT unnest(q.p0)) || simhash_block_near1(q.fp, 0) AS s0,
               array(SELECT unnest(q.p1)) || simhash_block_near1(q.fp, 1) AS s1,
               array(SELECT unnest(q.p2)) || simhash_block_near1(q.fp, 2) AS s2,
               array(SELECT unnest(q.p3)) || simhash_block_near1(q.fp, 3) AS s3
        FROM q WHERE q.pair
    )
    SELECT q.ord, c.fingerprint
    FROM q JOIN simhash_documents c
      ON c.b0 = ANY (q.p0) AND simhash_hamming(c.fingerprint, q.fp) <= q.cap
    WHERE NOT q.pair
    UNION
    SELECT q.ord, c.fingerprint
    FROM q JOIN simhash_documents c
      ON c.b1 = ANY (q.p1) AND simhash_hamming(c.fingerprint, q.fp) <= q.cap
    WHERE NOT q.pair
    UNION
    SELECT q.ord, c.fingerprint
    FROM q JOIN simhash_documents c
      ON c.b2 = ANY (q.p2) AND simhash_hamming(c.fingerprint, q.fp) <= q.cap
    WHERE NOT q.pair
    UNION
    SELECT q.ord, c.fingerprint
    FROM q JOIN simhash_documents c
      ON c.b3 = ANY (q.p3) AND simhash_hamming(c.fingerprint, q.fp) <= q.cap
    WHERE NOT q.pair
    UNION
    SELECT q.ord, c.fingerprint
    FROM qp q JOIN simhash_documents c
      ON c.b0 = ANY (q.a0)
     AND c.b1 = ANY (ARRAY[q.s1[1], q.s1[2], q.s1[3], q.s1[4], q.s1[5], q.s1[6], q.s1[7],
                q.s1[8], q.s1[9], q.s1[10], q.s1[11], q.s1[12], q.s1[13], q.s1[14],
                q.s1[15], q.s1[16], q.s1[17], q.s1[18], q.s1[19], q.s1[20], q.s1[21],
                q.s1[22], q.s1[23], q.s1[24], q.s1[25], q.s1[26], q.s1[27], q.s1[28],
                q.s1[29], q.s1[30], q.s1[31], q.s1[32], q.s1[33], q.s1[34], q.s1[35],
                q.s1[36], q.s1[37], q.s1[38], q.s1[39], q.s1[40], q.s1[41], q.s1[42],
                q.s1[43], q.s1[44], q.s1[45], q.s1[46], q.s1[47], q.s1[48], q.s1[49],
                q.s1[50], q.s1[51], q.s1[52], q.s1[53], q.s1[54], q.s1[55], q.s1[56],
                q.s1[57], q.s1[58], q.s1[59], q.s1[60], q.s1[61], q.s1[62], q.s1[63],
                q.s1[64], q.s1[65], q.s1[66], q.s1[67], q.s1[68], q.s1[69], q.s1[70],
                q.s1[71], q.s1[72], q.s1[73], q.s1[74], q.s1[75], q.s1[76], q.s1[77],
                q.s1[78], q.s1[79], q.s1[80], q.s1[81], q.s1[82], q.s1[83], q.s1[84],
                q.s1[85], q.s1[86], q.s1[87], q.s1[88], q.s1[89], q.s1[90], q.s1[91],
                q.s1[92], q.s1[93], q.s1[94], q.s1[95], q.s1[96]])
     AND simhash_hamming(c.fingerprint, q.fp) <= q.cap
    WHERE cardinality(q.s1) <= 96
    UNION
    SELECT q.ord, c.fingerprint
    FROM qp q JOIN simhash_documents c
      ON c.b0 = ANY (q.a0) AND c.b1 = ANY (q.s1)
     AND simhash_hamming(c.fingerprint, q.fp) <= q.cap
    WHERE cardinality(q.s1) > 96
    UNION
    SELECT q.ord, c.fingerprint
    FROM qp q JOIN simhash_documents c
      ON c.b1 = ANY (q.a1)
     AND c.b2 = ANY (ARRAY[q.s2[1], q.s2[2], q.s2[3], q.s2[4], q.s2[5], q.s2[6], q.s2[7],
                q.s2[8], q.s2[9], q.s2[10], q.s2[11], q.s2[12], q.s2[13], q.s2[14],
                q.s2[15], q.s2[16], q.s2[17], q.s2[18], q.s2[19], q.s2[20], q.s2[21],
                q.s2[22], q.s2[23], q.s2[24], q.s2[25], q.s2[26], q.s2[27], q.s2[28],
                q.s2[29], q.s2[30], q.s2[31], q.s2[32], q.s2[33], q.s2[34], q.s2[35],
                q.s2[36], q.s2[37], q.s2[38], q.s2[39], q.s2[40], q.s2[41], q.s2[42],
                q.s2[43], q.s2[44], q.s2[45], q.s2[46], q.s2[47], q.s2[48], q.s2[49],
                q.s2[50], q.s2[51], q.s2[52], q.s2[53], q.s2[54], q.s2[55], q.s2[56],
                q.s2[57], q.s2[58], q.s2[59], q.s2[60], q.s2[61], q.s2[62], q.s2[63],
                q.s2[64], q.s2[65], q.s2[66], q.s2[67], q.s2[68], q.s2[69], q.s2[70],
                q.s2[71], q.s2[72], q.s2[73], q.s2[74], q.s2[75], q.s2[76], q.s2[77],
                q.s2[78], q.s2[79], q.s2[80], q.s2[81], q.s2[82], q.s2[83], q.s2[84],
                q.s2[85], q.s2[86], q.s2[87], q.s2[88], q.s2[89], q.s2[90], q.s2[91],
                q.s2[92], q.s2[93], q.s2[94], q.s2[95], q.s2[96]])
     AND simhash_hamming(c.fingerprint, q.fp) <= q.cap
    WHERE cardinality(q.s2) <= 96
    UNION
    SELECT q.ord, c.fingerprint
    FROM qp q JOIN simhash_documents c
      ON c.b1 = ANY (q.a1) AND c.b2 = ANY (q.s2)
     AND simhash_hamming(c.fingerprint, q.fp) <= q.cap
    WHERE cardinality(q.s2) > 96
    UNION
    SELECT q.ord, c.fingerprint
    FROM qp q JOIN simhash_documents c
      ON c.b2 = ANY (q.a2)
     AND c.b3 = ANY (ARRAY[q.s3[1], q.s3[2], q.s3[3], q.s3[4], q.s3[5], q.s3[6], q.s3[7],
                q.s3[8], q.s3[9], q.s3[10], q.s3[11], q.s3[12], q.s3[13], q.s3[14],
                q.s3[15], q.s3[16], q.s3[17], q.s3[18], q.s3[19], q.s3[20], q.s3[21],
                q.s3[22], q.s3[23], q.s3[24], q.s3[25], q.s3[26], q.s3[27], q.s3[28],
                q.s3[29], q.s3[30], q.s3[31], q.s3[32], q.s3[33], q.s3[34], q.s3[35],
                q.s3[36], q.s3[37], q.s3[38], q.s3[39], q.s3[40], q.s3[41], q.s3[42],
                q.s3[43], q.s3[44], q.s3[45], q.s3[46], q.s3[47], q.s3[48], q.s3[49],
                q.s3[50], q.s3[51], q.s3[52], q.s3[53], q.s3[54], q.s3[55], q.s3[56],
                q.s3[57], q.s3[58], q.s3[59], q.s3[60], q.s3[61], q.s3[62], q.s3[63],
                q.s3[64], q.s3[65], q.s3[66], q.s3[67], q.s3[68], q.s3[69], q.s3[70],
                q.s3[71], q.s3[72], q.s3[73], q.s3[74], q.s3[75], q.s3[76], q.s3[77],
                q.s3[78], q.s3[79], q.s3[80], q.s3[81], q.s3[82], q.s3[83], q.s3[84],
                q.s3[85], q.s3[86], q.s3[87], q.s3[88], q.s3[89], q.s3[90], q.s3[91],
                q.s3[92], q.s3[93], q.s3[94], q.s3[95], q.s3[96]])
     AND simhash_hamming(c.fingerprint, q.fp) <= q.cap
    WHERE cardinality(q.s3) <= 96
    UNION
    SELECT q.ord, c.fingerprint
    FROM qp q JOIN simhash_documents c
      ON c.b2 = ANY (q.a2) AND c.b3 = ANY (q.s3)
     AND simhash_hamming(c.fingerprint, q.fp) <= q.cap
    WHERE cardinality(q.s3) > 96
    UNION
    SELECT q.ord, c.fingerprint
    FROM qp q JOIN simhash_documents c
      ON c.b3 = ANY (q.a3)
     AND c.b0 = ANY (ARRAY[q.s0[1], q.s0[2], q.s0[3], q.s0[4], q.s0[5], q.s0[6], q.s0[7],
                q.s0[8], q.s0[9], q.s0[10], q.s0[11], q.s0[12], q.s0[13], q.s0[14],
                q.s0[15], q.s0[16], q.s0[17], q.s0[18], q.s0[19], q.s0[20], q.s0[21],
                q.s0[22], q.s0[23], q.s0[24], q.s0[25], q.s0[26], q.s0[27], q.s0[28],
                q.s0[29], q.s0[30], q.s0[31], q.s0[32], q.s0[33], q.s0[34], q.s0[35],
                q.s0[36], q.s0[37], q.s0[38], q.s0[39], q.s0[40], q.s0[41], q.s0[42],
                q.s0[43], q.s0[44], q.s0[45], q.s0[46], q.s0[47], q.s0[48], q.s0[49],
                q.s0[50], q.s0[51], q.s0[52], q.s0[53], q.s0[54], q.s0[55], q.s0[56],
                q.s0[57], q.s0[58], q.s0[59], q.s0[60], q.s0[61], q.s0[62], q.s0[63],
                q.s0[64], q.s0[65], q.s0[66], q.s0[67], q.s0[68], q.s0[69], q.s0[70],
                q.s0[71], q.s0[72], q.s0[73], q.s0[74], q.s0[75], q.s0[76], q.s0[77],
                q.s0[78], q.s0[79], q.s0[80], q.s0[81], q.s0[82], q.s0[83], q.s0[84],
                q.s0[85], q.s0[86], q.s0[87], q.s0[88], q.s0[89], q.s0[90], q.s0[91],
                q.s0[92], q.s0[93], q.s0[94], q.s0[95], q.s0[96]])
     AND simhash_hamming(c.fingerprint, q.fp) <= q.cap
    WHERE cardinality(q.s0) <= 96
    UNION
    SELECT q.ord, c.fingerprint
    FROM qp q JOIN simhash_documents c
      ON c.b3 = ANY (q.a3) AND c.b0 = ANY (q.s0)
     AND simhash_hamming(c.fingerprint, q.fp) <= q.cap
    WHERE cardinality(q.s0) > 96
$$;

-- Pairs led by every value (revision 0019's arguments).
CREATE OR REPLACE FUNCTION simhash_probe_matches(
    fps bigint[], probes smallint[], caps integer[], pairs boolean[]
)
RETURNS TABLE (query integer, fingerprint bigint)
LANGUAGE sql STABLE PARALLEL SAFE ROWS 100 AS $$
    SELECT * FROM simhash_probe_matches(fps, probes, caps, pairs, NULL::integer)
$$;

-- Every query by single blocks (revision 0009's arguments).
CREATE OR REPLACE FUNCTION simhash_probe_matches(fps bigint[], probes smallint[], caps integer[])
RETURNS TABLE (query integer, fingerprint bigint)
LANGUAGE sql STABLE PARALLEL SAFE ROWS 100 AS $$
    SELECT * FROM simhash_probe_matches(fps, probes, caps, NULL::boolean[])
$$;

-- Many queries in one round trip: query is the 1-based position in fps.
CREATE OR REPLACE FUNCTION simhash_near_probes_many(fps bigint[], probes smallint[], caps integer[])
RETURNS TABLE (query integer, id bigint, key text, distance integer)
LANGUAGE plpgsql STABLE PARALLEL SAFE ROWS 100
SET plan_cache_mode = force_generic_plan
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
BEGIN
    IF simhash_check_probes(fps, probes, caps) = 0 THEN
        RETURN;
    END IF;
    RETURN QUERY
    SELECT m.query, d.id, d.key, simhash_hamming(d.fingerprint, fps[m.query])
    FROM simhash_probe_matches(fps, probes, caps) AS m
    JOIN simhash_documents d
      ON d.b0 = simhash_block(m.fingerprint, 0) AND d.b1 = simhash_block(m.fingerprint, 1)
     AND d.fingerprint = m.fingerprint
    ORDER BY 1, 4, 2;
END
$$;

-- The rows that hold one of hashes (NULL entries ignored), once per hash
-- they hold, for a query with fingerprint fp. A key finds at most 16 rows:
-- all its holders when it has at most 16, else (revision 0018) the 16
-- nearest fp, ties by id, when it has at most 256, and none when it has
-- more: such a key is boilerplate (a licence line, a footer repeated on
-- every page of a site). Until 0018 a key with 17 holders found nothing, so a
-- pair could lose the key that found it as a store grew (three licence pairs
-- of the eval in a 1M-row store, issue 28); the nearest 16 keep what one
-- more holder far from the query would have taken away. Cost: a count of at
-- most 257 index entries per key, then at most 16 rows (256 key rows read
-- where the key has 17-256 holders, ranked by the fingerprint each keeps),
-- each read back by one primary-key probe.
-- fp NULL: a key with more than 16 holders finds nothing (revision 0017's
-- rule, without a query to rank by).
-- simhash_pg.text.signatures.SHARED_SENTENCE_CAP and BOILERPLATE_HOLDERS are
-- the same numbers, and key_holders_found the same rule.
-- LANGUAGE sql: inlined, so a caller's LATERAL call becomes index scans per
-- hash and partition, and one primary-key look-up per row found.
CREATE OR REPLACE FUNCTION simhash_sentence_matches(hashes bigint[], fp bigint)
RETURNS TABLE (id bigint, key text, fingerprint bigint, meta jsonb, verify_text text,
               sentence_sig bigint, sentence_hashes bigint[], created_at timestamptz)
LANGUAGE sql STABLE PARALLEL SAFE ROWS 3 AS $$
    SELECT d.id, d.key, d.fingerprint, d.meta, d.verify_text, d.sentence_sig,
           d.sentence_hashes, d.created_at
    FROM unnest(hashes) AS h
    -- how many rows hold it, counted up to 257 in the index alone
    CROSS JOIN LATERAL (
        SELECT count(*) AS n
        FROM (SELECT 1 FROM simhash_text_keys k WHERE k.hash = h LIMIT 257) AS c
    ) AS held
    CROSS JOIN LATERAL (
        SELECT k.id, k.created_at FROM simhash_text_keys k
        WHERE k.hash = h AND (held.n <= 16 OR (held.n <= 256 AND fp IS NOT NULL))
        -- a key row stored before 0018 has no fingerprint: its document's
        ORDER BY simhash_hamming(coalesce(k.fingerprint, (
                     SELECT x.fingerprint FROM simhash_documents x
                     WHERE x.id = k.id AND x.created_at = k.created_at LIMIT 1)), fp),
                 k.id
        LIMIT 16
    ) AS m
    -- LATERAL ... LIMIT 1: always one primary-key look-up per row found; a
    -- join here became a hash join over a scan of every partition whenever a
    -- batch's estimate (1,000 rows per set-returning call) outweighed the store
    CROSS JOIN LATERAL (
        SELECT x.* FROM simhash_documents x
        WHERE x.id = m.id AND x.created_at = m.created_at
        LIMIT 1
    ) AS d
    WHERE h IS NOT NULL
$$;

-- Without a query fingerprint (revision 0017's arguments): a key with more
-- than 16 holders finds nothing.
CREATE OR REPLACE FUNCTION simhash_sentence_matches(hashes bigint[])
RETURNS TABLE (id bigint, key text, fingerprint bigint, meta jsonb, verify_text text,
               sentence_sig bigint, sentence_hashes bigint[], created_at timestamptz)
LANGUAGE sql STABLE PARALLEL SAFE ROWS 3 AS $$
    SELECT * FROM simhash_sentence_matches(hashes, NULL::bigint)
$$;

-- A batch's candidates, with sentence hashes and min-hash keys: hashes[q] and
-- minhash[q] are query q's rows, NULL-padded (NULL: no query has any). A row
-- found by a min-hash key alone is a candidate only within minhash_cap bits
-- (simhash_pg.text.signatures.MINHASH_CAP): a key meets every stored variant
-- of its article, and the far ones would only be read and rejected.
CREATE OR REPLACE FUNCTION simhash_near_probes_candidates(
    fps bigint[], probes smallint[], caps integer[], sigs bigint[], hashes bigint[],
    minhash bigint[], minhash_cap integer, pairs boolean[], lead integer
)
RETURNS TABLE (query integer, id bigint, key text, distance integer, meta jsonb,
               verify_text text, sentence_sig bigint, sentence_hashes bigint[],
               text_lost boolean)
LANGUAGE plpgsql STABLE PARALLEL SAFE ROWS 100
SET plan_cache_mode = force_generic_plan
-- no JIT: its estimates (a generic plan's, over every key partition) pass
-- jit_above_cost, and compiling cost 1.7 s a call on PostgreSQL 15 with LLVM
-- for a look-up that runs in a millisecond (revision 0018)
SET jit = off
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
DECLARE
    v_lost_max bigint;
    v_lost_until timestamptz;
BEGIN
    IF simhash_check_probes(fps, probes, caps, sigs) = 0 THEN
        RETURN;
    END IF;
    IF hashes IS NOT NULL AND (array_ndims(hashes) <> 2
                               OR array_length(hashes, 1) <> cardinality(fps)
                               OR array_lower(hashes, 1) <> 1) THEN
        RAISE EXCEPTION 'simhash: hashes must be a bigint[] [query][hash] with one row per '
            'fingerprint (% of them), got %', cardinality(fps), array_dims(hashes)
            USING ERRCODE = '22023', HINT = 'pad short rows with NULL';
    END IF;
    IF minhash IS NOT NULL AND (array_ndims(minhash) <> 2
                                OR array_length(minhash, 1) <> cardinality(fps)
                                OR array_lower(minhash, 1) <> 1) THEN
        RAISE EXCEPTION 'simhash: minhash must be a bigint[] [query][key] with one row per '
            'fingerprint (% of them), got %', cardinality(fps), array_dims(minhash)
            USING ERRCODE = '22023', HINT = 'pad short rows with NULL';
    END IF;
    IF minhash IS NOT NULL AND (minhash_cap IS NULL OR minhash_cap < 0 OR minhash_cap > 64) THEN
        RAISE EXCEPTION 'simhash: minhash_cap must be between 0 and 64, got %',
            coalesce(minhash_cap::text, 'NULL') USING ERRCODE = '22023';
    END IF;
    IF pairs IS NOT NULL AND (cardinality(pairs) <> cardinality(fps) OR array_ndims(pairs) <> 1
                              OR array_lower(pairs, 1) <> 1) THEN
        RAISE EXCEPTION 'simhash: one pairs flag (or NULL) per fingerprint: % fingerprint(s), '
            'pairs %', cardinality(fps), array_dims(pairs) USING ERRCODE = '22023';
    END IF;
    IF lead < 0 THEN
        RAISE EXCEPTION 'simhash: lead must be NULL (every pair value leads) or >= 0, got %',
            lead USING ERRCODE = '22023';
    END IF;
    SELECT (u.value->>'max_id')::bigint, (u.value->>'stored_until')::timestamptz
    INTO v_lost_max, v_lost_until
    FROM simhash_meta u WHERE u.name = 'unverified_rows';
    RETURN QUERY
    WITH near AS MATERIALIZED (
        SELECT m.query, d.id, d.key, simhash_hamming(d.fingerprint, fps[m.query]) AS distance,
               d.meta, d.verify_text, d.sentence_sig, d.sentence_hashes,
               coalesce(d.verify_text IS NULL AND d.id <= v_lost_max
                        AND d.created_at <= v_lost_until, false) AS text_lost
        FROM simhash_probe_matches(fps, probes, caps, pairs, lead) AS m
        JOIN simhash_documents d
          ON d.b0 = simhash_block(m.fingerprint, 0) AND d.b1 = simhash_block(m.fingerprint, 1)
         AND d.fingerprint = m.fingerprint
    ), keyed AS MATERIALIZED (
        SELECT s.o::integer AS query, d.id, d.key,
               simhash_hamming(d.fingerprint, s.fp) AS distance, d.meta, d.verify_text,
               d.sentence_sig, d.sentence_hashes,
               coalesce(d.verify_text IS NULL AND d.id <= v_lost_max
                        AND d.created_at <= v_lost_until, false) AS text_lost
        FROM unnest(fps, sigs) WITH ORDINALITY AS s (fp, sig, o)
        JOIN simhash_documents d ON d.sentence_sig = s.sig
        WHERE sigs IS NOT NULL
        UNION ALL
        SELECT q.o::integer, d.id, d.key, simhash_hamming(d.fingerprint, fps[q.o]), d.meta,
               d.verify_text, d.sentence_sig, d.sentence_hashes,
               coalesce(d.verify_text IS NULL AND d.id <= v_lost_max
                        AND d.created_at <= v_lost_until, false)
        FROM generate_subscripts(fps, 1) AS q (o)
        CROSS JOIN LATERAL simhash_sentence_matches(hashes[q.o:q.o][:], fps[q.o]) AS d
        WHERE hashes IS NOT NULL
        UNION ALL
        SELECT q.o::integer, d.id, d.key, simhash_hamming(d.fingerprint, fps[q.o]), d.meta,
               d.verify_text, d.sentence_sig, d.sentence_hashes,
               coalesce(d.verify_text IS NULL AND d.id <= v_lost_max
                        AND d.created_at <= v_lost_until, false)
        FROM generate_subscripts(fps, 1) AS q (o)
        CROSS JOIN LATERAL simhash_sentence_matches(minhash[q.o:q.o][:], fps[q.o]) AS d
        WHERE minhash IS NOT NULL
          AND simhash_hamming(d.fingerprint, fps[q.o]) <= minhash_cap
    )
    SELECT * FROM near
    UNION ALL
    -- a row several keys find, once: by (query, id) alone, since a UNION's
    -- comparison of whole rows compared their texts (~10 us a pair)
    SELECT k.* FROM (SELECT DISTINCT ON (x.query, x.id) x.* FROM keyed x
                     ORDER BY x.query, x.id) AS k
    WHERE NOT EXISTS (SELECT 1 FROM near n WHERE n.query = k.query AND n.id = k.id)
    ORDER BY 1, 4, 2;
END
$$;

-- The batch form with pairs led by every value (revision 0019's arguments).
CREATE OR REPLACE FUNCTION simhash_near_probes_candidates(
    fps bigint[], probes smallint[], caps integer[], sigs bigint[], hashes bigint[],
    minhash bigint[], minhash_cap integer, pairs boolean[]
)
RETURNS TABLE (query integer, id bigint, key text, distance integer, meta jsonb,
               verify_text text, sentence_sig bigint, sentence_hashes bigint[],
               text_lost boolean)
LANGUAGE sql STABLE PARALLEL SAFE ROWS 100 AS $$
    SELECT c.*
    FROM simhash_near_probes_candidates(fps, probes, caps, sigs, hashes, minhash, minhash_cap,
                                        pairs, NULL::integer) AS c
    ORDER BY 1, 4, 2
$$;

-- The batch form by single blocks only (revision 0016's arguments and columns).
CREATE OR REPLACE FUNCTION simhash_near_probes_candidates(
    fps bigint[], probes smallint[], caps integer[], sigs bigint[], hashes bigint[],
    minhash bigint[], minhash_cap integer
)
RETURNS TABLE (query integer, id bigint, key text, distance integer, meta jsonb,
               verify_text text, sentence_sig bigint, sentence_hashes bigint[],
               text_lost boolean)
LANGUAGE sql STABLE PARALLEL SAFE ROWS 100 AS $$
    SELECT c.*
    FROM simhash_near_probes_candidates(fps, probes, caps, sigs, hashes, minhash, minhash_cap,
                                        NULL::boolean[]) AS c
    ORDER BY 1, 4, 2
$$;

-- The batch form without min-hash keys (revision 0015's arguments and columns).
CREATE OR REPLACE FUNCTION simhash_near_probes_candidates(
    fps bigint[], probes smallint[], caps integer[], sigs bigint[], hashes bigint[]
)
RETURNS TABLE (query integer, id bigint, key text, distance integer, meta jsonb,
               verify_text text, sentence_sig bigint, sentence_hashes bigint[],
               text_lost boolean)
LANGUAGE sql STABLE PARALLEL SAFE ROWS 100 AS $$
    SELECT c.*
    FROM simhash_near_probes_candidates(fps, probes, caps, sigs, hashes, NULL::bigint[], 0) AS c
    ORDER BY 1, 4, 2
$$;

-- The batch form without hashes (revision 0009's arguments and columns).
CREATE OR REPLACE FUNCTION simhash_near_probes_candidates(
    fps bigint[], probes smallint[], caps integer[], sigs bigint[] DEFAULT NULL
)
RETURNS TABLE (query integer, id bigint, key text, distance integer, meta jsonb,
               verify_text text, sentence_sig bigint, text_lost boolean)
LANGUAGE sql STABLE PARALLEL SAFE ROWS 100 AS $$
    SELECT c.query, c.id, c.key, c.distance, c.meta, c.verify_text, c.sentence_sig,
           c.text_lost
    FROM simhash_near_probes_candidates(fps, probes, caps, sigs, NULL::bigint[]) AS c
    ORDER BY 1, 4, 2
$$;

-- One query's candidates, with sentence hashes and min-hash keys: the rows
-- within cap that share a probed value in some block (with pairs: in some
-- pair of blocks, as simhash_probe_matches says), the rows whose
-- sentence_sig equals sig (NULL: none), the rows simhash_sentence_matches
-- finds for hashes, and those it finds for minhash within minhash_cap bits,
-- each once, with what the store's verification reads; nearest first, ties
-- by id. With pairs, a pair's block i takes only the first lead of its
-- values (and its own value), block i+1 all of them (revision 0024); NULL:
-- every value leads.
CREATE OR REPLACE FUNCTION simhash_near_probes_candidates(
    fp bigint, p0 smallint[], p1 smallint[], p2 smallint[], p3 smallint[], cap integer,
    sig bigint, hashes bigint[], minhash bigint[], minhash_cap integer, pairs boolean,
    lead integer
)
RETURNS TABLE (id bigint, key text, distance integer, meta jsonb, verify_text text,
               sentence_sig bigint, sentence_hashes bigint[], text_lost boolean)
LANGUAGE plpgsql STABLE PARALLEL SAFE ROWS 10
SET plan_cache_mode = force_generic_plan
-- no JIT: its estimates (a generic plan's, over every key partition) pass
-- jit_above_cost, and compiling cost 1.7 s a call on PostgreSQL 15 with LLVM
-- for a look-up that runs in a millisecond (revision 0018)
SET jit = off
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
DECLARE
    by_pairs boolean := coalesce(pairs, false);
    -- by pairs: block i's leading values (its first lead probes, all with NULL
    -- lead, and the own value) and its second values (the probes, the own
    -- value and its one-bit flips)
    a0 smallint[]; a1 smallint[]; a2 smallint[]; a3 smallint[];
    s0 smallint[]; s1 smallint[]; s2 smallint[]; s3 smallint[];
    hits bigint[];  -- the fingerprints the probes find
BEGIN
    IF fp IS NULL THEN
        RAISE EXCEPTION 'simhash: the fingerprint must not be NULL' USING ERRCODE = '22004';
    END IF;
    IF p0 IS NULL OR p1 IS NULL OR p2 IS NULL OR p3 IS NULL THEN
        RAISE EXCEPTION 'simhash: the probe values of block % must not be NULL',
            CASE WHEN p0 IS NULL THEN 0 WHEN p1 IS NULL THEN 1 WHEN p2 IS NULL THEN 2 ELSE 3 END
            USING ERRCODE = '22004', HINT = 'an empty array probes no value of its block';
    END IF;
    IF cap IS NULL OR cap < 0 OR cap > 64 THEN
        RAISE EXCEPTION 'simhash: cap must be between 0 and 64 (a 64-bit fingerprint), got %',
            coalesce(cap::text, 'NULL') USING ERRCODE = '22023';
    END IF;
    IF minhash IS NOT NULL AND (minhash_cap IS NULL OR minhash_cap < 0 OR minhash_cap > 64) THEN
        RAISE EXCEPTION 'simhash: minhash_cap must be between 0 and 64, got %',
            coalesce(minhash_cap::text, 'NULL') USING ERRCODE = '22023';
    END IF;
    IF lead < 0 THEN
        RAISE EXCEPTION 'simhash: lead must be NULL (every pair value leads) or >= 0, got %',
            lead USING ERRCODE = '22023';
    END IF;
    IF by_pairs THEN
        a0 := p0; a1 := p1; a2 := p2; a3 := p3;
        IF lead IS NOT NULL THEN  -- the first lead values of each block (revision 0024)
            a0 := a0[array_lower(a0, 1):array_lower(a0, 1) + lead - 1];
            a1 := a1[array_lower(a1, 1):array_lower(a1, 1) + lead - 1];
            a2 := a2[array_lower(a2, 1):array_lower(a2, 1) + lead - 1];
            a3 := a3[array_lower(a3, 1):array_lower(a3, 1) + lead - 1];
        END IF;
        -- (an empty list's slice is NULL)
        a0 := coalesce(a0, '{}') || simhash_block(fp, 0); s0 := p0 || simhash_block_near1(fp, 0);
        a1 := coalesce(a1, '{}') || simhash_block(fp, 1); s1 := p1 || simhash_block_near1(fp, 1);
        a2 := coalesce(a2, '{}') || simhash_block(fp, 2); s2 := p2 || simhash_block_near1(fp, 2);
        a3 := coalesce(a3, '{}') || simhash_block(fp, 3); s3 := p3 || simhash_block_near1(fp, 3);
    END IF;
    -- A pair branch is one scan of block i's index with both arrays as its
    -- keys: on a big store's statistics (10M rows) the generic plan takes it, with
    -- PostgreSQL 17+ skipping between the array keys (11 index searches for
    -- 32 leading values, 36 buffers). Taking block i's values one at a time
    -- instead (a join by equality) cost 1.8x the single-block probes: one
    -- rescan per value and partition. On a small store the generic plan may
    -- take block i+1's index and check block i in the table (it takes each
    -- array as 10 values); the batch form writes its second lists out as an
    -- ARRAY[...] against that (revision 0026), but here, where the plan is set
    -- up on every call, those 1,536 subscripts cost more to set up (+0.45 ms
    -- a call at 10M rows) than a big store's plan can spare.
    --
    -- The fingerprints the probes find, by one of two statements: each is its
    -- own cached plan, and a plan is set up in full on every call, the
    -- branches that do not run too (revision 0026: 0.95x the call at 10M)
    IF NOT by_pairs THEN
        hits := ARRAY(
            SELECT c.fingerprint FROM simhash_documents c
            WHERE c.b0 = ANY (p0) AND simhash_hamming(c.fingerprint, fp) <= cap
            UNION
            SELECT c.fingerprint FROM simhash_documents c
            WHERE c.b1 = ANY (p1) AND simhash_hamming(c.fingerprint, fp) <= cap
            UNION
            SELECT c.fingerprint FROM simhash_documents c
            WHERE c.b2 = ANY (p2) AND simhash_hamming(c.fingerprint, fp) <= cap
            UNION
            SELECT c.fingerprint FROM simhash_documents c
            WHERE c.b3 = ANY (p3) AND simhash_hamming(c.fingerprint, fp) <= cap);
    ELSE
        hits := ARRAY(
            SELECT c.fingerprint FROM simhash_documents c
            WHERE c.b0 = ANY (a0) AND c.b1 = ANY (s1)
              AND simhash_hamming(c.fingerprint, fp) <= cap
            UNION
            SELECT c.fingerprint FROM simhash_documents c
            WHERE c.b1 = ANY (a1) AND c.b2 = ANY (s2)
              AND simhash_hamming(c.fingerprint, fp) <= cap
            UNION
            SELECT c.fingerprint FROM simhash_documents c
            WHERE c.b2 = ANY (a2) AND c.b3 = ANY (s3)
              AND simhash_hamming(c.fingerprint, fp) <= cap
            UNION
            SELECT c.fingerprint FROM simhash_documents c
            WHERE c.b3 = ANY (a3) AND c.b0 = ANY (s0)
              AND simhash_hamming(c.fingerprint, fp) <= cap);
    END IF;
    RETURN QUERY
    WITH found AS (
        SELECT d.id, d.key, d.fingerprint, d.meta, d.verify_text, d.sentence_sig,
               d.sentence_hashes, d.created_at
        FROM unnest(hits) AS m (fingerprint) JOIN simhash_documents d
          ON d.b0 = simhash_block(m.fingerprint, 0) AND d.b1 = simhash_block(m.fingerprint, 1)
         AND d.fingerprint = m.fingerprint
        UNION ALL
        SELECT d.id, d.key, d.fingerprint, d.meta, d.verify_text, d.sentence_sig,
               d.sentence_hashes, d.created_at
        FROM simhash_documents d WHERE d.sentence_sig = sig
        UNION ALL
        SELECT s.id, s.key, s.fingerprint, s.meta, s.verify_text, s.sentence_sig,
               s.sentence_hashes, s.created_at
        FROM simhash_sentence_matches(hashes, fp) AS s
        UNION ALL
        SELECT s.id, s.key, s.fingerprint, s.meta, s.verify_text, s.sentence_sig,
               s.sentence_hashes, s.created_at
        FROM simhash_sentence_matches(minhash, fp) AS s
        WHERE simhash_hamming(s.fingerprint, fp) <= minhash_cap
    )
    -- text_lost as in the batch form: stored before revision 0003's columns
    SELECT f.id, f.key, simhash_hamming(f.fingerprint, fp), f.meta, f.verify_text,
           f.sentence_sig, f.sentence_hashes,
           coalesce(f.verify_text IS NULL AND f.id <= (u.value->>'max_id')::bigint
                    AND f.created_at <= (u.value->>'stored_until')::timestamptz, false)
    -- a row several keys find, once: by id alone (see the batch form)
    FROM (SELECT DISTINCT ON (a.id) a.* FROM found a ORDER BY a.id) AS f
    LEFT JOIN simhash_meta u ON u.name = 'unverified_rows'
    ORDER BY 3, 1;
END
$$;

-- The single form with pairs led by every value (revision 0019's arguments).
CREATE OR REPLACE FUNCTION simhash_near_probes_candidates(
    fp bigint, p0 smallint[], p1 smallint[], p2 smallint[], p3 smallint[], cap integer,
    sig bigint, hashes bigint[], minhash bigint[], minhash_cap integer, pairs boolean
)
RETURNS TABLE (id bigint, key text, distance integer, meta jsonb, verify_text text,
               sentence_sig bigint, sentence_hashes bigint[], text_lost boolean)
LANGUAGE sql STABLE PARALLEL SAFE ROWS 10 AS $$
    SELECT c.*
    FROM simhash_near_probes_candidates(fp, p0, p1, p2, p3, cap, sig, hashes, minhash,
                                        minhash_cap, pairs, NULL::integer) AS c
    ORDER BY 3, 1
$$;

-- The single form by single blocks only (revision 0016's arguments and columns).
CREATE OR REPLACE FUNCTION simhash_near_probes_candidates(
    fp bigint, p0 smallint[], p1 smallint[], p2 smallint[], p3 smallint[], cap integer,
    sig bigint, hashes bigint[], minhash bigint[], minhash_cap integer
)
RETURNS TABLE (id bigint, key text, distance integer, meta jsonb, verify_text text,
               sentence_sig bigint, sentence_hashes bigint[], text_lost boolean)
LANGUAGE sql STABLE PARALLEL SAFE ROWS 10 AS $$
    SELECT c.*
    FROM simhash_near_probes_candidates(fp, p0, p1, p2, p3, cap, sig, hashes, minhash,
                                        minhash_cap, false) AS c
    ORDER BY 3, 1
$$;

-- The single form without min-hash keys (revision 0015's arguments and columns).
CREATE OR REPLACE FUNCTION simhash_near_probes_candidates(
    fp bigint, p0 smallint[], p1 smallint[], p2 smallint[], p3 smallint[], cap integer,
    sig bigint, hashes bigint[]
)
RETURNS TABLE (id bigint, key text, distance integer, meta jsonb, verify_text text,
               sentence_sig bigint, sentence_hashes bigint[], text_lost boolean)
LANGUAGE sql STABLE PARALLEL SAFE ROWS 10 AS $$
    SELECT c.*
    FROM simhash_near_probes_candidates(fp, p0, p1, p2, p3, cap, sig, hashes,
                                        NULL::bigint[], 0) AS c
    ORDER BY 3, 1
$$;

-- The single form without hashes (revision 0014's arguments and columns):
-- the form above with none, so that the search has one definition.
CREATE OR REPLACE FUNCTION simhash_near_probes_candidates(
    fp bigint, p0 smallint[], p1 smallint[], p2 smallint[], p3 smallint[], cap integer,
    sig bigint DEFAULT NULL
)
RETURNS TABLE (id bigint, key text, distance integer, meta jsonb, verify_text text,
               sentence_sig bigint, text_lost boolean)
LANGUAGE sql STABLE PARALLEL SAFE ROWS 10 AS $$
    SELECT c.id, c.key, c.distance, c.meta, c.verify_text, c.sentence_sig, c.text_lost
    FROM simhash_near_probes_candidates(fp, p0, p1, p2, p3, cap, sig, NULL::bigint[]) AS c
    ORDER BY 3, 1
$$;

-- One query: the rows within cap that share a probed value in some block.
-- Since revision 0014 the id, key and distance of the single-query
-- candidates' form, without signature rows: one definition of the search.
CREATE OR REPLACE FUNCTION simhash_near_probes(
    fp bigint, p0 smallint[], p1 smallint[], p2 smallint[], p3 smallint[], cap integer
)
RETURNS TABLE (id bigint, key text, distance integer)
LANGUAGE sql STABLE PARALLEL SAFE ROWS 10 AS $$
    SELECT c.id, c.key, c.distance
    FROM simhash_near_probes_candidates(fp, p0, p1, p2, p3, cap) AS c
    ORDER BY 3, 1
$$;

GRANT EXECUTE ON FUNCTION
    simhash_check_probes(bigint[], smallint[], integer[], bigint[]),
    simhash_near_probes(bigint, smallint[], smallint[], smallint[], smallint[], integer),
    simhash_probe_matches(bigint[], smallint[], integer[]),
    simhash_near_probes_many(bigint[], smallint[], integer[]),
    simhash_near_probes_candidates(bigint[], smallint[], integer[], bigint[]),
    simhash_near_probes_candidates(bigint, smallint[], smallint[], smallint[], smallint[],
                                   integer, bigint),
    simhash_sentence_matches(bigint[]),
    simhash_sentence_matches(bigint[], bigint),
    simhash_near_probes_candidates(bigint[], smallint[], integer[], bigint[], bigint[]),
    simhash_near_probes_candidates(bigint, smallint[], smallint[], smallint[], smallint[],
                                   integer, bigint, bigint[]),
    simhash_near_probes_candidates(bigint[], smallint[], integer[], bigint[], bigint[],
                                   bigint[], integer),
    simhash_near_probes_candidates(bigint, smallint[], smallint[], smallint[], smallint[],
                                   integer, bigint, bigint[], bigint[], integer),
    simhash_block_near1(bigint, integer),
    simhash_probe_matches(bigint[], smallint[], integer[], boolean[]),
    simhash_near_probes_candidates(bigint[], smallint[], integer[], bigint[], bigint[],
                                   bigint[], integer, boolean[]),
    simhash_near_probes_candidates(bigint, smallint[], smallint[], smallint[], smallint[],
                                   integer, bigint, bigint[], bigint[], integer, boolean)
TO simhash_reader;

GRANT EXECUTE ON FUNCTION
    simhash_probe_matches(bigint[], smallint[], integer[], boolean[], integer),
    simhash_near_probes_candidates(bigint[], smallint[], integer[], bigint[], bigint[],
                                   bigint[], integer, boolean[], integer),
    simhash_near_probes_candidates(bigint, smallint[], smallint[], smallint[], smallint[],
                                   integer, bigint, bigint[], bigint[], integer, boolean, integer)
TO simhash_reader;
