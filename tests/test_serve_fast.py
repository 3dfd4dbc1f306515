"""serve/fast.py: the hot endpoints' fast path answers valid requests and hands on the rest.

FastPath runs here around a recording ASGI app in place of FastAPI's
stack, over a started app's real pool: a request it answers never reaches
the recorder, and one it hands on reaches it with the body unchanged. The
answers themselves are checked against the Python API in test_serve.py.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from _serving import TestClient, make_client

from simhash_pg.serve.fast import FastPath
from simhash_pg.store import SimhashStore

TEXT = "The harbour master counted forty ships at anchor before the storm came in."


@pytest.fixture
def client(pg_dsn: str) -> Iterator[TestClient]:
    with make_client(pg_dsn, token="s3cret") as c:
        yield c


def _call(app: Any, path: str, body: bytes, *headers: tuple[bytes, bytes],
          content_type: bytes = b"application/json") -> tuple[int, bytes, list[bytes]]:
    """POST through FastPath; (status, body, the bodies the inner app was handed)."""
    handed: list[bytes] = []

    async def inner(scope: Any, receive: Any, send: Any) -> None:
        handed.append((await receive())["body"])
        await send({"type": "http.response.start", "status": 299, "headers": []})
        await send({"type": "http.response.body", "body": b"inner"})

    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": path, "app": app,
             "headers": [(b"content-type", content_type),
                         (b"content-length", str(len(body)).encode()), *headers]}
    asyncio.run(FastPath(inner)(scope, receive, send))
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:]), handed


def test_valid_requests_are_answered_as_the_store_answers(client: TestClient,
                                                          pg_dsn: str) -> None:
    auth = (b"authorization", b"Bearer s3cret")
    status, body, handed = _call(client.app, "/v1/documents",
                                 json.dumps({"text": TEXT, "key": "a"}).encode(), auth)
    assert (status, handed) == (200, []), body
    assert json.loads(body)["status"] == "inserted"
    with SimhashStore(pg_dsn, migrate=False) as store:
        fp = store.get("a").fingerprint  # type: ignore[union-attr]
        want = [{"id": m.id, "key": m.key, "distance": m.distance, "meta": m.meta}
                for m in store.near(fp)]
    status, body, handed = _call(client.app, "/v1/near", b'{"fingerprint": %d}' % fp)
    assert (status, handed) == (200, []) and json.loads(body) == {"matches": want}
    status, body, handed = _call(client.app, "/v1/near/batch",
                                 b'{"docs": [{"fingerprint": %d}, {"text": "x y z"}]}' % fp)
    assert (status, handed) == (200, [])
    assert json.loads(body) == {"results": [{"matches": want}, {"matches": []}]}


DEEP = b'{"text": "a", "meta": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"


@pytest.mark.parametrize(("path", "body", "headers", "content_type"), [
    ("/v1/near", b'{"fingerprint": 1, "k": 99}', (), b"application/json"),  # out of range
    ("/v1/near", b'{"fingerprint": 1', (), b"application/json"),  # not JSON
    ("/v1/near", b'{"text": "\xff"}', (), b"application/json"),  # not UTF-8
    ("/v1/near", DEEP, (), b"application/json"),  # past the parser's recursion limit
    ("/v1/near", b'{"fingerprint": 1}', (), b"text/plain"),  # FastAPI's to judge
    ("/v1/documents", b'{"fingerprint": 1}', (), b"application/json"),  # no token
    ("/v1/documents", b'{"fingerprint": 1}', ((b"authorization", b"Bearer nope"),),
     b"application/json"),
], ids=["k-out-of-range", "not-json", "not-utf8", "deep", "text-plain", "no-token",
        "wrong-token"])
def test_the_rest_is_handed_on_unchanged(client: TestClient, path: str, body: bytes,
                                         headers: tuple[tuple[bytes, bytes], ...],
                                         content_type: bytes) -> None:
    status, answer, handed = _call(client.app, path, body, *headers, content_type=content_type)
    assert (status, answer, handed) == (299, b"inner", [body])


def test_too_deep_a_body_is_a_4xx(client: TestClient) -> None:
    r = client.post("/v1/near", content=DEEP, headers={"content-type": "application/json"})
    assert r.status_code == 400 and r.json()["error"] == "bad_request", r.text


def test_a_token_beyond_ascii_is_judged_by_fastapi(pg_dsn: str) -> None:
    """Starlette reads headers as latin-1: FastAPI, not a byte comparison, decides."""
    body = b'{"fingerprint": 1}'
    with make_client(pg_dsn, token="s3cret") as client:
        sent = (b"authorization", "Bearer s3cr\u00e9t".encode())
        assert _call(client.app, "/v1/documents", body, sent)[2] == [body]
