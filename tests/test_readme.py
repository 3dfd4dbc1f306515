"""The README's examples run as written: its Python, its SQL and its shell lines.

Each fenced block is taken from README.md itself, so an example that drifts
from the code fails here. The Python block runs against the test database
(``SimhashStore()`` reads ``SIMHASH_PG_DSN``); the SQL runs after it has
stored rows; ``uv run simhash-pg ...`` lines run through the CLI's entry
point in this interpreter.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
_FENCE = re.compile(r"^```(\w+)\n(.*?)^```$", re.S | re.M)


def blocks(lang: str) -> list[str]:
    return [body for kind, body in _FENCE.findall(README.read_text("utf-8")) if kind == lang]


def test_the_readme_has_the_examples_this_file_runs() -> None:
    assert len(blocks("python")) == 1
    assert len(blocks("sql")) == 1
    assert any("simhash-pg dedup" in line for line in _shell_lines())


def test_python_example_runs_as_written(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SIMHASH_PG_DSN", pg_dsn)
    (code,) = blocks("python")
    exec(compile(code, str(README), "exec"), {"__name__": "readme"})
    out = capsys.readouterr().out
    assert "https://example.org/a" in out  # the near() of the near-duplicate found the add
    with psycopg.connect(pg_dsn) as conn:
        keys = {k for (k,) in conn.execute("SELECT key FROM simhash_documents")}
    assert "https://example.org/b" in keys and "https://example.org/a" not in keys


def test_sql_example_runs_as_written(pg_dsn: str, pg: psycopg.Connection) -> None:
    from simhash_pg import Doc, SimhashStore

    with SimhashStore(pg_dsn) as store:
        store.add_many(
            [Doc(f"document number {i} about the harbour and its ships", key=f"u{i}")
             for i in range(20)],
            dedup=False,
        )
    pg.execute("CREATE TABLE my_articles (url text PRIMARY KEY, title text)")
    pg.execute("INSERT INTO my_articles SELECT key, 'title ' || key FROM simhash_documents")
    (sql,) = blocks("sql")
    for statement in (s.strip() for s in _strip_comments(sql).split(";")):
        if statement:
            pg.execute(statement).fetchall()


def _strip_comments(sql: str) -> str:
    return "\n".join(line for line in sql.splitlines() if not line.lstrip().startswith("--"))


_RUN = re.compile(r"^uv run (--no-dev )?simhash-pg ")


def _shell_lines() -> list[str]:
    lines = []
    for body in blocks("sh"):
        for line in body.splitlines():
            line = line.split("  #", 1)[0].strip()
            if _RUN.match(line) and " demo" not in line:
                lines.append(line)
    return lines


def _cli_args(line: str) -> list[str]:
    """The arguments after ``simhash-pg`` of a ``uv run [--no-dev] simhash-pg ...`` line."""
    words = shlex.split(line)
    return words[words.index("simhash-pg") + 1:]


@pytest.mark.parametrize("line", _shell_lines())
def test_shell_example_runs_as_written(line: str, pg_dsn: str, tmp_path: Path) -> None:
    (tmp_path / "my-posts.jsonl").write_text(
        "\n".join(json.dumps({"id": f"p{i}", "text": t}) for i, t in enumerate([
            "The harbour reopened on Monday after the storm passed",
            "The harbour reopened on Monday after the storm passed.",
            "A new library opens in the old town hall next spring",
        ])) + "\n",
        encoding="utf-8",
    )
    args = _cli_args(line)
    env = {**os.environ, "SIMHASH_PG_DSN": pg_dsn}
    proc = subprocess.run(
        [sys.executable, "-c", "from simhash_pg.cli import main; main()", *args],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    if "--out" in args:
        out = tmp_path / args[args.index("--out") + 1]
        assert len(out.read_text("utf-8").splitlines()) == 2  # one of the two copies dropped


def test_console_examples_print_what_the_readme_shows(pg_dsn: str) -> None:
    """The console blocks: each ``$`` command, in order, and its exact output.

    ``fingerprint`` (hex, unsigned, bigint, blocks), then an ``add`` and the
    ``near --explain`` of an edited copy, in the test database.
    """
    from click.testing import CliRunner

    from simhash_pg.cli.main import cli

    commands = 0
    for block in blocks("console"):
        runs: list[tuple[str, list[str]]] = []
        for line in block.splitlines():
            if line.startswith("$ "):
                runs.append((line.removeprefix("$ "), []))
            else:
                runs[-1][1].append(line)
        for command, expected in runs:
            args = _cli_args(command)
            res = CliRunner().invoke(cli, args, env={"SIMHASH_PG_DSN": pg_dsn})
            assert res.exit_code == 0, res.output
            assert res.stdout.splitlines() == expected, res.stdout
            commands += 1
    assert commands >= 3


def test_quick_start_demo_installs_only_the_runtime_dependencies() -> None:
    (quick,) = (b for b in blocks("sh") if " demo" in b)
    demo = next(line for line in quick.splitlines() if " demo" in line)
    assert demo.startswith("uv run --no-dev simhash-pg demo"), demo
    test = next(line for line in quick.splitlines() if "pytest" in line)
    assert test.startswith("uv run pytest"), test  # the dev group, for the tests
    # every command of the quick start but the tests': a plain `uv run` after the
    # demo would sync the dev group after all (issue 32)
    text = README.read_text("utf-8")
    section = text[text.index("## Quick start"):text.index("\n## ", text.index("## Quick start"))]
    runs = [line for body in _FENCE.findall(section) for line in body[1].splitlines()
            if line.startswith("uv run ") and "pytest" not in line]
    assert len(runs) >= 2 and all(r.startswith("uv run --no-dev ") for r in runs), runs
