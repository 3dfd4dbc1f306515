"""``simhash-pg serve``: the store over HTTP (simhash_pg/serve), run by uvicorn.

    simhash-pg serve --workers 2 --token "$(openssl rand -hex 16)"

The database is opened here once, before any worker starts, so a wrong DSN
or an outdated schema is a usage error (exit 2) with the usual message; the
schema rule is ``simhash-pg add``'s (cli/common.open_store), and so is too
many connections for the server (db/capacity.py). The workers get the
settings through the environment (serve/settings.py).

The workers never log in as a superuser (db/roles.py). On the embedded
server the store's owner makes serve's own login here (a member of
simhash_writer, or of simhash_reader with ``--read-only``), and the workers
log in as it; a DSN the user gives is used as given, but a superuser's is
refused without ``--allow-superuser``.
"""

from __future__ import annotations

import ipaddress
import os

import click

from simhash_pg.bits import DEFAULT_K
from simhash_pg.cli.options import K_RANGE, dsn_option, keep_text_option, verify_option
from simhash_pg.labels import K_HELP
from simhash_pg.serve.settings import LOOPBACK_HOSTS, TOKEN_ENV

# One worker process per core: fingerprinting is CPU-bound under the GIL,
# and the rest of a request waits on PostgreSQL (docs/cli-guide.md).
DEFAULT_WORKERS = 1


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _token(token: str | None, token_file: str | None, no_token: bool) -> str | None:
    """The token from --token, $SIMHASH_PG_TOKEN or --token-file (one of them), checked."""
    from simhash_pg.serve.settings import check_token, read_token_file

    given = [name for name, v in (("--token/$" + TOKEN_ENV, token), ("--token-file", token_file),
                                  ("--no-token", no_token)) if v]
    if len(given) > 1:
        raise click.UsageError(f"give one of {' and '.join(given)}")
    if token_file is not None:
        try:
            return read_token_file(token_file)
        except (OSError, ValueError) as exc:
            raise click.UsageError(f"--token-file: {exc}") from None
    try:
        check_token(token)
    except ValueError as exc:
        raise click.UsageError(f"--token: {exc}") from None
    return token


def _hosts(host: str, allowed: tuple[str, ...]) -> tuple[str, ...]:
    """The Host names to answer: loopback's, the address bound (unless a wildcard, which no
    client sends), and --allowed-host's."""
    bound = () if host in ("0.0.0.0", "::", "") else (host,)
    return tuple(dict.fromkeys((*LOOPBACK_HOSTS, *bound, *allowed)))


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on. Anything but loopback exposes the store: it "
                   "needs a token (or --no-token).")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True)
@dsn_option()
@click.option("--workers", type=click.IntRange(1, 256), default=DEFAULT_WORKERS,
              show_default=True, help="Worker processes: one per core.")
@click.option("--token", envvar=TOKEN_ENV, show_envvar=True, default=None,
              help="Bearer token that writes need (and reads, with --token-for-reads). "
                   "Visible to every local user in ps when given here: prefer --token-file "
                   "or the environment variable.")
@click.option("--token-file", type=click.Path(dir_okay=False), default=None,
              help="Read the token from this file (its first line); it must be the "
                   "user's own, mode 600 or stricter.")
@click.option("--no-token", is_flag=True,
              help="Serve without a token on a non-loopback --host: anyone who reaches it "
                   "can add and remove documents.")
@click.option("--token-for-reads", is_flag=True,
              help="Reads need the token too (/metrics and /openapi.json included; "
                   "/healthz never does).")
@click.option("--allowed-host", "allowed_hosts", multiple=True, metavar="NAME",
              help="Also answer requests whose Host header names NAME (repeatable; "
                   "*.example.com for subdomains, * for any). Default: localhost, "
                   "127.0.0.1, ::1 and --host; others get 400 (DNS rebinding).")
@click.option("--max-body", "max_body", type=click.IntRange(1024), default=8 * 1024 * 1024,
              show_default=True, help="Largest request body, in bytes (larger: 413).")
@click.option("--pool-size", type=click.IntRange(1, 1000), default=16, show_default=True,
              help="Most PostgreSQL connections per worker.")
