"""``simhash-pg bench hnsw``: pgvector's HNSW index next to ``simhash_near``.

pgvector indexes ``bit(64)`` with HNSW and ``bit_hamming_ops``; it is the
off-the-shelf way to find close bit strings in PostgreSQL, so it is our peer.
Both are measured on the same fingerprints and queries in one run, in one
throwaway server:

- ``simhash_near``: the store's ``simhash_documents`` table (``migrate.upgrade``
  + COPY), exact by construction (block probes + Hamming check);
- HNSW: a separate table ``simhash_hnsw (id, v bit(64))`` with
  ``USING hnsw (v bit_hamming_ops)``, queried as
  ``ORDER BY v <~> q LIMIT n`` and filtered to distance <= k.

HNSW answers "the n nearest", not "everything within k", so it needs an n.
We use n = ``--limit`` (10 by default), above the largest true neighbourhood
in the planted data (each query has 1 + up to ``max_copies`` planted
neighbours; the command prints the largest true set so the choice can be
checked). A larger n cannot help beyond ef_search: without iterative scans
HNSW returns at most ef_search rows.

Recall is measured against brute force in NumPy (independent of both SQL
paths): the fraction of all (query, stored id) pairs within k that a method
returns.

The data generators here (uniform and ``--skew``: 10% of documents in 1% of
the block values) are shared with the store bench.
"""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
import numpy as np
import numpy.typing as npt

from lab.bench._scratch import scratch_dsn
from lab.bench.timing import pct
from lab.connect import connect as store_connect
from simhash_pg.bits import BLOCK_SHIFTS, to_signed_array

__all__ = [
    "CandidateStats",
    "HnswBuild",
    "Measurement",
    "Planted",
    "build_hnsw",
    "candidates_per_query",
    "command",
    "copy_documents",
    "exact_neighbours",
    "measure_hnsw",
    "measure_near",
    "planted_data",
    "random_masks",
    "skewed_fingerprints",
    "throwaway_server",
    "uniform_fingerprints",
]

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]

_ALL_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)


# -- data -----------------------------------------------------------------
def uniform_fingerprints(n: int, rng: np.random.Generator) -> U64:
    return rng.integers(0, _ALL_ONES, size=n, dtype=np.uint64, endpoint=True)


def skewed_fingerprints(
    n: int,
    rng: np.random.Generator,
    *,
    hot_docs: float = 0.10,
    hot_values: float = 0.01,
) -> U64:
    """Fingerprints where ``hot_docs`` of the documents fall into ``hot_values``
    of the block values, in every block, as real corpora do (boilerplate,
    templates): 10% of documents in 1% (655) of the 65,536 values by default.

    The hot documents take every one of their four blocks from a per-block hot
    set, so a query that lands in a hot value meets ~hot_docs*n/655 candidates
    in each block instead of n/65536.
    """
    fps = uniform_fingerprints(n, rng)
    hot = np.flatnonzero(rng.random(n) < hot_docs)
    n_values = max(1, round(65536 * hot_values))
    for shift in BLOCK_SHIFTS:
        values = rng.choice(65536, size=n_values, replace=False).astype(np.uint64)
        picked = values[rng.integers(0, n_values, size=hot.size)]
        keep = _ALL_ONES ^ (np.uint64(0xFFFF) << np.uint64(shift))
        fps[hot] = (fps[hot] & keep) | (picked << np.uint64(shift))
    return fps


def random_masks(flips: npt.NDArray[np.integer[Any]], rng: np.random.Generator) -> U64:
    """One 64-bit mask per entry of ``flips`` with exactly that many bits set."""
    flips = np.asarray(flips)
    order = np.argsort(rng.random((flips.size, 64)), axis=1)  # a random bit order per row
    chosen = np.arange(64)[None, :] < flips[:, None]
    bits = np.zeros((flips.size, 64), dtype=np.uint64)
    rows = np.broadcast_to(np.arange(flips.size)[:, None], order.shape)
    bits[rows[chosen], order[chosen]] = 1
    return (bits << np.arange(64, dtype=np.uint64)[None, :]).sum(axis=1, dtype=np.uint64)


