"""``simhash-pg add``: one document into the store."""

from __future__ import annotations

import json

import click

from simhash_pg.cli.common import as_dict, echo_json, fail, open_store, text_of
from simhash_pg.cli.options import (
    SchemeSpec,
    json_flag,
    keep_text_option,
    store_options,
    text_or_file,
)


@click.command("add")
@text_or_file("the document")
@click.option("--key", default=None, help="The caller's id for the document, e.g. its URL.")
@click.option("--meta", default=None, help="A JSON object stored with the document.")
@click.option("--no-dedup", is_flag=True, help="Store it even if a near-duplicate is stored.")
@keep_text_option()
@json_flag()
@store_options
def command(text: str | None, file: str | None, key: str | None, meta: str | None,
            no_dedup: bool, keep_text: bool, as_json: bool, dsn: str | None,
            scheme: SchemeSpec, k: int | None, verify: str | None) -> None:
    """Add one document (TEXT, or --file F) to the store."""
    doc = text_of(text, file)
    meta_obj = None
    if meta is not None:
        try:
            meta_obj = json.loads(meta)
        except json.JSONDecodeError as exc:
            raise click.BadParameter(f"not JSON: {exc}", param_hint="--meta") from exc
    with open_store(dsn, scheme, k, verify, keep_text=keep_text) as store:
        try:
            res = store.add(doc, key=key, meta=meta_obj, dedup=not no_dedup)
        except (ValueError, TypeError) as exc:
            fail(str(exc))
    if as_json:
        echo_json(as_dict(res))
    elif res.inserted:
        click.echo(f"inserted id {res.id}" + (f" (near-duplicate of {res.duplicate_of}, "
                                              f"distance {res.distance})"
                                              if res.duplicate_of is not None else ""))
    elif res.duplicate_of is not None:
        click.echo(f"not inserted: near-duplicate of id {res.duplicate_of} "
                   f"(distance {res.distance})")
    else:
        click.echo(f"already stored as id {res.id}")
