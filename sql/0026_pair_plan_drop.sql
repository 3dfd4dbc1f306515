-- simhash-pg revision 0026, undone: the pair branches take the second list
-- as a plain array again (revision 0024's bodies). Run by
-- migrations/versions/0026_pair_plan.py downgrade().

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
      ON c.b0 = ANY (q.a0) AND c.b1 = ANY (q.s1)
     AND simhash_hamming(c.fingerprint, q.fp) <= q.cap
    UNION
    SELECT q.ord, c.fingerprint
    FROM qp q JOIN simhash_documents c
      ON c.b1 = ANY (q.a1) AND c.b2 = ANY (q.s2)
     AND simhash_hamming(c.fingerprint, q.fp) <= q.cap
    UNION
    SELECT q.ord, c.fingerprint
    FROM qp q JOIN simhash_documents c
      ON c.b2 = ANY (q.a2) AND c.b3 = ANY (q.s3)
     AND simhash_hamming(c.fingerprint, q.fp) <= q.cap
    UNION
    SELECT q.ord, c.fingerprint
    FROM qp q JOIN simhash_documents c
      ON c.b3 = ANY (q.a3) AND c.b0 = ANY (q.s0)
     AND simhash_hamming(c.fingerprint, q.fp) <= q.cap
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
    -- one form runs: the other's branches stop at a one-time filter. A pair
    -- branch is one scan of block i's index with both arrays as its keys: on a
    -- big store's statistics (10M rows) the generic plan takes it, with
    -- PostgreSQL 17+ skipping between the array keys (11 index searches for
    -- 32 leading values, 36 buffers). Taking block i's values one at a time
    -- instead (a join by equality) cost 1.8x the single-block probes: one
    -- rescan per value and partition. On a small table the planner may take
    -- block i+1's index and check block i in the table: cheap there.
    RETURN QUERY
    WITH m AS (
        SELECT c.fingerprint FROM simhash_documents c
        WHERE NOT by_pairs AND c.b0 = ANY (p0) AND simhash_hamming(c.fingerprint, fp) <= cap
        UNION
        SELECT c.fingerprint FROM simhash_documents c
        WHERE NOT by_pairs AND c.b1 = ANY (p1) AND simhash_hamming(c.fingerprint, fp) <= cap
        UNION
        SELECT c.fingerprint FROM simhash_documents c
        WHERE NOT by_pairs AND c.b2 = ANY (p2) AND simhash_hamming(c.fingerprint, fp) <= cap
        UNION
        SELECT c.fingerprint FROM simhash_documents c
        WHERE NOT by_pairs AND c.b3 = ANY (p3) AND simhash_hamming(c.fingerprint, fp) <= cap
        UNION
        SELECT c.fingerprint FROM simhash_documents c
        WHERE by_pairs AND c.b0 = ANY (a0) AND c.b1 = ANY (s1)
          AND simhash_hamming(c.fingerprint, fp) <= cap
        UNION
        SELECT c.fingerprint FROM simhash_documents c
        WHERE by_pairs AND c.b1 = ANY (a1) AND c.b2 = ANY (s2)
          AND simhash_hamming(c.fingerprint, fp) <= cap
        UNION
        SELECT c.fingerprint FROM simhash_documents c
        WHERE by_pairs AND c.b2 = ANY (a2) AND c.b3 = ANY (s3)
          AND simhash_hamming(c.fingerprint, fp) <= cap
        UNION
        SELECT c.fingerprint FROM simhash_documents c
        WHERE by_pairs AND c.b3 = ANY (a3) AND c.b0 = ANY (s0)
          AND simhash_hamming(c.fingerprint, fp) <= cap
    ), found AS (
        SELECT d.id, d.key, d.fingerprint, d.meta, d.verify_text, d.sentence_sig,
               d.sentence_hashes, d.created_at
        FROM m JOIN simhash_documents d
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
