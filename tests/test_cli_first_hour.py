"""The first hour of a new user (issue 15): clear errors instead of tracebacks,
nothing junk stored, no schema change without asking, honest messages.

Driven through the CLI entry point (click's CliRunner on ``cli``) against a real database.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner, Result

from simhash_pg.cli.main import cli

WORDS = ("river stone market winter signal harbor copper garden lantern meadow orbit "
         "pepper quarry ribbon saddle timber velvet walnut yonder zephyr anchor").split()


def doc(seed: int, n: int = 60) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) + str(rng.randrange(50)) for _ in range(n))


def invoke(*args: str, dsn: str | None = None, input: str | bytes | None = None) -> Result:
    env = {"SIMHASH_PG_DSN": dsn} if dsn is not None else {}
    return CliRunner().invoke(cli, list(args), env=env, input=input, catch_exceptions=False)


def count(dsn: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT count(*) FROM simhash.simhash_documents").fetchone()
        assert row is not None
        return int(row[0])


def assert_usage_error(res: Result, *needles: str) -> None:
    assert res.exit_code == 2, (res.exit_code, res.output, res.stderr)
    assert "Traceback" not in res.output + res.stderr
    for needle in needles:
        assert needle in res.stderr, res.stderr


# -- 1. tracebacks -----------------------------------------------------------------------


@pytest.mark.parametrize("command", ["add", "near"])
def test_missing_file_is_a_usage_error(command: str, pg_dsn: str, tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.txt")
    res = invoke(command, "--file", missing, dsn=pg_dsn)
    assert_usage_error(res, "nope.txt", "does not exist")


@pytest.mark.parametrize("option", ["--out", "--report"])
def test_output_in_missing_directory_fails_before_work(option: str, pg_dsn: str,
                                                       tmp_path: Path) -> None:
    src = tmp_path / "in.txt"
    src.write_text(doc(1) + "\n" + doc(2) + "\n")
    res = invoke("dedup", str(src), option, str(tmp_path / "no" / "such" / "out.jsonl"),
                 dsn=pg_dsn)
    assert_usage_error(res, "does not exist")
    assert count(pg_dsn) == 0  # no work started


def test_unknown_output_extension_names_the_allowed(pg_dsn: str, tmp_path: Path) -> None:
    src = tmp_path / "in.txt"
    src.write_text(doc(1) + "\n")
    out = tmp_path / "out.parquet"
    res = invoke("dedup", str(src), "--out", str(out), dsn=pg_dsn)
    assert_usage_error(res, ".parquet", ".jsonl", ".csv", ".tsv", ".txt")
    assert not out.exists()
    assert count(pg_dsn) == 0


# -- 2. bad files ------------------------------------------------------------------------


def test_binary_file_is_rejected_as_a_whole(pg_dsn: str, tmp_path: Path) -> None:
    good = tmp_path / "good.txt"
    good.write_text(doc(1) + "\n" + doc(2) + "\n")
    binary = tmp_path / "blob.txt"
    rng = random.Random(7)
    binary.write_bytes(bytes(rng.randrange(256) for _ in range(50_000)))
    # the good file first: nothing of it may be stored either
    res = invoke("dedup", str(good), str(binary), dsn=pg_dsn)
    assert_usage_error(res, "blob.txt", "not a text file")
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert count(pg_dsn) == 0


@pytest.mark.parametrize("fmt", ["lines", "jsonl", "csv"])
def test_latin1_file_is_not_utf8_text(fmt: str, pg_dsn: str, tmp_path: Path) -> None:
    src = tmp_path / "latin1.data"
    lines = [f"café {doc(i, 8)} über" for i in range(30)]
    if fmt == "csv":
        lines.insert(0, "text")
    src.write_bytes("\n".join(lines).encode("latin-1") + b"\n")
    res = invoke("dedup", "--format", fmt, str(src), dsn=pg_dsn)
    assert_usage_error(res, "not UTF-8 text")
    assert count(pg_dsn) == 0


def test_skipped_records_are_capped_on_stderr_and_all_in_the_report(
        pg_dsn: str, tmp_path: Path) -> None:
    import csv
    import json

    src = tmp_path / "in.jsonl"
    lines = [json.dumps({"id": f"g{i}", "text": doc(i)}) for i in range(3)]
    lines += ["{broken"] * 45
    src.write_text("\n".join(lines) + "\n")
    report = tmp_path / "dups.csv"
    res = invoke("dedup", str(src), "--report", str(report), dsn=pg_dsn)
    assert res.exit_code == 1, res.stderr
    assert res.stderr.count("(skipped)") == 20
    assert "... and 25 more skipped records" in res.stderr and str(report) in res.stderr
    rows = list(csv.DictReader(report.open(encoding="utf-8", newline="")))
    assert len(rows) == 45 and all("malformed JSON" in r["error"] for r in rows)
    assert count(pg_dsn) == 3


def test_csv_without_the_text_column_is_a_usage_error(pg_dsn: str, tmp_path: Path) -> None:
    src = tmp_path / "in.csv"
    src.write_text("id,body\n1,hello there\n")
    res = invoke("dedup", str(src), dsn=pg_dsn)
    assert_usage_error(res, "no column 'text'", "--text-field")
    assert count(pg_dsn) == 0


def test_empty_input_warns(pg_dsn: str, tmp_path: Path) -> None:
    src = tmp_path / "empty.txt"
    src.write_text("")
    res = invoke("dedup", str(src), dsn=pg_dsn)
    assert res.exit_code == 0
    assert "warning: the input holds no documents" in res.stderr


# -- 3. the schema of the user's database changes only when asked --------------------------


def _revision(dsn: str) -> str | None:
    from simhash_pg.db import migrate

    return migrate.current(dsn)


@pytest.fixture
def outdated_dsn(pg_dsn: str) -> str:
    from simhash_pg.db import migrate

    migrate.downgrade(pg_dsn, "0006")
    return pg_dsn


@pytest.mark.parametrize("args", [("near", "some query text here"), ("stats",),
                                  ("add", "a document of some words"),
                                  ("dedup", "-")])
def test_outdated_schema_is_never_upgraded_unasked(args: tuple[str, ...],
                                                    outdated_dsn: str) -> None:
    res = invoke(*args, dsn=outdated_dsn, input=doc(3) + "\n")
    assert_usage_error(res, "simhash-pg db upgrade")
    assert _revision(outdated_dsn) == "0006"


@pytest.fixture
def empty_dsn(pg_dsn: str) -> Iterator[str]:
    from psycopg.conninfo import make_conninfo
    from psycopg.sql import SQL, Identifier

    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(SQL("DROP DATABASE IF EXISTS {}").format(Identifier("first_hour_empty")))
        conn.execute(SQL("CREATE DATABASE {}").format(Identifier("first_hour_empty")))
    yield make_conninfo(pg_dsn, dbname="first_hour_empty")
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(SQL("DROP DATABASE {} WITH (FORCE)").format(Identifier("first_hour_empty")))


def test_reader_leaves_an_empty_database_empty(empty_dsn: str) -> None:
    res = invoke("near", "some query text", dsn=empty_dsn)
    assert_usage_error(res, "simhash-pg db upgrade")
    assert _revision(empty_dsn) is None


def test_writer_creates_the_schema_in_an_empty_database_and_says_so(empty_dsn: str) -> None:
    res = invoke("add", doc(5), dsn=empty_dsn)
    assert res.exit_code == 0, res.stderr
    assert "holds no simhash-pg store: creating one in the schema simhash\n" in res.stderr
    assert count(empty_dsn) == 1


def test_db_upgrade_of_a_missing_database_hints_createdb(pg_dsn: str) -> None:
    from psycopg.conninfo import make_conninfo

    res = invoke("db", "upgrade", "--dsn", make_conninfo(pg_dsn, dbname="no_such_db_15"))
    assert_usage_error(res, "does not exist", "createdb no_such_db_15")


def test_demo_with_dsn_leaves_that_database_alone(pg_dsn: str) -> None:
    from psycopg.conninfo import make_conninfo
    from psycopg.sql import SQL, Identifier

    try:
        res = invoke("demo", "--dsn", pg_dsn, "--groups", "0")
        assert res.exit_code == 0, res.stderr
        assert "simhash_demo" in res.stderr
        assert count(pg_dsn) == 0
        # the hint is a command that works as printed: psql through simhash-pg
        hint = next(x for x in res.stdout.splitlines() if "simhash_pairs" in x)
        assert "simhash-pg psql --dsn " in hint and "%2F" not in hint
        assert "dbname=simhash_demo" in hint
        assert count(make_conninfo(pg_dsn, dbname="simhash_demo")) > 500
    finally:
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute(SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
                         .format(Identifier("simhash_demo")))


# -- 4. small CLI fixes --------------------------------------------------------------------


def test_fingerprint_explain_is_a_flag() -> None:
    res = invoke("fingerprint", "--explain", "the quick brown fox jumps over the lazy dog")
    assert res.exit_code == 0, res.output + res.stderr
    features = [line for line in res.stdout.splitlines() if line.startswith("    ")]
    assert 1 <= len(features) <= 10
    res = invoke("fingerprint", "--explain", "--top", "2", "the quick brown fox jumps over")
    assert len([x for x in res.stdout.splitlines() if x.startswith("    ")]) == 2


def test_purge_older_than_zero_removes_everything(pg_dsn: str) -> None:
    assert invoke("add", doc(1), dsn=pg_dsn).exit_code == 0
    res = invoke("purge", "--older-than", "0d", "--json", dsn=pg_dsn)
    assert res.exit_code == 0, res.stderr
    assert count(pg_dsn) == 0


def test_near_says_which_distance(pg_dsn: str) -> None:
    # a fingerprint query is within distance k; a text query is decided by the rule
    res = invoke("near", "--k", "2", "--fingerprint", "12345", dsn=pg_dsn)
    assert res.exit_code == 0, res.stderr
    assert "no stored document within distance 2" in res.stdout
    res = invoke("near", "--k", "2", doc(9), dsn=pg_dsn)
    assert res.exit_code == 0, res.stderr
    assert "no stored near-duplicate found by the store's rule (>= 80% shared)" in res.stdout
    assert "k = 2, the radius of a fingerprint query" in res.stdout


def test_messages_have_no_doubled_words(tmp_path: Path) -> None:
    from simhash_pg.cli.inputs import read_inputs

    src = tmp_path / "x.jsonl"
    src.write_text('{"text": "unterminated\n{"text": 5}\n')
    reasons = [getattr(r, "reason", "") for r in read_inputs([str(src)])]
    assert "at at" not in reasons[0] and "column" in reasons[0]
    assert "a int" not in reasons[1] and "int" in reasons[1]


def test_report_names_the_kept_document(pg_dsn: str, tmp_path: Path) -> None:
    import csv

    src = tmp_path / "in.jsonl"
    import json

    src.write_text(json.dumps({"id": "first", "text": doc(1)}) + "\n"
                   + json.dumps({"id": "copy", "text": doc(1).upper()}) + "\n")
    report = tmp_path / "dups.csv"
    assert invoke("dedup", str(src), "--report", str(report), dsn=pg_dsn).exit_code == 0
    (row,) = csv.DictReader(report.open(encoding="utf-8", newline=""))
    assert (row["key"], row["kept_key"]) == ("copy", "first") and row["kept_id"]


def test_stop_before_the_first_batch_reads_well(pg_dsn: str, tmp_path: Path) -> None:
    src = tmp_path / "in.txt"
    src.write_bytes(b"bad \xff line\n" + "".join(doc(i) + "\n" for i in range(5)).encode())
    res = invoke("dedup", str(src), "--strict", dsn=pg_dsn)
    assert res.exit_code == 3, res.stderr
    assert "committed through before" not in res.stderr
    assert "nothing committed" in res.stderr


# -- 5. simhash-pg psql --------------------------------------------------------------------


@pytest.mark.parametrize("sep", [(), ("--",)])
def test_psql_opens_the_store(sep: tuple[str, ...], pg_dsn: str) -> None:
    import shutil
    import subprocess
    import sys

    exe = shutil.which("simhash-pg", path=str(Path(sys.executable).parent)) or "simhash-pg"
    proc = subprocess.run([exe, "psql", "--dsn", pg_dsn, *sep, "-At", "-c",
                           "SELECT count(*) FROM simhash_documents"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "0"


# -- 6. the embedded server: small by default, `server tune` for a large store -------------


def test_default_server_settings_are_modest_whatever_the_ram() -> None:
    from simhash_pg.db.server import sized_settings

    for gib in (2, 24, 512):
        default = sized_settings(gib << 30)
        assert default["shared_buffers"] == "256MB" and default["max_wal_size"] == "1024MB"
    large = sized_settings(24 << 30, large=True)  # what the benchmarks measured with
    assert large["shared_buffers"] == f"{(24 << 10) * 2 // 5}MB"
    assert large["max_wal_size"] == "24576MB"  # RAM: checkpoints apart under ingest
    assert sized_settings(24 << 30, rows=50_000_000)["shared_buffers"] == "7510MB"


def test_server_tune_writes_the_large_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    from simhash_pg.db.server import LocalServer, sized_settings, temporary_home

    home = temporary_home("shpg-tune-")
    monkeypatch.setenv("SIMHASH_PG_HOME", str(home))
    # a server made before the embedded settings preloaded pg_prewarm, with a
    # library of its owner's in the list
    settings = sized_settings() | {"shared_preload_libraries": "'pg_stat_statements'"}
    server = LocalServer(home, settings=settings)
    try:
        server.start(dbname=None)
        with psycopg.connect(server.dsn("postgres")) as conn:
            shown = conn.execute("SHOW shared_buffers").fetchone()
        assert shown is not None and shown[0] == "256MB"  # a new server starts small
        res = invoke("server", "tune", "--large")
        assert res.exit_code == 0, res.output + res.stderr
        assert "restart" in res.stdout
        auto = (server.datadir / "postgresql.auto.conf").read_text()
        assert f"shared_buffers = '{sized_settings(large=True)['shared_buffers']}'" in auto
        # autoprewarm added, the owner's library kept
        assert "shared_preload_libraries = 'pg_stat_statements, pg_prewarm'" in auto, auto
        server.stop()
        server.start(dbname=None)
        with psycopg.connect(server.dsn("postgres")) as conn:
            shown = conn.execute("SHOW shared_preload_libraries").fetchone()
        assert shown == ("pg_stat_statements, pg_prewarm",)
        res = invoke("server", "tune", "--large")  # again: nothing to add
        assert res.exit_code == 0 and "shared_preload_libraries" not in res.stdout
        assert invoke("server", "tune").exit_code == 2  # --rows or --large
    finally:
        server.destroy()


# -- 6/7. the demo says what keeps running, and explains itself ---------------------------


def test_demo_on_the_embedded_server_explains_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    import re

    from simhash_pg.db.server import LocalServer, temporary_home

    home = temporary_home("shpg-demo-")
    monkeypatch.setenv("SIMHASH_PG_HOME", str(home))
    try:
        res = invoke("demo", "--groups", "6")
        assert res.exit_code == 0, res.output + res.stderr
        out = res.stdout
        # what keeps running, and how to stop or delete it
        assert "keeps running" in out and "server stop" in out and str(home) in out
        # the score lines: precision and recall as the README defines them, then
        # what the sample's wider groups count (issue 32)
        assert re.search(r"precision \d\.\d{3} \(\d+ of \d+ reported pairs\)", out), out
        assert re.search(r"recall \d\.\d{3} \(\d+ of the sample's \d+ such", out), out
        assert "the sample's groups are wider" in out
        # its radius and bar are the store's, not numbers of its own (issue 30/32)
        from simhash_pg.cli.demo import verified_test
        from simhash_pg.store import SimhashStore

        with SimhashStore(LocalServer(home).dsn("simhash_demo")) as store:
            test, policy = verified_test(3, store.policy), store.policy
        assert test.threshold is not None
        assert (f"k = 3, the radius of a fingerprint query; verify = {policy.mode}, rule "
                f"{policy.rule}: a text looks up fingerprints within radius {test.radius} and "
                f"is a near-duplicate at >= {test.threshold:.0%} shared") in out, out
        # each pair leads with the rule's share, the distance after it (issue 32)
        assert re.search(r"\d+% shared · distance \d+", out), out
        assert f"shares >= {test.threshold:.0%} of its text" in out
        if "Pairs beyond k" in out:
            assert f"up to distance {test.radius} " in out
        # pairs within k first; the ones beyond k after the line that explains them
        distances = [int(d) for d in re.findall(r"distance (\d+)", out)]
        assert distances and distances[0] <= 3, out
        within = [d <= 3 for d in distances]
        assert within == sorted(within, reverse=True), distances
        if not all(within):
            assert out.index("Pairs beyond k = 3") < out.index("(beyond k)")
    finally:
        LocalServer(home).destroy()


def test_the_demo_takes_its_numbers_and_what_found_means_from_the_policy() -> None:
    """Issue 30: the demo's radius, bar and labelled pairs are the store policy's, for
    either rule version: a title with and without a site suffix is a near-duplicate
    by rule 1 (bigram Jaccard 0.72) and not by rule 2 (overlap 0.72 < 0.8)."""
    from simhash_pg.cli.dedup import Summary
    from simhash_pg.cli.demo import Score, score, verified_test
    from simhash_pg.cli.inputs import Record
    from simhash_pg.store import AddResult
    from simhash_pg.text.simhash import Fingerprinter
    from simhash_pg.verify import VerifyPolicy

    rows: list[dict[str, object]] = [
        {"id": "a", "group": "g", "text": "Stocks rally as oil falls"},
        {"id": "b", "group": "g", "text": "Stocks rally as oil falls - BBC News"},
    ]
    a, b = (Record(str(r["text"]), f"sample:{r['id']}", "", r) for r in rows)
    summary = Summary(pairs=[(b, AddResult(2, 0, 1, 5, True, key=b.key))], stored={1: a})
    bars = {1: ">= 72% (a pair with a short side) or 78% (two long texts)", 2: ">= 80%"}
    for rule, bar in bars.items():
        p = VerifyPolicy("all", rule=rule)
        test = verified_test(3, p)
        assert (test.radius, test.threshold) == (p.probe_cap, p.text_rule.threshold(False))
        got = score(summary, rows, Fingerprinter(), p)
        near = rule == 1  # what the policy's text rule says of the pair
        assert (got.reported, got.right, got.labelled, got.found) == (1, near, near, near)
        lines = got.lines(p)
        assert f"shares {bar} of its text" in lines[0] and f"by rule {rule}" in lines[0]
    lines = Score(reported=2, right=1, labelled=4, found=3).lines(VerifyPolicy("all"))
    assert "precision 0.500 (1 of 2 reported pairs)" in lines[0]
    assert "recall 0.750 (3 of the sample's 4 such documents reported)" in lines[0]
    assert verified_test(3, VerifyPolicy("off")).threshold is None  # distance alone


# -- 8. long work: a rerun skips known keys before fingerprinting ---------------------------


def test_rerun_skips_stored_keys_before_fingerprinting(
        pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from simhash_pg.store import SimhashStore

    src = tmp_path / "in.jsonl"
    docs = [{"id": f"d{i}", "text": doc(i)} for i in range(7)]
    src.write_text("".join(json.dumps(d) + "\n" for d in docs[:5]))
    out = tmp_path / "unique.jsonl"
    assert invoke("dedup", str(src), "--batch-size", "2", dsn=pg_dsn).exit_code == 0

    handed: list[str | None] = []  # what reached add_many: the documents to fingerprint
    original = SimhashStore.add_many

    def spy(self: SimhashStore, docs: Any, **kwargs: Any) -> Any:
        def seen(items: Any) -> Any:
            for item in items:
                handed.append(item.key)
                yield item
        return original(self, seen(docs), **kwargs)

    monkeypatch.setattr(SimhashStore, "add_many", spy)
    # two new documents among the known ones, in the middle and at the end
    rerun = [*docs[:2], docs[5], *docs[2:5], docs[6]]
    src.write_text("".join(json.dumps(d) + "\n" for d in rerun))
    res = invoke("dedup", str(src), "--batch-size", "2", "--out", str(out), dsn=pg_dsn)
    assert res.exit_code == 0, res.stderr
    assert handed == ["d5", "d6"]
    assert "read 7, unique 7 (2 new), duplicates 0" in res.stdout
    written = [json.loads(x)["id"] for x in out.read_text().splitlines()]
    assert written == ["d0", "d1", "d5", "d2", "d3", "d4", "d6"]  # input order kept
    assert count(pg_dsn) == 7


# -- 8. long work: progress with a total and the time left -----------------------------------


@pytest.mark.parametrize("name", ["in.txt", "in.txt.gz"])
def test_reading_reports_bytes_of_the_known_total(name: str, tmp_path: Path) -> None:
    import gzip

    from simhash_pg.cli.inputs import ReadProgress, input_bytes, read_inputs

    src = tmp_path / name
    data = "".join(doc(i, 200) + "\n" for i in range(400)).encode()
    src.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    reading = ReadProgress(total=input_bytes([str(src)]))
    assert reading.total == src.stat().st_size
    seen = []
    for _ in read_inputs([str(src)], progress=reading):
        seen.append(reading.done)
    assert seen == sorted(seen) and seen[0] < reading.total
    assert reading.done == reading.total
    assert input_bytes([str(src), "-"]) is None  # stdin: no total


def test_progress_line_shows_a_bar_and_the_time_left() -> None:
    import io

    from rich.console import Console

    from simhash_pg.cli.dedup import Summary
    from simhash_pg.cli.inputs import ReadProgress
    from simhash_pg.cli.progress import ProgressLine

    screen = io.StringIO()
    reading = ReadProgress(total=1000, done=250)
    with ProgressLine(True, reading, Console(file=screen, force_terminal=True, width=150)) as bar:
        bar(Summary(read=10, duplicates=2))
        bar.bar.refresh()
    shown = screen.getvalue()
    assert "25%" in shown and "10 read" in shown
    assert "-:--:--" in shown or re.search(r"\d:\d\d:\d\d", shown)
