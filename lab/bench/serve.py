"""``simhash-pg bench serve``: the HTTP API against the Python API, side by side in one run.

A throwaway server (or --dsn, EMPTIED) is filled with --n fingerprints by
COPY, then ``simhash-pg serve --workers W`` starts on a free loopback port.
For each workload, first the Python API (W processes, a SimhashStore each,
calls back to back), then HTTP (--clients processes, a keep-alive
connection each, against the W workers), each for --seconds after a warm-up:

- ``near fp``: near(fingerprint), k = 3, of stored fingerprints with 0-3 bits flipped;
- ``near fp x100``: the same, 100 a call: near_many, ``/v1/near/batch`` (req/s
  counts calls: x100 for queries/s);
- ``near text``: near(text), verified as the store's mode says;
- ``add fp``: add(fingerprint), 90% new, 10% near-duplicates of stored ones;
- ``add text``: add(text) of new random texts (verified, their texts kept).

With ``--against DIR`` (a checkout of another commit, e.g. a git worktree)
it compares two versions of the server instead: a second server runs DIR's
simhash_pg (run in DIR, with DIR on PYTHONPATH), over the same database, and for each workload the
two are measured in ``--rounds`` turns, the order alternating (A B, B A,
...), so a drift of the machine's load falls on both; the Python API side
is left out. Each round's req/s is printed, with the CPU the server's
processes spent per request (``server us``, from /proc: less moved by other
users' load than req/s), then the medians and their ratios.

requests/s: completed calls of all processes / the window; p50 and p99:
each call's latency as its caller saw it; caller us: the CPU time the
calling processes spent per call in the window (the Python API's: the
store's own work; HTTP's: the load generator's). The client processes share the
machine's cores with the server's workers, as on one box they would.

The HTTP clients are minimal (lab/bench/_http.py: one socket, requests
encoded before the clock starts, a response read as status, Content-Length
and body) because the Python API side has no client at all: with httpx the
clients spent more CPU per request than the server, on the cores the server
needed, and that was measured as the server's slowness. Every response's
status is still checked: a request that fails or gets anything but 200 is
counted in ``errors``, and a run with errors says so and exits non-zero.
"""

from __future__ import annotations

import multiprocessing
import random
import time
from typing import Any

import click
import numpy as np

from lab.bench._scratch import scratch_dsn, scratch_options
from lab.bench.timing import pct, run_clients
from lab.connect import connect as store_connect

# stored fingerprints, set before the clients are forked (shared, not copied)
_STORED: np.ndarray = np.zeros(0, dtype=np.uint64)
WORKLOADS = ("near fp", "near fp x100", "near text", "add fp", "add text")
BATCH = 100  # fingerprints per "near fp x100" call: near_many, /v1/near/batch
_VOCAB = ("market stocks oil rally falls rise bank rates city council vote school budget "
          "storm warning river flood police report new plan train strike airport delay "
          "winter heat record crowd museum opens bridge closed election result tax cut "
          "hospital nurses minister said on tuesday after the talks that prices would keep "
          "climbing through spring while unions warned of further action across the region "
          "and its ports").split()


def _inputs(workload: str, rnd: random.Random, count: int) -> list[Any]:
    if workload.endswith("text"):
        return [". ".join(" ".join(rnd.choices(_VOCAB, k=12)).capitalize() for _ in range(6))
                + f" {rnd.getrandbits(32)}." for _ in range(count)]
    out = []
    for _ in range(count):
        near = workload.startswith("near") or rnd.random() < 0.1
        fp = int(_STORED[rnd.randrange(len(_STORED))]) if near else rnd.getrandbits(64)
        for bit in rnd.sample(range(64), rnd.randint(0, 3) if near else 0):
            fp ^= 1 << bit
        out.append(fp)
    return out


