"""The ``/v1`` endpoints: the Python API's operations, with its results.

Every endpoint runs its work (fingerprinting, CPU; the round trips, I/O)
in a worker thread in one hop (deps.with_store), so the event loop
never blocks; a sync endpoint with the store as a sync dependency took
three hops, which cost more than the work on a loaded machine. Threads
share one GIL, so fingerprinting scales with worker processes
(``--workers``), not threads. Each request's store is its own, so the
store's semantics are unchanged: an add is ``SimhashStore.add``, a batch
is one ``add_many`` transaction. The endpoints with one JSON body are
JsonRoutes (serve/route.py): FastAPI routes with a shorter request handler.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Path, Query, Request

from simhash_pg.bits import blocks, to_signed
from simhash_pg.serve.deps import Authenticated, require_read, require_write, with_store
from simhash_pg.serve.models import (
    AddIn,
    AddOut,
    BatchAddIn,
    DocumentOut,
    Error,
    FingerprintIn,
    FingerprintOut,
    Group,
    GroupMember,
    GroupsOut,
    MatchOut,
    NearBatchIn,
    NearBatchOut,
    NearIn,
    NearOut,
    hex64,
)
from simhash_pg.serve.route import JsonRoute
from simhash_pg.store import AddResult, Doc, Match, SimhashStore
from simhash_pg.store.checks import MAX_BIGINT
from simhash_pg.store.evidence import explain as explain_matches
from simhash_pg.verify.evidence import Evidence

__all__ = ["install", "router"]

_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": Error} for code in (401, 413, 422, 503)
}
router = APIRouter(prefix="/v1", responses=_ERRORS)
reads = [Depends(require_read)]
writes = [Depends(require_write)]
E = TypeVar("E", bound=Callable[..., Any])


def _post_json(path: str, **options: Any) -> Callable[[E], E]:
    """``@router.post(path, ...)``, as a JsonRoute (serve/route.py)."""
    def add(endpoint: E) -> E:
        router.add_api_route(path, endpoint, methods=["POST"], route_class_override=JsonRoute,
                             **options)
        return endpoint

    return add


def install(app: FastAPI) -> None:
    """The /v1 endpoints as the app's own routes, the near endpoints first: the app's
    router tries them in order, and matches an included router's routes twice."""
    app.router.routes.extend(router.routes)


def add_out(r: AddResult) -> AddOut:
    return AddOut(
        status=r.status,  # type: ignore[arg-type]
        id=r.id, fingerprint=r.fingerprint,
        fingerprint_hex=hex64(r.fingerprint) if r.fingerprint is not None else None,
        duplicate_of=r.duplicate_of, distance=r.distance, inserted=r.inserted, key=r.key,
        duplicate_key=r.duplicate_key, existing_key=r.existing_key, error=r.error,
    )


def _matches(found: list[Match], evidence: list[Evidence] | None = None) -> NearOut:
    by_id = {e.id: e for e in evidence or ()}
    return NearOut(matches=[MatchOut(id=m.id, key=m.key, distance=m.distance, meta=m.meta,
                                     evidence=by_id.get(m.id))
                            for m in found])


def run_add(store: SimhashStore, body: AddIn) -> AddResult:
    """POST /v1/documents's work."""
    return store.add(body.document(), key=body.key, meta=body.meta, dedup=body.dedup)


def run_near(store: SimhashStore, body: NearIn, explain: bool = False) -> NearOut:
    """POST /v1/near's work; with ``explain`` (or the body's), each match's evidence."""
    found = store.near(body.document(), k=body.k, limit=body.limit)
    if not (explain or body.explain):
        return _matches(found)
    return _matches(found, explain_matches(store, body.document(), [m.id for m in found],
                                           body.k))


def run_near_batch(store: SimhashStore, body: NearBatchIn) -> NearBatchOut:
    """POST /v1/near/batch's work."""
    found = store.near_many([d.document() for d in body.docs], k=body.k)
    return NearBatchOut(results=[_matches(m[:body.limit]) for m in found])


@_post_json("/near", dependencies=reads, response_model=NearOut,
            summary="Stored documents near a text or fingerprint, nearest first")
async def near(body: NearIn, request: Request,
               explain: Annotated[bool, Query(description="As the body's explain.")] = False,
               ) -> NearOut:
    return await with_store(request, lambda store: run_near(store, body, explain))


