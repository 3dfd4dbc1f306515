-- simhash-pg revision 0012, undone: simhash_pairs as revisions 0001-0011
-- left it (block self-joins, sorted by a, b), and no simhash_pair_branch.
-- Run by migrations/versions/0012_pairs.py downgrade().

-- Every pair of stored documents within k, a < b. Block self-joins (hash
-- joins on equal blocks for k <= 3), simhash_near per row above.
CREATE OR REPLACE FUNCTION simhash_pairs(k integer DEFAULT 3)
RETURNS TABLE (a bigint, b bigint, distance integer)
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT p.a, p.b, p.distance FROM (
        SELECT x.id AS a, y.id AS b, simhash_hamming(x.fingerprint, y.fingerprint) AS distance
        FROM simhash_documents x JOIN simhash_documents y ON y.b0 = x.b0 AND y.id > x.id
        WHERE simhash_check_k(k) < 4 AND simhash_hamming(x.fingerprint, y.fingerprint) <= k
        UNION
        SELECT x.id, y.id, simhash_hamming(x.fingerprint, y.fingerprint)
        FROM simhash_documents x JOIN simhash_documents y ON y.b1 = x.b1 AND y.id > x.id
        WHERE simhash_check_k(k) < 4 AND simhash_hamming(x.fingerprint, y.fingerprint) <= k
        UNION
        SELECT x.id, y.id, simhash_hamming(x.fingerprint, y.fingerprint)
        FROM simhash_documents x JOIN simhash_documents y ON y.b2 = x.b2 AND y.id > x.id
        WHERE simhash_check_k(k) < 4 AND simhash_hamming(x.fingerprint, y.fingerprint) <= k
        UNION
        SELECT x.id, y.id, simhash_hamming(x.fingerprint, y.fingerprint)
        FROM simhash_documents x JOIN simhash_documents y ON y.b3 = x.b3 AND y.id > x.id
        WHERE simhash_check_k(k) < 4 AND simhash_hamming(x.fingerprint, y.fingerprint) <= k
        UNION
        SELECT x.id, n.id, n.distance
        FROM simhash_documents x CROSS JOIN LATERAL simhash_near(x.fingerprint, k) AS n
        WHERE simhash_check_k(k) >= 4 AND n.id > x.id
    ) AS p
    ORDER BY p.a, p.b
$$;

DROP FUNCTION simhash_pair_branch(bigint);