@dataclass
class Planted:
    """Stored fingerprints (id = position + 1) and queries with known answers."""

    stored: U64
    queries: U64
    k: int
    skew: bool


def planted_data(
    n: int,
    n_queries: int,
    k: int,
    *,
    seed: int = 0,
    skew: bool = False,
    max_copies: int = 3,
) -> Planted:
    """``n`` stored fingerprints and ``n_queries`` queries, each with neighbours.

    Each query starts from a stored "centre" and flips 1..k of its bits (0 for
    k = 0). Each centre also gets 0..``max_copies`` stored near copies (1..k
    flips of the centre, written over other random rows), so answer sets vary
    in size and some copies lie just outside k of the query: recall is tested
    at the radius boundary, not only on the easy distance-1 case.
    """
    if n_queries * (1 + max_copies) > n:
        raise ValueError("n must be at least n_queries * (1 + max_copies)")
    rng = np.random.default_rng(seed)
    stored = skewed_fingerprints(n, rng) if skew else uniform_fingerprints(n, rng)
    slots = rng.choice(n, size=n_queries * (1 + max_copies), replace=False)
    centres = stored[slots[:n_queries]]
    lo = 1 if k > 0 else 0
    copies = rng.integers(0, max_copies + 1, size=n_queries)
    owner = np.repeat(np.arange(n_queries), copies)
    copy_slots = slots[n_queries : n_queries + owner.size]
    stored[copy_slots] = centres[owner] ^ random_masks(
        rng.integers(lo, k + 1, size=owner.size), rng
    )
    queries = centres ^ random_masks(rng.integers(lo, k + 1, size=n_queries), rng)
    return Planted(stored=stored, queries=queries, k=k, skew=skew)


def exact_neighbours(stored: U64, queries: U64, k: int) -> list[I64]:
    """Brute force: for every query, the ids (position + 1) within Hamming k."""
    stored = np.asarray(stored, dtype=np.uint64)
    return [
        np.flatnonzero(np.bitwise_count(stored ^ q) <= k).astype(np.int64) + 1
        for q in np.asarray(queries, dtype=np.uint64)
    ]


# -- server and loads -----------------------------------------------------
@contextlib.contextmanager
def throwaway_server(dbname: str = "bench", *, small: bool = False) -> Iterator[str]:
    """A fresh embedded server in a temp dir, destroyed on exit; yields the DSN."""
    with scratch_dsn(dbname=dbname, small=small) as url:
        yield url


def _binary_rows(ids: I64, fps: U64, *, as_bit: bool) -> bytes:
    """COPY BINARY rows (id bigint, fingerprint bigint | bit(64)), built by NumPy."""
    from simhash_pg.store.pgcopy import binary_copy_data

    if not as_bit:
        # a bigint's binary form is its 8 bytes: the uint64's are the same bits
        return binary_copy_data((">i8", ids), (">u8", fps))
    bit64 = np.dtype([("bits", ">i4"), ("value", ">u8")])  # bit's form: length, then bytes
    values = np.empty(fps.size, dtype=bit64)
    values["bits"] = 64
    values["value"] = fps
    return binary_copy_data((">i8", ids), (bit64, values))


def copy_documents(conn: Any, fps: U64, *, table: str = "simhash_documents",
                   column: str = "fingerprint", as_bit: bool = False,
                   chunk: int = 1_000_000) -> None:
    """COPY ``fps`` into ``table`` (id, column) with ids 1..n, in binary."""
    fps = np.asarray(fps, dtype=np.uint64)
    ids = np.arange(1, fps.size + 1, dtype=np.int64)
    with conn.cursor() as cur:
        for start in range(0, fps.size, chunk):
            part = slice(start, start + chunk)
            # table and column are our own constants, never user input
            with cur.copy(f"COPY {table} (id, {column}) FROM STDIN (FORMAT binary)") as cp:
                cp.write(_binary_rows(ids[part], fps[part], as_bit=as_bit))


# -- measurements ---------------------------------------------------------
def backend_cpu_seconds(conn: Any) -> float | None:
    """CPU time (user + system) of this connection's server process so far.

    Wall time on a shared machine measures the neighbours too; the backend's
    CPU time is what an index build really costs. Local servers only (it
    reads /proc); None where that is not possible.
    """
    import os

    pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def _cpu_delta(before: float | None, after: float | None) -> float | None:
    return None if before is None or after is None else after - before


