"""``simhash-pg near``: the stored documents within distance k of a text or fingerprint."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

from simhash_pg.bits import parse_fingerprint
from simhash_pg.cli.common import as_dict, echo_json, fail, open_store, text_of
from simhash_pg.cli.options import SchemeSpec, json_flag, store_options, text_or_file

if TYPE_CHECKING:
    from simhash_pg.store import SimhashStore


def k_for_text(store: SimhashStore, text: str, k: int) -> str:
    """What --k means for a text query that the store verifies, with the store's numbers."""
    from simhash_pg.verify.jaccard import from_norm, is_short

    policy = store.policy
    norm = store.fingerprinter.normalize(text)
    bar = policy.threshold(is_short(from_norm(norm).text))
    return (f"--k {k} found what the store's k = {store.k} finds. A text query under "
            f"verify = {policy.mode} looks up fingerprints within distance "
            f"{policy.radius(norm, k)} (and, under verify = all, texts sharing a sentence or "
            f"a min-hash key), and a match must share >= {bar:.0%} of the text (rule "
            f"{policy.rule}): k only widens the look-up, the rule decides. With --verify off "
            "a text match is distance <= k alone; --fingerprint queries by distance only.")


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
    """Stored documents near TEXT (or --file F, or --fingerprint N), nearest first.

    A fingerprint matches within distance k. A text is also verified (the
    store's verify mode): k then only widens the fingerprint look-up, and a
    match must share enough of the text by the store's rule; with --verify off
    a text matches within distance k alone.
    """
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
    # the store at its own k: a --k given is the query's, so the two can be compared
    with open_store(dsn, scheme, None, verify, read_only=True) as store:
        try:
            matches = store.near(query, k=k, limit=limit)
            distance = k if k is not None else store.k
            if (k is not None and k != store.k and isinstance(query, str)
                    and store.policy.verifies
                    and [m.id for m in store.near(query, limit=limit)] == [m.id for m in matches]):
                click.echo(f"simhash-pg: note: {k_for_text(store, query, k)}", err=True)
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
