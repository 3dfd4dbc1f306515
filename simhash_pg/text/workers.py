"""The process pool behind ``Fingerprinter.fingerprint_many``.

On Linux the workers are forked: they inherit the batch and the warmed-up
fingerprinter (jieba, OpenCC, the regexes) from the parent's memory, so no
text is pickled to them. Elsewhere they are spawned and get their texts and
scheme with each chunk.
"""

from __future__ import annotations

import gc
import multiprocessing as mp
import os
import signal
import sys
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Protocol

from simhash_pg.text.features import warm_up, warm_up_zh_words
from simhash_pg.text.schemes import Scheme

__all__ = ["FingerprintWorker", "auto_workers", "cpu_count", "parallel", "pool_size"]


class FingerprintWorker(Protocol):
    """What a worker calls on the fingerprinter (:class:`simhash_pg.text.simhash.Fingerprinter`).

    A Protocol, so that this module, which the fingerprinter calls, does not
    import it back.
    """

    @property
    def scheme(self) -> Scheme: ...

    def fingerprint(self, text: str) -> int: ...

    def fingerprint_or_none(self, text: object) -> int | None: ...

    def fingerprint_also(self, text: object, also: Callable[[str], Any],
                         t: int | None = None) -> tuple[int | None, Any, Any]: ...

# A batch below this many characters is not worth starting processes for.
_PARALLEL_MIN_CHARS = 1 << 20
_PARALLEL_MIN_DOCS = 64


def cpu_count() -> int:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def auto_workers(items: list[Any]) -> int:
    """All cores for a batch big enough to repay starting them (about 1 MB of text), else 1."""
    if len(items) < _PARALLEL_MIN_DOCS:
        return 1
    size = sum(len(t) for t in items if isinstance(t, str))
    return cpu_count() if size >= _PARALLEL_MIN_CHARS else 1


def pool_size(workers: int | None, items: list[Any]) -> int:
    """Processes for ``items``: ``workers`` (checked) or :func:`auto_workers`, at most one each."""
    if workers is not None and (isinstance(workers, bool) or workers < 1):
        raise ValueError("workers must be None or an int >= 1")
    n = workers if workers is not None else auto_workers(items)
    return min(n, len(items)) or 1


# Set in the parent just before forking; forked workers read them from the
# memory they inherit, so the texts are never pickled to them.
_worker_fp: FingerprintWorker | None = None
_worker_items: list[Any] | None = None

# (the fingerprinter's class, for a spawned worker to build one; scheme; texts or
# a slice of the inherited batch; on_error; also; probe budget)
_Chunk = tuple[
    "Callable[[Scheme], FingerprintWorker]", Scheme, "list[Any] | tuple[int, int]", str,
    "Callable[[str], Any] | None", "int | None",
]


def _work(args: _Chunk) -> list[Any]:
    make, scheme, chunk, on_error, also, t = args
    if isinstance(chunk, tuple):  # forked: a slice of the inherited batch
        assert _worker_items is not None
        texts: list[Any] = _worker_items[chunk[0] : chunk[1]]
    else:
        texts = chunk
    fp = _worker_fp if _worker_fp is not None and _worker_fp.scheme == scheme else None
    if fp is None:  # spawned worker (no fork on this platform)
        fp = make(scheme)
    if also is not None:
        return [fp.fingerprint_also(x, also, t) for x in texts]
    if on_error == "raise":
        return [fp.fingerprint(t) for t in texts]
    return [fp.fingerprint_or_none(t) for t in texts]


_STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}
_MASKABLE = hasattr(signal, "pthread_sigmask")


def _worker_signals() -> None:
    """A worker ignores Ctrl-C and dies quietly of SIGTERM.

    Ctrl-C reaches the whole process group: the parent decides (e.g. to
    finish the batch, which needs the workers), and no worker prints a
    KeyboardInterrupt traceback. SIGTERM (the process group terminated)
    kills a worker without a traceback, and the parent gets
    BrokenProcessPool instead of waiting forever. The parent blocked both
    signals around the fork, so none lands before this runs.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if _MASKABLE:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)


def parallel(
    fp: FingerprintWorker, items: list[Any], n: int, on_error: str,
    also: Callable[[str], Any] | None = None, t: int | None = None,
) -> list[Any]:
    """``fp``'s results for ``items`` from ``n`` processes, in order.

    A spawned worker builds its own with ``type(fp)(scheme)`` (the class
    pickles by name), so ``fp``'s class must take the scheme alone.
    """
    global _worker_fp, _worker_items
    # Load jieba, OpenCC and the regexes once, here, so forked workers inherit them
    # (jieba's tokenizer also when only the title keys of Chinese texts need it).
    warm_up(fp.scheme)
    if getattr(also, "uses_zh_words", False):
        warm_up_zh_words(items)
    fork = sys.platform.startswith("linux")
    ctx = mp.get_context("fork" if fork else None)
    # Chunks of ~1/(4n) of the batch (by count) balance load without much IPC.
    size = max(1, min(512, len(items) // (n * 4) or 1))
    bounds = [(i, min(i + size, len(items))) for i in range(0, len(items), size)]
    chunks: list[_Chunk] = [
        (type(fp), fp.scheme, b if fork else items[b[0] : b[1]], on_error, also, t)
        for b in bounds
    ]
    _worker_fp, _worker_items = fp, items
    # Frozen objects are skipped by the children's garbage collector, which
    # would otherwise write to (and so copy) every page of the inherited heap.
    gc.freeze()
    try:
        # Not multiprocessing.Pool: its map waits forever for the chunk of a
        # killed worker. The executor raises BrokenProcessPool instead, and
        # shuts its workers down without signalling them.
        with ProcessPoolExecutor(n, mp_context=ctx, initializer=_worker_signals) as pool:
            # map submits every chunk, so the workers are forked here; the
            # parent's handlers (e.g. the CLI's) must not run in them
            old = (signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
                   if _MASKABLE else None)
            try:
                results = pool.map(_work, chunks)
            finally:
                if old is not None:
                    signal.pthread_sigmask(signal.SIG_SETMASK, old)
            parts = list(results)
    finally:
        gc.unfreeze()
        _worker_fp = _worker_items = None
    return [x for part in parts for x in part]
