"""The web page of ``simhash-pg serve``: look at a store's near-duplicates in a browser.

Server-rendered HTML (Jinja2, autoescaped: a stored ``<script>`` is shown as
text) and one small script, no build step and nothing from elsewhere:

- ``/``: paste or upload a text and see its near-duplicates; add it;
- ``/compare``: two stored documents (or a pasted text and a stored one)
  side by side, as written (each row's ``body``), their shared and differing
  passages marked;
- ``/groups``, ``/recent``: the duplicate groups, the newest documents;
- ``/stats``: the store's stats.

Safety: the pages only read. Adding goes through the API (``POST
/v1/documents``, JSON with the bearer token the page's token field sends),
so a page can never be made to write by a link or a cross-site form. When
reads need the token too (``--token-for-reads``), a browser's plain GET
cannot send it: the GET pages then answer 401, and the search (a JSON POST
that sends the token field) still works: one dependency (``locked``)
refuses them, before the store is asked. Every HTML answer carries a
Content-Security-Policy that allows only this server's own script and style.

Starlette's parts do the rest: ``Jinja2Templates`` renders (its context
processor adds what every page shows), ``StaticFiles`` serves ``static/``.
:func:`install` puts the page, its files and its lock's answer in the app.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import jinja2
from fastapi import APIRouter, Depends, FastAPI, Query, Request
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from simhash_pg import labels
from simhash_pg.bits import hamming
from simhash_pg.serve import api
from simhash_pg.serve.deps import Store, get_state, require_read
from simhash_pg.serve.models import hex64
from simhash_pg.serve.textdiff import diff, lang_of
from simhash_pg.store import SimhashStore
from simhash_pg.store.browse import DocumentWithText
from simhash_pg.store.checks import MAX_BIGINT, MAX_K, check_key
from simhash_pg.store.evidence import explain, explain_stored, shares
from simhash_pg.verify.evidence import Evidence
from simhash_pg.verify.jaccard import from_norm, is_short

__all__ = ["install", "router"]

_HERE = Path(__file__).parent
_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
                               "img-src 'self'; connect-src 'self'; form-action 'self'; "
                               "base-uri 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}
PAGE_SIZE = 50


def _page(request: Request) -> dict[str, Any]:
    """What every page shows: where it is, and what the server's token is for."""
    settings = get_state(request).settings
    return {"path": request.url.path, "token_required": settings.token is not None,
            "token_for_reads": settings.token_for_reads}


_templates = Jinja2Templates(
    env=jinja2.Environment(
        loader=jinja2.FileSystemLoader(_HERE / "templates"),
        autoescape=True,  # every template, whatever its name: no unescaped document text
        trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined,
    ),
    context_processors=[_page],
)
_templates.env.filters |= {
    "lang": lang_of, "hex64": hex64, "shared": labels.shared,
    "json": lambda v: json.dumps(v, ensure_ascii=False, sort_keys=True, default=str),
}
_templates.env.globals |= {"evidence_rows": labels.evidence_rows, "K_HELP": labels.K_HELP}

# ids and keys from a query are checked as the store checks its own (bigint
# ids; keys without NUL, storable): bad ones are a 422 that names the field
Id = Annotated[int | None, Query(ge=1, le=MAX_BIGINT)]
Key = Annotated[str | None, AfterValidator(check_key)]

router = APIRouter(include_in_schema=False)


