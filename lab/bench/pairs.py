"""``simhash-pg bench pairs``: every pair within k, today's form against revision 0009's.

Loads N fingerprints of ``bench store``'s data (10% planted near-duplicates,
1..3 bits from an earlier row), stores each planted row's link to its source
(``duplicate_of``), then in one run:

- ``SimhashStore.pairs(k)`` (simhash_pairs streamed from a server-side
  cursor): time to the first pair and to the last;
- revision 0009's simhash_pairs (block self-joins, recreated here under
  another name from sql/0012_pairs_drop.sql), under a statement timeout;
- exactness on a sample: every pair of a sampled row, by brute force over
  all N fingerprints in NumPy, against the pairs streamed.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import click
import numpy as np

from lab.bench._scratch import scratch_dsn, scratch_options
from lab.bench.store import make_data
from lab.connect import connect as store_connect
from simhash_pg.cli.options import k_option

OLD_NAME = "simhash_pairs_0009"


def backend_cpu_s(pid: int) -> float | None:
    """CPU seconds of a server process on this machine (user + system), if /proc shows it."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_note(before: float | None, after: float | None) -> str:
    # a shared machine stretches wall time; the server process's CPU time does not
    return "" if before is None or after is None else f", server CPU {after - before:.1f} s"


@click.command("pairs")
@click.option("--n", "n", type=click.IntRange(1000), default=1_000_000, show_default=True,
              help="Rows to load.")
@k_option(default=3)
@click.option("--old-timeout", type=click.IntRange(0), default=600, show_default=True,
              help="Seconds revision 0009's form may run (0: skip it).")
@click.option("--sample", type=click.IntRange(1), default=200, show_default=True,
              help="Rows whose pairs are checked against brute force.")
@click.option("--links/--no-links", default=True, show_default=True,
              help="Store the planted rows' duplicate_of (one UPDATE through the link "
                   "trigger: minutes at 10M rows).")
@click.option("--skew", is_flag=True, help="10% of documents in 1% of the block values.")
@click.option("--seed", type=int, default=1, show_default=True)
@scratch_options
def command(n: int, k: int, old_timeout: int, sample: int, links: bool, skew: bool,
            seed: int, dsn: str | None, home: str | None, keep: bool) -> None:
    """Load N fingerprints, then time all pairs within k, both forms, and check a sample."""
    with scratch_dsn(dsn, home=home, keep=keep) as url:
        _run(url, n, k, old_timeout, sample, links, skew, seed)


