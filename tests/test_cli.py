"""The command line, driven through its installed entry point against a real database."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest

EXE = shutil.which("simhash-pg", path=str(Path(sys.executable).parent)) or "simhash-pg"

WORDS = ("river stone market winter signal harbor copper garden lantern meadow orbit "
         "pepper quarry ribbon saddle timber velvet walnut yonder zephyr anchor basket "
         "candle dragon ember falcon glacier hollow island jungle kettle ladder mirror "
         "nectar oyster pillow quiver raven silver thunder umbrella violet willow").split()


def doc(seed: int, n: int = 120) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) + str(rng.randrange(50)) for _ in range(n))


def variant(text: str) -> str:
    """A formatting-only copy: case and white space change, the words do not."""
    return "  " + text.upper().replace(" ", "   ", 5) + "\n"


def run(*args: str, dsn: str | None = None, input: str | None = None,
        check: int | None = 0) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if dsn is not None:
        env["SIMHASH_PG_DSN"] = dsn
    proc = subprocess.run([EXE, *args], input=input, capture_output=True, text=True, env=env,
                          timeout=180)
    if check is not None:
        assert proc.returncode == check, (proc.returncode, proc.stdout, proc.stderr)
    return proc


def rows(dsn: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn) as conn:
        return conn.execute(
            "SELECT key, fingerprint, duplicate_of FROM simhash_documents ORDER BY id").fetchall()


def summary_numbers(stdout: str) -> dict[str, int]:
    """'read 5, unique 3 (3 new), duplicates 2, errors 0; ...' -> numbers by name."""
    head = stdout.strip().splitlines()[-1].split(";")[0]
    nums = {name: int(v.replace(",", ""))
            for name, v in re.findall(r"(read|unique|duplicates|errors) ([\d,]+)", head)}
    new = re.search(r"([\d,]+) new", head)
    assert new is not None and len(nums) == 4, stdout
    nums["new"] = int(new.group(1).replace(",", ""))
    return nums


@pytest.fixture
def dsn(pg_dsn: str) -> str:
    return pg_dsn


@pytest.fixture
def corpus() -> list[dict[str, str]]:
    """Six originals, two formatting-only copies of earlier ones."""
    docs = [{"id": f"d{i}", "text": doc(i)} for i in range(6)]
    docs.insert(3, {"id": "copy-of-d1", "text": variant(docs[1]["text"])})
    docs.append({"id": "copy-of-d4", "text": variant(docs[5]["text"])})
    return docs


def _check_result(dsn: str, stdout: str, n_unique: int = 6, n_dup: int = 2,
                  linked: bool = True) -> None:
    nums = summary_numbers(stdout)
    assert nums["read"] == n_unique + n_dup, stdout
    assert nums["unique"] == n_unique and nums["duplicates"] == n_dup, stdout
    stored = rows(dsn)
    # dedup stores the near-duplicates linked (--skip: not at all)
    assert len(stored) == n_unique + (n_dup if linked else 0)
    assert sum(dup is not None for _, _, dup in stored) == (n_dup if linked else 0)


def test_dedup_jsonl_with_out_and_report(dsn: str, corpus: list[dict[str, str]],
                                         tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(d) + "\n" for d in corpus), encoding="utf-8")
    out, report = tmp_path / "unique.jsonl", tmp_path / "dups.csv"
    proc = run("dedup", str(src), "--out", str(out), "--report", str(report), dsn=dsn)
    _check_result(dsn, proc.stdout)
    unique = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert [u["id"] for u in unique] == [f"d{i}" for i in range(6)]
    import csv

    rep = list(csv.DictReader(report.open(encoding="utf-8")))
    # the rule's share leads, as near and the web page give it; the distance after it
    assert [(r["key"], r["kept_key"], r["shared"], r["distance"]) for r in rep] == [
        ("copy-of-d1", "d1", "1.0", "0"), ("copy-of-d4", "d4", "1.0", "0")]
    with psycopg.connect(dsn) as conn:
        stored = dict(conn.execute(
            "SELECT d.key, k.key FROM simhash_documents d"
            " LEFT JOIN simhash_documents k ON k.id = d.duplicate_of").fetchall())
    assert stored == {f"d{i}": None for i in range(6)} | {"copy-of-d1": "d1",
                                                          "copy-of-d4": "d4"}


def test_dedup_rerun_is_idempotent(dsn: str, corpus: list[dict[str, str]],
                                   tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(d) + "\n" for d in corpus), encoding="utf-8")
    run("dedup", str(src), dsn=dsn)
    before = rows(dsn)
    proc = run("dedup", str(src), dsn=dsn)
    nums = summary_numbers(proc.stdout)
    assert nums["new"] == 0 and nums["unique"] == 6 and nums["duplicates"] == 2
    assert rows(dsn) == before


@pytest.mark.parametrize("fmt", ["csv", "tsv", "txt", "dir", "stdin"])
def test_dedup_every_format(fmt: str, dsn: str, corpus: list[dict[str, str]],
                            tmp_path: Path) -> None:
    stdin = None
    if fmt in ("csv", "tsv"):
        import csv

        path = tmp_path / f"in.{fmt}"
        with path.open("w", encoding="utf-8", newline="") as fh:
            w = csv.DictWriter(fh, ["id", "text"], delimiter="," if fmt == "csv" else "\t")
            w.writeheader()
            w.writerows(corpus)
        arg = str(path)
    elif fmt == "txt":
        path = tmp_path / "in.txt"
        path.write_text("".join(d["text"].strip() + "\n" for d in corpus), encoding="utf-8")
        arg = str(path)
    elif fmt == "dir":
        for i, d in enumerate(corpus):
            sub = tmp_path / "docs" / ("a" if i % 2 else "b")
            sub.mkdir(parents=True, exist_ok=True)
            name = f"{i:02d}.html" if i == 3 else f"{i:02d}.txt"
            body = f"<p>{d['text']}</p>" if name.endswith(".html") else d["text"]
            (sub / name).write_text(body, encoding="utf-8")
        arg = str(tmp_path / "docs")
    else:
        stdin = "".join(json.dumps(d) + "\n" for d in corpus)
        arg = "-"
    skip = fmt == "txt"  # one of them as --skip: only the documents kept are stored
    proc = run("dedup", arg, *(["--skip"] if skip else []), dsn=dsn, input=stdin)
    _check_result(dsn, proc.stdout, linked=not skip)


def test_dedup_malformed_input_is_skipped_and_reported(dsn: str, corpus: list[dict[str, str]],
                                                       tmp_path: Path) -> None:
    src = tmp_path / "bad.jsonl"
    lines = [json.dumps(d) for d in corpus]
    lines.insert(2, "{not json")
    src.write_bytes(("\n".join(lines) + "\n").encode() + b'{"id": "x", "text": "\xff"}\n')
    proc = run("dedup", str(src), dsn=dsn, check=1)
    assert f"{src}:3: malformed JSON" in proc.stderr
    assert f"{src}:{len(lines) + 1}: not valid UTF-8" in proc.stderr
    nums = summary_numbers(proc.stdout)
    assert nums["errors"] == 2 and nums["unique"] == 6 and nums["duplicates"] == 2
    assert len(rows(dsn)) == 8  # the two near-duplicates stored linked

    # --strict stops at the first bad record; batches committed before it stay.
    proc = run("dedup", str(src), "--strict", "--batch-size", "1", dsn=dsn, check=3)
    assert "--strict" in proc.stderr and f"{src}:3" in proc.stderr
    assert len(rows(dsn)) == 8


def test_dedup_usage_errors(dsn: str, tmp_path: Path) -> None:
    proc = run("dedup", str(tmp_path / "missing.jsonl"), dsn=dsn, check=2)
    assert "no such file" in proc.stderr
    proc = run("dedup", "-", "--k", "99", dsn=dsn, check=2)
    assert "99" in proc.stderr
    proc = run("dedup", "-", "--dsn", "postgresql://nobody@127.0.0.1:1/none", input="x\n",
               check=2)
    assert "127.0.0.1" in proc.stderr or "connect" in proc.stderr.lower()


@pytest.mark.slow
def _ctrl_c_default() -> None:
    # A shell starts background jobs with SIGINT ignored, and the child would
    # inherit that (Python then installs no handler): the tests' SIGINT is
    # the user's Ctrl-C, so the child starts as a foreground program would.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_dedup_interrupted_then_resumed(dsn: str, tmp_path: Path) -> None:
    n = 6000
    src = tmp_path / "big.jsonl"
    with src.open("w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(json.dumps({"id": f"k{i}", "text": doc(1000 + i, 60)}) + "\n")
    env = dict(os.environ, SIMHASH_PG_DSN=dsn)
    proc = subprocess.Popen([EXE, "dedup", str(src), "--batch-size", "100", "--workers", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=_ctrl_c_default)
    deadline = time.monotonic() + 120
    while len(rows(dsn)) < 300:  # wait until a few batches are committed
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (out, err)
    assert "interrupted" in err and "committed through" in err
    partial = rows(dsn)
    assert 300 <= len(partial) < n
    keys = [k for k, _, _ in partial]
    assert len(keys) == len(set(keys))
    # the stored keys are a prefix of the input (less the few random documents
    # that happen to be near-duplicates); the last batch may end early, when
    # the signal came while it was being read
    idx = [int(k[1:]) for k in keys]
    assert idx == sorted(idx)
    assert max(idx) + 1 - len(idx) <= len(idx) // 50

    proc2 = run("dedup", str(src), dsn=dsn)
    nums = summary_numbers(proc2.stdout)
    assert nums["read"] == n and nums["new"] == n - len(partial) - nums["duplicates"]
    final = [k for k, _, _ in rows(dsn)]
    assert len(final) == len(set(final)) == nums["unique"]


def _big_input(path: Path, n: int) -> None:
    """n documents; every tenth a formatting-only copy of one five before it."""
    texts: list[str] = []
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            texts.append(variant(texts[i - 5]) if i % 10 == 9 else doc(1000 + i, 60))
            fh.write(json.dumps({"id": f"k{i}", "text": texts[i]}) + "\n")


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(c) for c in path.read_text().split()] if path.exists() else []


@pytest.mark.slow
@pytest.mark.parametrize("whom", ["process", "group"])
def test_dedup_terminated_stops_after_the_batch_and_flushes(dsn: str, tmp_path: Path,
                                                            whom: str) -> None:
    """SIGTERM, to the CLI alone or to its process group (its fingerprinting
    workers too, as systemd or a shell's kill %1 do): the summary and the
    resume line are printed, --out and --report hold exactly what was
    committed, and no process prints a traceback."""
    import csv

    n, batch = 6000, 50
    src = tmp_path / "big.jsonl"
    _big_input(src, n)
    out, report = tmp_path / "unique.jsonl", tmp_path / "dups.csv"
    env = dict(os.environ, SIMHASH_PG_DSN=dsn)
    proc = subprocess.Popen(
        [EXE, "dedup", str(src), "--batch-size", str(batch), "--workers", "2",
         "--out", str(out), "--report", str(report)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        # a few batches committed, and (for the group) fingerprinting workers running
        while len(rows(dsn)) < 200 or (whom == "group" and not _children(proc.pid)):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.01)
        if whom == "group":
            os.killpg(proc.pid, signal.SIGTERM)
        else:
            proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 143, (proc.returncode, stdout, stderr)
    assert "Traceback" not in stderr, stderr
    assert "stopped (interrupted by SIGTERM); committed through" in stderr, stderr
    assert "Run the same command again to resume." in stderr
    nums = summary_numbers(stdout)
    # the documents kept, and the duplicates dedup stores linked to them (its default)
    stored = [k for k, _, dup in rows(dsn) if dup is None]
    linked = [k for k, _, dup in rows(dsn) if dup is not None]
    assert 200 <= len(stored) + len(linked) < n * 9 // 10
    assert nums["new"] == nums["unique"] == len(stored)
    assert nums["read"] == nums["unique"] + nums["duplicates"]
    # --out: every committed row, whole lines, in order
    text = out.read_text(encoding="utf-8")
    assert text.endswith("\n")
    assert [json.loads(line)["id"] for line in text.splitlines()] == stored
    # --report: well-formed CSV, one row per reported duplicate
    raw = report.read_text(encoding="utf-8")
    assert raw.endswith("\n")
    dups = list(csv.DictReader(raw.splitlines(keepends=True)))
    assert len(dups) == nums["duplicates"] == len(linked) > 0
    keys = set(stored)
    for d in dups:  # kept_key: a kept document, or a linked duplicate (a chain)
        assert None not in d.values() and d["key"] in linked and d["key"] not in keys
        assert d["kept_key"] in keys or d["kept_key"] in linked
    # what was read is a prefix of the input, every record of it accounted for once
    assert sorted(stored + [d["key"] for d in dups], key=lambda k: int(k[1:])) == [
        f"k{i}" for i in range(nums["read"])]

    # the rerun finishes the job
    proc2 = run("dedup", str(src), "--out", str(out), dsn=dsn)
    nums2 = summary_numbers(proc2.stdout)
    final = [k for k, _, dup in rows(dsn) if dup is None]
    assert final[: len(stored)] == stored and len(final) == len(set(final)) == nums2["unique"]
    assert nums2["new"] == len(final) - len(stored) and nums2["read"] == n


def test_dedup_on_idle_stdin_stops_at_ctrl_c_and_keeps_what_it_read(dsn: str) -> None:
    """A stream that waits for its next line: Ctrl-C stops at once, and the
    documents read so far (a batch not yet full) are committed, not lost."""
    env = dict(os.environ, SIMHASH_PG_DSN=dsn)
    proc = subprocess.Popen([EXE, "dedup", "-", "--batch-size", "100"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=_ctrl_c_default)
    assert proc.stdin is not None
    try:
        proc.stdin.write("".join(json.dumps({"id": f"s{i}", "text": doc(i)}) + "\n"
                                 for i in range(5)))
        proc.stdin.flush()
        wchan = Path(f"/proc/{proc.pid}/wchan")
        deadline = time.monotonic() + 60
        while "pipe_read" not in wchan.read_text():  # it has read all and waits for more
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        rc = proc.wait(timeout=60)  # stdin stays open: no end of input to finish on
    finally:
        if proc.poll() is None:
            proc.kill()
        stdout, stderr = proc.communicate()
    assert rc == 130, (rc, stdout, stderr)
    assert "stopped (interrupted by SIGINT); committed through stdin:5" in stderr, stderr
    assert "Traceback" not in stderr
    assert summary_numbers(stdout)["new"] == 5
    assert [k for k, _, _ in rows(dsn)] == [f"s{i}" for i in range(5)]


def test_purge_terminated_stops_like_ctrl_c(dsn: str) -> None:
    """SIGTERM to ``purge`` while its DELETE waits on a row lock: the same
    message and kept batches as Ctrl-C, exit code 143, no traceback."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO simhash_documents (key, fingerprint, created_at)"
            " SELECT 'p' || i, i, now() - interval '3 days' FROM generate_series(1, 50) AS i")
    with psycopg.connect(dsn) as holder, psycopg.connect(dsn, autocommit=True) as admin:
        holder.execute("SELECT 1 FROM simhash_documents WHERE key = 'p7' FOR UPDATE")
        env = dict(os.environ, SIMHASH_PG_DSN=dsn)
        proc = subprocess.Popen([EXE, "purge", "--older-than", "2d"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=env)
        try:
            deadline = time.monotonic() + 60
            while admin.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                " AND datname = current_database()").fetchone() != (1,):
                assert proc.poll() is None, proc.communicate()
                assert time.monotonic() < deadline
                time.sleep(0.02)
            proc.send_signal(signal.SIGTERM)
            stdout, stderr = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        holder.rollback()
    assert proc.returncode == 143, (proc.returncode, stdout, stderr)
    assert "interrupted; the batches deleted so far stay deleted" in stderr
    assert "Traceback" not in stderr
    assert len(rows(dsn)) == 50


