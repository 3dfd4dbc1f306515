"""The options that several commands share, each declared once.

A command picks the ones it takes; the help text may be worded for the
command, the name, type, range and environment variable may not.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

import click

from simhash_pg.bits import DEFAULT_K
from simhash_pg.cli.inputs import FORMATS
from simhash_pg.labels import K_HELP
from simhash_pg.verify import VERIFY_MODES

F = TypeVar("F", bound=Callable[..., Any])
SchemeSpec = str | dict[str, Any] | None  # what --scheme passes on

DSN_ENV = "SIMHASH_PG_DSN"
K_RANGE = click.IntRange(0, 64)


def dsn_option(
    help: str = "PostgreSQL connection string. Default: the embedded server.",
    *,
    from_env: bool = True,
) -> Callable[[F], F]:
    """``--dsn``, read from ``$SIMHASH_PG_DSN`` when not given.

    ``from_env=False`` for a command that loads into or empties the database
    it is given (demo, the benchmarks): the user's store must be named on
    the command line, never picked up from the environment.
    """
    env: dict[str, Any] = {"envvar": DSN_ENV, "show_envvar": True} if from_env else {}
    return click.option("--dsn", default=None, help=help, **env)


def _parse_scheme(ctx: click.Context, param: click.Parameter, value: str | None) -> SchemeSpec:
    """A scheme name as given, or the JSON object it spells."""
    if value is None or not value.strip().startswith("{"):
        return value
    try:
        spec: dict[str, Any] = json.loads(value)
        return spec
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"not a JSON object: {exc}") from exc


def scheme_option(
    help: str = "Fingerprint scheme: auto (default), zh-tfidf, words, chars, with "
    "parameters (chars:n=4) or as a JSON dict.",
) -> Callable[[F], F]:
    """``--scheme``: the command gets the name, or the dict a JSON value spells."""
    return click.option("--scheme", default=None, callback=_parse_scheme, help=help)


def k_option(
    help: str = K_HELP,
    *,
    default: int | None = None,
    name: str = "k",
    multiple: bool = False,
) -> Callable[[F], F]:
    """``--k``: a Hamming distance, 0 to 64."""
    return click.option("--k", name, type=K_RANGE, default=default, multiple=multiple,
                        show_default=default is not None, help=help)


def verify_option(
    help: str = "Re-check text matches: off, short (texts under 50 characters) or all "
    "(also long texts, and the sentence signature; the default of a new store). "
    "Default: the store's own mode.",
) -> Callable[[F], F]:
    return click.option("--verify", type=click.Choice(VERIFY_MODES), default=None, help=help)


def keep_text_option() -> Callable[[F], F]:
    """``--keep-text/--no-keep-text``: the store's ``keep_text`` (each text's ``body``)."""
    return click.option("--keep-text/--no-keep-text", default=True, show_default=True,
                        help="Keep each text as written (markup stripped) for the web page "
                        "to show; --no-keep-text: about a quarter less room per row.")


def store_options(func: F) -> F:
    """--dsn, --scheme, --k and --verify, for every command that opens a store."""
    options: tuple[Callable[[F], F], ...] = (
        dsn_option(),
        scheme_option("Fingerprint scheme for a new store (auto, zh-tfidf, words, chars, "
                      "or a JSON dict). An existing store keeps its own."),
        k_option(f"{K_HELP} Default: the store's, {DEFAULT_K}."),
        verify_option(),
    )
    for option in reversed(options):
        func = option(func)
    return func


def json_flag(help: str = "Print the result as JSON.") -> Callable[[F], F]:
    """``--json``: print JSON instead of text (passed as ``as_json``)."""
    return click.option("--json", "as_json", is_flag=True, help=help)


def workers_option(
    help: str = "Fingerprinting processes (default: all cores when it pays).",
) -> Callable[[F], F]:
    return click.option("--workers", type=click.IntRange(1, 256), default=None, help=help)


def input_options(func: F) -> F:
    """--format, --text-field and --all-files, for the commands that read documents (inputs.py)."""
    options: tuple[Callable[[F], F], ...] = (
        click.option("--format", "fmt", type=click.Choice(FORMATS), default=None,
                      help="Input format. Default, from the file name: .jsonl/.ndjson "
                           "jsonl, .csv/.tsv a table, .txt lines (one document a line); "
                           "any other file is one document (doc), or jsonl when its "
                           "first line is a JSON object. stdin: lines, or jsonl when it "
                           "starts with '{'."),
        click.option("--text-field", default="text", show_default=True,
                     help="JSONL/CSV field holding the text."),
        click.option("--all-files", is_flag=True,
                     help="In a directory, read every UTF-8 text file as one document "
                          "(default: .txt, .md, .html files and text files without an "
                          "extension; hidden files never)."),
    )
    for option in reversed(options):
        func = option(func)
    return func


def text_or_file(what: str) -> Callable[[F], F]:
    """A TEXT argument, or ``--file F`` (``-`` for stdin): read with ``common.text_of``."""

    def decorate(func: F) -> F:
        # exists=True: a missing file is a usage error (rc 2) before any work
        func = click.option("--file", "file",
                            type=click.Path(exists=True, dir_okay=False, allow_dash=True),
                            help=f"Read {what} from a file (- for stdin).")(func)
        return click.argument("text", required=False)(func)

    return decorate


# What an output file's name ends with -> how it is written (dedup's --out, --report).
OUTPUT_KINDS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".tsv": "tsv",
                ".txt": "txt"}


def output_kind(path: str) -> str:
    """How ``path`` is written, by its suffix; a ValueError names the suffixes allowed."""
    from pathlib import Path

    suffix = Path(path).suffix.lower()
    if suffix not in OUTPUT_KINDS:
        raise ValueError(f"{path}: unknown extension {suffix or '(none)'!r}; use one of "
                         f"{', '.join(OUTPUT_KINDS)}")
    return OUTPUT_KINDS[suffix]


def _check_output(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """An output path is checked before any work: known extension, existing directory."""
    import os

    if value is None:
        return None
    try:
        output_kind(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from exc
    parent = os.path.dirname(os.path.abspath(value))
    if not os.path.isdir(parent):
        raise click.BadParameter(f"{value}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK) or (os.path.exists(value)
                                          and not os.access(value, os.W_OK)):
        raise click.BadParameter(f"{value}: not writable")
    return value


def output_option(name: str, dest: str, help: str) -> Callable[[F], F]:
    """``--out``/``--report``: a file whose name says its format, checked before any work."""
    return click.option(name, dest, type=click.Path(dir_okay=False), callback=_check_output,
                        help=help)
