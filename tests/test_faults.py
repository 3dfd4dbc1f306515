"""Faults: the server killed, a connection dropped, a statement timed out.

Each fault is injected while ``add_many`` is in the middle of a batch: a
second session holds an uncommitted row with a key of that batch, so the
batch's COPY waits on the unique index (mid-transaction, rows half-sent) until
the fault strikes. Afterwards: the client got a clear error, every batch that
``add_many`` reported as committed is there, nothing is half-written (the
batch in flight is wholly absent; stored blocks match the fingerprint; no key
twice) and a rerun completes the job.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest
from _throwaway import needs_own_server, throwaway_server
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from simhash_pg.bits import blocks, to_unsigned
from simhash_pg.store import AddResult, Doc, SimhashStore

N = 6000
BATCH = 500
STUCK_BATCH = 4  # 0-based: batches 0..3 commit, batch 4 is in flight at the fault


def _docs(seed: int) -> list[Doc]:
    rnd = random.Random(seed)
    # random 64-bit fingerprints: no two within distance 3 (checked below)
    return [Doc(rnd.getrandbits(64), f"doc-{seed}-{i}") for i in range(N)]


def _wait_until_waiting(admin: psycopg.Connection, pid: int, timeout: float = 30) -> None:
    """Until backend ``pid`` waits on a lock (our uncommitted row), mid-batch."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        row = admin.execute(
            "SELECT wait_event_type, state FROM pg_stat_activity WHERE pid = %s", [pid]
        ).fetchone()
        if row and row[0] == "Lock":
            return
        time.sleep(0.02)
    raise AssertionError(f"backend {pid} never blocked mid-batch")


def _hold_key(dsn: str, key: str) -> psycopg.Connection:
    """A session with an uncommitted row for ``key``: writers of that key wait."""
    conn = psycopg.connect(dsn)
    conn.execute(
        "INSERT INTO simhash_documents (key, fingerprint) VALUES (%s, 0)", [key]
    )  # not committed: rolled back when this session ends
    return conn


def _check_store(
    dsn: str, docs: list[Doc], committed: list[list[AddResult]]
) -> dict[str, int]:
    """Committed batches present, the stuck one absent, rows intact; the figures."""
    want = {d.key: int(d.text) for d in docs}
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT id, key, fingerprint, b0, b1, b2, b3 FROM simhash_documents"
        ).fetchall()
        twice = conn.execute(
            "SELECT count(*) FROM (SELECT key FROM simhash_documents GROUP BY key"
            " HAVING count(*) > 1) AS t"
        ).fetchone()
    assert twice == (0,)
    stored: dict[str, int] = {}
    for id_, key, fp, *bs in rows:
        fp_u = to_unsigned(fp)
        assert tuple(bs) == blocks(fp_u), (id_, key)
        assert want[key] == fp_u, key
        stored[key] = id_
    reported = [r for batch in committed for r in batch]
    lost = [r.key for r in reported if r.key not in stored or stored[r.key] != r.id]
    assert not lost, f"{len(lost)} rows reported committed are missing: {lost[:5]}"
    # the batch in flight at the fault is all or nothing
    stuck = [d.key for d in docs[STUCK_BATCH * BATCH : (STUCK_BATCH + 1) * BATCH]]
    present = sum(1 for k in stuck if k in stored)
    assert present in (0, len(stuck)), f"half-written batch: {present}/{len(stuck)}"
    return {"rows_checked": len(rows), "reported": len(reported), "lost": len(lost)}


def _rerun(dsn: str, docs: list[Doc]) -> None:
    with SimhashStore(dsn) as store:
        res = store.add_many(docs, batch_size=BATCH)
        assert res.errors == 0 and res.duplicates == 0
        assert res.inserted + res.existing_keys == len(docs)
        assert store.count() == len(docs)
        keys = store.connection.execute(
            "SELECT count(DISTINCT key) FROM simhash_documents"
        ).fetchone()
        assert keys == (len(docs),)


