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

from simhash_pg.server import LocalServer, embedded_bindir


@needs_own_server
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.skipif(bool(os.environ.get("SIMHASH_PG_TEST_BINDIR")),
                    reason="copies the embedded installation")
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
