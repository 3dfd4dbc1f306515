"""The first hour of a new user (issue 15): clear errors instead of tracebacks,
nothing junk stored, no schema change without asking, honest messages.

Driven through the CLI entry point (click's CliRunner on ``cli``) against a real database.
"""

from __future__ import annotations

import random
from pathlib import Path

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
        row = conn.execute("SELECT count(*) FROM simhash_documents").fetchone()
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
