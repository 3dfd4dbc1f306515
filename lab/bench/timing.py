"""Timing helpers shared by the benchmarks and experiments."""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["pct", "run_clients", "timed_ms"]


def pct(values: Sequence[float], p: float) -> float:
    """The ``p``-th percentile of ``values``: the nearest-rank value, never interpolated."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def timed_ms(func: Callable[[], Any]) -> float:
    """Milliseconds one call of ``func`` takes."""
    t = time.perf_counter()
    func()
    return (time.perf_counter() - t) * 1000


def run_clients(client: Callable[[tuple[Any, ...]], None],
                args: Sequence[tuple[Any, ...]], seconds: float) -> list[Any]:
    """Run ``client((*args[i], barrier, out))`` in one forked process per entry.

    The clients start together at the barrier and each puts one result on
    ``out``; the results come back in the order they arrive. A client still
    alive 30 s after the results (or the timeout) is killed, so a benchmark
    never leaves processes behind.
    """
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(len(args))
    out = ctx.Queue()
    procs = [ctx.Process(target=client, args=((*a, barrier, out),)) for a in args]
    for p in procs:
        p.start()
    try:
        return [out.get(timeout=seconds + 300) for _ in procs]
    finally:
        for p in procs:
            p.join(30)
            if p.is_alive():
                p.kill()


def server_line(conn: Any) -> str:
    """The server's version, the machine's cores and its load: a benchmark's context."""
    import multiprocessing
    import os

    version = conn.execute("SHOW server_version").fetchone()[0]
    return (f"PostgreSQL {version}, {multiprocessing.cpu_count()} cores, load average "
            f"{os.getloadavg()[0]:.1f}")