@dataclass
class Measurement:
    method: str
    latencies_ms: list[float]
    found: int
    truth: int
    build_s: float | None = None
    index_bytes_per_row: float | None = None
    total_bytes_per_row: float | None = None
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def p50(self) -> float:
        return statistics.median(self.latencies_ms)

    @property
    def p99(self) -> float:
        return pct(self.latencies_ms, 99)

    @property
    def recall(self) -> float:
        return self.found / self.truth if self.truth else 1.0


def _recall_counts(results: Sequence[set[int]], truth: Sequence[I64]) -> tuple[int, int]:
    found = sum(len(r.intersection(t.tolist())) for r, t in zip(results, truth, strict=True))
    return found, sum(t.size for t in truth)


def _time_queries(conn: Any, sql: str, params: Sequence[Any],
                  k: int) -> tuple[list[float], list[set[int]]]:
    """Run ``sql`` once per parameter set (prepared); ids whose distance <= k."""
    latencies: list[float] = []
    results: list[set[int]] = []
    with conn.cursor() as cur:
        for p in params:
            t0 = time.perf_counter()
            rows = cur.execute(sql, p, prepare=True).fetchall()
            latencies.append((time.perf_counter() - t0) * 1000)
            results.append({int(r[0]) for r in rows if r[1] <= k})
    return latencies, results


_NEAR_SQL = "SELECT id, distance FROM simhash_near(%s, %s)"


def measure_near(dsn: str, queries: U64, truth: Sequence[I64], k: int) -> Measurement:
    """``simhash_near`` latency (after one warm-up pass) and recall."""

    params = [(int(q), k) for q in to_signed_array(queries)]
    with store_connect(dsn) as conn:
        _time_queries(conn, _NEAR_SQL, params, k)  # warm-up: caches and prepared plans
        lat, res = _time_queries(conn, _NEAR_SQL, params, k)
    found, total = _recall_counts(res, truth)
    return Measurement("simhash_near", lat, found, total)


@dataclass
class HnswBuild:
    seconds: float
    index_bytes: int
    table_bytes: int
    rows: int
    m: int
    ef_construction: int
    cpu_seconds: float | None = None


_HNSW_TABLE = "simhash_hnsw"
_HNSW_INDEX = "simhash_hnsw_v_idx"


def build_hnsw(dsn: str, fps: U64 | None = None, *, m: int = 16, ef_construction: int = 64,
               parallel_workers: int = 0) -> HnswBuild:
    """Create ``simhash_hnsw (id, v bit(64))`` and its HNSW index; time the index build.

    ``fps`` None copies the fingerprints already in ``simhash_documents`` (same
    ids); otherwise they are loaded with ids 1..n. ``parallel_workers`` = 0
    builds on one core, as our own index builds are timed.
    """

    with store_connect(dsn) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute(f"DROP TABLE IF EXISTS {_HNSW_TABLE}")
        conn.execute(f"CREATE TABLE {_HNSW_TABLE} (id bigint NOT NULL, v bit(64) NOT NULL)")
        if fps is None:
            conn.execute(f"INSERT INTO {_HNSW_TABLE} (id, v) "
                         "SELECT id, fingerprint::bit(64) FROM simhash_documents")
        else:
            copy_documents(conn, fps, table=_HNSW_TABLE, column="v", as_bit=True)
        conn.execute(f"VACUUM ANALYZE {_HNSW_TABLE}")
        conn.execute("SELECT set_config('max_parallel_maintenance_workers', %s, false)",
                     [str(parallel_workers)])
        cpu0 = backend_cpu_seconds(conn)
        t0 = time.perf_counter()
        conn.execute(
            f"CREATE INDEX {_HNSW_INDEX} ON {_HNSW_TABLE} USING hnsw (v bit_hamming_ops) "
            f"WITH (m = {int(m)}, ef_construction = {int(ef_construction)})"
        )
        seconds = time.perf_counter() - t0
        cpu = _cpu_delta(cpu0, backend_cpu_seconds(conn))
        row = conn.execute(
            "SELECT pg_relation_size(%s::regclass), pg_table_size(%s::regclass),"
            f" (SELECT count(*) FROM {_HNSW_TABLE})",
            [_HNSW_INDEX, _HNSW_TABLE],
        ).fetchone()
    assert row is not None
    return HnswBuild(seconds, int(row[0]), int(row[1]), int(row[2]), m, ef_construction, cpu)


