"""``simhash-pg add``, ``near`` and ``stats``: the store, one call at a time."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import click

from simhash_pg.cli.common import fail, open_store, store_options


def _text_arg(text: str | None, file: str | None) -> str:
    if (text is None) == (file is None):
        raise click.UsageError("give either TEXT or --file F (use --file - for stdin)")
    if file is None:
        assert text is not None
        return text
    raw = sys.stdin.buffer.read() if file == "-" else Path(file).read_bytes()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        fail(f"{file}: not valid UTF-8 ({exc.reason} at byte {exc.start})")


def _as_dict(obj: Any) -> dict[str, Any]:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    if hasattr(obj, "_asdict"):
        return dict(obj._asdict())
    return dict(vars(obj))


def _echo_json(obj: Any) -> None:
    click.echo(json.dumps(obj, ensure_ascii=False, default=str, indent=None))


@click.command("add")
@click.argument("text", required=False)
@click.option("--file", "file", type=click.Path(dir_okay=False, allow_dash=True),
              help="Read the document from a file (- for stdin).")
@click.option("--key", default=None, help="The caller's id for the document, e.g. its URL.")
@click.option("--meta", default=None, help="A JSON object stored with the document.")
@click.option("--no-dedup", is_flag=True, help="Store it even if a near-duplicate is stored.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@store_options
def add(text: str | None, file: str | None, key: str | None, meta: str | None, no_dedup: bool,
        as_json: bool, dsn: str | None, scheme: str | None, k: int | None,
        verify: str | None) -> None:
    """Add one document (TEXT, or --file F) to the store."""
    doc = _text_arg(text, file)
    meta_obj = None
    if meta is not None:
        try:
            meta_obj = json.loads(meta)
        except json.JSONDecodeError as exc:
            raise click.BadParameter(f"not JSON: {exc}", param_hint="--meta") from exc
    with open_store(dsn, scheme, k, verify) as store:
        try:
            res = store.add(doc, key=key, meta=meta_obj, dedup=not no_dedup)
        except (ValueError, TypeError) as exc:
            fail(str(exc))
    if as_json:
        _echo_json(_as_dict(res))
    elif res.inserted:
        click.echo(f"inserted id {res.id}" + (f" (near-duplicate of {res.duplicate_of}, "
                                              f"distance {res.distance})"
                                              if res.duplicate_of is not None else ""))
    elif res.duplicate_of is not None:
        click.echo(f"not inserted: near-duplicate of id {res.duplicate_of} "
                   f"(distance {res.distance})")
    else:
        click.echo(f"already stored as id {res.id}")


@click.command("near")
@click.argument("text", required=False)
@click.option("--file", "file", type=click.Path(dir_okay=False, allow_dash=True),
              help="Read the query document from a file (- for stdin).")
@click.option("--fingerprint", "fp", default=None,
              help="Query by a fingerprint (unsigned int or 0x-hex) instead of a text.")
@click.option("--limit", type=click.IntRange(1), default=None, help="At most this many matches.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON Lines, one match a line.")
@store_options
def near(text: str | None, file: str | None, fp: str | None, limit: int | None, as_json: bool,
         dsn: str | None, scheme: str | None, k: int | None, verify: str | None) -> None:
    """Stored documents within distance k of TEXT (or --file F), nearest first."""
    query: str | int
    if fp is not None:
        if text is not None or file is not None:
            raise click.UsageError("give TEXT, --file or --fingerprint, not several")
        try:
            query = int(fp, 0)
        except ValueError as exc:
            raise click.BadParameter("expected an integer or 0x-hex",
                                     param_hint="--fingerprint") from exc
    else:
        query = _text_arg(text, file)
    with open_store(dsn, scheme, k, verify) as store:
        try:
            matches = store.near(query, k=k, limit=limit)
        except (ValueError, TypeError) as exc:
            fail(str(exc))
    if as_json:
        for m in matches:
            _echo_json(_as_dict(m))
        return
    if not matches:
        click.echo("no stored document within the distance")
        return
    from rich.console import Console
    from rich.table import Table

    table = Table("distance", "id", "key", "meta")
    for m in matches:
        table.add_row(str(m.distance), str(m.id), m.key or "",
                      json.dumps(m.meta, ensure_ascii=False) if m.meta else "")
    Console().print(table)


@click.command("stats")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@store_options
def stats(as_json: bool, dsn: str | None, scheme: str | None, k: int | None,
        verify: str | None) -> None:
    """Rows, sizes and the fingerprint scheme of the store."""
    with open_store(dsn, scheme, k, verify) as store:
        info = store.stats()
    data = info if isinstance(info, dict) else _as_dict(info)
    if as_json:
        _echo_json(data)
        return
    for name, value in data.items():
        if isinstance(value, dict):
            value = json.dumps(value, ensure_ascii=False, sort_keys=True)
        click.echo(f"{name:>16}: {value}")