def _render(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    return _templates.TemplateResponse(request, template, context, status_code=status,
                                       headers=_HEADERS)


class _Locked(Exception):
    """A page with data, asked for by a GET while reads need the token."""


async def _unlocked(request: Request) -> None:
    """The data pages' lock: a browser's GET cannot send the token, so when reads need it
    they are refused (401, :func:`_locked_page`). A route's dependency runs before its
    parameters' (the store's connection): a locked page tells nothing, not even whether
    a document exists."""
    if get_state(request).settings.token_for_reads:
        raise _Locked


async def _locked_page(request: Request, exc: Exception) -> Response:
    return _render(request, "error.html", 401, title="Token needed",
                   message="This server needs its token for reads. A browser page cannot "
                   "send it with a plain link: use the search on the first page (it sends "
                   "the token field) or the HTTP API.")


locked = [Depends(_unlocked)]


class _Static(StaticFiles):
    """``static/``, each file with the headers of the page's answers."""

    def file_response(self, *args: Any, **kwargs: Any) -> Response:
        response = super().file_response(*args, **kwargs)
        response.headers.update({"Cache-Control": "max-age=300",
                                 "X-Content-Type-Options": "nosniff"})
        return response


def install(app: FastAPI) -> None:
    """The page at ``/``, its files at ``/static``, and its lock's answer."""
    app.include_router(router)
    app.mount("/static", _Static(directory=_HERE / "static"), name="static")
    app.add_exception_handler(_Locked, _locked_page)


def _not_found(request: Request, message: str) -> HTMLResponse:
    return _render(request, "error.html", 404, title="Not found", message=message)


# -- rows the pages show ------------------------------------------------------------

def _row(doc: DocumentWithText) -> dict[str, Any]:
    # "text" is what the page shows: the text as written (body) when the store
    # kept it, else the verification text ("norm"), as before revision 0021
    return {"id": doc.id, "key": doc.key, "fingerprint": doc.fingerprint,
            "duplicate_of": doc.duplicate_of, "created_at": doc.created_at, "meta": doc.meta,
            "text": doc.body if doc.body is not None else doc.text,
            "written": doc.body is not None, "norm": doc.text}


def _fetch(store: SimhashStore, *, doc_id: int | None = None,
           key: str | None = None) -> dict[str, Any] | None:
    doc = (store.document(doc_id) if doc_id is not None
           else store.document(key) if key is not None else None)
    return _row(doc) if doc is not None else None


def _normalise(store: SimhashStore, text: str) -> str:
    """A pasted text as the store keeps texts (its verification text), to compare with one."""
    return from_norm(store.fingerprinter.normalize(text)).text


# -- pages ----------------------------------------------------------------------------


@router.get("/", response_class=HTMLResponse)
def index(request: Request) -> HTMLResponse:
    # no data on it: shown even when reads need the token (its search sends the token)
    settings = get_state(request).settings
    return _render(request, "index.html", title="Search", k=settings.k, max_k=MAX_K)


class SearchIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    text: str = Field(min_length=1)
    k: int | None = Field(None, ge=0, le=MAX_K)


@router.post("/search", response_class=HTMLResponse, dependencies=[Depends(require_read)])
def search(body: SearchIn, request: Request, store: Store) -> HTMLResponse:
    """The near-duplicates of a pasted text: an HTML fragment the page puts in place."""
    matches = store.near(body.text, k=body.k, limit=PAGE_SIZE)
    ids = [m.id for m in matches]
    # their stored rows in one round trip, shown in near's order (nearest first)
    found = {i: _row(doc) for i, doc in store.documents(ids).items()}
    k = store.k if body.k is None else body.k
    evidence = {e.id: e for e in explain(store, body.text, ids, k)}
    rows = [found[m.id] | {"distance": m.distance, "evidence": evidence.get(m.id)}
            for m in matches if m.id in found]
    text_query = store.policy.verifies
    bar = _bar(store, body.text) if text_query else None
    return _render(request, "_matches.html", matches=rows, k=k, text_query=text_query,
                   found=labels.found_line(len(rows), text_query=text_query, k=k,
                                           threshold=bar)
                   if rows else labels.none_found(text_query=text_query, k=k, threshold=bar),
                   fingerprint=store.fingerprint(body.text))


def _bar(store: SimhashStore, text: str) -> float:
    """The rule's bar for a text query: a short text's or a long one's."""
    return store.policy.text_rule.threshold(is_short(_normalise(store, text)))


class CompareTextIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    text: str = Field(min_length=1)
    b: int = Field(ge=1, le=MAX_BIGINT)
    k: int | None = Field(None, ge=0, le=MAX_K)  # the search's k: the evidence is at it


@router.post("/compare-text", response_class=HTMLResponse,
             dependencies=[Depends(require_read)])
def compare_text(body: CompareTextIn, request: Request, store: Store) -> HTMLResponse:
    """A pasted text beside a stored document: an HTML fragment."""
    doc = _fetch(store, doc_id=body.b)
    if doc is None:
        return _not_found(request, f"no stored document has the id {body.b}")
    fp = store.fingerprint(body.text)
    # shown as pasted: its visible text, as the store would keep it
    pasted = {"id": None, "key": "(your text)", "fingerprint": fp, "duplicate_of": None,
              "created_at": None, "meta": None, "text": store.fingerprinter.written(body.text),
              "written": True, "norm": _normalise(store, body.text)}
    (evidence,) = explain(store, body.text, [body.b], body.k)
    return _render(request, "_compare.html", **_comparison(pasted, doc, evidence))


def _comparison(a: dict[str, Any], b: dict[str, Any], evidence: Evidence | None
                ) -> dict[str, Any]:
    # two texts as written are compared as written; if one side has none, both
    # sides show their verification texts, which compare like with like
    if not (a["written"] and b["written"]) and a["norm"] is not None \
            and b["norm"] is not None:
        a = a | {"text": a["norm"], "written": False}
        b = b | {"text": b["norm"], "written": False}
    both = a["text"] is not None and b["text"] is not None and a["written"] == b["written"]
    return {"a": a, "b": b, "distance": hamming(a["fingerprint"], b["fingerprint"]),
            "diff": diff(a["text"], b["text"]) if both else None, "evidence": evidence,
            "written": a["written"] and b["written"]}


@router.get("/compare", response_class=HTMLResponse, dependencies=locked)
def compare(request: Request, store: Store,
            a: Id = None, b: Id = None, akey: Key = None, bkey: Key = None) -> HTMLResponse:
    """Two stored documents side by side, by id (``a``, ``b``) or key (``akey``, ``bkey``)."""
    docs = []
    for name, doc_id, key in (("a", a, akey), ("b", b, bkey)):
        if (doc_id is None) == (key is None):
            return _render(request, "error.html", 400, title="Two documents needed",
                           message=f"give the {name} side as an id ({name}=...) or as a key "
                           f"({name}key=...), not both")
        doc = _fetch(store, doc_id=doc_id, key=key)
        if doc is None:
            what = f"the id {doc_id}" if doc_id is not None else f"the key {key!r}"
            return _not_found(request, f"no stored document has {what}")
        docs.append(doc)
    # b looks up a: a group's member its head, a duplicate the document it duplicates
    evidence = explain_stored(store, docs[1]["id"], docs[0]["id"])
    return _render(request, "compare.html", title="Compare", verify=store.verify,
                   **_comparison(docs[0], docs[1], evidence))


@router.get("/groups", response_class=HTMLResponse, dependencies=locked)
def groups(request: Request, store: Store,
           after: Annotated[int, Query(ge=0, le=MAX_BIGINT)] = 0) -> HTMLResponse:
    page = api.read_groups(store, limit=PAGE_SIZE, after=after)
    members = [(m.id, g.id) for g in page.groups for m in g.members]
    # each member's share of the text of the document it duplicates, as its compare says
    shared = dict(zip(members, shares(store, members), strict=True))
    return _render(request, "groups.html", title="Duplicate groups", groups=page.groups,
                   shared=shared, after=after, next_after=page.next_after,
                   on_duplicate=get_state(request).settings.on_duplicate)


@router.get("/recent", response_class=HTMLResponse, dependencies=locked)
def recent(request: Request, store: Store,
           before: Id = None) -> HTMLResponse:
    """The newest documents first (by id: ids are handed out in insertion order)."""
    rows = [_row(doc) for doc in store.recent(limit=PAGE_SIZE, before=before)]
    return _render(request, "recent.html", title="Recent documents", docs=rows,
                   next_before=rows[-1]["id"] if len(rows) == PAGE_SIZE else None)


@router.get("/stats", response_class=HTMLResponse, dependencies=locked)
def stats(request: Request, store: Store) -> HTMLResponse:
    # a browser's GET never bears the token
    return _render(request, "stats.html", title="Stats",
                   stats=api.read_stats(store, authenticated=False))
