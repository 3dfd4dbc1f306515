"""``simhash-pg serve``'s HTTP API: the Python API's results, as JSON, and 4xx for bad input.

The app runs in-process (FastAPI's TestClient runs its lifespan: the
handshake and the pool) against the test database.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import pytest

from simhash_pg.serve import Settings, create_app

with warnings.catch_warnings():  # Starlette asks for httpx2 in its TestClient; httpx works
    warnings.simplefilter("ignore", DeprecationWarning)
    from fastapi.testclient import TestClient

TEXT = "The harbour master counted forty ships at anchor before the storm came in."


@pytest.fixture
def client(pg_dsn: str) -> Iterator[TestClient]:
    with TestClient(create_app(Settings(dsn=pg_dsn, pool_min=1, pool_max=4))) as c:
        yield c


def test_healthz_and_a_store_per_request(client: TestClient) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    r = client.post("/v1/documents", json={"text": TEXT, "key": "a"})
    assert r.status_code == 200, r.text
    assert r.json()["status"] == "inserted"
    r = client.post("/v1/documents", json={"text": TEXT + "!", "key": "b"})
    assert r.json()["status"] == "duplicate" and r.json()["duplicate_key"] == "a"
