"""An in-process client of the serve app, for the API's and the web page's tests, and
``serve`` started through its entry point, for the tests of how it starts."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from typing import Any

from simhash_pg.serve import Settings, create_app

with warnings.catch_warnings():  # Starlette asks for httpx2 in its TestClient; httpx works
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

__all__ = ["BASE_URL", "TestClient", "make_client", "serve_cli"]

# a name the server answers by default (TestClient's own, "testserver", is not)
BASE_URL = "http://localhost"


def make_client(dsn: str, **settings: Any) -> TestClient:
    return TestClient(create_app(Settings(dsn=dsn, pool_min=1, pool_max=4, **settings)),
                      base_url=BASE_URL)


def serve_cli(dsn: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``simhash-pg serve --dsn dsn *args`` on a free port, without the caller's token,
    DSN or settings in its environment; a server that starts is killed at the
    timeout (a test that expects a refusal then fails)."""
    from lab.bench._server import free_port

    env = {k: v for k, v in os.environ.items()
           if k not in ("SIMHASH_PG_TOKEN", "SIMHASH_PG_DSN", "SIMHASH_PG_SERVE_SETTINGS")}
    cmd = [sys.executable, "-m", "simhash_pg.cli", "serve", "--dsn", dsn,
           "--port", str(free_port()), "--log-level", "warning", *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=30)