_HNSW_SQL = (
    f"SELECT id, (v <~> %(q)s::bigint::bit(64))::integer FROM {_HNSW_TABLE}"
    " ORDER BY v <~> %(q)s::bigint::bit(64) LIMIT %(n)s"
)


def measure_hnsw(dsn: str, queries: U64, truth: Sequence[I64], k: int, *,
                 ef_search: Sequence[int] = (40, 100, 200, 400), limit: int = 10,
                 build: HnswBuild | None = None) -> list[Measurement]:
    """HNSW latency and recall within k at each ``hnsw.ef_search``."""

    params = [{"q": int(q), "n": limit} for q in to_signed_array(queries)]
    out: list[Measurement] = []
    with store_connect(dsn) as conn:
        plan = "\n".join(
            r[0] for r in conn.execute("EXPLAIN " + _HNSW_SQL, params[0]).fetchall()
        )
        if _HNSW_INDEX not in plan:  # a seq scan would make the figures meaningless
            raise RuntimeError(f"the HNSW query does not use the index:\n{plan}")
        conn.execute("SELECT set_config('hnsw.ef_search', %s, false)", [str(max(ef_search))])
        _time_queries(conn, _HNSW_SQL, params, k)  # warm-up
        for ef in ef_search:
            conn.execute("SELECT set_config('hnsw.ef_search', %s, false)", [str(ef)])
            lat, res = _time_queries(conn, _HNSW_SQL, params, k)
            found, total = _recall_counts(res, truth)
            meas = Measurement(f"HNSW ef_search={ef}", lat, found, total)
            if build:
                meas.build_s = build.seconds
                meas.index_bytes_per_row = build.index_bytes / build.rows
                meas.total_bytes_per_row = (build.index_bytes + build.table_bytes) / build.rows
            out.append(meas)
    return out


@dataclass
class CandidateStats:
    """Index entries read per query (the four block scans, before the Hamming check)."""

    k: int
    mean: float
    worst: int
    p99: float
    matches_mean: float


_CANDIDATES_SQL = """
SELECT q.ord,
       (SELECT count(*) FROM simhash_documents d
         WHERE d.b0 = ANY (simhash_probes(simhash_block(q.fp, 0), %(r)s)))
     + (SELECT count(*) FROM simhash_documents d
         WHERE d.b1 = ANY (simhash_probes(simhash_block(q.fp, 1), %(r)s)))
     + (SELECT count(*) FROM simhash_documents d
         WHERE d.b2 = ANY (simhash_probes(simhash_block(q.fp, 2), %(r)s)))
     + (SELECT count(*) FROM simhash_documents d
         WHERE d.b3 = ANY (simhash_probes(simhash_block(q.fp, 3), %(r)s)))
FROM unnest(%(fps)s::bigint[]) WITH ORDINALITY AS q (fp, ord)
ORDER BY q.ord
"""


