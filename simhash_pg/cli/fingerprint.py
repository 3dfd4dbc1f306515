"""``simhash-pg fingerprint``: fingerprints of texts, without a database.

    simhash-pg fingerprint "第一段文字" "第二段文字"      # two texts and their distance
    simhash-pg fingerprint --file LICENSE                # a whole file, as near/add --file
    simhash-pg fingerprint -i docs.jsonl --json          # one JSON object per document
    simhash-pg fingerprint --explain "some text"         # and its 10 heaviest features
    simhash-pg fingerprint --explain --top 5 "some text" # its 5 heaviest

Exit codes: 0 done, 1 done but some documents had no features or could not
be read, 2 usage error.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from simhash_pg.cli.options import (
    SchemeSpec,
    input_options,
    json_flag,
    scheme_option,
    workers_option,
)


@click.command("fingerprint")
@click.argument("texts", nargs=-1)
@click.option("--file", "files", multiple=True,
              type=click.Path(exists=True, dir_okay=False, allow_dash=True),
              help="A file that is one document, as near and add read it (- for stdin); "
                   "repeatable.")
@click.option(
    "-i",
    "--input",
    "inputs",
    multiple=True,
    metavar="PATH",
    help="Read documents as dedup reads its INPUTS: a file, a directory or - (stdin); "
    "repeatable. A .jsonl/.csv/.tsv file holds a document per record, a .txt file one per "
    "line, any other file is one document (see --format).",
)
@input_options
@scheme_option()
@click.option("--explain", is_flag=True, help="Also show each document's heaviest features.")
@click.option("--top", type=click.IntRange(1), default=10, show_default=True, metavar="N",
              help="How many features --explain shows.")
@json_flag(
    "One JSON object per document: fingerprint (unsigned), hex, bigint "
    "(the signed value PostgreSQL stores), blocks."
)
@workers_option("Processes for big inputs (default: all cores when it pays).")
def command(
    texts: tuple[str, ...],
    files: tuple[str, ...],
    inputs: tuple[str, ...],
    fmt: str | None,
    text_field: str,
    all_files: bool,
    scheme: SchemeSpec,
    explain: bool,
    top: int,
    as_json: bool,
    workers: int | None,
) -> None:
    """Print the 64-bit SimHash fingerprint of each text (no database needed).

    For each: the hex and the key, then the unsigned value, the signed bigint
    that PostgreSQL stores and the four smallint blocks its indexes hold.
    """
    from simhash_pg.bits import blocks, hamming, to_signed
    from simhash_pg.cli.common import text_of
    from simhash_pg.cli.inputs import BadRecord, InputError, Skipped, read_inputs
    from simhash_pg.text.normalize import fix_surrogates
    from simhash_pg.text.simhash import Fingerprinter, NoFeaturesError

    try:
        fp = Fingerprinter(scheme)
    except (ValueError, TypeError) as exc:
        raise click.BadParameter(str(exc), param_hint="--scheme") from exc
    if not texts and not inputs and not files:
        if sys.stdin.isatty():
            raise click.UsageError("give texts as arguments, --file F or --input PATH "
                                   "(- for stdin)")
        inputs = ("-",)

    keys: list[str] = [f"arg{i + 1}" for i in range(len(texts))] + list(files)
    docs: list[str] = list(texts) + [text_of(None, f) for f in files]
    problems: list[tuple[str, str]] = []
    skipped = Skipped()
    try:
        for rec in read_inputs(inputs, fmt=fmt, text_field=text_field, all_files=all_files,
                               skipped=skipped):
            if isinstance(rec, BadRecord):
                problems.append((rec.where, rec.reason))
                continue
            # printed by the text rule (a lone surrogate becomes U+FFFD), as dedup writes
            keys.append(fix_surrogates(rec.key or rec.where))
            docs.append(rec.text)
    except InputError as exc:
        raise click.UsageError(str(exc)) from exc
    if skipped:
        click.echo(f"simhash-pg: note: {skipped.note()}", err=True)

    fps = fp.fingerprint_many(docs, workers=workers, on_error="none")
    if not as_json:
        click.echo(f"scheme: {fp.scheme.to_json()}", err=True)
    for key, text, value in zip(keys, docs, fps, strict=True):
        if value is None:
            problems.append((key, "no features (empty, or only white space/punctuation)"))
            if as_json:
                click.echo(
                    json.dumps(
                        {"key": key, "fingerprint": None, "error": "no features"},
                        ensure_ascii=False,
                    )
                )
            continue
        heaviest: list[tuple[str, float]] = []
        if explain:
            try:
                heaviest = fp.features(text)[:top]
            except NoFeaturesError:  # pragma: no cover - fingerprinted above
                heaviest = []
        if as_json:
            out: dict[str, Any] = {
                "key": key,
                "fingerprint": value,
                "hex": f"{value:016x}",
                "bigint": to_signed(value),
                "blocks": list(blocks(value)),
            }
            if explain:
                out["features"] = [[f, round(w, 4)] for f, w in heaviest]
            click.echo(json.dumps(out, ensure_ascii=False))
        else:
            click.echo(f"{value:016x}  {key}")
            click.echo(f"  unsigned {value}  bigint {to_signed(value)}  "
                       f"blocks {' '.join(map(str, blocks(value)))}")
            for feat, weight in heaviest:
                click.echo(f"    {weight:10.4f}  {feat}")
            if len(heaviest) > 1 and len({w for _, w in heaviest}) == 1:
                click.echo(f"  ({_why_equal(fp, text)}; listed in the order they first "
                           "occur in the text)")
    if len(fps) == 2 and None not in fps and not as_json:
        a, b = fps
        assert a is not None and b is not None
        click.echo(f"distance: {hamming(a, b)}")
    for where, reason in problems:
        click.echo(f"skipped {where}: {reason}", err=True)
    if problems:
        sys.exit(1)


def _why_equal(fp: Any, text: str) -> str:
    """Why every feature shown weighs the same, by the scheme applied to ``text``."""
    applied = fp.concrete_scheme(text)
    if applied.weight == "binary":
        name = fp.scheme.name
        how = f"{name} scheme" + ("" if applied.name == name else f" ({applied.name} here)")
        return (f"equal weights: the {how} counts each distinct feature once, "
                "whatever its count")
    return "equal weights: each of these features occurs equally often in the text"
