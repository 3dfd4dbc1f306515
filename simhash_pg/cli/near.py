"""``simhash-pg near``: the stored documents within distance k of a text or fingerprint."""

from __future__ import annotations

import json

import click

from simhash_pg.bits import parse_fingerprint
from simhash_pg.cli.common import as_dict, echo_json, fail, open_store, text_of
from simhash_pg.cli.options import SchemeSpec, json_flag, store_options, text_or_file


@click.command("near")
@text_or_file("the query document")
@click.option("--fingerprint", "fp", default=None,
              help="Query by a fingerprint (unsigned int or 0x-hex) instead of a text.")
@click.option("--limit", type=click.IntRange(1), default=None, help="At most this many matches.")
@json_flag("Print JSON Lines, one match a line.")
@store_options
def command(text: str | None, file: str | None, fp: str | None, limit: int | None,
            as_json: bool, dsn: str | None, scheme: SchemeSpec, k: int | None,
            verify: str | None) -> None:
    """Stored documents within distance k of TEXT (or --file F), nearest first."""
    query: str | int
    if fp is not None:
        if text is not None or file is not None:
            raise click.UsageError("give TEXT, --file or --fingerprint, not several")
        try:
            query = parse_fingerprint(fp)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--fingerprint") from None
    else:
        query = text_of(text, file)
    with open_store(dsn, scheme, k, verify, read_only=True) as store:
        try:
            matches = store.near(query, k=k, limit=limit)
            distance = k if k is not None else store.k
        except (ValueError, TypeError) as exc:
            fail(str(exc))
    if as_json:
        for m in matches:
            echo_json(as_dict(m))
        return
    if not matches:
        click.echo(f"no stored document within distance {distance} (--k)")
        return
    from rich.console import Console
    from rich.table import Table

    table = Table("distance", "id", "key", "meta")
    for m in matches:
        table.add_row(str(m.distance), str(m.id), m.key or "",
                      json.dumps(m.meta, ensure_ascii=False) if m.meta else "")
    Console().print(table)
