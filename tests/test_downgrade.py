"""Downgrades that drop data ask first; rows that lost their verification data stay findable.

A downgrade past revision 0003 drops ``verify_text`` and ``sentence_sig``.
They cannot be recomputed without the texts, so after the re-upgrade the
rows stored before it are judged by fingerprint distance alone (within k),
as under ``verify="off"``; rows stored afterwards are verified as usual.
"""

from __future__ import annotations

import os
import pty
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simhash_pg import Doc, hamming
from simhash_pg.bits import to_unsigned
from simhash_pg.db import migrate
from simhash_pg.store import SimhashStore
from simhash_pg.text.signatures import sentence_signature_signed
from simhash_pg.verify import TEXT_LOST, policy_for, verification_text

EXE = shutil.which("simhash-pg", path=str(Path(sys.executable).parent)) or "simhash-pg"

TITLE = "Storm warning issued for the river city tonight"
OTHER_TITLE = "Council vote on the school budget delayed again"
LONG = ("The council voted on Tuesday to close the old bridge for repairs until the "
        "spring. Engineers found cracks in two of the main supports during a routine "
        "inspection last week. Traffic will be diverted through the river road and the "
        "new tunnel under the harbour.")

WORDS = (
    "market stocks oil rally falls rise bank rates city council vote school budget storm "
    "warning river flood police report new plan train strike airport delay winter heat"
).split()


def cli(*args: str, dsn: str, check: int = 0) -> subprocess.CompletedProcess[str]:
    """The installed command, its stdin not a terminal (as in a script or cron job)."""
    proc = subprocess.run([EXE, *args, "--dsn", dsn], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == check, (proc.returncode, proc.stdout, proc.stderr)
    return proc


def columns(dsn: str) -> set[str]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT attname FROM pg_attribute WHERE attrelid = 'simhash_documents'::regclass"
            " AND attnum > 0 AND NOT attisdropped").fetchall()
    return {r[0] for r in rows}


def cycle(dsn: str) -> None:
    """Down to 0002 (verification data gone) and up to head again."""
    migrate.downgrade(dsn, "0002")
    assert "verify_text" not in columns(dsn)
    migrate.upgrade(dsn)


# -- asking ------------------------------------------------------------------


def test_downgrade_that_drops_data_refuses_without_yes(pg_dsn: str) -> None:
    with SimhashStore(pg_dsn, verify="short") as store:
        store.add(TITLE, key="t")
    proc = cli("db", "downgrade", "0002", dsn=pg_dsn, check=1)
    for word in ("verify_text", "sentence_sig", "verify mode", "--yes"):
        assert word in proc.stderr, (word, proc.stderr)
    assert migrate.current(pg_dsn) == migrate.HEAD
    assert "verify_text" in columns(pg_dsn)
    cli("db", "downgrade", "0002", "--yes", dsn=pg_dsn)
    assert migrate.current(pg_dsn) == "0002"


def test_downgrade_to_base_names_the_tables(pg_dsn: str) -> None:
    proc = cli("db", "downgrade", dsn=pg_dsn, check=1)
    assert "simhash_documents" in proc.stderr and "simhash_reader" in proc.stderr
    assert migrate.current(pg_dsn) == migrate.HEAD


def test_downgrade_that_drops_nothing_does_not_ask(pg_dsn: str) -> None:
    # 0015 -> 0014 drops the sentence hashes: asked about, and refused without --yes
    proc = cli("db", "downgrade", "0014", dsn=pg_dsn, check=1)
    assert "sentence_hashes" in proc.stderr and migrate.current(pg_dsn) == migrate.HEAD
    cli("db", "downgrade", "0014", "--yes", dsn=pg_dsn)
    proc = cli("db", "downgrade", "0006", dsn=pg_dsn)
    assert "schema at revision 0006" in proc.stdout
    assert migrate.current(pg_dsn) == "0006"


