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
from simhash_pg.store import SimhashStore
from simhash_pg.store.retention import parse_age, purge, purge_candidates


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


# -- links added during a purge (issue 18, item 6) -------------------------------

_DANGLING = (
    "SELECT count(*) FROM simhash_documents d WHERE d.duplicate_of IS NOT NULL"
    " AND NOT EXISTS (SELECT 1 FROM simhash_documents t WHERE t.id = d.duplicate_of)"
)
_TEXT = ("The quick brown fox jumps over the lazy dog near the river bank while the sun"
         " sets slowly behind the distant hills and the birds sing.")
_FP = 0x0123_4567_89AB_CDEF


@pytest.mark.parametrize("path", ["add", "add_many", "text"])
def test_a_link_added_while_a_purge_deletes_its_row_does_not_dangle(
    pg: psycopg.Connection, pg_dsn: str, path: str
) -> None:
    """The purge's batched DELETE is done but not committed when a link to its row is added."""
    import threading

    from simhash_pg.store import AddResult, Doc
    from simhash_pg.store.retention import _PURGE_BATCH

    doc: str | int = _TEXT if path == "text" else _FP
    near: str | int = _TEXT.replace("slowly", "softly") if path == "text" else _FP ^ 0b101
    with SimhashStore(pg_dsn, on_duplicate="link") as store:
        old = store.add(doc, key="old")
        pg.execute("UPDATE simhash_documents SET created_at = now() - interval '3 hours'")
        answers: list[AddResult] = []

        def add() -> None:
            if path == "add_many":
                store.add_many([Doc(near, "new")], progress=answers.extend)
            else:
                answers.append(store.add(near, key="new"))

        adder = store.connection.info.backend_pid
        with psycopg.connect(pg_dsn) as purger:  # its transaction stays open
            deleted = purger.execute(
                _PURGE_BATCH, [datetime.now(timezone.utc) - timedelta(hours=1), 1000]
            ).rowcount
            assert deleted == 1
            thread = threading.Thread(target=add)
            thread.start()
            # the add either finishes (linked to the row being deleted) or
            # waits for the purge's transaction
            for _ in range(200):
                waiting = pg.execute(
                    "SELECT count(*) FROM pg_locks WHERE pid = %s AND NOT granted", [adder]
                ).fetchone()
                if not thread.is_alive() or waiting != (0,):
                    break
                thread.join(0.05)
            purger.commit()
        thread.join(30)
        assert not thread.is_alive()
    assert len(answers) == 1
    answer = answers[0]
    # answered as a link to the old row (the add came first, as far as
    # anyone can tell), and that row's DELETE cleared the link
    assert answer.inserted and answer.duplicate_of == old.id, answer
    assert pg.execute(_DANGLING).fetchone() == (0,)
    rows = pg.execute("SELECT key, duplicate_of FROM simhash_documents").fetchall()
    assert rows == [("new", None)]
