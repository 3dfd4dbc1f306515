"""``JsonRoute``: a FastAPI route whose request is one JSON body, answered without FastAPI's
per-request dependency solving.

Profiled under load (one worker, near by fingerprint), FastAPI's request
handler (dependency solving, telemetry, the endpoint's context, response
validation) took more of the event loop's time than the store's work. The
hot endpoints (``POST /v1/near``, ``/v1/near/batch``, ``/v1/documents``
and its batch) are therefore JsonRoutes: declared as any FastAPI endpoint (so the router
matches them, /metrics labels them by their path, and the OpenAPI schema
describes them), but answered by a short handler that runs the route's own
parts in FastAPI's order:

1. the body is read and parsed as FastAPI parses a JSON body (a JSON
   content type; invalid JSON is a 422 ``json_invalid``, any other failure
   to parse a 400);
2. the route's guards (deps.require_read / require_write) are called with
   the credentials of deps.bearer, the reader every endpoint uses;
3. the query parameters are validated by the route's own fields (FastAPI's
   ``request_params_to_args``) and the body by its model, their errors
   raised together as a RequestValidationError, worded as FastAPI's;
4. the endpoint is awaited, and its result serialised by the response
   model, as FastAPI does (but not validated again: it is of that model).

An exception from any step goes to the app's exception handlers
(serve/errors.py), as it would from a FastAPI endpoint. A route whose
endpoint does not fit (a path or header parameter, a dependency that is not
a guard, a sync endpoint) is refused when it is declared.
"""

from __future__ import annotations

import email.message
import inspect
import json
from collections.abc import Callable, Coroutine
from typing import Any, cast

from fastapi.dependencies.utils import request_params_to_args
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from pydantic import BaseModel, TypeAdapter, ValidationError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import request_response

from simhash_pg.serve.deps import GUARDS, Guard, bearer

__all__ = ["JsonRoute"]

_MISSING = [{"type": "missing", "loc": ("body",), "msg": "Field required", "input": None}]
_EMPTY = object()  # no body at all (JSON null is a body: the model refuses it)


class JsonRoute(APIRoute):
    """An APIRoute for ``async def endpoint(body: Model, request: Request, [query params])``
    whose dependencies are guards.

    Put it in the app's own routes (``app.router.routes``), not through
    ``include_router``: an included router's routes are matched twice, with
    FastAPI's handler wrapper, and the include's own dependencies would not be
    run.
    """

    def __init__(self, path: str, endpoint: Callable[..., Any], **options: Any) -> None:
        super().__init__(path, endpoint, **options)
        # Starlette's wrapper (the app's exception handlers), not FastAPI's, whose
        # exit stacks are for dependencies with yield, which a guard is not
        self.app = request_response(self.get_route_handler())

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        dependant = self.dependant
        body_field = self.body_field
        guards = [d.dependency for d in self.dependencies]
        model = body_field.field_info.annotation if body_field is not None else None
        fits = (isinstance(model, type) and issubclass(model, BaseModel)
                and len(dependant.body_params) == 1 and self.response_field is not None
                and not (dependant.path_params or dependant.header_params
                         or dependant.cookie_params)
                and all(g in GUARDS for g in guards)
                and len(dependant.dependencies) == len(guards)
                and not any(f.field_info.is_required() for f in dependant.query_params)
                and inspect.iscoroutinefunction(self.endpoint))
        if not fits:
            raise TypeError(f"{self.path}: a JsonRoute takes one JSON body, the request, "
                            "optional query parameters and guards (deps.GUARDS), and is async")
        assert body_field is not None and isinstance(model, type)
        body_model = cast(type[BaseModel], model)
        checked = cast(list[Guard], guards)
        endpoint, query = self.endpoint, dependant.query_params
        body_name, request_name = body_field.name, dependant.request_param_name
        status = self.status_code or 200
        # the models' own validator and serialiser: FastAPI's fields wrap them in a
        # TypeAdapter of the annotated type, which took 1.5-3x as long (a 100-query batch)
        out = self.response_model
        dump: Callable[..., bytes] = (
            out.__pydantic_serializer__.to_json
            if isinstance(out, type) and issubclass(out, BaseModel)
            else TypeAdapter(out).dump_json)

        async def handle(request: Request) -> Response:
            body = await _json_body(request)
            credentials = await bearer(request)
            for guard in checked:
                await guard(request, credentials)
            values: dict[str, Any] = {}
            errors: list[Any] = []
            if query and request.scope["query_string"]:  # none given: the defaults
                values, errors = request_params_to_args(query, request.query_params)
            if body is _EMPTY:
                errors += _MISSING
            else:
                try:
                    # from_attributes: as FastAPI validates (it words some errors)
                    values[body_name] = body_model.model_validate(body, from_attributes=True)
                except ValidationError as exc:  # as FastAPI words them: under "body"
                    errors += [{**e, "loc": ("body", *e["loc"])}
                               for e in exc.errors(include_url=False)]
            if errors:
                raise RequestValidationError(errors, body=None if body is _EMPTY else body)
            if request_name:
                values[request_name] = request
            result = await endpoint(**values)
            return Response(dump(result, by_alias=True), status_code=status,
                            media_type="application/json")

        return handle


async def _json_body(request: Request) -> Any:
    """The body as FastAPI reads a JSON body: _EMPTY if none, parsed JSON under a JSON
    content type, else the bytes (which no body model accepts: a 422)."""
    body = await request.body()
    if not body:
        return _EMPTY
    if not _is_json(request.headers.get("content-type")):
        return body
    try:
        return json.loads(body)
    except json.JSONDecodeError as exc:
        raise RequestValidationError(
            [{"type": "json_invalid", "loc": ("body", exc.pos), "msg": "JSON decode error",
              "input": {}, "ctx": {"error": exc.msg}}], body=exc.doc) from exc
    except Exception as exc:  # not UTF-8, nested too deep (RecursionError)
        raise HTTPException(400, "There was an error parsing the body") from exc


def _is_json(content_type: str | None) -> bool:
    if content_type == "application/json":  # the common case, without a parse
        return True
    if not content_type:  # FastAPI's strict content type: no type, not JSON
        return False
    message = email.message.Message()
    message["content-type"] = content_type
    subtype = message.get_content_subtype()
    return message.get_content_maintype() == "application" and (
        subtype == "json" or subtype.endswith("+json"))
