-- simhash-pg revision 0015, undone: no sentence hashes. The forms without
-- hashes search on their own again (revisions 0009 and 0014), and the column,
-- its index and the forms with hashes go.
-- Run by migrations/versions/0015_sentence_hashes.py downgrade().

DROP FUNCTION simhash_near_probes_candidates(
    bigint[], smallint[], integer[], bigint[], bigint[]);
DROP FUNCTION simhash_near_probes_candidates(
    bigint, smallint[], smallint[], smallint[], smallint[], integer, bigint, bigint[]);

-- the batch form as revision 0009 made it
CREATE OR REPLACE FUNCTION simhash_near_probes_candidates(
    fps bigint[], probes smallint[], caps integer[], sigs bigint[] DEFAULT NULL
)
RETURNS TABLE (query integer, id bigint, key text, distance integer, meta jsonb,
               verify_text text, sentence_sig bigint, text_lost boolean)
LANGUAGE plpgsql STABLE PARALLEL SAFE ROWS 100
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
    v_lost_max bigint;
    v_lost_until timestamptz;
BEGIN
    IF simhash_check_probes(fps, probes, caps, sigs) = 0 THEN
        RETURN;
    END IF;
    SELECT (u.value->>'max_id')::bigint, (u.value->>'stored_until')::timestamptz
    INTO v_lost_max, v_lost_until
    FROM simhash_meta u WHERE u.name = 'unverified_rows';
    RETURN QUERY
    WITH near AS MATERIALIZED (
        SELECT m.query, d.id, d.key, simhash_hamming(d.fingerprint, fps[m.query]) AS distance,
               d.meta, d.verify_text, d.sentence_sig,
               coalesce(d.verify_text IS NULL AND d.id <= v_lost_max
                        AND d.created_at <= v_lost_until, false) AS text_lost
        FROM simhash_probe_matches(fps, probes, caps) AS m
        JOIN simhash_documents d
          ON d.b0 = simhash_block(m.fingerprint, 0) AND d.b1 = simhash_block(m.fingerprint, 1)
         AND d.fingerprint = m.fingerprint
    )
    SELECT * FROM near
    UNION ALL
    SELECT s.o::integer, d.id, d.key, simhash_hamming(d.fingerprint, s.fp), d.meta,
           d.verify_text, d.sentence_sig,
           coalesce(d.verify_text IS NULL AND d.id <= v_lost_max
                    AND d.created_at <= v_lost_until, false)
    FROM unnest(fps, sigs) WITH ORDINALITY AS s (fp, sig, o)
    JOIN simhash_documents d ON d.sentence_sig = s.sig
    WHERE sigs IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM near n WHERE n.query = s.o AND n.id = d.id)
    ORDER BY 1, 4, 2;
END
$$;

-- the single form as revision 0014 made it
CREATE OR REPLACE FUNCTION simhash_near_probes_candidates(
    fp bigint, p0 smallint[], p1 smallint[], p2 smallint[], p3 smallint[], cap integer,
    sig bigint DEFAULT NULL
)
RETURNS TABLE (id bigint, key text, distance integer, meta jsonb, verify_text text,
               sentence_sig bigint, text_lost boolean)
LANGUAGE plpgsql STABLE PARALLEL SAFE ROWS 10
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
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
    RETURN QUERY
    WITH m AS (
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
        WHERE c.b3 = ANY (p3) AND simhash_hamming(c.fingerprint, fp) <= cap
    ), found AS (
        SELECT d.id, d.key, d.fingerprint, d.meta, d.verify_text, d.sentence_sig, d.created_at
        FROM m JOIN simhash_documents d
          ON d.b0 = simhash_block(m.fingerprint, 0) AND d.b1 = simhash_block(m.fingerprint, 1)
         AND d.fingerprint = m.fingerprint
        UNION
        SELECT d.id, d.key, d.fingerprint, d.meta, d.verify_text, d.sentence_sig, d.created_at
        FROM simhash_documents d WHERE d.sentence_sig = sig
    )
    -- text_lost as in the batch form: stored before revision 0003's columns
    SELECT f.id, f.key, simhash_hamming(f.fingerprint, fp), f.meta, f.verify_text,
           f.sentence_sig,
           coalesce(f.verify_text IS NULL AND f.id <= (u.value->>'max_id')::bigint
                    AND f.created_at <= (u.value->>'stored_until')::timestamptz, false)
    FROM found f LEFT JOIN simhash_meta u ON u.name = 'unverified_rows'
    ORDER BY 3, 1;
END
$$;

DROP FUNCTION simhash_sentence_matches(bigint[]);
DROP INDEX simhash_documents_sentence_hashes_idx;
ALTER TABLE simhash_documents DROP COLUMN sentence_hashes;
