"""``simhash-pg near``: the stored near-duplicates of a text, or the fingerprints within k."""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING

import click

from simhash_pg import labels
from simhash_pg.bits import parse_fingerprint
from simhash_pg.cli.common import as_dict, echo_json, fail, open_store, text_of
from simhash_pg.cli.options import SchemeSpec, json_flag, store_options, text_or_file

if TYPE_CHECKING:
    from simhash_pg.store import Match, SimhashStore
    from simhash_pg.verify.evidence import Evidence


def _bar(store: SimhashStore, norm: str) -> float:
    """The rule's bar for a text query (normalised): short or long."""
    from simhash_pg.verify.jaccard import from_norm, is_short

    return store.policy.text_rule.threshold(is_short(from_norm(norm).text))


def k_for_text(store: SimhashStore, text: str, k: int) -> str:
    """What --k means for a text query that the store verifies, with the store's numbers."""
    norm = store.fingerprinter.normalize(text)
    return labels.k_unchanged(k, store.k, store.policy, store.policy.radius(norm, k),
                              _bar(store, norm))


@click.command("near")
@text_or_file("the query document")
@click.option("--fingerprint", "fp", default=None,
              help="Query by a fingerprint (unsigned int or 0x-hex) instead of a text.")
@click.option("--limit", type=click.IntRange(1), default=None, help="At most this many matches.")
@click.option("--explain", is_flag=True,
              help="For each match, what found it (a probe, the radius, a shared key) and "
                   "what decided it (the rule's share of the text against its bar).")
@json_flag("Print JSON Lines, one match a line.")
@store_options
def command(text: str | None, file: str | None, fp: str | None, limit: int | None,
            explain: bool, as_json: bool, dsn: str | None, scheme: SchemeSpec, k: int | None,
            verify: str | None) -> None:
    """Stored near-duplicates of TEXT (or --file F), or the fingerprints near --fingerprint N.

    A text is decided by the store's rule: a match shares enough of the text
    (its similarity leads each result, "92% shared"); k only widens where the
    look-up goes. k is the radius of a fingerprint query: a fingerprint (and
    a text under --verify off) matches within Hamming distance k.
    """
    from simhash_pg.store.evidence import explain as explain_matches

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
            evidence = explain_matches(store, query, [m.id for m in matches], distance)
        except (ValueError, TypeError) as exc:
            fail(str(exc))
    by_id = {e.id: e for e in evidence}
    text_query = any(e.text_query for e in evidence)
    if as_json:
        for m in matches:
            row = as_dict(m)
            ev = by_id.get(m.id)
            if text_query and ev is not None:
                row = {"shared": None if ev.similarity is None
                       else labels.shared_value(ev.similarity), **row}
            if explain and ev is not None:
                row["evidence"] = dataclasses.asdict(ev)
            echo_json(row)
        return
    if not matches:
        verified = isinstance(query, str) and store.policy.verifies
        click.echo(labels.none_found(
            text_query=verified, k=distance,
            threshold=_bar(store, store.fingerprinter.normalize(query))
            if isinstance(query, str) and verified else None))
        return
    _print(matches, by_id, text_query, distance, explain)


def _print(matches: list[Match], by_id: dict[int, Evidence], text_query: bool, k: int,
           explain: bool) -> None:
    from rich.console import Console
    from rich.table import Table

    thresholds = {e.threshold for e in by_id.values() if e.threshold is not None}
    click.echo(labels.found_line(len(matches), text_query=text_query, k=k,
                                 threshold=min(thresholds) if thresholds else None) + ":")
    table = Table(*(["shared"] if text_query else []), "distance", "id", "key", "meta")
    for m in matches:
        ev = by_id.get(m.id)
        lead = ([labels.shared(ev.similarity) if ev and ev.similarity is not None else ""]
                if text_query else [])
        table.add_row(*lead, str(m.distance), str(m.id), m.key or "",
                      json.dumps(m.meta, ensure_ascii=False) if m.meta else "")
    Console().print(table)
    if not explain:
        return
    for m in matches:
        ev = by_id.get(m.id)
        if ev is None:
            continue
        click.echo(f"\n#{m.id} {m.key or '(no key)'}")
        for label, words in labels.evidence_rows(ev):
            click.echo(f"  {label}: {words}")
