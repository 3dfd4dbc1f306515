"""Revision 0010 (issue 17): the k <= 3 probe sets written out, inlined, unchanged in value."""

from __future__ import annotations

import random
from typing import Any

import psycopg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simhash_pg.bits import MAX_FINGERPRINT, to_signed, to_unsigned
from simhash_pg.db import migrate
from simhash_pg.store import SimhashStore
from simhash_pg.text.simhash import Fingerprinter

HYPO = settings(max_examples=40, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])


@HYPO
@given(st.lists(st.integers(0, MAX_FINGERPRINT), min_size=1, max_size=20),
       st.integers(-2, 4))
def test_probe_sets_equal_the_mask_form_at_every_radius(
    pg: psycopg.Connection, fps: list[int], r: int
) -> None:
    rows = pg.execute(
        "SELECT simhash_probe_sets(x, %s) = simhash_mask_probe_sets(x, %s),"
        " simhash_probe_sets(x, %s) FROM unnest(%s::bigint[]) AS x",
        [r, r, r, [to_signed(fp) for fp in fps]],
    ).fetchall()
    assert all(same for same, _ in rows)
    # the values by hand: block i's value XOR every mask of at most r bits
    for fp, (_, sets) in zip(fps, rows, strict=True):
        for i, got in enumerate(sets):
            block = (fp >> (48 - 16 * i)) & 0xFFFF
            masks = [m for m in range(1 << 16) if m.bit_count() <= max(0, r)]
            assert sorted(got) == sorted((block ^ m) - 32768 for m in masks)


def test_probe_sets_at_radius_one_are_inlined(pg: psycopg.Connection) -> None:
    plan = pg.execute(
        "EXPLAIN (VERBOSE) SELECT simhash_probe_sets(x, 1) FROM unnest('{1,2}'::bigint[]) AS x"
    ).fetchall()
    output = next(line for (line,) in plan if "Output:" in line)
    assert "simhash_probe_sets" not in output and "ARRAY[" in output


def test_migration_0010_round_trip(pg: psycopg.Connection, pg_dsn: str) -> None:
    rnd = random.Random(10)
    fps = [rnd.getrandbits(64) for _ in range(300)]
    fps += [fp ^ (1 << rnd.randrange(64)) for fp in fps[:100]]
    pg.execute("INSERT INTO simhash_documents (fingerprint) SELECT unnest(%s::bigint[])",
               [[to_signed(fp) for fp in fps]])
    queries = [to_signed(fp ^ (1 << rnd.randrange(64))) for fp in fps[:50]]
    near = "SELECT * FROM simhash_near_many(%s::bigint[], 3)"
    before = pg.execute(near, [queries]).fetchall()
    assert before
    assert migrate.downgrade_losses_between("0010", "0009") == []
    migrate.downgrade(pg_dsn, "0009")
    assert pg.execute("SELECT to_regproc('simhash_mask_probe_sets')").fetchone() == (None,)
    assert pg.execute(near, [queries]).fetchall() == before
    migrate.upgrade(pg_dsn)
    assert migrate.current(pg_dsn) == migrate.HEAD
    assert pg.execute(near, [queries]).fetchall() == before
    migrate.check(pg_dsn)


class _NoProbes(Fingerprinter):
    """A real fingerprinter that refuses to compute probe values."""

    def fingerprint_many_probes(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("bulk_load computed probe values it does not use")


def test_bulk_load_of_texts_computes_no_probe_values(pg_dsn: str) -> None:
    texts = [f"the council voted on the school budget for the {i}th time this year, again"
             for i in range(40)]
    with SimhashStore(pg_dsn) as store:
        assert store.policy.probes_texts  # the default probes texts when it looks up
        store._fingerprinter = _NoProbes()  # the one it would make, refusing probes
        assert store.bulk_load(texts) == 40
        rows = store.connection.execute(
            "SELECT fingerprint, verify_text IS NOT NULL FROM simhash_documents ORDER BY id"
        ).fetchall()
    assert [to_unsigned(fp) for fp, _ in rows] == [Fingerprinter().fingerprint(t) for t in texts]
