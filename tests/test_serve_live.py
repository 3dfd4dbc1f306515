"""``simhash-pg serve`` under a real uvicorn: concurrent adds, graceful shutdown.

Each test starts its own server on a free loopback port (lab/bench/_server.py)
and stops it; nothing is left running.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import psycopg
import pytest
from test_concurrency import _later_rows_finding_earlier, make_texts

from lab.bench._server import served
from simhash_pg.data import iter_sample

CLIENTS = 8


def _client(url: str, index: int, families: list[list[str]], barrier: threading.Barrier,
            batches: bool) -> int:
    rnd = random.Random(3000 + index)
    n = 0
    with httpx.Client(base_url=url, timeout=60) as http:
        for f, family in enumerate(families):
            order = list(range(len(family)))
            rnd.shuffle(order)
            barrier.wait()  # every client at the same family at once
            if batches and index % 2:
                r = http.post("/v1/documents/batch", json={"docs": [
                    {"text": family[v], "meta": {"family": f, "variant": v}} for v in order]})
                assert r.status_code == 200, r.text
                n += len(order)
                continue
            for v in order:
                r = http.post("/v1/documents", json={"text": family[v],
                                                     "meta": {"family": f, "variant": v}})
                assert r.status_code == 200, r.text
                assert r.json()["status"] in ("inserted", "duplicate"), r.text
                n += 1
    return n


@pytest.mark.parametrize("batches", [
    pytest.param(False, id="adds"),
    pytest.param(True, id="adds-and-batches", marks=pytest.mark.slow),  # ~45 s more
])
def test_concurrent_http_adds_store_no_duplicates(pg: psycopg.Connection, pg_dsn: str,
                                                  writer_dsn: str, batches: bool) -> None:
    families = make_texts()
    barrier = threading.Barrier(CLIENTS)
    start = time.perf_counter()
    with served(writer_dsn, workers=2) as server, ThreadPoolExecutor(CLIENTS) as pool:
        done = list(pool.map(lambda i: _client(server.url, i, families, barrier, batches),
                             range(CLIENTS)))
        assert server.stop() == 0
    seconds = time.perf_counter() - start
    bad = _later_rows_finding_earlier(pg_dsn)
    row = pg.execute("SELECT count(*) FROM simhash_documents").fetchone()
    print(f"\n{CLIENTS} HTTP clients, {sum(done)} adds in {seconds:.1f} s: "
          f"{row[0] if row else 0} rows stored, {len(bad)} duplicate pairs")
    assert bad == []
    assert row is not None and 0 < row[0] < sum(done)


def _server_connections(pg: psycopg.Connection, pg_dsn: str) -> int:
    row = pg.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                     " AND pid <> pg_backend_pid()").fetchone()
    return int(row[0]) if row else 0


def test_shutdown_drains_the_requests_in_flight(pg: psycopg.Connection, pg_dsn: str,
                                                writer_dsn: str) -> None:
    docs = [{"text": r["text"], "key": f"k{i}"} for i, r in enumerate(iter_sample())][:400]
    got: dict[str, Any] = {}
    with served(writer_dsn, "--graceful-timeout", "60") as server:
        assert _server_connections(pg, pg_dsn) >= 1

        def add() -> None:
            r = httpx.post(server.url + "/v1/documents/batch", json={"docs": docs}, timeout=120)
            got["status"], got["body"] = r.status_code, r.json()

        thread = threading.Thread(target=add)
        thread.start()
        time.sleep(0.5)  # the batch is being fingerprinted and written
        assert server.process.poll() is None
        code = server.stop(timeout=120)
        thread.join()
    # uvicorn re-raises the SIGTERM once it has drained and shut down
    assert code in (0, -signal.SIGTERM)
    assert got["status"] == 200 and len(got["body"]) == len(docs)  # answered, not cut off
    row = pg.execute("SELECT count(*) FROM simhash_documents").fetchone()
    assert row is not None and row[0] == sum(r["inserted"] for r in got["body"])
    assert _server_connections(pg, pg_dsn) == 0  # the pool closed its connections


def _readme_http_lines() -> list[str]:
    from test_readme import blocks

    return [line.strip() for body in blocks("bash") for line in body.splitlines()
            if line.strip().startswith("curl ")]


def test_readme_curl_examples_run_as_written(writer_dsn: str) -> None:
    lines = _readme_http_lines()
    paths = {"/v1/documents ", "/v1/documents/batch", "/v1/near ", "/v1/near/batch",
             "/v1/documents/a", "/v1/fingerprint", "/v1/stats", "/v1/groups",
             "DELETE http://127.0.0.1:8000/v1/documents/1", "/healthz", "/metrics"}
    assert all(any(p in line for line in lines) for p in paths), "an endpoint lacks its curl"
    with served(writer_dsn, token="s3cret") as server:
        port = server.url.rsplit(":", 1)[1]
        env = {"SIMHASH_PG_TOKEN": "s3cret", "PATH": os.environ["PATH"]}
        for line in lines:
            cmd = line.replace("127.0.0.1:8000", f"127.0.0.1:{port}")
            proc = subprocess.run(["bash", "-c", cmd + " -w '\\n%{http_code}'"], env=env,
                                  capture_output=True, text=True, timeout=60)
            body, _, code = proc.stdout.rpartition("\n")
            assert proc.returncode == 0 and code == "200", (line, proc.stdout, proc.stderr)
            if "/metrics" not in line:
                data = json.loads(body)
                assert not (isinstance(data, dict) and set(data) == {"error", "detail"}), data
            if "/v1/near " in line:
                assert [m["key"] for m in data["matches"]] == ["a"]


@pytest.mark.parametrize("flag", [(), ("--access-log",)], ids=["default", "access-log"])
def test_no_access_log_unless_asked(writer_dsn: str, tmp_path: Any,
                                    flag: tuple[str, ...]) -> None:
    log = tmp_path / "serve.log"
    with log.open("wb") as out, served(writer_dsn, "--log-level", "info", *flag,
                                       log=out) as server:
        assert httpx.post(server.url + "/v1/near", json={"fingerprint": 1}).status_code == 200
    lines = [line for line in log.read_text().splitlines() if "POST /v1/near" in line]
    assert len(lines) == (1 if flag else 0), log.read_text()


def test_serve_bench_runs_both_paths(pg_dsn: str, capsys: pytest.CaptureFixture[str]) -> None:
    from lab.bench.serve import _run

    _run(pg_dsn, 2000, 1, 1, 1.0, ("near fp x100", "add fp"), seed=1)
    out = capsys.readouterr().out
    for workload in ("near fp x100", "add fp"):
        rows = [line.split() for line in out.splitlines() if line.startswith(workload)]
        assert [r[len(workload.split())] for r in rows] == ["python", "http"], out
        assert rows[1][-3].endswith("x") and float(rows[1][-3][:-1]) > 0, out
        assert [r[-2] for r in rows] == ["0", "0"], out  # errors
        assert all(float(r[-1]) > 0 for r in rows), out  # the callers' CPU per call


def test_bench_client_reads_every_response_and_reconnects(writer_dsn: str) -> None:
    """The bench's raw client: keep-alive, statuses as sent, a closed connection reopened."""
    from lab.bench._http import RawClient, encode_post

    with served(writer_dsn, "--max-body", "1024", token="s3cret") as server:
        http = RawClient(server.url)
        near = encode_post(http.host, "/v1/near", {"fingerprint": 12345})
        status, body = http.send(near)
        assert status == 200 and json.loads(body) == {"matches": []}
        sock = http._sock
        assert http.send(near)[0] == 200 and http._sock is sock  # kept alive
        status, body = http.send(encode_post(http.host, "/v1/documents", {"fingerprint": 1}))
        assert status == 401 and json.loads(body)["error"] == "unauthorized"
        # a 413 is answered unread with Connection: close; the next request reconnects
        status, body = http.send(encode_post(http.host, "/v1/near", {"text": "x" * 2000}))
        assert status == 413 and http._sock is None, body
        assert http.send(near)[0] == 200
        http.close()
