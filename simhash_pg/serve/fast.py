"""The hot endpoints without FastAPI's per-request machinery: near, near/batch, add.

Profiled under load (one worker, near by fingerprint), FastAPI's routing,
dependency solving, body handling and response validation took ~45% of the
event loop's time and the store's work ~5%. So for ``POST /v1/near``,
``/v1/near/batch`` and ``/v1/documents`` this middleware answers the
requests it can prove valid itself, with the same body models, the same
work (api.run_*), the same serialiser and the same error handlers:

- the body is parsed as FastAPI parses it (``json.loads``, then the model's
  python-mode validation), so a request it accepts is one FastAPI accepts,
  with the same values;
- anything else (another content type, no Content-Length, a missing or
  wrong token, a write to a read-only server, invalid JSON or a body the
  model rejects) is handed to
  FastAPI unchanged, the body replayed, so every 4xx is FastAPI's own;
- an exception from the work goes to the app's exception handlers, as it
  would from an endpoint.

It sits inside the metrics and body-limit middlewares, and sets the
request's route as the router would, so /metrics counts these requests
under the same endpoint labels.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from simhash_pg.serve import api
from simhash_pg.serve.deps import ServeState, token_accepts
from simhash_pg.serve.models import AddIn, NearBatchIn, NearIn
from simhash_pg.store import AddResult, SimhashStore

__all__ = ["FastPath"]

# path: (body model, needs the token for writes, work in a worker thread)
_Work = Callable[[SimhashStore, Any], Any]
_ROUTES: dict[str, tuple[type[BaseModel], bool, _Work]] = {
    "/v1/near": (NearIn, False, api.run_near),
    "/v1/near/batch": (NearBatchIn, False, api.run_near_batch),
    "/v1/documents": (AddIn, True, api.run_add),
}
_JSON = b"application/json"


@dataclass(frozen=True)
class _Route:
    path: str  # a route's template; these routes have no parameters


_ROUTE_OF = {path: _Route(path) for path in _ROUTES}


class FastPath:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # a query string (/v1/near?explain=true) is a parameter: FastAPI reads those
        hot = (_ROUTES.get(scope["path"]) if scope["type"] == "http"
               and scope["method"] == "POST" and not scope.get("query_string") else None)
        if hot is None:
            await self.app(scope, receive, send)
            return
        model, write, work = hot
        headers = dict(scope["headers"])
        length = headers.get(b"content-length")
        if headers.get(b"content-type") != _JSON or length is None or not length.isdigit():
            await self.app(scope, receive, send)
            return
        body = await _read(receive)
        if body is None:  # the client left: there is no one to answer
            return
        state: ServeState = scope["app"].state.serve
        # a write to a read-only server: FastAPI refuses it (deps.require_write)
        parsed = (self._parse(model, body)
                  if self._authorised(state, headers.get(b"authorization"), write)
                  and not (write and state.settings.read_only) else None)
        if parsed is None:  # FastAPI answers it, from the body as it came
            await self.app(scope, _replay(body, receive), send)
            return
        scope["route"] = _ROUTE_OF[scope["path"]]  # what the metrics label requests by
        try:
            result = await state.run(lambda store: work(store, parsed))
        except Exception as exc:
            handler = _handler(scope["app"].exception_handlers, exc)
            if handler is None:
                raise
            response = await handler(Request(scope, receive, send), exc)
        else:
            if isinstance(result, AddResult):
                scope["app"].state.metrics.count_adds([result])
                result = api.add_out(result)
            response = Response(result.__pydantic_serializer__.to_json(result),
                                media_type="application/json")
        await response(scope, receive, send)

    @staticmethod
    def _authorised(state: ServeState, authorization: bytes | None, write: bool) -> bool:
        """As deps.require_write/require_read decide; False: FastAPI answers (401)."""
        scheme, _, given = (authorization or b"").partition(b" ")
        # ASCII only: Starlette reads a header as latin-1, so FastAPI's check of
        # other bytes may differ from a plain comparison; it judges those itself
        bearer = scheme.lower() == b"bearer" and given.isascii()
        return token_accepts(state.settings, given if bearer else None, write)

    @staticmethod
    def _parse(model: type[BaseModel], body: bytes) -> BaseModel | None:
        try:
            return model.model_validate(json.loads(body))
        # invalid JSON or UTF-8, a rejected body, nesting too deep (RecursionError):
        # FastAPI answers each (a 4xx), as it turns any failure to parse into a 400
        except Exception:
            return None



async def _read(receive: Receive) -> bytes | None:
    """The whole body, or None if the client disconnected first."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


def _handler(handlers: dict[Any, Any], exc: Exception) -> Any:
    for cls in type(exc).__mro__:
        if cls in handlers:
            return handlers[cls]
    return None
