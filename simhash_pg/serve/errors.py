"""Every error as JSON ``{"error": code, "detail": message}``, and never a 500 for bad input.

The store raises TypeError or ValueError naming the problem (a key too
long, a text without features, k out of range): 422. So does a data error
(psycopg's DataError family: a number out of range, a NUL byte, a character
the encoding lacks) that got past the checks: it comes from the input, and
the same request would fail again, so it has no Retry-After. A busy or
absent database (a lock wait over the timeout, no pooled connection free,
the server down): 503 with Retry-After, as the request may succeed later.
A permission the server's database role lacks (a read-only role asked to
write): 403, as retrying cannot help.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

import psycopg
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from psycopg_pool import PoolTimeout
from starlette.exceptions import HTTPException

from simhash_pg.store.results import LockTimeoutError, StoreConnectionError
from simhash_pg.text.simhash import NoFeaturesError

__all__ = ["error_response", "install"]


def error_response(status: int, error: str, detail: Any,
                   headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": error, "detail": detail}, status_code=status, headers=headers)


def _code(status: int) -> str:
    try:
        return HTTPStatus(status).phrase.lower().replace(" ", "_").replace("-", "_")
    except ValueError:
        return "error"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


async def _http(request: Request, exc: HTTPException) -> JSONResponse:
    detail = exc.detail
    cause = exc.__cause__
    if isinstance(cause, UnicodeDecodeError):  # FastAPI's "error parsing the body"
        detail = f"the request body is not valid UTF-8 ({cause.reason} at byte {cause.start})"
    return error_response(exc.status_code, _code(exc.status_code), detail,
                          dict(exc.headers) if exc.headers else None)


async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
    # pydantic's errors without their "input" (it may be the whole, huge, body)
    detail = [{"loc": list(e.get("loc", ())), "msg": e.get("msg", ""), "type": e.get("type", "")}
              for e in exc.errors()]
    return error_response(422, "invalid_request", detail)


async def _invalid(request: Request, exc: Exception) -> JSONResponse:
    error = "no_features" if isinstance(exc, NoFeaturesError) else "invalid_document"
    return error_response(422, error, str(exc))


async def _bad_data(request: Request, exc: Exception) -> JSONResponse:
    return error_response(422, "invalid_input",
                          f"the database refused the request's data: {_first_line(exc)}")


async def _forbidden(request: Request, exc: Exception) -> JSONResponse:
    return error_response(403, "forbidden",
                          f"the server's database role may not do this: {_first_line(exc)}")


async def _busy(request: Request, exc: Exception) -> JSONResponse:
    if isinstance(exc, LockTimeoutError):
        error, detail = "lock_timeout", str(exc)
    elif isinstance(exc, PoolTimeout):
        error, detail = "busy", "no database connection came free in time; retry later"
    else:
        error, detail = "database_unavailable", f"the database failed: {_first_line(exc)}"
    return error_response(503, error, detail, {"Retry-After": "1"})


def install(app: FastAPI) -> None:
    app.add_exception_handler(HTTPException, _http)  # type: ignore[arg-type]
    app.add_exception_handler(RequestValidationError, _validation)  # type: ignore[arg-type]
    for invalid in (ValueError, TypeError):
        app.add_exception_handler(invalid, _invalid)
    for busy in (LockTimeoutError, PoolTimeout, StoreConnectionError, psycopg.Error):
        app.add_exception_handler(busy, _busy)
    # a subclass of psycopg.Error: handlers are found along the exception's MRO
    app.add_exception_handler(psycopg.DataError, _bad_data)
    app.add_exception_handler(psycopg.errors.InsufficientPrivilege, _forbidden)
