-- Undo revision 0006. The migration has already run 0001_functions.sql and
-- 0004_functions.sql again (simhash_masks, simhash_probes, simhash_near and
-- simhash_near_many as revision 0005 had them, grants kept), so nothing reads
-- these any more.

DROP FUNCTION simhash_use_pairs(integer);
DROP FUNCTION simhash_probe_sets(bigint, integer);
DROP TABLE simhash_mask_sets;
