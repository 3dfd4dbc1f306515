"""postgresql.conf settings sized from the machine, and what the server got of them."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import psycopg


def _total_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover
        return 4 << 30


# The settings `simhash-pg server tune` changes (ALTER SYSTEM): the memory and WAL sizes.
TUNED = ("shared_buffers", "effective_cache_size", "maintenance_work_mem", "max_wal_size")
INDEX_BYTES_PER_ROW = 126  # the four block indexes, measured at 50M rows (docs/benchmarks.md)
# max_wal_size for `tune --rows N`, in passes over N rows' block indexes: a
# checkpoint comes every ~max_wal_size / 2, and at 24M rows 32 GB (~10 passes)
# ingested 4x faster than 6 GB (~2); a million rows need no more than the default.
WAL_PASSES = 8


def sized_settings(memory: int | None = None, *, small: bool = False, large: bool = False,
                   rows: int | None = None) -> dict[str, str]:
    """postgresql.conf settings for this machine.

    The default is a modest server: the embedded one is a per-user store that
    shares the machine, so it takes 256 MB of shared_buffers and 1 GB of WAL
    whatever the RAM (``simhash-pg server tune`` sizes it up for a big store).

    ``large`` (``server tune``, the benchmarks): shared_buffers is 2/5 of RAM,
    capped at 16 GiB (or at what ``rows`` rows of the block indexes need):
    near() reads a few pages of the four block indexes (126 B/row, 6.3 GB at
    50M rows), and a page that must come back from the OS cache costs more
    than the rest of the query (at 50M rows, where the indexes, 6.0 GB, just
    exceed a 1/4-of-RAM pool here: p50 0.36 ms with them resident against 1.26
    ms with them all read from the OS cache, right after a restart). Shared
    memory is only committed as pages are used; the rest stays for the OS cache.
    ``small`` is for throwaway test servers on a shared machine.
    """
    mem = memory or _total_memory()
    mib = mem >> 20
    if small:
        shared, maint, wal, cache = 128, 64, 1024, 512
    elif large or rows is not None:
        shared = max(128, min(mib * 2 // 5, 16384))
        if rows is not None:  # the indexes of that many rows, with a quarter to spare
            shared = max(256, min(shared, rows * INDEX_BYTES_PER_ROW * 5 // 4 >> 20))
        maint = max(64, min(mib // 16, 2048))
        # After a checkpoint each index leaf first touched writes an 8 kB image
        # (random fingerprints do not compress): one pass over a 24M-row day's
        # block indexes is ~3 GB of WAL, and at RAM/4 (6 GB here) that alone
        # requested the next checkpoint, so adds at 24M rows ran at 14k rows/s
        # against 58k with 32 GB (docs/scaling.md, 0e). Soft limit: disk space.
        wal = max(1024, min(mib, 65536))
        if rows is not None:  # the WAL of one pass over those indexes, eight times over
            wal = max(1024, min(wal, rows * INDEX_BYTES_PER_ROW * WAL_PASSES >> 20))
        cache = max(512, mib * 3 // 4)
    else:
        shared, maint, wal, cache = 256, 128, 1024, max(512, mib // 2)
    own: dict[str, str] = {}  # a server of its own (not a throwaway test server)
    if not small:
        # pg_prewarm's autoprewarm worker records which pages the buffers hold
        # (every 5 minutes) and reads them back when the server starts, so a
        # restart does not leave the first look-ups reading from disk
        # (simhash_pg/store/warm.py). Test servers (small) start cold.
        own["shared_preload_libraries"] = "'pg_prewarm'"
        # A per-user embedded store has no replicas to feed: minimal WAL lets
        # COPY into a table truncated in the same transaction (bulk_load) and
        # index builds skip WAL entirely. Crash safety is unchanged.
        own |= {"wal_level": "minimal", "max_wal_senders": "0"}
    return own | {
        "listen_addresses": "''",
        "shared_buffers": f"{shared}MB",
        "effective_cache_size": f"{cache}MB",
        "maintenance_work_mem": f"{maint}MB",
        "work_mem": "16MB",
        "max_wal_size": f"{wal}MB",
        # Random inserts into four block indexes write a full-page image for
        # each page first touched after a checkpoint: space checkpoints out,
        # and compress the images with lz4 (pglz costs ~3x the CPU).
        "checkpoint_timeout": "30min",
        "wal_compression": "lz4",
        # near() is a handful of random index reads: SSD-like costs keep the
        # planner on the block indexes.
        "random_page_cost": "1.1",
        "max_connections": "100",
        # an add_many batch holds 4 pigeonhole locks per document until it
        # commits (simhash_pg/store/locking.py): room for batches of the default size
        "max_locks_per_transaction": "1024",
        "logging_collector": "off",
    }


def preload_with_prewarm(current: str) -> list[str] | None:
    """``shared_preload_libraries`` with pg_prewarm added to ``current`` (what SHOW
    gives), the libraries already there kept; None when it is there already.

    ``server tune`` gives an embedded server made before the preload
    (:func:`sized_settings`) its autoprewarm this way, without dropping a
    library its owner added.
    """
    libs = [lib.strip() for lib in current.split(",") if lib.strip()]
    if "pg_prewarm" in libs:
        return None
    return [*libs, "pg_prewarm"]


def memory_status(conn: psycopg.Connection[Any]) -> str:
    """shared_buffers and whether the server got huge pages, for status and bench output.

    With 4 kB pages every buffer a search reads at random is a TLB miss over
    gigabytes of shared memory; with 2 MB huge pages k = 3 at 50M rows took
    about 25% less time in the server (README, "Tuning"). PostgreSQL uses
    them by default (huge_pages = try) when the kernel has them reserved,
    which only the machine's administrator can do: this says how many.
    """
    # one round trip; missing_ok: huge_pages_status exists from PostgreSQL 17
    row = conn.execute(
        "SELECT current_setting('shared_buffers'), current_setting('huge_pages'),"
        " current_setting('huge_pages_status', true),"
        " current_setting('shared_memory_size_in_huge_pages', true)"
    ).fetchone()
    assert row is not None  # a SELECT without FROM has its one row
    shared, setting, got, need = row
    line = f"shared_buffers {shared}"
    if got is None:
        return line + f", huge_pages = {setting}"
    line += f", huge pages {got}"
    if got == "off" and setting == "off":
        line += " (huge_pages = off in the server's settings)"
    elif got == "off" and int(need or -1) > 0:  # -1: not supported here
        line += (f" (reserving {need} would let the server use them: "
                 f"sysctl -w vm.nr_hugepages={need}, then restart it)")
    return line
