"""Request-scoped dependencies: a store per request over a pooled connection, and the token.

Per process, once (:class:`ServeState`, made by the app's lifespan): the
store's handshake (schema, scheme, verify mode) and a psycopg pool whose
connections are set up as a store's own would be. Per request:
:func:`get_store` borrows a connection and wraps it in a
:meth:`SimhashStore.over_connection` (no round trip), and gives the
connection back when the response is done. A SimhashStore is not
thread-safe, so every request gets its own.

Any router can use them::

    @router.get("/x")
    def x(store: SimhashStore = Depends(get_store)) -> ...
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

import psycopg
from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool
from starlette.requests import HTTPConnection

from simhash_pg.serve.settings import Settings
from simhash_pg.store import SimhashStore, opening

T = TypeVar("T")

# The pool's connections' application_name, unless the DSN names one.
APPLICATION_NAME = "simhash-pg serve"

__all__ = ["APPLICATION_NAME", "GUARDS", "Authenticated", "Credentials", "Guard", "ServeState",
           "Store", "bearer", "get_state", "get_store", "require_read", "require_write",
           "token_accepts", "with_store"]


@dataclass
class ServeState:
    """What a server process holds: its settings, the handshake and the pool."""

    settings: Settings
    handshake: opening.Opened  # its conn is closed: only what it found is used
    pool: ConnectionPool[Any]
    # the /v1 work's threads: a plain executor hop costs a fraction of
    # anyio's (no capacity limiter, no cancel scopes; profiled)
    executor: ThreadPoolExecutor

    @classmethod
    def open(cls, settings: Settings) -> ServeState:
        """Shake hands with the database once, then open the pool (blocking)."""
        opened = opening.open_database(
            settings.dsn, None, scheme=None, verify=settings.verify,
            do_migrate=settings.migrate, connect_timeout=10,
            lock_timeout=settings.lock_timeout, partitions=False,
        )
        opened.conn.close()
        lock_timeout, schema = settings.lock_timeout, opened.schema

        def configure(conn: psycopg.Connection[Any]) -> None:
            opening.configure_session(conn, lock_timeout, schema)

        kwargs: dict[str, Any] = {"autocommit": True, "connect_timeout": 10}
        if not conninfo_to_dict(opened.dsn).get("application_name"):
            kwargs["application_name"] = APPLICATION_NAME  # in pg_stat_activity
        pool: ConnectionPool[Any] = ConnectionPool(
            opened.dsn, min_size=settings.pool_min, max_size=settings.pool_max,
            timeout=settings.pool_timeout, kwargs=kwargs,
            configure=configure, name="simhash-pg", open=False,
        )
        pool.open(wait=True, timeout=30)
        executor = ThreadPoolExecutor(settings.pool_max, thread_name_prefix="simhash-pg-serve")
        state = cls(settings, opened, pool, executor)
        state.warm_up()
        return state

    def store(self, conn: psycopg.Connection[Any]) -> SimhashStore:
        return SimhashStore.over_connection(conn, self.handshake, self.settings.store_options)

    async def run(self, work: Callable[[SimhashStore], T]) -> T:
        """``work(store)`` in a worker thread over a pooled connection: one thread hop."""
        def run() -> T:
            with self.pool.connection() as conn:
                return work(self.store(conn))

        return await asyncio.get_running_loop().run_in_executor(self.executor, run)

    def warm_up(self) -> None:
        """Load the tokeniser's dictionaries now, not in the first request's thread
        (jieba too: a Chinese title's keys cut it into words)."""
        from simhash_pg.text.features import warm_up_zh_words
        from simhash_pg.text.simhash import Fingerprinter

        Fingerprinter(self.handshake.scheme).fingerprint("今天北京天气晴朗，适合出门散步。 warm up")
        warm_up_zh_words(["今天"])

    def close(self) -> None:
        self.executor.shutdown(wait=True)  # uvicorn drained the requests; nothing is queued
        self.pool.close()


def get_state(request: Request) -> ServeState:
    state: ServeState = request.app.state.serve
    return state


async def with_store(request: Request, work: Callable[[SimhashStore], T]) -> T:
    """``work(store)`` in a worker thread, over a borrowed connection: one thread hop.

    What the /v1 endpoints use: each hop into a thread costs a thread
    switch (on a loaded 2-core box, ~1-3 ms), and a sync endpoint with a
    sync dependency makes three (the dependency's enter and exit, the
    endpoint). :func:`get_store` is the dependency form, for routers where
    that matters less.
    """
    return await get_state(request).run(work)


def get_store(request: Request) -> Iterator[SimhashStore]:
    """A store over a connection borrowed from the pool for this request.

    A sync dependency: FastAPI runs it in the threadpool, so waiting for a
    connection (at most ``pool_timeout``, then a 503) never blocks the loop.
    """
    state = get_state(request)
    conn = state.pool.getconn()
    try:
        yield state.store(conn)
    finally:
        state.pool.putconn(conn)  # a broken or mid-transaction one is reset or dropped


# what an endpoint declares to get its store: ``store: Store``
Store = Annotated[SimhashStore, Depends(get_store)]


class _Bearer(HTTPBearer):
    """FastAPI's bearer scheme (it puts the token in the OpenAPI schema), refusing two
    Authorization headers: with two, which one to judge is a guess (Starlette's
    headers give the first, a proxy may add or keep the last), so none is."""

    async def __call__(self, request: HTTPConnection) -> HTTPAuthorizationCredentials | None:
        if len(request.headers.getlist("authorization")) > 1:
            raise HTTPException(400, "ambiguous credentials: the request has more than one "
                                     "Authorization header; send one")
        return await super().__call__(request)


# the one reader of the request's credentials, for every endpoint that needs them
bearer = _Bearer(auto_error=False, scheme_name="HTTPBearer",
                 description="The server's token (`--token`).")
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]


