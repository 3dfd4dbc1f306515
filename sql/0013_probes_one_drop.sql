-- simhash-pg revision 0013, undone: no single-query form of
-- simhash_near_probes_candidates (the batch form serves one query too).
-- Run by migrations/versions/0013_probes_one.py downgrade().

DROP FUNCTION simhash_near_probes_candidates(
    bigint, smallint[], smallint[], smallint[], smallint[], integer, bigint
);