def _add_many_until_fault(
    dsn: str, docs: list[Doc], inject: Callable[[int], None]
) -> tuple[list[list[AddResult]], BaseException]:
    """add_many with the fault injected by ``inject(backend_pid)`` from a thread."""
    committed: list[list[AddResult]] = []
    holder = _hold_key(dsn, docs[STUCK_BATCH * BATCH + BATCH // 2].key or "")
    try:
        with SimhashStore(dsn) as store:
            pid = store.connection.info.backend_pid
            errors: list[BaseException] = []

            def fault() -> None:
                try:
                    with psycopg.connect(dsn, autocommit=True) as admin:
                        _wait_until_waiting(admin, pid)
                    inject(pid)
                except BaseException as exc:  # reported by the main thread
                    errors.append(exc)

            t = threading.Thread(target=fault)
            t.start()
            try:
                with pytest.raises(psycopg.Error) as err:
                    store.add_many(docs, batch_size=BATCH, progress=committed.append)
            finally:
                t.join(60)
            assert not errors, errors
    finally:
        with contextlib.suppress(psycopg.Error):
            holder.close()
    assert len(committed) == STUCK_BATCH
    return committed, err.value


# -- (a) the server killed -------------------------------------------------------


def _kill_server(datadir: Path) -> int:
    """kill -9 the postmaster and all its processes (a crash, not a shutdown)."""
    pid = int((datadir / "postmaster.pid").read_text().split()[0])
    children = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                children.append(int(entry.name))
    os.kill(pid, signal.SIGKILL)
    for child in children:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)
    # pg_ctl takes a zombie for a running server: wait until init has reaped them
    deadline = time.monotonic() + 60
    while any(Path(f"/proc/{p}").exists() for p in [pid, *children]):
        assert time.monotonic() < deadline, "killed server processes were never reaped"
        time.sleep(0.1)
    return 1 + len(children)


@pytest.mark.slow
@needs_own_server
def test_server_killed_mid_add_many_loses_no_committed_batch() -> None:
    docs = _docs(1)
    with throwaway_server() as server:
        dsn = server.start(dbname="faults")
        SimhashStore(dsn).close()  # migrated
        killed: list[int] = []
        committed, error = _add_many_until_fault(
            dsn, docs, lambda pid: killed.append(_kill_server(server.datadir))
        )
        assert isinstance(error, psycopg.OperationalError)
        msg = str(error).lower()
        assert "connection" in msg or "server closed" in msg or "terminat" in msg, msg
        # gone for real: a new connection fails until the restart
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(dsn, connect_timeout=2).close()
        server.start(dbname=None)  # crash recovery
        figures = _check_store(dsn, docs, committed)
        _rerun(dsn, docs)
        print(f"\n[server killed] 1 fault injected ({killed[0]} processes kill -9'd, "
              f"client got: {type(error).__name__}: {str(error).strip().splitlines()[0]}); "
              f"{figures['reported']} rows reported committed, {figures['rows_checked']} rows "
              f"checked after restart, {figures['lost']} lost; rerun stored all {len(docs)}")


# -- (b) a connection dropped mid-transaction -------------------------------------


def test_connection_terminated_mid_add_many_loses_nothing(pg_dsn: str) -> None:
    docs = _docs(2)
    SimhashStore(pg_dsn).close()

    def terminate(pid: int) -> None:
        with psycopg.connect(pg_dsn, autocommit=True) as admin:
            assert admin.execute("SELECT pg_terminate_backend(%s)", [pid]).fetchone() == (True,)

    committed, error = _add_many_until_fault(pg_dsn, docs, terminate)
    assert isinstance(error, psycopg.OperationalError)
    assert "terminat" in str(error).lower() or "connection" in str(error).lower(), str(error)
    figures = _check_store(pg_dsn, docs, committed)
    _rerun(pg_dsn, docs)
    print(f"\n[connection terminated] 1 fault injected (client got: "
          f"{str(error).strip().splitlines()[0]}); {figures['rows_checked']} rows checked, "
          f"{figures['lost']} lost; rerun stored all {len(docs)}")


def test_connection_terminated_during_single_add(pg: psycopg.Connection, pg_dsn: str) -> None:
    with SimhashStore(pg_dsn) as store:
        store.add(0x1111_2222_3333_4444, key="before")
        holder = _hold_key(pg_dsn, "stuck")
        try:
            pid = store.connection.info.backend_pid
            t = threading.Thread(target=lambda: (
                _wait_until_waiting(pg, pid),
                pg.execute("SELECT pg_terminate_backend(%s)", [pid]),
            ))
            t.start()
            with pytest.raises(psycopg.OperationalError):
                store.add(0x5555_6666_7777_8888, key="stuck")
            t.join(30)
        finally:
            holder.close()
    assert pg.execute("SELECT key FROM simhash_documents ORDER BY id").fetchall() == [("before",)]


# -- (c) a statement timeout ----------------------------------------------------------


def _with_options(dsn: str, options: str) -> str:
    params = conninfo_to_dict(dsn)
    params["options"] = options
    return make_conninfo(**{k: v for k, v in params.items() if v is not None})


@pytest.mark.slow
def test_statement_timeout_is_a_clear_error_and_loses_nothing(pg: psycopg.Connection,
                                                              pg_dsn: str) -> None:
    docs = _docs(3)
    SimhashStore(pg_dsn).close()
    dsn = _with_options(pg_dsn, "-c statement_timeout=1500")
    committed: list[list[AddResult]] = []
    holder = _hold_key(pg_dsn, docs[STUCK_BATCH * BATCH + 7].key or "")
    faults = 0
    try:
        with SimhashStore(dsn) as store:
            with pytest.raises(psycopg.errors.QueryCanceled, match="statement timeout"):
                store.add_many(docs, batch_size=BATCH, progress=committed.append)
            faults += 1
            assert len(committed) == STUCK_BATCH
            # the same store, single add, same stuck key: times out too
            with pytest.raises(psycopg.errors.QueryCanceled, match="statement timeout"):
                store.add(int(docs[STUCK_BATCH * BATCH + 7].text),
                          key=docs[STUCK_BATCH * BATCH + 7].key)
            faults += 1
            holder.rollback()
            # the connection is still usable once the blocker is gone
            res = store.add_many(docs, batch_size=BATCH)
            assert res.inserted == N - STUCK_BATCH * BATCH
    finally:
        holder.close()
    figures = _check_store(pg_dsn, docs, committed)
    assert figures["rows_checked"] == N
    print(f"\n[statement timeout] {faults} faults injected; {figures['rows_checked']} rows "
          f"checked, {figures['lost']} lost")


def test_docs_have_no_planted_near_duplicates() -> None:
    # the checks above assume every doc is stored: no two within distance 3
    import numpy as np

    for seed in (1, 2, 3):
        fps = np.array([int(d.text) for d in _docs(seed)], dtype=np.uint64)
        for fp in fps[:300]:
            d = np.bitwise_count(fps ^ fp)
            assert int((d <= 3).sum()) == 1

