"""``AsyncSimhashStore``: the store's methods as coroutines, for asyncio apps.

One :class:`SimhashStore` runs on one worker thread of its own; every method
of this class hands the sync method to that thread and awaits it. Why not a
second store on psycopg's async connections: every decision of the store (the
duplicate rule, the lock protocol, batches, retries) would then exist twice,
once per colour of function, and the two would drift. Here there is one code
path, so the results, the errors and the race-freedom of the writers are the
sync store's by construction, and the tokenising and fingerprinting never run
on the event loop. The price is one thread hop per call (tens of
microseconds, against the milliseconds of a round trip: ``simhash-pg bench
async`` prints it).

A SimhashStore is not thread-safe; the single worker thread serialises the
calls of one AsyncSimhashStore (concurrent tasks on one store take turns, as
they would on one connection). For parallel writers, open a store per task or
per worker. A cancelled call still finishes in its thread (a write is never
half done); its result is dropped.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from types import TracebackType
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from simhash_pg.store.core import SimhashStore
from simhash_pg.store.results import Pair

if TYPE_CHECKING:
    from simhash_pg.text.schemes import Scheme
    from simhash_pg.verify.modes import VerifyMode

__all__ = ["AsyncSimhashStore"]

P = ParamSpec("P")
T = TypeVar("T")

# pairs() streams from a server-side cursor: this many pairs per thread hop
_PAIRS_CHUNK = 1000


def _in_thread(
    method: Callable[Concatenate[SimhashStore, P], T],
) -> Callable[Concatenate[AsyncSimhashStore, P], Awaitable[T]]:
    """SimhashStore's ``method`` as a coroutine method: same parameters, same result."""

    async def call(store: AsyncSimhashStore, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await store._run(functools.partial(method, store.sync, *args, **kwargs))

    # the sync method's name and docstring (help(), the docs); not functools.wraps,
    # whose typed result mypy will not take for the coroutine's signature
    call.__name__ = call.__qualname__ = method.__name__
    call.__doc__ = method.__doc__
    return call


class AsyncSimhashStore:
    """:class:`SimhashStore`'s API as coroutines (see the module's docstring)::

        async with await AsyncSimhashStore.open(dsn) as store:
            result = await store.add(text, key="a")
            matches = await store.near(text)

    ``open`` takes SimhashStore's parameters. Every method takes the sync
    method's parameters and returns (or raises) what it does.
    """

    def __init__(self, store: SimhashStore, executor: ThreadPoolExecutor) -> None:
        """Wrap a store already opened on ``executor``'s one thread (use :meth:`open`)."""
        self.sync = store  # the store itself: use it from the worker thread only
        self._executor: ThreadPoolExecutor | None = executor

    @classmethod
    async def open(cls, dsn: str | None = None, **options: Any) -> AsyncSimhashStore:
        """Open a SimhashStore (connection, handshake, migration) on a new worker thread."""
        executor = ThreadPoolExecutor(1, thread_name_prefix="simhash-pg-async")
        try:
            loop = asyncio.get_running_loop()
            store = await loop.run_in_executor(
                executor, functools.partial(SimhashStore, dsn, **options))
        except BaseException:
            executor.shutdown(wait=False)
            raise
        return cls(store, executor)

    async def _run(self, work: Callable[[], T]) -> T:
        if self._executor is None:
            raise ValueError("the store is closed")
        return await asyncio.get_running_loop().run_in_executor(self._executor, work)

    # -- what the sync store knows without a round trip
    @property
    def k(self) -> int:
        return self.sync.k

    @property
    def verify(self) -> VerifyMode:
        return self.sync.verify

    @property
    def scheme(self) -> Scheme:
        return self.sync.scheme

    @property
    def closed(self) -> bool:
        return self.sync.closed

    # -- the store's operations, one thread hop each
    fingerprint = _in_thread(SimhashStore.fingerprint)
    add = _in_thread(SimhashStore.add)
    add_many = _in_thread(SimhashStore.add_many)
    bulk_load = _in_thread(SimhashStore.bulk_load)
    near = _in_thread(SimhashStore.near)
    near_many = _in_thread(SimhashStore.near_many)
    remove = _in_thread(SimhashStore.remove)
    purge = _in_thread(SimhashStore.purge)
    backfill_keys = _in_thread(SimhashStore.backfill_keys)
    count = _in_thread(SimhashStore.count)
    stats = _in_thread(SimhashStore.stats)
    warm = _in_thread(SimhashStore.warm)
    get = _in_thread(SimhashStore.get)
    document = _in_thread(SimhashStore.document)
    documents = _in_thread(SimhashStore.documents)
    recent = _in_thread(SimhashStore.recent)
    groups = _in_thread(SimhashStore.groups)

    async def pairs(self, *, k: int | None = None) -> AsyncIterator[Pair]:
        """:meth:`SimhashStore.pairs` as an async iterator, fetched in chunks."""
        it = await self._run(functools.partial(self.sync.pairs, k=k))
        try:
            while chunk := await self._run(functools.partial(_take, it, _PAIRS_CHUNK)):
                for pair in chunk:
                    yield pair
        finally:
            if not self.closed:
                await self._run(it.close)  # ends the cursor's transaction

    async def close(self) -> None:
        """Close the store's connection, then its thread."""
        executor = self._executor
        if executor is None:
            return
        try:
            await self._run(self.sync.close)
        finally:
            self._executor = None
            executor.shutdown(wait=True)

    async def __aenter__(self) -> AsyncSimhashStore:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.close()


def _take(it: Iterator[Pair], n: int) -> list[Pair]:
    out: list[Pair] = []
    for pair in it:
        out.append(pair)
        if len(out) == n:
            break
    return out
