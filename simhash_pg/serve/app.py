"""``create_app(settings)``: the FastAPI app of ``simhash-pg serve``.

Per process: the lifespan shakes hands with the database and opens the
pool (deps.ServeState) and closes the pool on shutdown, after uvicorn has
drained the requests in flight. Around every request: the Host check
(guards.py), the body limit (limits.BodyLimit), the metrics; then FastAPI's
router, for every endpoint alike (the hot ones are JsonRoutes, route.py).
``/healthz`` needs no token, ever (probes); ``/metrics``, ``/openapi.json``,
``/docs`` and ``/redoc`` are reads: with ``--token-for-reads`` they need the
token too. Every error is JSON
``{"error", "detail"}`` (but a foreign Host's 400: Starlette's plain text)
with a 4xx, or a 503 when the database is busy or away: a client's request
never gets a 500 (errors.py maps the store's exceptions).

Another router plugs in with ``app.include_router(...)`` in
:func:`create_app` (the web page: ``web.install``), and gets a store per request from
:func:`simhash_pg.serve.deps.get_store`.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse, Response
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from simhash_pg.serve import api, errors, web
from simhash_pg.serve.deps import ServeState, get_state, require_read
from simhash_pg.serve.guards import host_patterns
from simhash_pg.serve.limits import BodyLimit
from simhash_pg.serve.metrics import CONTENT_TYPE, Metrics
from simhash_pg.serve.settings import Settings
from simhash_pg.store.opening import ping

__all__ = ["app_from_env", "create_app"]


def create_app(settings: Settings | None = None) -> FastAPI:
    """The app; the database is opened only when it starts (its lifespan)."""
    settings = settings or Settings()
    metrics = Metrics()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        state = await run_in_threadpool(ServeState.open, settings)
        app.state.serve = state
        metrics.pool.pool = state.pool
        try:
            yield
        finally:
            metrics.pool.pool = None
            await run_in_threadpool(state.close)

    app = FastAPI(
        title="simhash-pg",
        summary="A near-duplicate text store over HTTP: add texts, find their near-duplicates.",
        version=_version(),
        lifespan=lifespan,
        # served below as reads, so that --token-for-reads covers them too
        openapi_url=None, docs_url=None, redoc_url=None,
    )
    app.state.settings = settings
    app.state.metrics = metrics
    errors.install(app)
    api.install(app)
    web.install(app)  # the web page, at / (its files at /static)

    @app.get("/healthz", summary="200 if the database answers, else 503", tags=["ops"])
    def healthz(request: Request) -> dict[str, str]:
        with get_state(request).pool.connection() as conn:
            ping(conn)
        return {"status": "ok"}

    reads = [Depends(require_read)]

    @app.get("/metrics", summary="Prometheus metrics of this worker process", tags=["ops"],
             response_class=Response, dependencies=reads)
    def metrics_endpoint() -> Response:
        return Response(metrics.render(), media_type=CONTENT_TYPE)

    _docs(app, reads)
    # added innermost first: the metrics see every answer, the 413s and 400s included
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=host_patterns(settings.allowed_hosts),
                       www_redirect=False)
    app.add_middleware(_Timing, metrics=metrics)
    return app


def _docs(app: FastAPI, reads: list[Any]) -> None:
    """FastAPI's schema and its two doc pages, as reads (a browser's plain GET of a doc page
    cannot send the token: with --token-for-reads, fetch the schema with it instead)."""

    @app.get("/openapi.json", include_in_schema=False, dependencies=reads)
    def openapi() -> JSONResponse:
        return JSONResponse(app.openapi())

    @app.get("/docs", include_in_schema=False, dependencies=reads)
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url="/openapi.json", title=f"{app.title} - docs")

    @app.get("/redoc", include_in_schema=False, dependencies=reads)
    def redoc() -> HTMLResponse:
        return get_redoc_html(openapi_url="/openapi.json", title=f"{app.title} - ReDoc")


def app_from_env() -> FastAPI:
    """The app of a uvicorn worker process, from the settings the CLI put in the environment."""
    return create_app(Settings.from_env())


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("simhash-pg")
    except PackageNotFoundError:
        return "0"


class _Timing:
    """Counts and times every request by its route template (not its path: no key in labels)."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            route: Any = scope.get("route")
            endpoint = getattr(route, "path", None) or "(unmatched)"
            self.metrics.observe(scope["method"], endpoint, status,
                                 time.perf_counter() - start)


