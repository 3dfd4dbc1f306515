"""Throwaway PostgreSQL servers for tests that kill, restart or share a cluster.

Honours ``SIMHASH_PG_TEST_BINDIR`` like the session server; tests using it
skip under ``SIMHASH_PG_TEST_DSN`` (an external server is not ours to kill).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from simhash_pg.db.server import LocalServer, sized_settings, temporary_home

needs_own_server = pytest.mark.skipif(
    bool(os.environ.get("SIMHASH_PG_TEST_DSN")),
    reason="kills or re-creates its own server; not done to an external one",
)


@contextmanager
def throwaway_server() -> Iterator[LocalServer]:
    home = temporary_home("shpg-tw-")
    bindir = os.environ.get("SIMHASH_PG_TEST_BINDIR") or None
    settings = sized_settings(small=True)
    settings.update(shared_buffers="32MB", fsync="on", max_connections="30")
    server = LocalServer(home, bindir=Path(bindir) if bindir else None, settings=settings)
    try:
        yield server
    finally:
        server.destroy()
