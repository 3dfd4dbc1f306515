"""``simhash-pg server start|stop|status|url``: the embedded PostgreSQL.

    psql "$(simhash-pg server url)"
"""

from __future__ import annotations

import click

from simhash_pg.db.server import DEFAULT_DBNAME


@click.group("server")
def server() -> None:
    """The embedded PostgreSQL ($SIMHASH_PG_HOME or the per-user data directory)."""


@server.command("start")
def start() -> None:
    """Start the server (or find it running) and print its URL."""
    from simhash_pg.db.server import ServerError, get_default_server

    try:
        click.echo(get_default_server().start())
    except ServerError as exc:
        raise click.ClickException(str(exc)) from exc


@server.command("stop")
def stop() -> None:
    """Stop the server; its data stays for the next start."""
    from simhash_pg.db.server import ServerError, get_default_server

    try:
        stopped = get_default_server().stop()
    except ServerError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo("stopped" if stopped else "not running")


@server.command("status")
def status() -> None:
    """Say whether the server runs, where its data is, and its URL. Exit 1 if stopped."""
    from simhash_pg.db.server import get_default_server

    srv = get_default_server()
    running = srv.is_running()
    click.echo(f"{'running' if running else 'stopped'}: data in {srv.datadir}")
    if running:
        import psycopg

        from simhash_pg.db.server import memory_status

        click.echo(srv.dsn(DEFAULT_DBNAME))
        with psycopg.connect(srv.dsn("postgres"), autocommit=True) as conn:
            click.echo(memory_status(conn))
    raise SystemExit(0 if running else 1)


@server.command("url")
@click.option("--dbname", default=DEFAULT_DBNAME, show_default=True)
def url(dbname: str) -> None:
    """Print the URL of the store database, starting the server if needed."""
    from simhash_pg.db.server import ServerError, get_default_server

    try:
        click.echo(get_default_server().start(dbname=dbname))
    except ServerError as exc:
        raise click.ClickException(str(exc)) from exc


command = server
