"""serve/route.py: a JsonRoute answers as the FastAPI route of the same endpoint would.

The app gets, beside its /v1 JsonRoutes, plain FastAPI routes (``/plain/...``)
over the same endpoint functions, guards and models; every request, valid
or not, must get the same status and the same JSON from both. The answers
themselves are checked against the Python API in test_serve.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from _serving import BASE_URL, TestClient
from fastapi import APIRouter, Depends, Request

from simhash_pg.serve import Settings, api, create_app
from simhash_pg.serve.models import AddOut, NearBatchOut, NearIn, NearOut
from simhash_pg.serve.route import JsonRoute

TEXT = "The harbour master counted forty ships at anchor before the storm came in."
AUTH = {"Authorization": "Bearer s3cret"}
JSON = {"content-type": "application/json"}
DEEP = b'{"text": "a", "meta": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"


def _plain() -> APIRouter:
    """The hot endpoints as FastAPI's own routes, at /plain."""
    router = APIRouter(prefix="/plain")
    for path, endpoint, guards, model in (
            ("/near", api.near, api.reads, NearOut),
            ("/near/batch", api.near_batch, api.reads, NearBatchOut),
            ("/documents", api.add, api.writes, AddOut),
            ("/documents/batch", api.add_batch, api.writes, list[AddOut])):
        router.add_api_route(path, endpoint, methods=["POST"], dependencies=guards,
                             response_model=model)
    return router


@pytest.fixture
def client(pg_dsn: str) -> Iterator[TestClient]:
    app = create_app(Settings(dsn=pg_dsn, pool_min=1, pool_max=4, token="s3cret"))
    app.include_router(_plain())
    with TestClient(app, base_url=BASE_URL) as c:
        yield c


def _both(client: TestClient, path: str, **request: Any) -> tuple[Any, Any]:
    """(status, body) of the JsonRoute at /v1``path`` and of the plain route at /plain``path``."""
    out = []
    for prefix in ("/v1", "/plain"):
        r = client.post(prefix + path, **request)
        out.append((r.status_code, r.json() if r.content else None))
    return out[0], out[1]


@pytest.mark.parametrize(("path", "request_"), [
    ("/near", {"json": {"fingerprint": 5}}),
    ("/near", {"json": {"text": TEXT, "limit": 3}}),
    ("/near", {"json": {"text": TEXT}, "params": {"explain": "true"}}),
    ("/near", {"json": {"fingerprint": 5}, "params": {"explain": "maybe"}}),  # query error
    ("/near", {"json": {"fingerprint": 5, "k": 99}, "params": {"explain": "no!"}}),  # both
    ("/near", {"json": {"fingerprint": 5}, "params": {"other": "x"}}),  # not a parameter
    ("/near", {"json": {"fingerprint": 1, "k": 99}}),  # out of range
    ("/near", {"json": {"txt": "typo"}}),  # an unknown field
    ("/near", {"content": b"null", "headers": JSON}),  # JSON null
    ("/near", {"json": [1, 2]}),
    ("/near", {"content": b'{"fingerprint": 1', "headers": JSON}),  # not JSON
    ("/near", {"content": b'{"text": "\xff"}', "headers": JSON}),  # not UTF-8
    ("/near", {"content": DEEP, "headers": JSON}),  # past the parser's recursion limit
    ("/near", {"content": b"", "headers": JSON}),  # no body
    ("/near", {"content": b'{"fingerprint": 1}'}),  # no content type
    ("/near", {"content": b'{"fingerprint": 1}', "headers": {"content-type": "text/plain"}}),
    ("/near", {"content": b'{"fingerprint": 1}',
               "headers": {"content-type": "application/vnd.x+json; charset=utf-8"}}),
    ("/near/batch", {"json": {"docs": [{"fingerprint": 5}, {"text": TEXT}], "limit": 2}}),
    ("/near/batch", {"json": {"docs": [{"fingerprint": 2**64}]}}),
    ("/documents", {"json": {"text": TEXT}}),  # no token
    ("/documents", {"json": {"text": TEXT}, "headers": {"Authorization": "Bearer nope"}}),
    ("/documents", {"json": {"text": TEXT}, "headers": {"Authorization": "s3cret"}}),
    ("/documents", {"json": {"text": TEXT},  # Starlette reads it as latin-1
                    "headers": {"Authorization": "Bearer s3cr\u00e9t".encode()}}),
    ("/documents", {"json": {"txt": TEXT}}),  # a bad body without the token: the token first
    ("/documents", {"content": b"{", "headers": JSON}),  # bad JSON without it: the JSON first
    ("/documents", {"json": {"text": "", "key": "k"}, "headers": AUTH}),  # the store refuses
    ("/documents", {"json": {"text": TEXT, "key": "k\x00"}, "headers": AUTH}),
    ("/documents/batch", {"json": {"docs": [{"text": TEXT}] * 1001}, "headers": AUTH}),
    ("/documents/batch", {"json": {"docs": []}, "headers": AUTH}),
], ids=lambda v: v if isinstance(v, str) else None)
def test_a_json_route_answers_as_fastapi_does(client: TestClient, path: str,
                                             request_: dict[str, Any]) -> None:
    ours, fastapis = _both(client, path, **request_)
    assert ours == fastapis
    assert ours[0] < 500