def test_add_near_stats(dsn: str) -> None:
    text = doc(7)
    first = json.loads(run("add", text, "--key", "u1", "--json", dsn=dsn).stdout)
    assert first["inserted"] is True
    again = json.loads(run("add", variant(text), "--key", "u2", "--json", dsn=dsn).stdout)
    assert again["inserted"] is False and again["duplicate_of"] == first["id"]
    proc = run("near", variant(text), "--json", dsn=dsn)
    matches = [json.loads(x) for x in proc.stdout.splitlines()]
    assert [(m["key"], m["distance"]) for m in matches] == [("u1", 0)]
    assert "no stored near-duplicate" in run("near", doc(8), dsn=dsn).stdout
    stats = json.loads(run("stats", "--json", dsn=dsn).stdout)
    assert stats["rows"] == 1
    run("near", "--fingerprint", str(2**64), dsn=dsn, check=2)


def test_demo(dsn: str) -> None:
    from psycopg.conninfo import make_conninfo

    try:
        proc = run("demo", "--dsn", dsn, "--groups", "2")
        assert "584 sample documents" in proc.stdout
        assert "near-duplicate:" in proc.stdout and "psql" in proc.stdout
        nums = summary_numbers(proc.stdout.split("\n")[1])
        assert nums["duplicates"] > 50 and nums["errors"] == 0
        # the demo links near-duplicates, so every document is stored (in its
        # own database, never the one --dsn names) and the duplicates point at
        # the earlier one
        assert rows(dsn) == []
        stored = rows(make_conninfo(dsn, dbname="simhash_demo"))
        assert len(stored) == nums["read"] == 584
        assert sum(dup is not None for _, _, dup in stored) == nums["duplicates"]
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("DROP DATABASE IF EXISTS simhash_demo WITH (FORCE)")