@click.option("--k", type=K_RANGE, default=DEFAULT_K, show_default=True,
              help=f"{K_HELP} A request may ask near with its own k.")
@verify_option()
@keep_text_option()
@click.option("--on-duplicate", type=click.Choice(["skip", "link"]), default="skip",
              show_default=True, help="skip: a near-duplicate is not stored; link: it is, "
                                      "with duplicate_of (GET /v1/groups lists them).")
@click.option("--graceful-timeout", type=click.IntRange(0), default=30, show_default=True,
              help="Seconds a shutdown waits for requests in flight.")
@click.option("--read-only", is_flag=True,
              help="Serve searches only: writes get 403, and the database role is a "
                   "reader's (simhash_reader).")
@click.option("--allow-superuser", is_flag=True,
              help="Serve even though --dsn logs in as a superuser (not recommended: every "
                   "request then runs with superuser rights).")
@click.option("--log-level", type=click.Choice(["critical", "error", "warning", "info",
                                                "debug"]), default="info", show_default=True)
# off by default: a line per request costs the event loop ~11 us (measured to
# /dev/null; more to a terminal), a third of a near by fingerprint's own Python
# work, and /metrics already counts and times every request
@click.option("--access-log/--no-access-log", default=False, show_default=True,
              help="Log every request (uvicorn's access log, at --log-level info).")
def command(host: str, port: int, dsn: str | None, workers: int, token: str | None,
            token_file: str | None, no_token: bool, token_for_reads: bool,
            allowed_hosts: tuple[str, ...], max_body: int, pool_size: int, k: int,
            verify: str | None, keep_text: bool, on_duplicate: str, graceful_timeout: int,
            read_only: bool, allow_superuser: bool, log_level: str, access_log: bool) -> None:
    """Serve the store over HTTP: the /v1 API, the web page, /healthz, /metrics and
    /openapi.json."""
    import uvicorn

    from simhash_pg.cli.common import fail, open_store
    from simhash_pg.db.capacity import check_room, room
    from simhash_pg.serve.login import LoginError, check_serve_login, serve_login
    from simhash_pg.serve.settings import Settings

    # all before a server is started or a store opened
    token = _token(token or None, token_file, no_token)
    if token_for_reads and not token:
        raise click.UsageError(f"--token-for-reads needs --token (or ${TOKEN_ENV})")
    if not _loopback(host) and not token and not no_token:
        raise click.UsageError(
            f"--host {host} is not loopback: anyone who reaches it could add and remove "
            f"documents. Give a token (--token-file, ${TOKEN_ENV}) or, to serve it open "
            "anyway, --no-token")
    # the handshake once, here: the workers then only check the schema
    with open_store(dsn, None, k, verify, read_only=read_only) as store:
        try:
            login = serve_login(store.connection, store.dsn, embedded=dsn is None,
                                read_only=read_only, allow_superuser=allow_superuser)
            check_room(room(store.connection, login.role), workers, pool_size)
        except ValueError as exc:
            fail(str(exc))
    for warning in login.warnings:
        click.echo(f"simhash-pg: warning: {warning}", err=True)
    try:
        check_serve_login(login.dsn, login.role)
    except LoginError as exc:
        fail(str(exc))
    try:
        settings = Settings(dsn=login.dsn, token=token, token_for_reads=token_for_reads,
                            max_body_bytes=max_body, pool_min=min(2, pool_size),
                            pool_max=pool_size, k=k, verify=verify,  # type: ignore[arg-type]
                            on_duplicate=on_duplicate,  # type: ignore[arg-type]
                            allowed_hosts=_hosts(host, allowed_hosts), read_only=read_only,
                            keep_text=keep_text)
    except ValueError as exc:
        fail(str(exc))
    os.environ.update(settings.to_env())
    uvicorn.run("simhash_pg.serve.app:app_from_env", factory=True, host=host, port=port,
                workers=workers, timeout_graceful_shutdown=graceful_timeout,
                log_level=log_level, access_log=access_log, server_header=False,
                proxy_headers=False)
