"""Issue 32, point 6: the smaller CLI messages a first hour runs into.

Through the CLI entry point (click's CliRunner on ``cli``), real PostgreSQL.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from simhash_pg.cli.main import cli

NOBODY = 65534
# what `stats` imports on its way to the home check (a child as nobody cannot read them)
PRELOAD = ("simhash_pg.cli.inputs", "simhash_pg.cli.stats", "simhash_pg.cli.server",
           "simhash_pg.db.server", "simhash_pg.store", "filelock", "secrets")


def invoke(*args: str, env: dict[str, str | None] | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def as_other_user(run: Callable[[], Result]) -> tuple[int, str]:
    """``run()`` as a user who is not the owner: in a child with uid nobody under root.

    Root passes every permission check, so only another uid sees EACCES. The
    child may not read the interpreter's files: what it runs is imported first.
    """
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)
    if os.geteuid() != 0:
        res = run()
        return res.exit_code, res.stderr
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop to nobody, run, report through the pipe
        code = 99
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            res = run()
            os.write(write, json.dumps([res.exit_code, res.stderr]).encode())
            code = 0
        except BaseException:
            import traceback

            os.write(write, traceback.format_exc().encode())
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as fh:
        data = fh.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, data
    exit_code, stderr = json.loads(data)
    return int(exit_code), str(stderr)


@pytest.fixture
def open_parent() -> Iterator[Path]:
    """A directory every user may enter (pytest's tmp_path sits in a closed one)."""
    path = Path(tempfile.mkdtemp(prefix="shpg-32-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.parametrize("command", [("stats",), ("server", "status")])
@pytest.mark.parametrize("closed", ["home", "parent"])
def test_a_home_this_user_cannot_read_is_permission_denied(
        closed: str, command: tuple[str, ...], open_parent: Path) -> None:
    home = open_parent / "lib" / "simhash-pg"
    (home / "data").mkdir(mode=0o700, parents=True)
    shut = home if closed == "home" else home.parent
    shut.chmod(0o700 if os.geteuid() == 0 else 0o000)
    try:
        code, err = as_other_user(lambda: invoke(
            *command, env={"SIMHASH_PG_HOME": str(home), "SIMHASH_PG_DSN": None}))
    finally:
        shut.chmod(0o755)
    assert code != 0
    assert "Traceback" not in err and "permission denied" in err, err
    assert "remove" not in err and "planted" not in err and "no server" not in err, err
    assert str(home) in err and "SIMHASH_PG_HOME" in err
    # who is refused, and the directory that refuses them
    assert f"uid {NOBODY if os.geteuid() == 0 else os.geteuid()})" in err, err
    if closed == "parent" or command[0] == "server":
        assert f"cannot enter {shut} (owned by uid {os.geteuid()}" in err, err


def test_a_planted_link_is_still_refused(tmp_path: Path) -> None:
    from simhash_pg.db.private_dirs import open_dir
    from simhash_pg.db.server_auth import ServerError

    (tmp_path / "elsewhere").mkdir()
    link = tmp_path / "home"
    link.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(ServerError, match=r"symbolic link.*remove it"):
        open_dir(link, "the server's home")


def test_stats_of_a_tiny_store_gives_no_bytes_per_row(pg_dsn: str) -> None:
    for i in range(4):
        assert invoke("add", f"document number {i} of a tiny store, with a few words",
                      env={"SIMHASH_PG_DSN": pg_dsn}).exit_code == 0
    res = invoke("stats", env={"SIMHASH_PG_DSN": pg_dsn})
    assert res.exit_code == 0, res.stderr
    (line,) = [x for x in res.stdout.splitlines() if "bytes_per_row" in x]
    assert line.split(":", 1)[1].strip().startswith("- (shown from 10,000 rows"), line


def test_server_status_and_tune_for_a_million_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    from simhash_pg.db.server import LocalServer, temporary_home

    home = temporary_home("shpg-32-")
    monkeypatch.delenv("SIMHASH_PG_DSN", raising=False)
    try:
        monkeypatch.setenv("SIMHASH_PG_HOME", str(home / "none"))
        res = invoke("server", "status")
        assert res.exit_code == 1
        assert res.stdout.startswith("no server: "), res.stdout  # not "stopped: data in ..."
        assert "stopped" not in res.stdout and "server start" in res.stdout
        monkeypatch.setenv("SIMHASH_PG_HOME", str(home))
        res = invoke("server", "tune", "--rows", "1000000")
        assert res.exit_code == 0, res.output
        # a million rows' block indexes are ~120 MB: WAL as by default, whatever the RAM
        assert "max_wal_size = 1024MB" in res.stdout, res.stdout
    finally:
        LocalServer(home).destroy()
        shutil.rmtree(home, ignore_errors=True)


def test_near_says_when_k_changes_nothing_for_a_text(pg_dsn: str) -> None:
    env: dict[str, str | None] = {"SIMHASH_PG_DSN": pg_dsn}
    text = ("The harbour master counted forty ships at anchor before the storm came in, "
            "and the pilots waited for the tide to turn before they went out again.")
    assert invoke("add", text, "--key", "a", env=env).exit_code == 0
    query = text.replace("forty", "forty-one")
    res = invoke("near", "--k", "12", query, env=env)
    assert res.exit_code == 0, res.stderr
    assert "a" in res.stdout
    note = " ".join(res.stderr.split())
    assert "--k 12 found what the store's k = 3 finds" in note, note
    assert "reach >= 80% shared (rule 2)" in note and "--verify off" in note
    assert "k is the radius of a fingerprint query" in note
    # by distance alone k is the whole test: nothing to explain
    res = invoke("near", "--k", "12", "--verify", "off", query, env=env)
    assert res.exit_code == 0 and "note" not in res.stderr, res.stderr
