"""``simhash-pg serve``: the store over HTTP (simhash_pg/serve), run by uvicorn.

    simhash-pg serve --workers 2 --token "$(openssl rand -hex 16)"

The database is opened here once, before any worker starts, so a wrong DSN
or an outdated schema is a usage error (exit 2) with the usual message; the
schema rule is ``simhash-pg add``'s (cli/common.open_store). The workers
get the settings through the environment (serve/settings.py).
"""

from __future__ import annotations

import ipaddress
import os

import click

from simhash_pg.cli.options import K_RANGE, dsn_option, verify_option
from simhash_pg.serve.settings import TOKEN_ENV

# One worker process per core: fingerprinting is CPU-bound under the GIL,
# and the rest of a request waits on PostgreSQL (docs/cli.md).
DEFAULT_WORKERS = 1


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on. Anything but loopback exposes the store: "
                   "give it a --token.")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True)
@dsn_option()
@click.option("--workers", type=click.IntRange(1, 256), default=DEFAULT_WORKERS,
              show_default=True, help="Worker processes: one per core.")
@click.option("--token", envvar=TOKEN_ENV, show_envvar=True, default=None,
              help="Bearer token that writes need (and reads, with --token-for-reads). "
                   "Prefer the environment variable: a command line is visible to others.")
@click.option("--token-for-reads", is_flag=True, help="Reads need the token too.")
@click.option("--max-body", "max_body", type=click.IntRange(1024), default=8 * 1024 * 1024,
              show_default=True, help="Largest request body, in bytes (larger: 413).")
@click.option("--pool-size", type=click.IntRange(1, 1000), default=16, show_default=True,
              help="Most PostgreSQL connections per worker.")
@click.option("--k", type=K_RANGE, default=3, show_default=True,
              help="Hamming distance that counts as a near-duplicate (a request may ask "
                   "near with its own k).")
@verify_option()
@click.option("--on-duplicate", type=click.Choice(["skip", "link"]), default="skip",
              show_default=True, help="skip: a near-duplicate is not stored; link: it is, "
                                      "with duplicate_of (GET /v1/groups lists them).")
@click.option("--graceful-timeout", type=click.IntRange(0), default=30, show_default=True,
              help="Seconds a shutdown waits for requests in flight.")
@click.option("--log-level", type=click.Choice(["critical", "error", "warning", "info",
                                                "debug"]), default="info", show_default=True)
# off by default: a line per request costs the event loop ~11 us (measured to
# /dev/null; more to a terminal), a third of a near by fingerprint's own Python
# work, and /metrics already counts and times every request
@click.option("--access-log/--no-access-log", default=False, show_default=True,
              help="Log every request (uvicorn's access log, at --log-level info).")
def command(host: str, port: int, dsn: str | None, workers: int, token: str | None,
            token_for_reads: bool, max_body: int, pool_size: int, k: int, verify: str | None,
            on_duplicate: str, graceful_timeout: int, log_level: str, access_log: bool) -> None:
    """Serve the store over HTTP: the /v1 API, /healthz, /metrics and /openapi.json."""
    import uvicorn

    from simhash_pg.cli.common import fail, open_store
    from simhash_pg.serve.settings import Settings, check_token

    try:
        check_token(token or None)  # before a server is started or a store opened
    except ValueError as exc:
        raise click.UsageError(f"--token: {exc}") from None
    if token_for_reads and not token:
        raise click.UsageError(f"--token-for-reads needs --token (or ${TOKEN_ENV})")
    if not _loopback(host) and not token:
        click.echo(f"simhash-pg: warning: listening on {host} without a token: anyone who "
                   "reaches it can add and remove documents", err=True)
    # the handshake once, here: the workers then only check the schema
    with open_store(dsn, None, k, verify) as store:
        resolved = store.dsn
    try:
        settings = Settings(dsn=resolved, token=token or None, token_for_reads=token_for_reads,
                            max_body_bytes=max_body, pool_min=min(2, pool_size),
                            pool_max=pool_size, k=k, verify=verify,  # type: ignore[arg-type]
                            on_duplicate=on_duplicate)  # type: ignore[arg-type]
    except ValueError as exc:
        fail(str(exc))
    os.environ.update(settings.to_env())
    uvicorn.run("simhash_pg.serve.app:app_from_env", factory=True, host=host, port=port,
                workers=workers, timeout_graceful_shutdown=graceful_timeout,
                log_level=log_level, access_log=access_log, server_header=False,
                proxy_headers=False)
