"""What ``serve`` refuses: foreign Host names, two Authorization headers, writes to a read-only
server, bad input as an outage, reads past --token-for-reads, and where the database is to
those without the token.

In process (TestClient); test_serve_start.py has the checks at start and
the ones that need a real uvicorn.
"""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from _serving import BASE_URL, TestClient, make_client

from simhash_pg.serve import Settings, create_app
from simhash_pg.serve.deps import Store  # module level: FastAPI resolves the annotation here

TEXT = "The harbour master counted forty ships at anchor before the storm came in."
AUTH = {"Authorization": "Bearer s3cret"}


@pytest.mark.parametrize("host", ["rebind.attacker.example:8000", "rebind.attacker.example",
                                  "127.0.0.1.attacker.example", "www.localhost"])
def test_only_the_servers_own_host_names_are_answered(pg_dsn: str, host: str) -> None:
    """DNS rebinding: a page on the attacker's name reaches 127.0.0.1 with that name."""
    with make_client(pg_dsn) as client:
        origin = {"Origin": f"http://{host}"}
        r = client.post("/v1/documents", json={"text": TEXT}, headers={"Host": host, **origin})
        assert r.status_code == 400, r.text
        r = client.post("/v1/near", json={"text": TEXT}, headers={"Host": host, **origin})
        assert r.status_code == 400, r.text
        assert client.get("/v1/stats", headers={"Host": host}).status_code == 400
        assert client.get("/", headers={"Host": host}).status_code == 400
        for own in ("localhost:8000", "LOCALHOST", "127.0.0.1:8000", "[::1]:8000", "127.0.0.1"):
            r = client.get("/v1/stats", headers={"Host": own})
            assert r.status_code == 200 and r.json()["rows"] == 0  # nothing was added


def test_allowed_hosts_are_answered(pg_dsn: str) -> None:
    with make_client(pg_dsn, allowed_hosts=("store.example", "2001:db8::1")) as client:
        for host in ("store.example:8000", "[2001:db8::1]:8000"):
            assert client.get("/v1/stats", headers={"Host": host}).status_code == 200
        assert client.get("/v1/stats", headers={"Host": "localhost"}).status_code == 400


@pytest.mark.parametrize(("path", "body"), [
    ("/v1/documents", {"text": TEXT}),  # JsonRoutes (serve/route.py)
    ("/v1/near", {"fingerprint": 5}),
    ("/v1/fingerprint", {"text": TEXT}),  # FastAPI's own routes
    ("/search", {"text": TEXT}),  # the web page's
])
@pytest.mark.parametrize("order", [("wrong", "s3cret"), ("s3cret", "wrong")])
def test_two_authorization_headers_are_refused(pg_dsn: str, path: str, body: Any,
                                               order: tuple[str, str]) -> None:
    """Which one to judge would be a guess: every endpoint that reads the credentials
    refuses the request (400), whichever comes first."""
    with make_client(pg_dsn, token="s3cret", token_for_reads=True) as client:
        headers = [("Authorization", f"Bearer {t}") for t in order]
        r = client.post(path, json=body, headers=headers)
        assert r.status_code == 400, r.text
        assert r.json() == {"error": "bad_request", "detail": "ambiguous credentials: the "
                            "request has more than one Authorization header; send one"}
        assert client.get("/v1/stats", headers=headers).status_code == 400
        assert client.get("/v1/stats", headers=AUTH).json()["rows"] == 0


def test_two_authorization_headers_are_refused_without_a_token(pg_dsn: str) -> None:
    """Even where no token is needed: one behaviour, whatever the server's settings."""
    headers = [("Authorization", "Bearer a"), ("Authorization", "Bearer b")]
    with make_client(pg_dsn) as client:
        for path, body in (("/v1/near", {"fingerprint": 5}), ("/v1/documents", {"text": TEXT}),
                           ("/v1/fingerprint", {"text": TEXT})):
            assert client.post(path, json=body, headers=headers).status_code == 400, path
        assert client.get("/v1/stats", headers=headers).status_code == 400
        assert client.get("/v1/stats").json()["rows"] == 0
        assert client.post("/v1/near", json={"fingerprint": 5}).status_code == 200


