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
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from simhash_pg.text.features import warm_up
from simhash_pg.text.schemes import Scheme

if TYPE_CHECKING:
    from simhash_pg.text.simhash import Fingerprinter

__all__ = ["auto_workers", "cpu_count", "parallel", "pool_size"]

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
_worker_fp: Fingerprinter | None = None
_worker_items: list[Any] | None = None

_Chunk = tuple[Scheme, "list[Any] | tuple[int, int]", str, "Callable[[str], Any] | None"]


def _work(args: _Chunk) -> list[Any]:
    scheme, chunk, on_error, also = args
    if isinstance(chunk, tuple):  # forked: a slice of the inherited batch
        assert _worker_items is not None
        texts: list[Any] = _worker_items[chunk[0] : chunk[1]]
    else:
        texts = chunk
    fp = _worker_fp if _worker_fp is not None and _worker_fp.scheme == scheme else None
    if fp is None:  # spawned worker (no fork on this platform)
        from simhash_pg.text.simhash import Fingerprinter

        fp = Fingerprinter(scheme)
    if also is not None:
        return [fp._try_also(t, also) for t in texts]
    if on_error == "raise":
        return [fp.fingerprint(t) for t in texts]
    return [fp._try(t) for t in texts]


def parallel(
    fp: Fingerprinter, items: list[Any], n: int, on_error: str,
    also: Callable[[str], Any] | None = None,
) -> list[Any]:
    """``fp``'s results for ``items`` from ``n`` processes, in order."""
    global _worker_fp, _worker_items
    # Load jieba, OpenCC and the regexes once, here, so forked workers inherit them.
    warm_up(fp.scheme)
    fork = sys.platform.startswith("linux")
    ctx = mp.get_context("fork" if fork else None)
    # Chunks of ~1/(4n) of the batch (by count) balance load without much IPC.
    size = max(1, min(512, len(items) // (n * 4) or 1))
    bounds = [(i, min(i + size, len(items))) for i in range(0, len(items), size)]
    chunks: list[_Chunk] = [
        (fp.scheme, b if fork else items[b[0] : b[1]], on_error, also) for b in bounds
    ]
    _worker_fp, _worker_items = fp, items
    # Frozen objects are skipped by the children's garbage collector, which
    # would otherwise write to (and so copy) every page of the inherited heap.
    gc.freeze()
    try:
        with ctx.Pool(n) as pool:
            parts = pool.map(_work, chunks, chunksize=1)
    finally:
        gc.unfreeze()
        _worker_fp = _worker_items = None
    return [x for part in parts for x in part]