def candidates_per_query(dsn: str, queries: U64, k: int, *,
                         batch: int = 200) -> CandidateStats:
    """Count, in SQL, the rows ``simhash_near(q, k)`` reads from the block indexes.

    The same probes as ``simhash_near`` (radius k // 4 per block, for k <= 15),
    counted with index-only scans. Every one of these entries is read and
    Hamming-checked; distinct rows are fewer when blocks coincide.
    """

    if k > 15:
        raise ValueError("above k = 15 simhash_near scans the table: every row is a candidate")
    signed = [int(q) for q in to_signed_array(queries)]
    counts: list[int] = []
    matches = 0
    with store_connect(dsn) as conn:
        for start in range(0, len(signed), batch):
            part = signed[start : start + batch]
            rows = conn.execute(_CANDIDATES_SQL, {"fps": part, "r": k // 4}).fetchall()
            counts.extend(int(r[1]) for r in rows)
            matches += int(conn.execute(
                "SELECT count(*) FROM simhash_near_many(%s, %s)", [part, k]
            ).fetchone()[0])  # type: ignore[index]
    arr = np.array(counts)
    return CandidateStats(k, float(arr.mean()), int(arr.max()),
                          float(np.percentile(arr, 99)), matches / len(signed))


def load_documents(dsn: str, fps: U64, *,
                   parallel_workers: int = 0) -> dict[str, float | None]:
    """Migrate ``dsn``, COPY ``fps`` into ``simhash_documents`` with its indexes
    in place, vacuum (index-only scans need the visibility map), then time a
    rebuild of the four block indexes alone: the like-for-like figure next to
    an HNSW index build.
    """

    from simhash_pg.db import migrate

    migrate.upgrade(dsn)
    with store_connect(dsn) as conn:
        conn.execute("SELECT set_config('max_parallel_maintenance_workers', %s, false)",
                     [str(parallel_workers)])
        t0 = time.perf_counter()
        copy_documents(conn, fps)
        load_s = time.perf_counter() - t0
        conn.execute("VACUUM (ANALYZE) simhash_documents")
        load_vacuum_s = time.perf_counter() - t0
        cpu0 = backend_cpu_seconds(conn)
        t0 = time.perf_counter()
        for i in range(4):
            conn.execute(f"REINDEX INDEX simhash_documents_b{i}_idx")
        reindex_s = time.perf_counter() - t0
        reindex_cpu = _cpu_delta(cpu0, backend_cpu_seconds(conn))
        conn.execute("VACUUM (ANALYZE) simhash_documents")
        row = conn.execute(
            "SELECT (SELECT sum(pg_relation_size(('simhash_documents_b' || i || '_idx')::regclass))"
            "        FROM generate_series(0, 3) AS i),"
            " pg_total_relation_size('simhash_documents')"
        ).fetchone()
    assert row is not None
    n = max(1, len(fps))
    return {
        "load_s": load_s,
        "load_vacuum_s": load_vacuum_s,
        "block_index_build_s": reindex_s,
        "block_index_build_cpu_s": reindex_cpu,
        "block_index_bytes_per_row": float(row[0]) / n,
        "total_bytes_per_row": float(row[1]) / n,
    }


# -- the command ----------------------------------------------------------
def _fmt(x: float | None, spec: str) -> str:
    return "-" if x is None else format(x, spec)


def format_table(rows: Sequence[Measurement]) -> str:
    head = (f"{'method':<22} {'build s':>9} {'index B/row':>11} {'total B/row':>11} "
            f"{'p50 ms':>8} {'p99 ms':>8} {'recall':>7}")
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r.method:<22} {_fmt(r.build_s, '9.2f')} {_fmt(r.index_bytes_per_row, '11.1f')} "
            f"{_fmt(r.total_bytes_per_row, '11.1f')} {r.p50:8.3f} {r.p99:8.3f} "
            f"{r.recall:7.4f}"
        )
    return "\n".join(lines)


@click.command("hnsw")
@click.option("--n", "n", type=click.IntRange(1000), default=100_000, show_default=True,
              help="Stored fingerprints (the reference run used 1000000).")
@click.option("--k", "k", type=click.IntRange(0, 15), default=3, show_default=True,
              help="Hamming radius: the near-duplicate threshold.")
@click.option("--queries", type=click.IntRange(1), default=1000, show_default=True)
@click.option("--ef-search", "ef_search", type=click.IntRange(1, 1000), multiple=True,
              default=(40, 100, 200, 400), show_default=True)
@click.option("--limit", type=click.IntRange(1), default=10, show_default=True,
              help="HNSW returns the n nearest: n, before filtering to distance <= k.")
@click.option("--m", "m", type=click.IntRange(2, 100), default=16, show_default=True)
@click.option("--ef-construction", type=click.IntRange(4, 1000), default=64,
              show_default=True)
@click.option("--skew", is_flag=True, help="10% of documents in 1% of the block values.")
@click.option("--no-hnsw", is_flag=True,
              help="Skip the HNSW build: only simhash_near and candidate counts.")
