-- simhash-pg revision 0026: a small store's batch of long texts probes
-- block i's index, and the single form sets up only the form it runs
-- (issue 28). Applied by migrations/versions/0026_pair_plan.py; undone by
-- sql/0026_pair_plan_drop.sql.
--
-- A pair branch asks for b_i among its leading values and b_(i+1) among its
-- second values (the probes, the own value and its one-bit flips: 81 with
-- the default 64 probes). Both are keys of block i's index. The look-ups run
-- cached generic plans, which cannot see an array parameter's length and
-- take it as 10; with 10 second values, a small store's plan (measured at
-- 300k rows) took block i+1's index for the second list and checked b_i in
-- the table: 2.3-2.4x the single-block form's time.
--
-- The batch form (simhash_probe_matches) writes the second list out as an
-- ARRAY[...] of its first 96 elements, whose elements the planner counts
-- (NULLs past its end match nothing), and keeps to block i's index at every
-- size; a longer list (an owner's 'pairs' above 79) runs branches of its own
-- with the plain array. The single form cannot: its plan is set up on every
-- call, and setting up the written lists' 1,536 subscripts cost 0.45 ms a
-- call at 10M rows, where the plan was already right. It now runs its
-- probes as one of two statements (single blocks, or pairs), so that a call
-- sets up only the form it runs, then the rest. Nothing stored changes.

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
