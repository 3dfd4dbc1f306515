-- simhash-pg revision 0015, undone: no sentence hashes. The forms without
-- hashes search on their own again (revisions 0009 and 0014), and the column,
-- its index and the forms with hashes go.
-- Run by migrations/versions/0015_sentence_hashes.py downgrade(), followed
-- by sql/0014_probes_one.sql.

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

-- the single form as revision 0014 made it: the migration runs
-- sql/0014_probes_one.sql again after this file (its definitions, not a copy)

DROP FUNCTION simhash_sentence_matches(bigint[]);
DROP INDEX simhash_documents_sentence_hashes_idx;
ALTER TABLE simhash_documents DROP COLUMN sentence_hashes;
