"""A purge never stalls the writers behind a session holding the table (issue 29, item 1).

An analyst (a role with only simhash_reader) leaves a transaction open after
reading simhash_documents: it holds ACCESS SHARE on every partition. The
purge must drop a partition; while it waits for its lock, adds must go on.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator

import psycopg
import pytest
from _days import past_day_partitions
from click.testing import CliRunner
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from simhash_pg.cli import cli
from simhash_pg.store import SimhashStore
from simhash_pg.store.maintenance import MaintenanceBlockedError
from simhash_pg.store.retention import purge


@pytest.fixture
def analyst(pg: psycopg.Connection, pg_dsn: str) -> Iterator[psycopg.Connection]:
    """An idle transaction of a reader role that has read simhash_documents."""
    role = f"analyst_{random.getrandbits(32):x}"
    pg.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD 'x' IN ROLE simhash_reader").format(
        sql.Identifier(role)))
    past_day_partitions(pg, 4)
    pg.execute("INSERT INTO simhash_documents (key, fingerprint, created_at)"
               " SELECT 'old' || i, i, now() - interval '3 days' FROM generate_series(1, 50) i")
    params = {k: v for k, v in conninfo_to_dict(pg_dsn).items() if v is not None}
    params |= {"user": role, "password": "x", "application_name": "analyst-notebook"}
    conn = psycopg.connect(make_conninfo(**params))
    try:
        assert conn.execute("SELECT count(*) FROM simhash_documents").fetchone() == (50,)
        yield conn  # idle in transaction
    finally:
        conn.close()
        pg.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


def _add_times(pg_dsn: str, stop: threading.Event) -> list[float]:
    times: list[float] = []

    def run() -> None:
        with SimhashStore(pg_dsn) as store:
            rnd = random.Random(5)
            while not stop.is_set():
                t = time.perf_counter()
                store.add(rnd.getrandbits(64))
                times.append(time.perf_counter() - t)
                time.sleep(0.02)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    stop.wait()
    thread.join(30)
    return times


def test_writers_go_on_while_a_purge_waits_for_an_idle_reader(
    pg: psycopg.Connection, pg_dsn: str, analyst: psycopg.Connection
) -> None:
    stop = threading.Event()
    times: list[float] = []
    writer = threading.Thread(target=lambda: times.extend(_add_times(pg_dsn, stop)))
    writer.start()
    results = []
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        purger = threading.Thread(target=lambda: results.append(purge(conn, "2d")))
        purger.start()
        time.sleep(2.5)  # the analyst idles; the purge waits for it
        assert purger.is_alive() and not results
        analyst.rollback()  # the analyst is done: the purge goes on
        purger.join(30)
        stop.set()
        writer.join(30)
    assert len(results) == 1 and results[0].deleted == 50 and results[0].dropped
    assert len(times) > 20
    assert max(times) < 1.0, sorted(times)[-5:]


def test_a_purge_that_gives_up_names_the_session_in_its_way(
    pg: psycopg.Connection, pg_dsn: str, analyst: psycopg.Connection
) -> None:
    pid = analyst.info.backend_pid
    user = analyst.info.user
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        t = time.perf_counter()
        with pytest.raises(MaintenanceBlockedError) as err:
            purge(conn, "2d", lock_wait=1.0)
        assert time.perf_counter() - t < 5
    message = str(err.value)
    assert f"pid {pid} (user {user}, application analyst-notebook, idle in transaction" in message
    assert "simhash_documents" in message
    assert isinstance(err.value, psycopg.errors.LockNotAvailable)
    # nothing was dropped; once the analyst is done, the purge goes through
    analyst.rollback()
    assert pg.execute("SELECT count(*) FROM simhash_documents").fetchone() == (50,)
    assert purge(pg, "2d", lock_wait=1.0).deleted == 50


def test_the_purge_command_reports_the_session_and_exits_3(
    pg_dsn: str, analyst: psycopg.Connection
) -> None:
    pid = analyst.info.backend_pid
    run = CliRunner().invoke(cli, ["purge", "--older-than", "2d", "--lock-wait", "0.5",
                                   "--dsn", pg_dsn])
    assert run.exit_code == 3, run.output
    assert "purge stopped: gave up after" in run.output
    assert f"pid {pid} (user {analyst.info.user}, application analyst-notebook" in run.output
    assert "Traceback" not in run.output
