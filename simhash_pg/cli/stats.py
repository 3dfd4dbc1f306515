"""``simhash-pg stats``: rows, sizes and the scheme of the store."""

from __future__ import annotations

import json
from typing import Any

import click

from simhash_pg.cli.common import as_dict, echo_json, open_store
from simhash_pg.cli.options import SchemeSpec, json_flag, store_options


@click.command("stats")
@json_flag("Print JSON.")
@store_options
def command(as_json: bool, dsn: str | None, scheme: SchemeSpec, k: int | None,
            verify: str | None) -> None:
    """Rows, sizes and the fingerprint scheme of the store."""
    from simhash_pg.store.stats import PER_ROW_FROM

    with open_store(dsn, scheme, k, verify, read_only=True) as store:
        info = store.stats()
    data = info if isinstance(info, dict) else as_dict(info)
    if as_json:
        echo_json(data)
        return
    for name, value in data.items():
        if isinstance(value, dict):
            value = json.dumps(value, ensure_ascii=False, sort_keys=True)
        elif name == "bytes_per_row" and value is None:
            value = (f"- (shown from {PER_ROW_FROM:,} rows: below that the fixed size of "
                     "empty tables and indexes dominates)")
        click.echo(f"{name:>16}: {value}")
    note = lookup_note(data)
    if note:
        click.echo(note, err=True)


def lookup_note(stats: dict[str, Any]) -> str | None:
    """A warning when the look-up's indexes outgrow shared_buffers, else None.

    A look-up reads a few pages of each block index and of the key table's index
    at random; once they outgrow PostgreSQL's cache, pages come back from the OS
    cache or the disk: at 48M text rows, 330 such reads a text near() against 15
    with them all held, p50 0.73-0.78x (docs/operations.md, "Tuning an external
    server").
    """
    need, have = stats.get("lookup_index_bytes"), stats.get("shared_buffers_bytes")
    if not need or not have or need <= have:
        return None
    return (f"note: the look-up's indexes ({need / 2**30:.1f} GiB) exceed shared_buffers "
            f"({have / 2**30:.1f} GiB): look-ups read some pages from outside PostgreSQL's "
            "cache, which slows near() (docs/operations.md, \"Tuning an external server\").")
