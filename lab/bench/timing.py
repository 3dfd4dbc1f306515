"""Timing helpers shared by the benchmarks and experiments."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["pct", "timed_ms"]


def pct(values: Sequence[float], p: float) -> float:
    """The ``p``-th percentile of ``values``: the nearest-rank value, never interpolated."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def timed_ms(func: Callable[[], Any]) -> float:
    """Milliseconds one call of ``func`` takes."""
    t = time.perf_counter()
    func()
    return (time.perf_counter() - t) * 1000
