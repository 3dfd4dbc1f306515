"""A ``simhash-pg serve`` subprocess on a free loopback port: for the serve benchmark and tests.

    with served(dsn, workers=2) as server:
        httpx.post(server.url + "/v1/near", json={"text": "..."})

On exit: SIGTERM (uvicorn drains the requests in flight), then the exit
code is checked; a server that does not stop in time is killed, so nothing
is left running.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

import httpx

__all__ = ["Served", "free_port", "served"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Served:
    url: str
    process: subprocess.Popen[bytes]

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM, wait for the drain; the exit code (killed after ``timeout``: -9)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            return -9


@contextlib.contextmanager
def served(dsn: str | None, *args: str, workers: int = 1, token: str | None = None,
           start_timeout: float = 60.0, log: IO[bytes] | None = None,
           env: dict[str, str] | None = None, cwd: str | None = None) -> Iterator[Served]:
    """Run ``simhash-pg serve --dsn DSN --workers N ARGS...`` until the block ends.

    ``dsn`` None: without --dsn, the embedded server (``env`` may name its
    SIMHASH_PG_HOME). ``cwd``: where it runs (``-m`` imports from there first).
    Its output (uvicorn's log: stderr; its access log: stdout) goes to ``log``
    (a file), else to this process's.
    """
    port = free_port()
    environ = {k: v for k, v in os.environ.items()
               if k not in ("SIMHASH_PG_TOKEN", "SIMHASH_PG_DSN", "SIMHASH_PG_SERVE_SETTINGS")}
    environ |= env or {}
    if token is not None:
        environ["SIMHASH_PG_TOKEN"] = token
    where = ["--dsn", dsn] if dsn is not None else []
    cmd = [sys.executable, "-m", "simhash_pg.cli", "serve", *where, "--port", str(port),
           "--workers", str(workers), "--log-level", "warning", *args]
    process = subprocess.Popen(cmd, env=environ, start_new_session=True, stdout=log,
                               stderr=log, cwd=cwd)
    server = Served(f"http://127.0.0.1:{port}", process)
    try:
        deadline = time.monotonic() + start_timeout
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"simhash-pg serve exited with {process.returncode}")
            try:
                if httpx.get(server.url + "/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("simhash-pg serve did not answer /healthz in time")
            time.sleep(0.1)
        yield server
    finally:
        server.stop()
