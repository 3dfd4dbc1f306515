"""The embedded server's life cycle, on throwaway servers."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import psycopg
import pytest
from _throwaway import needs_own_server, throwaway_server

from simhash_pg.db.server import LocalServer, embedded_bindir


@needs_own_server
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.skipif(bool(os.environ.get("SIMHASH_PG_TEST_BINDIR")),
                    reason="copies the embedded installation")
@pytest.mark.slow
def test_server_from_a_removed_installation_is_restarted_from_ours() -> None:
    # A per-user server started by another checkout's environment, which is
    # then deleted: its backends can no longer load plpgsql.
    # the wheel's layout: pginstall finds its libraries at ../../../<pkg>.libs
    package = embedded_bindir().parent.parent
    env = Path(tempfile.mkdtemp(prefix="shpg-inst-"))
    env.chmod(0o755)
    for part in (package, package.parent / f"{package.name}.libs"):
        if part.exists():
            shutil.copytree(part, env / part.name, symlinks=True)
    with throwaway_server() as tw:
        old = LocalServer(tw.home, bindir=env / package.name / "pginstall" / "bin",
                          settings=tw.settings)
        old.start(dbname="x")
        assert not old.running_binary_gone()
        shutil.rmtree(env)
        assert old.running_binary_gone()
        with psycopg.connect(old.dsn("x"), autocommit=True) as conn, pytest.raises(
            psycopg.Error, match="plpgsql"
        ):
            conn.execute("DO $$ BEGIN END $$")
        dsn = tw.start(dbname="x")  # our installation, same data directory
        assert not tw.running_binary_gone()
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("DO $$ BEGIN END $$")


@needs_own_server
def test_status_names_the_memory_and_how_to_get_huge_pages() -> None:
    import re
    import subprocess

    exe = shutil.which("simhash-pg", path=str(Path(sys.executable).parent)) or "simhash-pg"
    with throwaway_server() as tw:
        env = dict(os.environ, SIMHASH_PG_HOME=str(tw.home))

        def status() -> subprocess.CompletedProcess[str]:
            return subprocess.run([exe, "server", "status"], capture_output=True, text=True,
                                  env=env, timeout=60)

        absent = status()  # no data directory yet: no server, not a stopped one (issue 32)
        assert absent.returncode == 1 and absent.stdout.startswith("no server"), absent
        tw.start(dbname=None)
        out = status()
        assert out.returncode == 0, out
        running, url, memory = out.stdout.splitlines()
        assert running == f"running: data in {tw.datadir}"
        assert url == tw.dsn()
        with psycopg.connect(tw.dsn("postgres")) as conn:
            shared = conn.execute("SHOW shared_buffers").fetchone()[0]  # type: ignore[index]
            if conn.info.server_version < 170000:
                assert memory == f"shared_buffers {shared}, huge_pages = try"
                return
            got = conn.execute("SHOW huge_pages_status").fetchone()[0]  # type: ignore[index]
            need = conn.execute("SHOW shared_memory_size_in_huge_pages").fetchone()[0]  # type: ignore[index]
        assert memory.startswith(f"shared_buffers {shared}, huge pages {got}"), memory
        advice = re.search(r"sysctl -w vm\.nr_hugepages=(\d+)", memory)
        if got == "off" and int(need) > 0:
            assert advice and advice.group(1) == need, memory
        else:
            assert advice is None, memory
