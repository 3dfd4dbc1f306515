"""``simhash-pg serve``'s checks at start, and what needs a real uvicorn (a closed connection).

Each command runs as a subprocess with a timeout, so a check that does not
refuse shows as a server that started (and is killed), never as a hung test.
"""

from __future__ import annotations

import socket
from pathlib import Path

import httpx
import psycopg
import pytest
from _serving import serve_cli

from lab.bench._server import served

TEXT = "The harbour master counted forty ships at anchor before the storm came in."


_serve = serve_cli


def test_a_non_loopback_host_needs_a_token(pg_dsn: str) -> None:
    done = _serve(pg_dsn, "--host", "0.0.0.0")
    assert done.returncode == 2, done.stderr
    assert "--no-token" in done.stderr and "0.0.0.0" in done.stderr
    done = _serve(pg_dsn, "--host", "0.0.0.0", "--no-token", "--token", "abc")
    assert done.returncode == 2 and "give one of" in done.stderr, done.stderr


def test_more_connections_than_the_server_has_are_refused(pg: psycopg.Connection,
                                                          writer_dsn: str) -> None:
    row = pg.execute("SELECT current_setting('max_connections'), "
                     "current_setting('superuser_reserved_connections')").fetchone()
    assert row is not None
    done = _serve(writer_dsn, "--workers", "1", "--pool-size", "1000")
    assert done.returncode == 2, done.stderr
    assert "1001 connections" in done.stderr, done.stderr
    assert f"max_connections {row[0]}" in done.stderr
    assert f"superuser_reserved_connections {row[1]}" in done.stderr


def test_a_token_file_must_be_the_users_own_and_private(pg_dsn: str, tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    for mode in (0o644, 0o620):  # readable by others; writable by the group
        token.chmod(mode)
        done = _serve(pg_dsn, "--token-file", str(token))
        assert done.returncode == 2, done.stderr
        assert "--token-file" in done.stderr and "chmod 600" in done.stderr, done.stderr
    token.chmod(0o600)
    done = _serve(pg_dsn, "--token-file", str(token), "--token", "other")
    assert done.returncode == 2 and "give one of" in done.stderr, done.stderr
    link = tmp_path / "link"
    link.symlink_to(token)
    done = _serve(pg_dsn, "--token-file", str(link))  # a link planted in its place
    assert done.returncode == 2 and "--token-file" in done.stderr, done.stderr


def test_a_served_token_file_and_host_names(writer_dsn: str, tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    token.chmod(0o600)
    auth = {"Authorization": "Bearer s3cret"}
    with served(writer_dsn, "--token-file", str(token), "--allowed-host",
                "store.example") as server:
        add = {"text": TEXT}
        r = httpx.post(server.url + "/v1/documents", json=add)
        assert r.status_code == 401
        r = httpx.post(server.url + "/v1/documents", json=add, headers=auth)
        assert r.status_code == 200 and r.json()["status"] == "inserted", r.text
        port = server.url.rsplit(":", 1)[1]
        rebound = f"rebind.attacker.example:{port}"  # a page whose name now points here
        r = httpx.delete(server.url + f"/v1/documents/{r.json()['id']}",
                         headers={**auth, "Host": rebound, "Origin": f"http://{rebound}"})
        assert r.status_code == 400, r.text
        r = httpx.get(server.url + "/v1/stats", headers={"Host": f"store.example:{port}"})
        assert r.status_code == 200 and r.json()["rows"] == 1


def test_a_chunked_body_over_the_limit_closes_the_connection(writer_dsn: str) -> None:
    with served(writer_dsn, "--max-body", "1024") as server:
        port = int(server.url.rsplit(":", 1)[1])
        # under uvicorn's keep-alive timeout (5 s), after which it closes any idle connection
        with socket.create_connection(("127.0.0.1", port), timeout=3) as s:
            chunk = b"word " * 100
            # 2,500 bytes in 5 chunks, then the last chunk: a whole request, which
            # uvicorn would discard the rest of and keep the connection for the next
            s.sendall(b"POST /v1/near HTTP/1.1\r\nHost: localhost\r\n"
                      b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                      + b"%x\r\n%s\r\n" % (len(chunk), chunk) * 5 + b"0\r\n\r\n")
            answer = b""
            while True:  # read to the end: the server closes, or the timeout fails it
                try:
                    data = s.recv(65536)
                except TimeoutError:
                    pytest.fail(f"the connection stayed open after {answer[:200]!r}")
                if not data:
                    break
                answer += data
        assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
        assert b"connection: close" in answer.lower()