def test_verify_option(dsn: str) -> None:
    a = "Storm warning issued for the river city tonight"
    b = "Storm warning issued for river city tonight"
    run("add", a, "--key", "t1", "--verify", "short", dsn=dsn)
    stats = json.loads(run("stats", "--json", dsn=dsn).stdout)
    assert stats["verify"] == "short"
    found = [json.loads(x) for x in run("near", b, "--json", dsn=dsn).stdout.splitlines()]
    assert [m["key"] for m in found] == ["t1"] and found[0]["distance"] > 3
    assert "no stored document" in run("near", b, "--verify", "off", dsn=dsn).stdout
    run("near", b, "--verify", "maybe", dsn=dsn, check=2)


@pytest.mark.parametrize("token", ["s3cr\u00e9t", "two words", "a:b", "=abc"])
def test_serve_refuses_a_token_no_client_can_send(token: str) -> None:
    # refused before any server is started or store opened (no --dsn needed)
    proc = run("serve", "--token", token, check=2)
    assert "--token: the token may hold only ASCII letters" in proc.stderr, proc.stderr


def test_serve_settings_take_bearer_tokens_only() -> None:
    from simhash_pg.serve.settings import Settings, check_token

    for good in ("s3cret", "abc-DEF_0.9~+/", "YWJj=="):
        check_token(good)
    for bad in ("s3cr\u00e9t", "a b", " ", "x\n"):
        with pytest.raises(ValueError, match="token"):
            Settings(dsn="postgresql:///x", token=bad)
