"""No partition is left recorded as empty (reltuples = 0) for the planner.

Such a partition is planned as holding no rows, and a session's cached batch
look-up then scans it once per fingerprint when rows arrive (after midnight,
every add lands in it): simhash_pg/store/planner_stats.py.
"""

from __future__ import annotations

import numpy as np
import psycopg

from simhash_pg.store import SimhashStore
from simhash_pg.store.planner_stats import forget_empty_stats


def _leaves(pg: psycopg.Connection) -> dict[str, tuple[float, bool]]:
    """name -> (reltuples, holds rows) of every leaf partition."""
    out = {}
    for (name,) in pg.execute("SELECT relid::regclass::text FROM"
                              " pg_partition_tree('simhash_documents') WHERE isleaf").fetchall():
        (tuples,) = pg.execute("SELECT reltuples FROM pg_class WHERE oid = %s::regclass",
                               [name]).fetchone() or (None,)
        (rows,) = pg.execute(f"SELECT EXISTS (SELECT 1 FROM {name})").fetchone() or (None,)
        out[name] = (float(tuples), bool(rows))
    return out


def test_bulk_load_leaves_no_partition_recorded_empty(pg: psycopg.Connection,
                                                      pg_dsn: str) -> None:
    fps = np.random.default_rng(3).integers(0, 2**64 - 1, 5000, dtype=np.uint64)
    with SimhashStore(pg_dsn) as store:
        store.bulk_load(fps)
    leaves = _leaves(pg)
    assert len(leaves) >= 3  # today's, tomorrow's, the default
    for name, (tuples, rows) in leaves.items():
        if rows:
            assert tuples == 5000, name  # analyzed
        else:
            assert tuples < 0, name  # as never analyzed: planned as 10 pages


def test_purge_resets_partitions_an_analyze_recorded_empty(pg: psycopg.Connection,
                                                           pg_dsn: str) -> None:
    with SimhashStore(pg_dsn) as store:
        store.add_many([1 << 40, 7 << 50])
        pg.execute("ANALYZE simhash_documents")  # as an operator might
        zero = [n for n, (t, _) in _leaves(pg).items() if t == 0]
        assert len(zero) >= 2  # tomorrow's and the default partition
        # rows reach one of them after the ANALYZE (tomorrow's: after midnight)
        pg.execute("INSERT INTO simhash_documents (fingerprint, created_at)"
                   " SELECT g, now() + interval '1 day' FROM generate_series(1, 300) g")
        store.purge("30 days")
        leaves = _leaves(pg)
    assert all(t != 0 for t, _ in leaves.values()), leaves
    grown = [n for n in zero if leaves[n][1]]
    assert grown and all(leaves[n][0] == 300 for n in grown)  # analyzed, not truncated
    assert pg.execute("SELECT count(*) FROM simhash_documents").fetchone() == (302,)


def test_a_partition_in_use_is_left_for_the_next_run(pg: psycopg.Connection,
                                                     pg_dsn: str) -> None:
    pg.execute("ANALYZE simhash_documents")
    with psycopg.connect(pg_dsn) as other:
        # a reader of the default partition, mid-transaction
        other.execute("SELECT count(*) FROM simhash_documents_default").fetchone()
        done = forget_empty_stats(pg, lock_timeout_ms=50)
        assert "simhash_documents_default" not in done
        assert done  # the others were reset meanwhile
    assert forget_empty_stats(pg) == ["simhash_documents_default"]
    assert forget_empty_stats(pg) == []