def token_accepts(settings: Settings, given: bytes | None, write: bool) -> bool:
    """Whether a request with bearer credentials ``given`` (None: none) may go on.

    Writes need the server's token, if it has one; reads only with
    ``--token-for-reads``.
    """
    token = settings.token
    if token is None or not (write or settings.token_for_reads):
        return True
    # constant time: a wrong guess learns nothing from how long the answer took
    return secrets.compare_digest(given or b"", token.encode())


def _check_token(request: Request, creds: HTTPAuthorizationCredentials | None,
                 write: bool) -> None:
    given = creds.credentials.encode() if creds is not None else None
    if not token_accepts(get_state(request).settings, given, write):
        raise HTTPException(
            401, "missing or wrong bearer token: send 'Authorization: Bearer <token>'",
            headers={"WWW-Authenticate": "Bearer"},
        )


async def require_write(request: Request, creds: Credentials) -> None:
    """Writes need the token, if the server has one; a read-only server refuses them."""
    _check_token(request, creds, write=True)
    if get_state(request).settings.read_only:
        raise HTTPException(403, "this server is read-only (serve --read-only): it adds and "
                                 "removes nothing")


async def require_read(request: Request, creds: Credentials) -> None:
    """Reads need the token only if the server says so (``--token-for-reads``)."""
    _check_token(request, creds, write=False)


# what a guard is: a route's dependency over the request and its credentials, which a
# JSON route (serve/route.py) calls as FastAPI would
Guard = Callable[[Request, HTTPAuthorizationCredentials | None], Awaitable[None]]
GUARDS: tuple[Guard, ...] = (require_read, require_write)


async def _authenticated(request: Request, creds: Credentials) -> bool:
    settings = get_state(request).settings
    given = creds.credentials.encode() if creds is not None else None
    return settings.token is not None and token_accepts(settings, given, write=True)


# whether the request bears the server's token (False when it has none)
Authenticated = Annotated[bool, Depends(_authenticated)]
