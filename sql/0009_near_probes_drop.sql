-- Undo revision 0009: the searches by explicit probe values. Nothing else
-- calls them, and they hold no data.
DROP FUNCTION simhash_near_probes_candidates(bigint[], smallint[], integer[], bigint[]);
DROP FUNCTION simhash_near_probes_many(bigint[], smallint[], integer[]);
DROP FUNCTION simhash_probe_matches(bigint[], smallint[], integer[]);
DROP FUNCTION simhash_near_probes(bigint, smallint[], smallint[], smallint[], smallint[], integer);
DROP FUNCTION simhash_check_probes(bigint[], smallint[], integer[], bigint[]);