def test_adds_are_answered_alike(client: TestClient) -> None:
    """Two adds of one text: the first stored, the second its duplicate, by either route."""
    first, second = _both(client, "/documents", json={"text": TEXT, "meta": {"a": 1}},
                          headers=AUTH)
    assert (first[0], first[1]["status"]) == (200, "inserted")
    assert (second[0], second[1]["status"]) == (200, "duplicate")
    assert second[1]["duplicate_of"] == first[1]["id"]
    assert set(first[1]) == set(second[1])
    assert client.post("/v1/near", json={"text": TEXT}).json()["matches"][0]["id"] == first[1][
        "id"]


def test_metrics_label_a_json_route_by_its_path(client: TestClient) -> None:
    from test_serve import _sample

    client.post("/v1/near", json={"fingerprint": 5})
    client.post("/v1/near", json={"fingerprint": 5}, params={"explain": "true"})
    client.post("/v1/near/batch", json={"docs": []})
    client.post("/v1/documents", json={"text": TEXT})  # 401: refused, still the route's
    m = client.get("/metrics", headers=AUTH).text
    count = "simhash_pg_http_requests_total"
    assert _sample(m, count, method="POST", endpoint="/v1/near", status="200") == 2
    assert _sample(m, count, method="POST", endpoint="/v1/near/batch", status="200") == 1
    assert _sample(m, count, method="POST", endpoint="/v1/documents", status="401") == 1
    assert _sample(m, count, endpoint="(unmatched)") == 0


def test_json_routes_are_in_the_schema(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    near = spec["paths"]["/v1/near"]["post"]
    assert near["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/NearIn"}
    assert [p["name"] for p in near["parameters"]] == ["explain"]
    assert near["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/NearOut"}
    assert spec["paths"]["/v1/documents"]["post"]["security"] == [{"HTTPBearer": []}]


async def _endpoint(body: NearIn, request: Request) -> NearOut:
    return NearOut(matches=[])


def _other(request: Request) -> None:
    return None


@pytest.mark.parametrize("options", [
    {"endpoint": lambda body, request: None},  # not async
    {"endpoint": _endpoint, "dependencies": [Depends(_other)]},  # not a guard
    {"endpoint": _endpoint, "response_model": None},  # no response model
])
def test_a_route_that_does_not_fit_is_refused(options: dict[str, Any]) -> None:
    options = {"response_model": NearOut} | options
    with pytest.raises(TypeError, match="JsonRoute"):
        JsonRoute("/x", methods=["POST"], **options)
