"""Retention: purge(older_than=...), the store's window, the purge command."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

import psycopg
import pytest
from _days import past_day_partitions
from click.testing import CliRunner

from simhash_pg.bits import to_signed, to_unsigned
from simhash_pg.cli import cli
from simhash_pg.retention import parse_age, purge, purge_candidates
from simhash_pg.store import SimhashStore


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("2d", timedelta(days=2)),
        ("36h", timedelta(hours=36)),
        ("90m", timedelta(minutes=90)),
        ("1w", timedelta(weeks=1)),
        ("1d12h", timedelta(days=1, hours=12)),
        ("2 days", timedelta(days=2)),
        ("1.5h", timedelta(minutes=90)),
        ("45s", timedelta(seconds=45)),
    ],
)
def test_parse_age(text: str, want: timedelta) -> None:
    assert parse_age(text) == want


@pytest.mark.parametrize("text", ["", "2", "d", "2x", "-1d", "0d", "2d junk", "1d; DROP"])
def test_parse_age_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        parse_age(text)


def _spread(pg: psycopg.Connection, n: int, days: float, seed: int = 7) -> list[tuple[int, int]]:
    """n rows with created_at spread over the last ``days`` days; (fp, hours ago)."""
    rnd = random.Random(seed)
    rows = [(rnd.getrandbits(64), rnd.randrange(int(days * 24))) for _ in range(n)]
    # planted neighbours across days, so near() crosses the cutoff
    for i in range(0, n, 10):
        rows[i] = (rows[i - 1][0] ^ (1 << rnd.randrange(64)), rows[i][1]) if i else rows[i]
    # oldest first, as a live store appends them
    rows.sort(key=lambda r: -r[1])
    with pg.cursor() as cur:
        cur.executemany(
            "INSERT INTO simhash_documents (key, fingerprint, created_at)"
            " VALUES (%s, %s, now() - make_interval(hours => %s) - interval '1 minute')",
            [(f"k{i}", to_signed(fp), h) for i, (fp, h) in enumerate(rows)],
        )
    return rows


def test_purge_deletes_exactly_the_old_rows_in_batches(pg: psycopg.Connection,
                                                       pg_dsn: str) -> None:
    made = past_day_partitions(pg, 5)
    assert len(made) == 5
    rows = _spread(pg, 3000, days=4)
    old = sum(1 for _, h in rows if h >= 48)
    assert 0 < old < len(rows)
    # newer rows that duplicate old ones: the link to a row deleted by DELETE
    # is cleared (the row kept); the link to a row of a dropped partition stays
    pg.execute(
        "UPDATE simhash_documents SET duplicate_of = (SELECT min(id) FROM simhash_documents)"
        " WHERE id = (SELECT max(id) FROM simhash_documents)"
    )
    batched_old = pg.execute(
        "SELECT min(id) FROM simhash_documents WHERE created_at < now() - interval '2 days'"
        " AND created_at >= date_trunc('day', now() - interval '2 days')"
    ).fetchone()[0]  # type: ignore[index]
    pg.execute(
        "UPDATE simhash_documents SET duplicate_of = %s"
        " WHERE id = (SELECT max(id) - 1 FROM simhash_documents)",
        [batched_old],
    )
    # rows in partitions wholly before the cutoff, and rows of the partly old day
    in_dropped = pg.execute(
        "SELECT count(*) FROM simhash_documents"
        " WHERE created_at < date_trunc('day', now() - interval '2 days')"
    ).fetchone()[0]  # type: ignore[index]
    cutoff, would = purge_candidates(pg, timedelta(days=2))
    assert would == old
    seen: list[int] = []
    res = purge(pg, timedelta(days=2), batch_size=250, progress=seen.append)
    assert res.deleted == old and res.cutoff >= cutoff
    assert 0 < in_dropped < old
    assert len(res.dropped) == 3  # days -5 .. -3; day -2 holds the cutoff: partly kept
    assert res.batches == (old - in_dropped) // 250 + 1 and seen[-1] == old
    assert seen[0] == in_dropped
    assert pg.execute("SELECT count(*) FROM simhash_documents").fetchone() == (len(rows) - old,)
    assert pg.execute(
        "SELECT count(*) FROM simhash_documents WHERE created_at < %s", [res.cutoff]
    ).fetchone() == (0,)
    links = pg.execute(
        "SELECT duplicate_of FROM simhash_documents ORDER BY id DESC LIMIT 2"
    ).fetchall()
    assert links == [(1,), (None,)]
    # nothing left to do: a second run deletes nothing
    assert purge(pg, "2d").deleted == 0


def test_near_stays_exact_after_a_purge(pg: psycopg.Connection, pg_dsn: str) -> None:
    _spread(pg, 2000, days=3, seed=11)
    with SimhashStore(pg_dsn, retention=timedelta(days=1)) as store:
        res = store.purge()
        assert res.deleted > 0
        kept = [
            (r[0], to_unsigned(r[1]))
            for r in pg.execute("SELECT id, fingerprint FROM simhash_documents").fetchall()
        ]
        rnd = random.Random(3)
        for _ in range(60):
            q = rnd.choice(kept)[1] ^ (1 << rnd.randrange(64)) ^ (1 << rnd.randrange(64))
            want = sorted(((q ^ fp).bit_count(), id_) for id_, fp in kept
                          if (q ^ fp).bit_count() <= 3)
            assert [(m.distance, m.id) for m in store.near(q, k=3)] == want


def test_store_purge_arguments(pg: psycopg.Connection, pg_dsn: str) -> None:
    _spread(pg, 200, days=3, seed=5)
    with SimhashStore(pg_dsn) as store:
        with pytest.raises(ValueError, match="no retention window"):
            store.purge()
        with pytest.raises(ValueError, match="timezone-aware"):
            store.purge(datetime(2020, 1, 1))
        with pytest.raises(TypeError):
            store.purge(3)  # type: ignore[arg-type]
        with pytest.raises(ValueError):
            store.purge(timedelta(days=-1))
        with pytest.raises(ValueError):
            store.purge("2d", batch_size=0)
        # an explicit cutoff far in the past deletes nothing
        assert store.purge(datetime(2000, 1, 1, tzinfo=timezone.utc)).deleted == 0
        assert store.purge("2d").deleted > 0
        assert store.count() > 0
    with pytest.raises(ValueError, match="retention"):
        SimhashStore(pg_dsn, retention=timedelta(0))


def test_purge_command(pg: psycopg.Connection, pg_dsn: str) -> None:
    _spread(pg, 500, days=3, seed=9)
    old = pg.execute(
        "SELECT count(*) FROM simhash_documents WHERE created_at < now() - interval '2 days'"
    ).fetchone()
    runner = CliRunner()
    dry = runner.invoke(cli, ["purge", "--older-than", "2d", "--dry-run", "--dsn", pg_dsn])
    assert dry.exit_code == 0, dry.output
    assert f"would delete {old[0]} documents" in dry.output  # type: ignore[index]
    run = runner.invoke(cli, ["purge", "--older-than", "2d", "--json", "--batch-size", "100",
                              "--dsn", pg_dsn])
    assert run.exit_code == 0, run.output
    assert f'"deleted": {old[0]}' in run.output  # type: ignore[index]
    bad = runner.invoke(cli, ["purge", "--older-than", "two days", "--dsn", pg_dsn])
    assert bad.exit_code == 2 and "not an age" in bad.output
    missing = runner.invoke(cli, ["purge", "--dsn", pg_dsn])
    assert missing.exit_code == 2
