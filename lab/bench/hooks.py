"""Stores with parts of the write path switched off, to price what those parts cost.

``SimhashStore.writer_hooks`` is a class attribute (simhash_pg/store/options.py),
so a measurement makes a subclass with other hooks instead of handing the
store private constructor options users would see.
"""

from __future__ import annotations

from simhash_pg.store import SimhashStore
from simhash_pg.store.options import WriterHooks

__all__ = ["store_with"]


def store_with(*, add_function: str = "simhash_add", pigeonhole_batches: bool = True,
               probe_locks: bool = True) -> type[SimhashStore]:
    """A SimhashStore subclass whose writers use these hooks (see WriterHooks).

    ``add_function="simhash_add_unlocked"`` calls the stream benchmark's
    lock-free copy of simhash_add (which only lab/bench/stream.py creates);
    ``pigeonhole_batches=False`` makes every locked batch take the store-wide
    lock; ``probe_locks=False`` locks probed texts by their own blocks only.
    """
    hooks = WriterHooks(add_function, pigeonhole_batches, probe_locks)  # checked here
    return type("HookedStore", (SimhashStore,), {"writer_hooks": hooks})