@click.option("--candidates-k", type=click.IntRange(0, 15), multiple=True,
              default=(3, 6, 10), show_default=True,
              help="Report block-index candidates per query at these k.")
@click.option("--seed", type=int, default=0, show_default=True)
def command(n: int, k: int, queries: int, ef_search: tuple[int, ...], limit: int, m: int,
            ef_construction: int, skew: bool, no_hnsw: bool,
            candidates_k: tuple[int, ...], seed: int) -> None:
    """pgvector HNSW (bit(64), bit_hamming_ops) next to simhash_near, same data and queries.

    Runs in a throwaway embedded server, deleted afterwards. Index builds on
    one core (max_parallel_maintenance_workers = 0) for both.
    """

    t0 = time.perf_counter()
    data = planted_data(n, queries, k, seed=seed, skew=skew)
    truth = exact_neighbours(data.stored, data.queries, k)
    sizes = [t.size for t in truth]
    click.echo(
        f"data: n={n:,} {'skewed (10% of docs in 1% of block values)' if skew else 'uniform'}"
        f", {queries:,} planted queries, k={k}, true neighbours per query: "
        f"mean {np.mean(sizes):.2f}, max {max(sizes)} (HNSW LIMIT {limit}); "
        f"generated + brute force in {time.perf_counter() - t0:.1f} s"
    )
    if max(sizes) > limit:
        click.echo(f"warning: some queries have more than --limit={limit} true neighbours; "
                   "HNSW recall is capped by the LIMIT", err=True)

    with throwaway_server() as dsn:
        with store_connect(dsn) as conn:
            version = conn.execute("SHOW server_version").fetchone()[0]  # type: ignore[index]
            sb = conn.execute("SHOW shared_buffers").fetchone()[0]  # type: ignore[index]
        click.echo(f"server: PostgreSQL {version}, shared_buffers {sb}, throwaway")
        load = load_documents(dsn, data.stored)
        click.echo(
            f"simhash_documents: COPY {load['load_s']:.1f} s with indexes in place, "
            f"{load['load_vacuum_s']:.1f} s with VACUUM ANALYZE; "
            f"block indexes rebuilt alone in {load['block_index_build_s']:.2f} s "
            f"(CPU {_fmt(load['block_index_build_cpu_s'], '.2f')} s)"
        )
        near = measure_near(dsn, data.queries, truth, k)
        near.build_s = load["block_index_build_s"]
        near.index_bytes_per_row = load["block_index_bytes_per_row"]
        near.total_bytes_per_row = load["total_bytes_per_row"]
        rows = [near]
        if not no_hnsw:
            click.echo(f"building HNSW (m={m}, ef_construction={ef_construction}) ...")
            build = build_hnsw(dsn, m=m, ef_construction=ef_construction)
            click.echo(f"HNSW index built in {build.seconds:.1f} s "
                       f"(CPU {_fmt(build.cpu_seconds, '.1f')} s)")
            rows += measure_hnsw(dsn, data.queries, truth, k, ef_search=ef_search,
                                 limit=limit, build=build)
        click.echo("")
        click.echo(format_table(rows))
        if not no_hnsw:
            hnsw_s = rows[1].build_s or float("nan")
            ratio = hnsw_s / near.build_s if near.build_s else float("nan")
            cpu_ratio = (build.cpu_seconds / load["block_index_build_cpu_s"]
                         if build.cpu_seconds and load["block_index_build_cpu_s"]
                         else float("nan"))
            click.echo(f"\nbuild: HNSW / block indexes = {ratio:.0f}x wall, "
                       f"{cpu_ratio:.0f}x CPU (full simhash_documents load with indexes: "
                       f"{load['load_vacuum_s']:.1f} s)")
        if candidates_k:
            click.echo("\nblock-index entries read per query (simhash_near candidates):")
            click.echo(f"{'k':>3} {'mean':>10} {'p99':>10} {'worst':>8} {'matches':>8}")
            for kk in candidates_k:
                c = candidates_per_query(dsn, data.queries, kk)
                click.echo(f"{kk:>3} {c.mean:10.1f} {c.p99:10.1f} {c.worst:8d} "
                           f"{c.matches_mean:8.2f}")
    click.echo(f"\ntotal {time.perf_counter() - t0:.0f} s")