def _run(dsn: str, n: int, k: int, old_timeout: int, sample: int, links: bool,
         skew: bool, seed: int) -> None:
    import psycopg

    from simhash_pg.bits import to_signed
    from simhash_pg.db import migrate
    from simhash_pg.db.resources import sql_dir
    from simhash_pg.store import SimhashStore

    echo = click.echo
    migrate.downgrade(dsn, "base")
    migrate.upgrade(dsn)
    conn = store_connect(dsn)
    version = conn.execute("SHOW server_version").fetchone()[0]  # type: ignore[index]
    echo(f"simhash-pg bench pairs: n={n:,} k={k} skew={skew} seed={seed}, PostgreSQL {version}")

    plants: list[np.ndarray] = []
    fps = make_data(n, seed, skew, plants)
    store = SimhashStore(dsn, k=k)
    t = time.perf_counter()
    store.bulk_load(fps)
    echo(f"bulk load: {time.perf_counter() - t:.1f} s")
    # ids follow the load order (bulk_load restarts the identity)
    if conn.execute("SELECT fingerprint FROM simhash_documents WHERE id = %s",
                    [n]).fetchone() != (to_signed(int(fps[-1])),):
        raise click.ClickException("ids do not follow the load order")
    dup, src = plants
    linked = dup if links else dup[:0]
    t = time.perf_counter()
    with conn.transaction():
        conn.execute("CREATE TEMP TABLE links (id bigint, src bigint) ON COMMIT DROP")
        with conn.cursor().copy("COPY links (id, src) FROM STDIN") as copy:
            for d, s in zip((linked + 1).tolist(), (src[:len(linked)] + 1).tolist(), strict=True):
                copy.write_row((d, s))
        conn.execute("UPDATE simhash_documents d SET duplicate_of = l.src FROM links l"
                     " WHERE d.id = l.id")
    conn.execute("VACUUM (ANALYZE) simhash_documents")
    echo(f"links stored (duplicate_of) for {len(linked):,} planted rows, then VACUUM ANALYZE:"
         f" {time.perf_counter() - t:.1f} s")
    conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
    conn.execute("SELECT pg_prewarm(c.oid) FROM pg_class c JOIN pg_inherits i"
                 " ON i.inhrelid = c.oid WHERE i.inhparent IN (SELECT indexrelid FROM pg_index"
                 " WHERE indrelid = 'simhash_documents'::regclass)")

    pid = store.connection.info.backend_pid
    cpu0 = backend_cpu_s(pid)
    t = time.perf_counter()
    first = None
    a_l: list[int] = []
    b_l: list[int] = []
    for p in store.pairs(k=k):
        if first is None:
            first = time.perf_counter() - t
        a_l.append(p.a)
        b_l.append(p.b)
    new_s = time.perf_counter() - t
    echo(f"simhash_pairs({k}) (revision 0012, streamed by SimhashStore.pairs): "
         f"{len(a_l):,} pairs in {new_s:.1f} s{cpu_note(cpu0, backend_cpu_s(pid))}, "
         f"first pair after {first or 0:.2f} s (load average {os.getloadavg()[0]:.1f})")

    if old_timeout:
        old = (sql_dir() / "0012_pairs_drop.sql").read_text(encoding="utf-8")
        old = old.split("DROP FUNCTION")[0].replace("FUNCTION simhash_pairs(",
                                                    f"FUNCTION {OLD_NAME}(")
        conn.execute(old)
        conn.execute(f"SET statement_timeout = '{old_timeout}s'")
        # one process, as the new form's cursor (PostgreSQL never runs a cursor
        # in parallel): the CPU times compare
        conn.execute("SET max_parallel_workers_per_gather = 0")
        old_pid = conn.info.backend_pid
        cpu0 = backend_cpu_s(old_pid)
        t = time.perf_counter()
        try:
            got = conn.execute(f"SELECT count(*) FROM {OLD_NAME}(%s)", [k]).fetchone() or (0,)
            old_s = time.perf_counter() - t
            echo(f"revision 0009's simhash_pairs({k}) (block self-joins): {got[0]:,} pairs "
                 f"in {old_s:.1f} s{cpu_note(cpu0, backend_cpu_s(old_pid))}; "
                 f"{old_s / new_s:.1f}x the new form's time")
        except psycopg.errors.QueryCanceled:
            echo(f"revision 0009's simhash_pairs({k}) (block self-joins): not done after "
                 f"{old_timeout} s (stopped{cpu_note(cpu0, backend_cpu_s(old_pid))}); over "
                 f"{old_timeout / new_s:.1f}x the new form's time")
        conn.execute("RESET statement_timeout")
        conn.execute("RESET max_parallel_workers_per_gather")
        conn.execute(f"DROP FUNCTION {OLD_NAME}(integer)")

    a = np.array(a_l, dtype=np.int64)
    b = np.array(b_l, dtype=np.int64)
    rng = np.random.default_rng(seed + 17)
    # half planted rows (they have pairs), half any row
    ids = np.concatenate([dup[rng.integers(0, len(dup), sample // 2)] + 1,
                          rng.integers(1, n + 1, sample - sample // 2)])
    t = time.perf_counter()
    wrong = 0
    found = 0
    for i in ids.tolist():
        near = np.nonzero(np.bitwise_count(fps ^ fps[i - 1]) <= k)[0] + 1
        want = sorted(int(j) for j in near if j != i)
        mine = sorted(b[a == i].tolist() + a[b == i].tolist())
        found += len(want)
        wrong += want != mine
    echo(f"exactness: {len(ids)} sampled rows, {found:,} pairs by brute force over all "
         f"{n:,} rows, {wrong} rows differ ({time.perf_counter() - t:.1f} s)")
    if wrong:
        raise click.ClickException(f"{wrong} sampled rows have pairs that differ")
    store.close()
    conn.close()