def test_a_read_only_server_refuses_every_write(pg_dsn: str) -> None:
    """403 from the one write guard, on a JsonRoute and on FastAPI's own routes alike; reads
    and the web page's search go on."""
    with make_client(pg_dsn, token="s3cret", read_only=True) as client:
        for method, path, body in (("POST", "/v1/documents", {"text": TEXT}),
                                   ("POST", "/v1/documents/batch", {"docs": [{"text": TEXT}]}),
                                   ("DELETE", "/v1/documents/1", None)):
            r = client.request(method, path, json=body, headers=AUTH)
            assert r.status_code == 403 and "read-only" in r.json()["detail"], path
            # the token first: without it, a 401 says nothing about the server
            assert client.request(method, path, json=body).status_code == 401, path
        assert client.post("/v1/near", json={"text": TEXT}).status_code == 200
        assert client.post("/search", json={"text": TEXT}).status_code == 200
        assert client.get("/v1/stats").json()["rows"] == 0


@pytest.mark.parametrize(("method", "path", "body", "field"), [
    ("post", "/v1/near", {"fingerprint": 5, "limit": 2**63}, "limit"),
    ("post", "/v1/near/batch", {"docs": [{"fingerprint": 5}], "limit": 2**63}, "limit"),
    ("get", "/compare?akey=a%00&b=1", None, "akey"),
    ("get", "/compare?a=1&bkey=%00", None, "bkey"),
    ("get", f"/compare?a={2**63}&b=1", None, "a"),
    ("get", f"/recent?before={2**63}", None, "before"),
    ("get", f"/groups?after={2**63}", None, "after"),
    ("get", f"/v1/groups?after={2**63}", None, "after"),
    ("post", "/compare-text", {"text": TEXT, "b": 2**63}, "b"),
])
def test_bad_input_is_a_4xx_naming_the_field(pg_dsn: str, method: str, path: str, body: Any,
                                             field: str) -> None:
    """Not a 503 with Retry-After: the same request can never succeed."""
    with make_client(pg_dsn) as client:
        r = client.request(method.upper(), path, json=body)
        assert r.status_code == 422, r.text
        assert "retry-after" not in r.headers
        assert r.json()["error"] == "invalid_request"
        assert field in [e["loc"][-1] for e in r.json()["detail"]], r.text


@pytest.mark.parametrize(("sql", "error"), [
    (f"SELECT {2**63}::numeric::bigint", psycopg.errors.NumericValueOutOfRange),
    ("SELECT convert_from('\\x00'::bytea, 'UTF8')", psycopg.errors.CharacterNotInRepertoire),
    ("SELECT %s::text", psycopg.DataError),  # psycopg's own: a NUL in a parameter
])
def test_a_data_error_from_the_database_is_a_4xx(pg_dsn: str, sql: str,
                                                 error: type[Exception]) -> None:
    """Whatever input gets past the models: a data error is the input's fault, not an outage."""
    from fastapi import APIRouter

    router = APIRouter()
    seen: list[Exception] = []

    @router.get("/data-error")
    def data_error(store: Store) -> None:
        try:
            store.connection.execute(sql, ["a\x00"] if "%s" in sql else None)
        except Exception as exc:
            seen.append(exc)
            raise

    app = create_app(Settings(dsn=pg_dsn, pool_min=1, pool_max=1))
    app.include_router(router)
    with TestClient(app, base_url=BASE_URL) as client:
        r = client.get("/data-error")
        assert r.status_code == 422 and "retry-after" not in r.headers, r.text
        assert r.json()["error"] == "invalid_input"
        assert isinstance(seen[0], error)


@pytest.mark.parametrize("path", ["/metrics", "/openapi.json", "/docs", "/redoc"])
def test_token_for_reads_covers_every_read(pg_dsn: str, path: str) -> None:
    with make_client(pg_dsn, token="s3cret", token_for_reads=True) as client:
        assert client.get(path).status_code == 401
        assert client.get(path, headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert client.get(path, headers=AUTH).status_code == 200
        assert client.get("/healthz").status_code == 200  # probes never need it
    with make_client(pg_dsn, token="s3cret") as client:  # reads open: these too
        assert client.get(path).status_code == 200


def test_where_the_database_is_only_to_the_token(pg_dsn: str) -> None:
    where = psycopg.conninfo.conninfo_to_dict(pg_dsn)["host"]
    assert where
    with make_client(pg_dsn, token="s3cret") as client:
        assert "database" not in client.get("/v1/stats").json()
        assert "database" not in client.get("/v1/stats",
                                            headers={"Authorization": "Bearer no"}).json()
        assert str(where) in client.get("/v1/stats", headers=AUTH).json()["database"]
        assert str(where) not in client.get("/stats").text
    with make_client(pg_dsn) as client:  # no token: no one bears it
        assert "database" not in client.get("/v1/stats").json()