def _client(args: tuple[str, str, str, int, float, Any, Any]) -> None:
    via, target, workload, seed, seconds, barrier, out = args
    rnd = random.Random(seed)
    # enough not to repeat within a window (a client makes < 10k calls/s)
    items: list[Any] = _inputs(workload, rnd, 4000 if workload.endswith("text")
                               else max(20_000, int(seconds * 10_000)))
    add = workload.startswith("add")
    field = "text" if workload.endswith("text") else "fingerprint"
    if workload == "near fp x100":
        items = [items[i:i + BATCH] for i in range(0, len(items), BATCH)]
    errors: list[str] = []
    if via == "http":
        from lab.bench._http import RawClient, encode_post

        http = RawClient(target)
        path = "/v1/documents" if add else "/v1/near"
        if workload == "near fp x100":
            path = "/v1/near/batch"
        # encoded before the clock starts: the window measures the server
        items = [encode_post(http.host, path, {"docs": [{field: f} for f in x]}
                             if path == "/v1/near/batch" else {field: x}) for x in items]

        def call(request: bytes) -> None:
            try:
                status, body = http.send(request)
            except OSError as exc:  # counted, and the next call reconnects
                http.close()
                errors.append(f"{path}: {type(exc).__name__}: {exc}")
                return
            if status != 200:
                errors.append(f"{path}: {status} {body[:200]!r}")
    else:
        from simhash_pg.store import SimhashStore

        store = SimhashStore(target, migrate=False)
        call = (store.add if add else store.near_many if workload == "near fp x100"  # type: ignore[assignment]
                else store.near)
    pos = 0
    for _ in range(30):  # warm-up: connections, prepared statements, caches
        call(items[pos % len(items)])
        pos += 1
    barrier.wait()
    lat: list[float] = []
    cpu = time.process_time()
    start = time.perf_counter()
    end = start + seconds
    while (t := time.perf_counter()) < end:
        call(items[pos % len(items)])
        lat.append((time.perf_counter() - t) * 1000)
        pos += 1
    out.put((len(lat), time.perf_counter() - start, lat, errors, time.process_time() - cpu))


def measure(via: str, target: str, workload: str, procs: int, seconds: float,
            seed: int) -> dict[str, Any]:
    """requests/s, p50/p99 (ms), the errors (warm-up's too) and the callers' CPU per call (us)
    of ``procs`` clients."""
    results = run_clients(_client, [(via, target, workload, seed + 7919 * i, seconds)
                                    for i in range(procs)], seconds)
    lat = [x for r in results for x in r[2]]
    return {"rps": sum(r[0] for r in results) / max(r[1] for r in results),
            "p50": pct(lat, 50), "p99": pct(lat, 99), "n": len(lat),
            "errors": [e for r in results for e in r[3]],
            "cpu_us": sum(r[4] for r in results) / max(1, len(lat)) * 1e6}


@click.command("serve")
@click.option("--n", "n", type=click.IntRange(1000), default=1_000_000, show_default=True,
              help="Fingerprints stored (COPY) before the run.")
@click.option("--workers", type=click.IntRange(1, 64), default=2, show_default=True,
              help="Server worker processes, and Python API processes.")
@click.option("--clients", type=click.IntRange(1, 256), default=None,
              help="HTTP client processes (default: 2 per worker, to keep each busy).")
@click.option("--seconds", type=click.FloatRange(1), default=6.0, show_default=True,
              help="Time per workload and path.")
@click.option("--workload", "workloads", type=click.Choice(WORKLOADS), multiple=True,
              help="Only these workloads (repeatable; default: all).")
@click.option("--seed", type=int, default=1, show_default=True)
@click.option("--against", type=click.Path(exists=True, file_okay=False, resolve_path=True),
              default=None, help="Compare with the server of this checkout (another "
              "commit's worktree), in alternating rounds, instead of the Python API.")
@click.option("--rounds", type=click.IntRange(1), default=4, show_default=True,
              help="With --against: rounds per workload, each measuring both servers "
              "(even: each goes first as often).")
@scratch_options
def command(n: int, workers: int, clients: int | None, seconds: float,
            workloads: tuple[str, ...], seed: int, against: str | None, rounds: int,
            dsn: str | None, home: str | None, keep: bool) -> None:
    """HTTP requests/s and p50/p99 per endpoint, beside the Python API's, in one run."""
    from simhash_pg.db.server import sized_settings

    with scratch_dsn(dsn, home=home, keep=keep, settings=sized_settings(large=True)) as url:
        _run(url, n, workers, clients or 2 * workers, seconds, workloads or WORKLOADS, seed,
             against, rounds)