def _answer(dsn: str, answer: str) -> tuple[int, str]:
    """`db downgrade 0002` on a terminal, answering the question; (exit code, what it showed)."""
    main, sub = pty.openpty()
    proc = subprocess.Popen([EXE, "db", "downgrade", "0002", "--dsn", dsn],
                            stdin=sub, stdout=sub, stderr=sub, close_fds=True)
    os.close(sub)
    shown = b""
    answered = False
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([main], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(main, 4096)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            shown += chunk
            if not answered and b"[y/N]" in shown:
                os.write(main, answer.encode() + b"\n")
                answered = True
        elif proc.poll() is not None:
            break
    code = proc.wait(timeout=60)
    os.close(main)
    return code, shown.decode(errors="replace")


def test_downgrade_asks_on_a_terminal(pg_dsn: str) -> None:
    code, shown = _answer(pg_dsn, "n")
    assert code == 1 and "verify_text" in shown and "sentence_sig" in shown, shown
    assert migrate.current(pg_dsn) == migrate.HEAD
    code, shown = _answer(pg_dsn, "y")
    assert code == 0 and "schema at revision 0002" in shown, shown
    assert migrate.current(pg_dsn) == "0002"


def test_every_revision_declares_what_its_downgrade_drops() -> None:
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(migrate._config())
    for rev in script.walk_revisions():
        assert hasattr(rev.module, "downgrade_drops"), rev.revision
    assert [r for r, _ in migrate.downgrade_losses_between("0007", "0002")] == ["0005", "0003"]
    assert migrate.downgrade_losses_between("0007", "0006") == []


# -- after the re-upgrade -------------------------------------------------------


@pytest.mark.parametrize("mode", [None, "short"])  # None: a new store's default, "all"
@pytest.mark.parametrize("text", [TITLE, LONG], ids=["title", "long"])
def test_reupgraded_store_still_finds_its_old_rows(pg_dsn: str, mode: Any, text: str) -> None:
    with SimhashStore(pg_dsn, verify=mode) as store:
        recorded = store.verify
        old = store.add(text, key="old")
        assert old.inserted
    cycle(pg_dsn)
    with SimhashStore(pg_dsn) as store:
        assert store.verify == recorded  # the recorded mode survives the downgrade
        assert [(m.id, m.distance) for m in store.near(text)] == [(old.id, 0)]
        again = store.add(text, key="again")
        assert not again.inserted and again.duplicate_of == old.id
        got: list[Any] = []
        store.add_many([Doc(text, key="batch")], progress=got.extend)
        assert [(r.inserted, r.duplicate_of) for r in got] == [(False, old.id)]
        assert store.count() == 1


def test_only_rows_stored_before_the_reupgrade_go_unverified(pg_dsn: str) -> None:
    with SimhashStore(pg_dsn, verify="short") as store:
        old = store.add(store.fingerprint(TITLE), key="old-fp")  # a bare fingerprint
    cycle(pg_dsn)
    with SimhashStore(pg_dsn) as store:
        # an old row has no text to verify: the fingerprint decides
        assert [m.id for m in store.near(TITLE)] == [old.id]
        # a new bare fingerprint is judged as before: a short text needs a text to match
        store.add(store.fingerprint(OTHER_TITLE), key="new-fp")
        assert store.near(OTHER_TITLE) == []
        # ids given again after TRUNCATE ... RESTART IDENTITY are new rows too
        store.connection.execute("TRUNCATE simhash_documents RESTART IDENTITY")
        again = store.add(store.fingerprint(TITLE), key="fp-again")
        assert again.id == old.id and store.near(TITLE) == []
    cycle(pg_dsn)  # a second cycle covers every row there is then
    with SimhashStore(pg_dsn) as store:
        assert [m.id for m in store.near(TITLE)] == [again.id]


# -- the rule, against brute force -------------------------------------------------


def brute_near(store: SimhashStore, text: str, k: int, lost: set[int]) -> list[tuple[int, int]]:
    """(id, distance) of every stored row the policy accepts; rows in ``lost`` have no text."""
    sc = store.scheme
    q = verification_text(text, html=sc.html, t2s=sc.t2s, visible=bool(sc.visible))
    qsig = sentence_signature_signed(text, html=sc.html, t2s=sc.t2s, visible=bool(sc.visible))
    fp = store.fingerprint(text)
    hits = []
    for id_, sfp, vtext, sig in store.connection.execute(
        "SELECT id, fingerprint, verify_text, sentence_sig FROM simhash_documents"
    ).fetchall():
        d = hamming(fp, to_unsigned(sfp))
        text = TEXT_LOST if id_ in lost else vtext
        if policy_for(store.verify).accept(q, [(text, d, qsig is not None and sig == qsig)],
                                           k)[0]:
            hits.append((d, id_))
    return [(i, d) for d, i in sorted(hits)]


@st.composite
def texts(draw: st.DrawFn) -> list[str]:
    """Titles and longer texts, some of them twice or with a word changed."""
    out: list[str] = []
    for _ in range(draw(st.integers(2, 5))):
        n = draw(st.sampled_from([4, 6, 30]))
        words = draw(st.lists(st.sampled_from(WORDS), min_size=n, max_size=n))
        text = ". ".join(" ".join(words[i : i + 8]).capitalize()
                         for i in range(0, n, 8)) + "."
        out.append(text)
        if draw(st.booleans()):
            w = list(words)
            w[draw(st.integers(0, n - 1))] = draw(st.sampled_from(WORDS))
            out.append(" ".join(w))
    return draw(st.permutations(out))


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@pytest.mark.slow
@given(texts(), texts(), st.sampled_from(["short", "all"]), st.sampled_from([3, 6]))
def test_near_after_reupgrade_equals_brute_force(
    pg_dsn: str, before: list[str], after: list[str], mode: Any, k: int
) -> None:
    with SimhashStore(pg_dsn, verify=mode) as store:
        store.connection.execute("TRUNCATE simhash_documents RESTART IDENTITY")
        store.add_many(before, dedup=False)
        lost = {r[0] for r in store.connection.execute("SELECT id FROM simhash_documents")}
    cycle(pg_dsn)
    with SimhashStore(pg_dsn, k=k) as store:
        # every old text finds its own row again: an identical text is at distance 0
        for t in before:
            assert 0 in [m.distance for m in store.near(t) if m.id in lost], t
        store.add_many(after, dedup=False)
        queries = before + after
        want = [brute_near(store, t, k, lost) for t in queries]
        assert [[(m.id, m.distance) for m in store.near(t)] for t in queries] == want
        assert [[(m.id, m.distance) for m in ms] for ms in store.near_many(queries)] == want
