"""What the commands share besides their options: exit codes, errors, opening a store, output."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

if TYPE_CHECKING:
    from simhash_pg.cli.options import SchemeSpec
    from simhash_pg.store import SimhashStore

# Exit codes, documented in docs/cli-guide.md ("Exit codes").
EXIT_OK = 0
EXIT_SKIPPED = 1  # done, but some records were skipped
EXIT_USAGE = 2  # bad options, unreadable input, unreachable database
EXIT_STOPPED = 3  # stopped early (--strict, or a database error); committed work kept
EXIT_INTERRUPTED = 130  # Ctrl-C (SIGTERM: 143, 128 + the signal); committed work kept


def fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    click.echo(f"simhash-pg: error: {message}", err=True)
    sys.exit(code)


def open_store(
    dsn: str | None, scheme: SchemeSpec, k: int | None, verify: str | None = None,
    *, read_only: bool = False, partition_interval: str | None = None, keep_text: bool = True,
) -> SimhashStore:
    """Open a store, turning connection and scheme problems into usage errors.

    The schema of a database the user names (``--dsn``, ``$SIMHASH_PG_DSN``)
    changes only when asked (``simhash-pg db upgrade``): an outdated one is a
    usage error. A writer may create the schema in a brand-new empty database,
    and says so; a reader (``read_only``) never does. The embedded server's
    database is ours and is kept at the package's revision.
    """
    import psycopg

    from simhash_pg.store import SchemaVersionError, SimhashStore

    kwargs: dict[str, Any] = {"scheme": scheme}
    if k is not None:
        kwargs["k"] = k
    if verify is not None:
        kwargs["verify"] = verify
    if partition_interval is not None:
        kwargs["partition_interval"] = partition_interval
    if not keep_text:
        kwargs["keep_text"] = False
    try:
        if dsn is None:
            return SimhashStore(dsn, **kwargs)
        try:
            return SimhashStore(dsn, migrate=False, **kwargs)
        except SchemaVersionError:
            if read_only or not _is_empty_database(dsn):
                raise
        from simhash_pg.db.admin import other_tables
        from simhash_pg.db.layout import schema_name

        schema = schema_name()
        others = other_tables(dsn)
        beside = (f", beside the {others} table{'s' if others != 1 else ''} already in the "
                  "database (not touched)" if others else "")
        click.echo("simhash-pg: the database holds no simhash-pg store: creating one in "
                   f"the schema {schema}{beside}", err=True)
        return SimhashStore(dsn, **kwargs)
    # StoreConnectionError is an OSError, SchemeMismatchError a ValueError,
    # SchemaVersionError a RuntimeError: each names its problem already.
    except (ValueError, OSError, RuntimeError, psycopg.Error) as exc:
        fail(str(exc))


def _is_empty_database(dsn: str) -> bool:
    """No schema revision and no simhash table: a database nobody has used for a store."""
    from simhash_pg.db.admin import is_empty_database

    return is_empty_database(dsn)


def fresh_database(dbname: str) -> str:
    """The DSN of a new, empty ``dbname`` on the embedded server (dropped first if it exists).

    For commands that own a database of their own (``demo``, ``eval``), never a user's store.
    """
    from simhash_pg.db.admin import drop_database
    from simhash_pg.db.server import get_default_server

    server = get_default_server()
    server.start(dbname=None)
    drop_database(server.dsn("postgres"), dbname)
    return server.start(dbname=dbname)


def text_of(text: str | None, file: str | None) -> str:
    """The document of ``options.text_or_file``: TEXT, or the UTF-8 file (- for stdin)."""
    if (text is None) == (file is None):
        raise click.UsageError("give either TEXT or --file F (use --file - for stdin)")
    if file is None:
        assert text is not None
        return text
    try:
        raw = sys.stdin.buffer.read() if file == "-" else Path(file).read_bytes()
    except OSError as exc:
        fail(f"{file}: {exc.strerror or exc}")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        fail(f"{file}: not valid UTF-8 ({exc.reason} at byte {exc.start})")


def as_dict(obj: Any) -> dict[str, Any]:
    """A result (dataclass, named tuple or plain object) as a dict, for JSON output."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    if hasattr(obj, "_asdict"):
        return dict(obj._asdict())
    return dict(vars(obj))


def echo_json(obj: Any) -> None:
    click.echo(json.dumps(obj, ensure_ascii=False, default=str, indent=None))
