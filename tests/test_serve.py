"""``simhash-pg serve``'s HTTP API: the Python API's results, as JSON, and 4xx for bad input.

The app runs in-process (FastAPI's TestClient runs its lifespan: the
handshake and the pool) against the test database; test_serve_live.py runs
it under a real uvicorn.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import asdict
from typing import Any

import psycopg
import pytest
from _serving import BASE_URL, TestClient, make_client
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from simhash_pg.data import iter_sample
from simhash_pg.serve import Settings, create_app
from simhash_pg.serve.api import add_out
from simhash_pg.serve.deps import Store  # module level: FastAPI resolves the annotation here
from simhash_pg.store import Doc, SimhashStore
from simhash_pg.store.locking import STORE_LOCK

TEXT = "The harbour master counted forty ships at anchor before the storm came in."


@pytest.fixture
def client(pg_dsn: str) -> Iterator[TestClient]:
    with make_client(pg_dsn) as c:
        yield c


@pytest.fixture
def twin_dsn(pg_dsn: str) -> Iterator[str]:
    """A second, empty database on the test server (the store makes its schema)."""
    name = str(conninfo_to_dict(pg_dsn)["dbname"]) + "_twin"
    admin = make_conninfo(pg_dsn, dbname="postgres")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield make_conninfo(pg_dsn, dbname=name)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# -- the same results as the Python API ------------------------------------------


def _flip(fp: int, rnd: random.Random, n: int) -> int:
    for bit in rnd.sample(range(64), n):
        fp ^= 1 << bit
    return fp


def _workload(seed: int = 3) -> list[dict[str, Any]]:
    """Adds of sample texts (with their planted near-duplicates), fingerprints near
    each other, repeated keys, a dedup=False add."""
    rnd = random.Random(seed)
    rows = list(iter_sample())[:120]
    ops: list[dict[str, Any]] = []
    for i, row in enumerate(rows):
        ops.append({"text": row["text"], "key": f"s{i}", "meta": {"group": row["group"]}})
    base = rnd.getrandbits(64)
    for i in range(20):
        ops.append({"fingerprint": _flip(base, rnd, i % 6), "key": f"f{i}"})
    ops += [{"text": rows[0]["text"], "key": "s0"},  # an existing key
            {"text": rows[1]["text"], "dedup": False},
            {"fingerprint": str(base)}, {"fingerprint": hex(base)}]
    rnd.shuffle(ops)
    return ops


def _py_add(store: SimhashStore, op: dict[str, Any]) -> dict[str, Any]:
    doc: str | int = op["text"] if "text" in op else int(str(op["fingerprint"]), 0)
    r = store.add(doc, key=op.get("key"), meta=op.get("meta"), dedup=op.get("dedup", True))
    return add_out(r).model_dump(mode="json")


def _match_dicts(matches: list[Any]) -> list[dict[str, Any]]:
    return [asdict(m) for m in matches]


def test_http_results_are_the_python_apis(client: TestClient, twin_dsn: str) -> None:
    ops = _workload()
    batch = [{"text": r["text"], "key": f"b{i}"} for i, r in
             enumerate(list(iter_sample())[120:220])]
    batch += [{"text": batch[3]["text"] + " Same again."}, {"fingerprint": 7, "key": "b0"}]
    queries = [*[op for op in ops if "text" in op][:40], {"fingerprint": 12345}]
    with SimhashStore(twin_dsn) as store:
        added = []
        for op in ops:
            r = client.post("/v1/documents", json=op)
            assert r.status_code == 200, r.text
            assert r.json() == _py_add(store, op), op
            added.append(r.json())
        assert {"inserted", "duplicate", "existing_key"} <= {a["status"] for a in added}
        stored = next(a["key"] for a in added
                      if a["status"] == "inserted" and str(a["key"]).startswith("s"))
        r = client.post("/v1/documents/batch", json={"docs": batch})
        assert r.status_code == 200, r.text
        results: list[Any] = []
        store.add_many([Doc(d.get("text") or d["fingerprint"], d.get("key")) for d in batch],
                       progress=results.extend)
        assert r.json() == [add_out(x).model_dump(mode="json") for x in results]
        statuses = {x["status"] for x in r.json()}
        assert {"inserted", "duplicate", "existing_key"} <= statuses

        for q in queries:
            doc = q.get("text") or q.get("fingerprint")
            for extra in ({}, {"k": 8, "limit": 2}):
                got = client.post("/v1/near", json={"text": q["text"]} | extra if "text" in q
                                  else {"fingerprint": doc} | extra).json()
                assert got["matches"] == _match_dicts(store.near(doc, **extra))
        docs = [{"text": q["text"]} if "text" in q else q for q in queries]
        got = client.post("/v1/near/batch", json={"docs": docs, "k": 5}).json()
        want = store.near_many([q.get("text") or q.get("fingerprint") for q in queries], k=5)
        assert [g["matches"] for g in got["results"]] == [_match_dicts(w) for w in want]
        assert any(g["matches"] for g in got["results"])

        doc = store.get(stored)
        assert doc is not None and doc.meta
        got = client.get(f"/v1/documents/{stored}").json()
        assert got["id"] == doc.id and got["fingerprint"] == doc.fingerprint
        assert got["fingerprint_hex"] == f"0x{doc.fingerprint:016x}" and got["meta"] == doc.meta
        assert client.delete(f"/v1/documents/{doc.id}").json() == {"deleted": True,
                                                                   "id": doc.id}
        assert client.get(f"/v1/documents/{stored}").status_code == 404
        assert client.delete(f"/v1/documents/{doc.id}").status_code == 404
        assert client.get("/v1/stats").json()["rows"] == store.count() - 1


def test_fingerprint_in_every_form(client: TestClient, pg: psycopg.Connection) -> None:
    from simhash_pg.bits import to_signed
    from simhash_pg.text.simhash import Fingerprinter

    got = client.post("/v1/fingerprint", json={"text": TEXT}).json()
    want = Fingerprinter().fingerprint(TEXT)
    assert got["fingerprint"] == want and got["hex"] == f"0x{want:016x}"
    assert got["signed"] == to_signed(want)
    # the blocks are the columns PostgreSQL derives: SQL can query with them
    client.post("/v1/documents", json={"text": TEXT})
    row = pg.execute("SELECT b0, b1, b2, b3, fingerprint FROM simhash_documents").fetchone()
    assert row is not None and list(row[:4]) == got["blocks"] and row[4] == got["signed"]


def test_groups_list_linked_duplicates(pg_dsn: str) -> None:
    rows = [r for r in iter_sample() if r["group"].startswith("planted:")][:60]
    with make_client(pg_dsn, on_duplicate="link") as client:
        out = client.post("/v1/documents/batch",
                          json={"docs": [{"text": r["text"], "key": f"k{i}"}
                                         for i, r in enumerate(rows)]}).json()
        linked = [r for r in out if r["status"] == "linked"]
        assert linked
        page = client.get("/v1/groups", params={"limit": 2}).json()
        assert len(page["groups"]) == 2 and page["next_after"] == page["groups"][-1]["id"]
        groups = page["groups"]
        while page["next_after"] is not None:
            page = client.get("/v1/groups", params={"limit": 2,
                                                    "after": page["next_after"]}).json()
            groups += page["groups"]
        members = {m["id"]: (g["id"], m["distance"]) for g in groups for m in g["members"]}
        assert members == {r["id"]: (r["duplicate_of"], r["distance"]) for r in linked}
        assert all(g["size"] == len(g["members"]) + 1 for g in groups)


# -- bad input: a 4xx JSON error naming the problem, never a 500 -------------------

BAD: list[tuple[str, str, Any, int, str]] = [
    # (method, path, json body, status, a word the error must contain)
    ("post", "/v1/documents", {}, 422, "exactly one of"),
    ("post", "/v1/documents", {"text": "a b c", "fingerprint": 1}, 422, "exactly one of"),
    ("post", "/v1/documents", {"text": 5}, 422, "string"),
    ("post", "/v1/documents", {"txt": "hello"}, 422, "txt"),
    ("post", "/v1/documents", {"fingerprint": 2**64}, 422, "unsigned 64-bit"),
    ("post", "/v1/documents", {"fingerprint": -1}, 422, "unsigned 64-bit"),
    ("post", "/v1/documents", {"fingerprint": "0xZZ"}, 422, "0x-hex"),
    ("post", "/v1/documents", {"fingerprint": 1.5}, 422, "fingerprint"),
    ("post", "/v1/documents", {"fingerprint": True}, 422, "fingerprint"),
    ("post", "/v1/documents", {"text": "..."}, 422, "no features"),
    ("post", "/v1/documents", {"text": "a b c", "key": "a\x00b"}, 422, "NUL"),
    ("post", "/v1/documents", {"text": "a b c", "key": "k" * 1025}, 422, "1,024 bytes"),
    ("post", "/v1/documents", b'{"text": "a b c", "key": "\\udc80"}', 422, "surrogate"),
    ("post", "/v1/documents", {"text": "a b c", "meta": {"a": "\x00"}}, 422, "NUL"),
    ("post", "/v1/documents", {"text": "a b c", "meta": [1]}, 422, "dictionary"),
    ("post", "/v1/documents", {"text": "a b c", "dedup": "yes"}, 422, "boolean"),
    ("post", "/v1/documents", [1, 2], 422, "dictionary"),
    ("post", "/v1/documents/batch", {"docs": "a"}, 422, "list"),
    ("post", "/v1/documents/batch", {"docs": [{"text": "a"}] * 1001}, 422, "1000"),
    ("post", "/v1/near", {"text": "a b c", "k": 65}, 422, "less than or equal to 64"),
    ("post", "/v1/near", {"text": "a b c", "k": -1}, 422, "greater than or equal to 0"),
    ("post", "/v1/near", {"text": "a b c", "k": "3"}, 422, "integer"),
    ("post", "/v1/near", {"text": "a b c", "limit": 0}, 422, "greater than or equal to 1"),
    ("post", "/v1/near", {"fingerprint": 2**64 + 1}, 422, "unsigned 64-bit"),
    ("post", "/v1/near/batch", {"docs": [{"text": "a b c"}], "k": 99}, 422, "64"),
    ("post", "/v1/near/batch", {"docs": [{"text": "!!"}]}, 422, "no features"),
    ("post", "/v1/fingerprint", {"text": None}, 422, "string"),
    ("post", "/v1/fingerprint", {"text": ""}, 422, "no features"),
    ("get", "/v1/documents/a%00b", None, 422, "NUL"),
    ("get", "/v1/documents/nope", None, 404, "nope"),
    ("delete", "/v1/documents/abc", None, 422, "integer"),
    ("delete", "/v1/documents/0", None, 422, "greater than or equal to 1"),
    ("delete", f"/v1/documents/{2**63}", None, 422, "less than or equal to"),
    ("get", "/v1/groups?limit=0", None, 422, "greater than or equal to 1"),
    ("get", "/v1/groups?after=x", None, 422, "integer"),
    ("put", "/v1/documents", None, 405, "not allowed"),
    ("get", "/v2/nothing", None, 404, "not found"),
]


@pytest.mark.parametrize(("method", "path", "body", "status", "word"), BAD,
                         ids=[f"{m} {p[:30]} {str(b)[:30]}" for m, p, b, *_ in BAD])
def test_bad_requests_get_a_4xx_naming_the_problem(
    client: TestClient, method: str, path: str, body: Any, status: int, word: str
) -> None:
    kwargs: dict[str, Any] = {}
    if isinstance(body, bytes):  # what a JSON encoder will not write
        kwargs = {"content": body, "headers": {"content-type": "application/json"}}
    elif body is not None:
        kwargs = {"json": body}
    r = client.request(method.upper(), path, **kwargs)
    assert r.status_code == status, r.text
    data = r.json()
    assert set(data) == {"error", "detail"}
    assert word.lower() in str(data["detail"]).lower(), data


def test_malformed_bodies(client: TestClient) -> None:
    headers = {"content-type": "application/json"}
    r = client.post("/v1/near", content=b'{"text": "caf\xe9 au lait"}', headers=headers)
    assert r.status_code == 400 and "UTF-8" in r.json()["detail"], r.text
    r = client.post("/v1/near", content=b'{"text": ', headers=headers)
    assert r.status_code == 422 and r.json()["detail"][0]["type"] == "json_invalid"
    r = client.post("/v1/near", content=b"text=a", headers={"content-type": "text/plain"})
    assert r.status_code == 422


def test_body_limit(pg_dsn: str) -> None:
    with make_client(pg_dsn, max_body_bytes=2000) as client:
        big = {"text": "word " * 1000}
        r = client.post("/v1/near", json=big)
        assert r.status_code == 413 and "2,000 bytes" in r.json()["detail"]
        assert r.json()["error"] == "body_too_large"

        def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it comes
            yield b'{"text": "'
            for _ in range(100):
                yield b"word " * 10
            yield b'"}'

        r = client.post("/v1/near", content=chunks(), headers={"content-type":
                                                               "application/json"})
        assert r.status_code == 413 and "2,000 bytes" in r.json()["detail"]
        assert client.post("/v1/near", json={"text": TEXT}).status_code == 200


def test_token_for_writes_and_optionally_reads(pg_dsn: str) -> None:
    auth = {"Authorization": "Bearer s3cret"}
    with make_client(pg_dsn, token="s3cret") as client:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "s3cret"}):
            r = client.post("/v1/documents", json={"text": TEXT}, headers=headers)
            assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
            assert "bearer token" in r.json()["detail"]
            assert client.delete("/v1/documents/1", headers=headers).status_code == 401
        assert client.post("/v1/documents", json={"text": TEXT}, headers=auth).status_code == 200
        assert client.post("/v1/near", json={"text": TEXT}).status_code == 200
        assert client.get("/v1/stats").status_code == 200
    with make_client(pg_dsn, token="s3cret", token_for_reads=True) as client:
        assert client.post("/v1/near", json={"text": TEXT}).status_code == 401
        assert client.get("/v1/groups").status_code == 401
        assert client.post("/v1/near", json={"text": TEXT}, headers=auth).status_code == 200
        assert client.get("/healthz").status_code == 200  # probes need no token


def test_a_lock_wait_over_the_timeout_is_a_503(pg_dsn: str, pg: psycopg.Connection) -> None:
    with make_client(pg_dsn, lock_timeout=0.05) as client:
        with pg.transaction():
            pg.execute("SELECT pg_advisory_xact_lock(%s, 0)", [STORE_LOCK])  # every writer waits
            r = client.post("/v1/documents", json={"text": "short one"})
        assert r.status_code == 503 and r.headers["retry-after"] == "1"
        assert r.json()["error"] == "lock_timeout"
        assert client.post("/v1/documents", json={"text": "short one"}).status_code == 200


def test_no_free_connection_is_a_503(pg_dsn: str) -> None:
    with make_client(pg_dsn, pool_timeout=0.2) as client:
        pool = client.app.state.serve.pool  # type: ignore[attr-defined]
        held = [pool.getconn() for _ in range(4)]
        try:
            r = client.post("/v1/near", json={"text": TEXT})
            assert r.status_code == 503 and r.json()["error"] == "busy"
        finally:
            for conn in held:
                pool.putconn(conn)
        assert client.post("/v1/near", json={"text": TEXT}).status_code == 200


# -- metrics, OpenAPI -------------------------------------------------------------


def _sample(text: str, name: str, **labels: str) -> float:
    from prometheus_client.parser import text_string_to_metric_families

    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                return float(s.value)
    return 0.0


def test_metrics(client: TestClient) -> None:
    client.post("/v1/documents", json={"text": TEXT})
    client.post("/v1/documents", json={"text": TEXT + "!"})
    client.post("/v1/near", json={"text": TEXT, "k": 99})
    client.get("/v1/documents/some/key/with/slashes")
    r = client.get("/metrics")
    assert r.headers["content-type"].startswith("text/plain")
    m = r.text
    assert _sample(m, "simhash_pg_http_requests_total", endpoint="/v1/documents",
                   status="200") == 2
    assert _sample(m, "simhash_pg_http_requests_total", endpoint="/v1/near", status="422") == 1
    # the route template, not the key: no label per document
    assert _sample(m, "simhash_pg_http_requests_total", endpoint="/v1/documents/{key:path}",
                   status="404") == 1
    assert _sample(m, "simhash_pg_http_request_seconds_count", endpoint="/v1/documents") == 2
    assert _sample(m, "simhash_pg_adds_total", status="inserted") == 1
    assert _sample(m, "simhash_pg_adds_total", status="duplicate") == 1
    assert _sample(m, "simhash_pg_pool_max") == 4
    assert _sample(m, "simhash_pg_pool_connections", state="open") >= 1


def test_openapi_schema(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    assert {"/v1/documents", "/v1/documents/batch", "/v1/near", "/v1/near/batch",
            "/v1/documents/{key}", "/v1/documents/{doc_id}", "/v1/fingerprint", "/v1/stats",
            "/v1/groups", "/healthz", "/metrics"} <= set(spec["paths"])
    schemas = spec["components"]["schemas"]
    add = schemas["AddIn"]["properties"]
    assert {"text", "fingerprint", "key", "meta", "dedup"} == set(add)
    assert schemas["NearIn"]["properties"]["k"]["anyOf"][0]["maximum"] == 64
    assert {"status", "id", "fingerprint", "fingerprint_hex", "duplicate_of", "distance",
            "inserted", "key", "duplicate_key", "existing_key", "error"} == set(
                schemas["AddOut"]["properties"])
    assert set(schemas["MatchOut"]["properties"]) == {"id", "key", "distance", "meta",
                                                      "evidence"}
    assert {"verdict", "similarity", "threshold", "found_by", "keys"} <= set(
        schemas["Evidence"]["properties"])
    assert set(schemas["FingerprintOut"]["properties"]) == {"fingerprint", "hex", "signed",
                                                            "blocks"}
    assert schemas["Error"]["required"] == ["error", "detail"]
    post = spec["paths"]["/v1/documents"]["post"]
    assert {"401", "413", "422", "503"} <= set(post["responses"])
    assert post["security"] == [{"HTTPBearer": []}]


def test_another_router_gets_a_store_per_request(pg_dsn: str) -> None:
    """The contract for other routers (the web page): ``store: Store`` is a
    request-scoped SimhashStore over a pooled connection, given back after."""
    from fastapi import APIRouter

    router = APIRouter()
    seen: list[SimhashStore] = []

    @router.get("/extra")
    def extra(store: Store) -> dict[str, Any]:
        seen.append(store)
        return {"rows": store.count(), "pid": store.connection.info.backend_pid}

    app = create_app(Settings(dsn=pg_dsn, pool_min=1, pool_max=1))
    app.include_router(router)
    with TestClient(app, base_url=BASE_URL) as client:
        first, second = client.get("/extra").json(), client.get("/extra").json()
        assert first == second == {"rows": 0, "pid": first["pid"]}  # one pooled connection
        assert seen[0] is not seen[1] and not seen[0].closed  # a store each; the pool's conn


def test_a_store_over_a_borrowed_connection(pg_dsn: str) -> None:
    from simhash_pg.store import opening
    from simhash_pg.store.options import StoreOptions

    with SimhashStore(pg_dsn, k=3) as own:
        own.add(TEXT, key="a")
        handshake = opening.open_database(pg_dsn, None, scheme=None, verify=None,
                                          do_migrate=False, connect_timeout=10,
                                          lock_timeout=1.0, partitions=False)
        conn = handshake.conn
        borrowed = SimhashStore.over_connection(conn, handshake, StoreOptions(k=5))
        assert borrowed.k == 5 and borrowed.verify == own.verify
        assert borrowed.scheme.to_json() == own.scheme.to_json()
        assert borrowed.near(TEXT) == own.near(TEXT)
        borrowed.close()
        assert not conn.closed  # its owner closes it
        conn.close()
        with pytest.raises(ValueError, match="k must be between"):
            StoreOptions(k=65)  # checked where it is built, once


def test_near_explains_its_matches_when_asked(client: TestClient) -> None:
    text = ("The harbour master counted forty ships at anchor before the storm came in, "
            "and the pilots waited for the tide to turn before they went out again.")
    added = client.post("/v1/documents", json={"text": text, "key": "a"}).json()
    query = {"text": text.replace("forty", "forty-one")}
    plain = client.post("/v1/near", json=query).json()["matches"]
    assert [set(m) for m in plain] == [{"id", "key", "distance", "meta"}]  # as before
    for r in (client.post("/v1/near?explain=true", json=query),
              client.post("/v1/near", json=query | {"explain": True})):
        assert r.status_code == 200, r.text
        (m,) = r.json()["matches"]
        ev = m["evidence"]
        assert ev["id"] == added["id"] and ev["verdict"] == "duplicate" and ev["text_query"]
        assert ev["distance"] == m["distance"] and ev["similarity"] >= ev["threshold"] == 0.8
        assert "probe" in ev["found_by"] and ev["lookup"] == "probes"
    # a fingerprint query: within radius k, nothing else
    (m,) = client.post("/v1/near?explain=true",
                       json={"fingerprint": added["fingerprint_hex"]}).json()["matches"]
    ev = m["evidence"]
    assert (ev["text_query"], ev["found_by"], ev["similarity"], ev["reach"]) == (
        False, ["radius"], None, 3)
    assert client.post("/v1/near?explain=maybe", json=query).status_code == 422