@_post_json("/near/batch", dependencies=reads, response_model=NearBatchOut,
            summary="near for many queries (near_many), in query order")
async def near_batch(body: NearBatchIn, request: Request) -> NearBatchOut:
    return await with_store(request, lambda store: run_near_batch(store, body))


@_post_json("/documents", dependencies=writes, response_model=AddOut,
            summary="Add a document, unless it near-duplicates a stored one")
async def add(body: AddIn, request: Request) -> AddOut:
    result = await with_store(request, lambda store: run_add(store, body))
    request.app.state.metrics.count_adds([result])
    return add_out(result)


@_post_json("/documents/batch", dependencies=writes, response_model=list[AddOut],
            summary="Add documents in order, in one transaction (add_many)")
async def add_batch(body: BatchAddIn, request: Request) -> list[AddOut]:
    docs = [Doc(d.document(), d.key, d.meta) for d in body.docs]
    results: list[AddResult] = []
    # one batch, fingerprinted in this process: the server's parallelism is its workers
    await with_store(request, lambda store: store.add_many(
        docs, dedup=body.dedup, batch_size=max(len(docs), 1), workers=1,
        progress=results.extend))
    request.app.state.metrics.count_adds(results)
    return [add_out(r) for r in results]


@router.get("/documents/{key:path}", dependencies=reads, response_model=DocumentOut,
            summary="The stored document with this key", responses={404: {"model": Error}})
async def get_document(key: str, request: Request) -> DocumentOut:
    doc = await with_store(request, lambda store: store.get(key))
    if doc is None:
        raise HTTPException(404, f"no stored document has the key {key!r}")
    return DocumentOut(id=doc.id, key=doc.key, fingerprint=doc.fingerprint,
                       fingerprint_hex=hex64(doc.fingerprint), duplicate_of=doc.duplicate_of,
                       created_at=doc.created_at, meta=doc.meta, body=doc.body)


@router.delete("/documents/{doc_id}", dependencies=writes,
               summary="Remove the document with this id", responses={404: {"model": Error}})
async def remove_document(doc_id: Annotated[int, Path(ge=1, le=MAX_BIGINT)],
                          request: Request) -> dict[str, Any]:
    if not await with_store(request, lambda store: store.remove(doc_id)):
        raise HTTPException(404, f"no stored document has the id {doc_id}")
    return {"deleted": True, "id": doc_id}


@router.post("/fingerprint", dependencies=reads, response_model=FingerprintOut,
            summary="A text's fingerprint with the store's scheme, in every form")
def fingerprint(body: FingerprintIn, request: Request) -> FingerprintOut:
    from simhash_pg.text.simhash import Fingerprinter

    fp = Fingerprinter(request.app.state.serve.handshake.scheme).fingerprint(body.text)
    return FingerprintOut(fingerprint=fp, hex=hex64(fp), signed=to_signed(fp),
                          blocks=list(blocks(fp)))


@router.get("/stats", dependencies=reads, summary="The store's rows, sizes and scheme")
async def stats(request: Request, authenticated: Authenticated) -> dict[str, Any]:
    return await with_store(request, lambda store: read_stats(store, authenticated))


def read_stats(store: SimhashStore, authenticated: bool) -> dict[str, Any]:
    """``store.stats()``, where the database is (a socket path, a host) only for a request
    that bears the token: it tells others where to knock."""
    out = store.stats()
    if not authenticated:
        out.pop("database", None)
    return out


@router.get("/groups", dependencies=reads, response_model=GroupsOut,
            summary="Duplicate groups: stored documents and the duplicates linked to them")
async def groups(request: Request, limit: Annotated[int, Query(ge=1, le=1000)] = 50,
                 after: Annotated[int, Query(ge=0, le=MAX_BIGINT)] = 0) -> GroupsOut:
    return await with_store(request, lambda store: read_groups(store, limit=limit, after=after))


def read_groups(store: SimhashStore, *, limit: int, after: int) -> GroupsOut:
    """One page of duplicate groups after head id ``after`` (the API's and the web page's)."""
    out = [Group(id=g.id, key=g.key, size=g.size,
                 members=[GroupMember(id=m.id, key=m.key, distance=m.distance)
                          for m in g.members])
           for g in store.groups(limit=limit, after=after)]
    return GroupsOut(groups=out, next_after=out[-1].id if len(out) == limit else None)


