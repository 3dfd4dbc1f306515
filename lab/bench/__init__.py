"""``simhash-pg bench ...``: benchmarks that print their figures.

Speed targets live here, never in timed tests: machines are shared and noisy,
so every figure is reported next to a baseline measured in the same run.
"""

from __future__ import annotations

import click

from simhash_pg.cli import LazyGroup

_BENCHES = {
    "fingerprint": "lab.bench.fingerprint:command",
    "store": "lab.bench.store:command",
    "hnsw": "lab.bench.hnsw:command",
    "near-overhead": "lab.bench.near_overhead:command",
    "pairs": "lab.bench.pairs:command",
    "stream": "lab.bench.stream:command",
    "text": "lab.bench.text:command",
    "serve": "lab.bench.serve:command",
    "day": "lab.bench.day:command",
    "scale": "lab.bench.scale:command",
    "async": "lab.bench.asyncstore:command",
    "keep-text": "lab.bench.keeptext:command",
}


@click.group(cls=LazyGroup, lazy=_BENCHES)
def bench() -> None:
    """Benchmarks: each prints its figures and a same-run baseline."""
