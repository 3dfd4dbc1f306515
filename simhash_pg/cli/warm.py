"""``simhash-pg warm``: read the store into PostgreSQL's cache (simhash_pg.store.warm)."""

from __future__ import annotations

import click

from simhash_pg.cli.common import echo_json, fail, open_store
from simhash_pg.cli.options import dsn_option, json_flag


def _size(n: int) -> str:
    return f"{n / 2**30:.1f} GB" if n >= 2**30 else f"{n / 2**20:.1f} MB"


@click.command("warm")
@click.option("--everything", is_flag=True,
              help="Read every table and index, even past shared_buffers (the rest then "
                   "waits in the OS cache).")
@json_flag("Print what was read as JSON.")
@dsn_option()
def command(everything: bool, as_json: bool, dsn: str | None) -> None:
    """Read the store's indexes and tables into PostgreSQL's cache.

    After a restart, a bulk load or a failover the first look-ups read their
    pages from disk. This reads what fits in shared_buffers, the block indexes
    first in line, then the key table's index, the other indexes and the rows
    (pg_prewarm; the embedded server also restores its cache at start by
    itself).
    """
    from simhash_pg.store.warm import WarmError

    with open_store(dsn, None, None, read_only=True) as store:
        try:
            done = store.warm(everything=everything)
        except WarmError as exc:
            fail(str(exc), 1)
    if as_json:
        echo_json({
            "seconds": round(done.seconds, 3),
            "bytes_read": done.bytes_read,
            "shared_buffers_bytes": done.shared_buffers_bytes,
            "relations": [{"name": r.name, "bytes": r.bytes, "priority": r.priority,
                           "read": r.read} for r in done.relations],
        })
        return
    click.echo(f"read {len(done.read)} of {len(done.relations)} relations, "
               f"{_size(done.bytes_read)}, in {done.seconds:.1f} s "
               f"(shared_buffers {_size(done.shared_buffers_bytes)})")
    left = done.left
    if left:
        names = ", ".join(f"{r.name} ({_size(r.bytes)})" for r in left[:5])
        more = f" and {len(left) - 5} more" if len(left) > 5 else ""
        click.echo(f"left unread, past shared_buffers ({_size(sum(r.bytes for r in left))}; "
                   f"--everything reads them too): {names}{more}")
