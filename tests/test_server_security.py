"""The embedded server's security model (docs/operations.md), attacked as a local user.

Run as root (as CI does), the server runs as the system user
``embedded_postgres``; another OS user is played by ``nobody``. The tests
check the causes separately: the socket directory keeps other users out, and
even through a socket directory opened to them, authentication refuses them.
"""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from _throwaway import needs_own_server, throwaway_server

from simhash_pg.db.server import ROOT_HOME, SUPERUSER, LocalServer, ServerError, default_home

pytestmark = needs_own_server

as_root = pytest.mark.skipif(
    os.geteuid() != 0, reason="as root the server runs as its own user; others need root to test"
)


def _nobody() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam("nobody")
    except KeyError:  # pragma: no cover
        pytest.skip("no user nobody to play another OS user")


def _psql_as_nobody(server: LocalServer, dsn: str) -> subprocess.CompletedProcess[str]:
    """psql as the OS user nobody, without a password prompt or startup file."""
    assert server.bindir is not None
    nobody = _nobody()
    try:
        return subprocess.run(
            [str(server.bindir / "psql"), "-X", "-w", "-A", "-t", dsn, "-c",
             "SELECT current_user, usesuper FROM pg_user WHERE usename = current_user"],
            user=nobody.pw_uid, group=nobody.pw_gid, extra_groups=[],
            env={"PATH": os.environ.get("PATH", ""), "HOME": "/nonexistent",
                 "PGCONNECT_TIMEOUT": "10"},
            cwd="/", capture_output=True, text=True, timeout=60,
        )
    except PermissionError:  # pragma: no cover - a checkout under a private directory
        pytest.skip(f"nobody cannot run {server.bindir / 'psql'}")


@contextmanager
def opened_up(server: LocalServer) -> Iterator[None]:
    """A careless operator opens the socket directory and the socket to everyone."""
    socket = next(server.socket_dir.glob(".s.PGSQL.*[0-9]"))
    os.chmod(server.socket_dir, 0o711)
    os.chmod(socket, 0o777)
    try:
        yield
    finally:
        os.chmod(socket, 0o700)
        os.chmod(server.socket_dir, 0o700)


@pytest.fixture(scope="module")
def running() -> Iterator[LocalServer]:
    with throwaway_server() as server:
        server.start(dbname=None)
        yield server


@as_root
def test_another_os_user_cannot_connect(running: LocalServer) -> None:
    out = _psql_as_nobody(running, running.dsn("postgres"))
    assert out.returncode != 0, out.stdout  # before: "postgres|t", a superuser shell
    assert "Permission denied" in out.stderr, out.stderr  # the socket directory
    mode = stat.S_IMODE(running.socket_dir.stat().st_mode)
    assert mode == 0o700, oct(mode)


@as_root
def test_another_os_user_is_refused_even_through_an_open_socket_directory(
    running: LocalServer,
) -> None:
    # authentication still refuses a client whose OS user is not mapped to
    # the superuser, and other roles need their password
    with opened_up(running):
        out = _psql_as_nobody(running, running.dsn("postgres"))
        assert out.returncode != 0, out.stdout
        assert "Peer authentication failed" in out.stderr, out.stderr
        out = _psql_as_nobody(running, running.dsn("postgres").replace(
            f"{SUPERUSER}@", "analyst@"))
        assert out.returncode != 0, out.stdout
        assert "no password supplied" in out.stderr, out.stderr


def test_the_starting_user_still_connects_as_the_superuser(running: LocalServer) -> None:
    import psycopg

    with psycopg.connect(running.dsn("postgres"), autocommit=True) as conn:
        assert conn.execute("SELECT current_user, usesuper FROM pg_user"
                            " WHERE usename = current_user").fetchone() == (SUPERUSER, True)
        methods = {r[0] for r in conn.execute(
            "SELECT auth_method FROM pg_hba_file_rules WHERE error IS NULL").fetchall()}
        errors = conn.execute(
            "SELECT count(*) FROM pg_hba_file_rules WHERE error IS NOT NULL").fetchone()
    assert "trust" not in methods and methods <= {"peer", "scram-sha-256"}, methods
    assert errors == (0,)


@as_root
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_server_process_has_its_own_group_and_no_root_group(running: LocalServer) -> None:
    pid = int((running.datadir / "postmaster.pid").read_text().split("\n", 1)[0])
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text()
                  .splitlines() if ":" in line)
    uids = {int(x) for x in fields["Uid"].split()}
    gids = {int(x) for x in fields["Gid"].split()}
    groups = {int(x) for x in fields["Groups"].split()}
    server = pwd.getpwnam("embedded_postgres")
    assert uids == {server.pw_uid}
    assert 0 not in gids | groups, (fields["Gid"], fields["Groups"])  # before: Gid 0 0 0 0
    assert groups <= gids


