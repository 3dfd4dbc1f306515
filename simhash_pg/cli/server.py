"""``simhash-pg server start|stop|status|url|tune``: the embedded PostgreSQL.

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
    """Say whether the server runs, where its data is, and its URL. Exit 1 if stopped or absent."""
    from simhash_pg.db.server import ServerError, get_default_server

    srv = get_default_server()
    try:
        if not srv.is_initialized():  # "stopped" would suggest data that is not there
            click.echo(f"no server: {srv.home} holds no PostgreSQL data directory yet "
                       "(simhash-pg server start, or any command on the store, makes one)")
            raise SystemExit(1)
        running = srv.is_running()
    except ServerError as exc:  # another user's home: permission denied, not "no server"
        raise click.ClickException(str(exc)) from exc
    click.echo(f"{'running' if running else 'stopped'}: data in {srv.datadir}")
    if running:
        from simhash_pg.db.admin import memory_status_at

        click.echo(srv.dsn(DEFAULT_DBNAME))
        click.echo(memory_status_at(srv.dsn("postgres")))
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


@server.command("tune")
@click.option("--rows", type=click.IntRange(1), default=None,
              help="Size for a store of about this many documents (shared_buffers to hold "
                   "their indexes, at most 2/5 of RAM).")
@click.option("--large", is_flag=True,
              help="Size for the largest store this machine holds (2/5 of RAM, at most 16 GB).")
@click.option("--restart", is_flag=True, help="Restart the server now to apply them.")
def tune(rows: int | None, large: bool, restart: bool) -> None:
    """Size the embedded server for a large store (ALTER SYSTEM; applied on restart).

    The embedded server starts small (256 MB of shared_buffers, 1 GB of WAL).
    This writes the large-store settings into its postgresql.auto.conf, and
    adds pg_prewarm to a server's shared_preload_libraries where it is missing
    (made before it was preloaded), so that a restart restores its cache.
    """
    import psycopg

    from simhash_pg.db.admin import alter_system, current_setting
    from simhash_pg.db.server import ServerError, get_default_server
    from simhash_pg.db.server_settings import TUNED, preload_with_prewarm, sized_settings

    if (rows is None) == (not large):
        raise click.UsageError("give --rows N or --large")
    settings = sized_settings(large=large, rows=rows)
    srv = get_default_server()
    try:
        srv.start(dbname=None)
        tuned: dict[str, str | list[str]] = {name: settings[name] for name in TUNED}
        # a server made before the preload: autoprewarm too (simhash_pg/store/warm.py)
        preload = preload_with_prewarm(current_setting(srv.dsn("postgres"),
                                                       "shared_preload_libraries"))
        if preload is not None:
            tuned["shared_preload_libraries"] = preload
        alter_system(srv.dsn("postgres"), tuned)
        click.echo(", ".join(f"{name} = {value if isinstance(value, str) else ','.join(value)}"
                             for name, value in tuned.items()))
        if restart:
            srv.stop()
            srv.start(dbname=None)
            click.echo("server restarted with them")
        else:
            click.echo("written to postgresql.auto.conf; they apply when the server restarts: "
                       "simhash-pg server stop (the next command starts it again)")
    except (ServerError, psycopg.Error) as exc:
        raise click.ClickException(str(exc)) from exc


command = server