def _run(dsn: str, n: int, workers: int, clients: int, seconds: float,
         workloads: tuple[str, ...], seed: int, against: str | None = None,
         rounds: int = 4) -> None:
    global _STORED

    from lab.bench._server import served
    from lab.bench.store import make_data
    from lab.bench.stream import _prewarm
    from simhash_pg.db import migrate
    from simhash_pg.store import SimhashStore

    echo = click.echo
    migrate.downgrade(dsn, "base")
    migrate.upgrade(dsn)
    t = time.perf_counter()
    fps = make_data(n, seed, False)
    with SimhashStore(dsn) as store:
        store.bulk_load(fps)
        verify = store.verify
    with store_connect(dsn) as conn:
        conn.execute("CHECKPOINT")
        warmed = _prewarm(conn)
        version = conn.execute("SHOW server_version").fetchone()[0]  # type: ignore[index]
    _STORED = fps
    if against is not None:
        _compare(dsn, against, workers, clients, seconds, workloads, seed, rounds)
        return
    echo(f"simhash-pg bench serve: n={n:,}, {workers} server workers and {workers} Python "
         f"API processes, {clients} HTTP clients, {seconds:g} s each, verify={verify}")
    echo(f"PostgreSQL {version}, {multiprocessing.cpu_count()} cores; loaded and warmed "
         f"({warmed}) in {time.perf_counter() - t:.1f} s")
    head = (f"{'workload':<12} {'via':<7} {'procs':>5} {'req/s':>8} {'p50 ms':>7} "
            f"{'p99 ms':>7} {'http/py':>7} {'errors':>6} {'caller us':>9}")
    echo(head)
    echo("-" * len(head))
    failed: list[str] = []
    # the bench's own scratch database, as its superuser (the Python side loads and
    # empties it): the role does not change what a request costs
    with served(dsn, "--pool-size", str(max(4, clients)), "--allow-superuser",
                workers=workers) as server:
        for w in workloads:
            py = measure("python", dsn, w, workers, seconds, seed)
            echo(f"{w:<12} {'python':<7} {workers:>5} {py['rps']:>8.0f} {py['p50']:>7.2f} "
                 f"{py['p99']:>7.2f} {'':>7} {len(py['errors']):>6} {py['cpu_us']:>9.0f}")
            http = measure("http", server.url, w, clients, seconds, seed + 1)
            echo(f"{w:<12} {'http':<7} {clients:>5} {http['rps']:>8.0f} {http['p50']:>7.2f} "
                 f"{http['p99']:>7.2f} {http['rps'] / py['rps']:>6.2f}x {len(http['errors']):>6} "
                 f"{http['cpu_us']:>9.0f}")
            failed += http["errors"]
    if failed:  # figures of a run with failed requests are not the server's: say so, and fail
        for message in sorted(set(failed))[:5]:
            echo(f"error: {message}", err=True)
        raise click.ClickException(f"{len(failed)} HTTP requests failed")


def _compare(dsn: str, against: str, workers: int, clients: int, seconds: float,
             workloads: tuple[str, ...], seed: int, rounds: int) -> None:
    """This checkout's server against ``against``'s, HTTP only, in alternating rounds."""
    import statistics

    from lab.bench._server import served

    echo = click.echo
    echo(f"simhash-pg bench serve: this checkout against {against}: {workers} workers "
         f"each, {clients} HTTP clients, {seconds:g} s a measure, {rounds} rounds")
    args = ("--pool-size", str(max(4, clients)), "--allow-superuser")
    failed: list[str] = []
    with served(dsn, *args, workers=workers) as this, \
            served(dsn, *args, workers=workers, env={"PYTHONPATH": against},
                   cwd=against) as other:
        for w in workloads:
            got: dict[str, list[dict[str, Any]]] = {"this": [], "against": []}
            for r in range(rounds):
                turns = [("this", this.url), ("against", other.url)]
                for name, url in turns if r % 2 == 0 else turns[::-1]:
                    pid = (this if name == "this" else other).process.pid
                    cpu = _tree_cpu(pid)
                    # each server and round its own inputs: an add of what the other
                    # just added would be a duplicate, cheaper than an insert
                    m = measure("http", url, w, clients, seconds,
                                seed + 1 + 2 * r + (name == "against"))
                    # the clients' warm-up calls (30 each) are in the CPU too
                    m["server_us"] = (_tree_cpu(pid) - cpu) / (m["n"] + 30 * clients) * 1e6
                    got[name].append(m)
                    failed += m["errors"]
                    echo(f"{w:<12} round {r + 1} {name:<8} {m['rps']:>8.0f} req/s  "
                         f"p50 {m['p50']:.2f}  p99 {m['p99']:.2f} ms  "
                         f"server {m['server_us']:.0f} us/req")
            med = {k: {f: statistics.median(m[f] for m in v) for f in ("rps", "p99", "server_us")}
                   for k, v in got.items()}
            a, b = med["this"], med["against"]
            echo(f"{w:<12} median: this {a['rps']:.0f} req/s, p99 {a['p99']:.2f} ms, "
                 f"{a['server_us']:.0f} us/req; against {b['rps']:.0f} req/s, p99 "
                 f"{b['p99']:.2f} ms, {b['server_us']:.0f} us/req; this/against: req/s "
                 f"{a['rps'] / b['rps']:.3f}, server us {a['server_us'] / b['server_us']:.3f}")
    if failed:
        for message in sorted(set(failed))[:5]:
            echo(f"error: {message}", err=True)
        raise click.ClickException(f"{len(failed)} HTTP requests failed")


def _tree_cpu(pid: int) -> float:
    """CPU seconds (user + system) of process ``pid`` and its descendants, from /proc."""
    import os

    total, todo = 0.0, [pid]
    tick = os.sysconf("SC_CLK_TCK")
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except (FileNotFoundError, ProcessLookupError):  # gone meanwhile
            continue
    return total