@as_root
def test_a_planted_symlink_at_the_predictable_socket_path_is_refused() -> None:
    with throwaway_server() as tw:
        # a home so long that its socket must live under /tmp, at a path
        # anyone can compute from the home's path
        long = LocalServer(tw.home / ("a-long-home-" * 8), bindir=tw.bindir,
                           settings=tw.settings)
        assert long.socket_dir.parent == Path(tempfile.gettempdir())
        target = Path(tempfile.mkdtemp(prefix="shpg-victim-"))  # root's 0700 directory
        (target / "secret").write_text("x")
        before = target.stat()
        try:
            long.socket_dir.symlink_to(target)
            with pytest.raises(ServerError, match="symbolic link"):
                long.start(dbname=None)
            after = target.stat()
            assert (after.st_uid, after.st_gid, after.st_mode) == (
                before.st_uid, before.st_gid, before.st_mode)
            assert long.socket_dir.is_symlink() and not long.is_running()

            # a real directory someone else made there is refused as well
            long.socket_dir.unlink()
            long.socket_dir.mkdir()
            nobody = _nobody()
            os.chown(long.socket_dir, nobody.pw_uid, nobody.pw_gid)
            os.chmod(long.socket_dir, 0o777)
            with pytest.raises(ServerError, match="owned by"):
                long.start(dbname=None)
            assert long.socket_dir.stat().st_uid == nobody.pw_uid
            assert stat.S_IMODE(long.socket_dir.stat().st_mode) == 0o777
        finally:
            long.destroy()
            if long.socket_dir.is_symlink():
                long.socket_dir.unlink()
            elif long.socket_dir.exists():
                shutil.rmtree(long.socket_dir)
            shutil.rmtree(target)


@as_root
def test_parents_of_the_home_are_not_opened_up() -> None:
    parent = Path(tempfile.mkdtemp(prefix="shpg-parent-"))  # 0700: the server cannot enter
    with throwaway_server() as tw:
        server = LocalServer(parent / "home", bindir=tw.bindir, settings=tw.settings)
        try:
            with pytest.raises(ServerError, match=f"cannot enter {parent}") as err:
                server.start(dbname=None)
            assert "SIMHASH_PG_HOME" in str(err.value)  # says what to do
            assert stat.S_IMODE(parent.stat().st_mode) == 0o700  # before: 0711
        finally:
            server.destroy()
            shutil.rmtree(parent)


@as_root
def test_a_store_made_by_an_older_version_is_upgraded_in_place() -> None:
    # What versions before this one left behind: trust for every local
    # connection and a socket directory anyone could enter.
    def make_old(server: LocalServer) -> None:
        hba = server.datadir / "pg_hba.conf"
        hba.write_text("local all all trust\n")
        os.chmod(server.socket_dir, 0o755)

    def assert_protected(server: LocalServer) -> None:
        assert stat.S_IMODE(server.socket_dir.stat().st_mode) == 0o700
        with opened_up(server):  # prove the rules in force, not just the file
            out = _psql_as_nobody(server, server.dsn("postgres"))
            assert out.returncode != 0 and "Peer authentication failed" in out.stderr, out

    with throwaway_server() as tw:
        tw.start(dbname=None)
        tw.stop()
        make_old(tw)
        tw.start(dbname=None)  # the next start after the upgrade
        assert_protected(tw)

        # a server still running since before the upgrade: the new rules
        # take effect at once (reload), not at its next restart
        make_old(tw)
        tw._run([tw._bin("pg_ctl"), "reload", "-D", str(tw.datadir)], "reload")
        tw.start(dbname=None)
        assert_protected(tw)


@as_root
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="XDG data directory")
def test_roots_default_home_is_one_the_server_can_reach(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # /root is 0700: a home under it would need /root opened up
    monkeypatch.delenv("SIMHASH_PG_HOME", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert default_home() == ROOT_HOME
    # a store an older version made in the per-user place is still used
    legacy = tmp_path / "simhash-pg"
    (legacy / "data").mkdir(parents=True)
    (legacy / "data" / "PG_VERSION").write_text("18\n")
    assert default_home() == legacy.resolve()


@as_root
def test_a_home_that_others_could_tamper_with_is_refused() -> None:
    # root writes the lock file there: a home others can write to would let
    # them plant a link for root to follow
    nobody = _nobody()
    with throwaway_server() as tw:
        try:
            os.chmod(tw.home, 0o777)
            with pytest.raises(ServerError, match="writable by other users"):
                tw.start(dbname=None)
            os.chmod(tw.home, 0o711)
            os.chown(tw.home, nobody.pw_uid, nobody.pw_gid)
            with pytest.raises(ServerError, match=f"belongs to uid {nobody.pw_uid}"):
                tw.start(dbname=None)
            assert not tw.is_initialized()
        finally:
            os.chown(tw.home, 0, 0)
            os.chmod(tw.home, 0o711)
