"""``simhash-pg db upgrade|downgrade|current|check|backfill-keys``: the schema migrations."""

from __future__ import annotations

import re
import sys
from typing import cast

import click

from simhash_pg.cli.options import dsn_option


def _dsn(dsn: str | None) -> str:
    if dsn:
        return dsn
    from simhash_pg.db.server import ServerError, get_default_server

    try:
        return get_default_server().start()
    except ServerError as exc:
        raise click.ClickException(str(exc)) from exc


def _run(what: str, func: object, *args: object) -> object:
    try:
        return func(*args)  # type: ignore[operator]
    except click.ClickException:
        raise
    except Exception as exc:
        text = str(exc).strip().splitlines()
        missing = re.search(r'database "([^"]+)" does not exist', str(exc))
        if missing:
            from simhash_pg.cli.common import fail

            fail(f"{what}: database {missing.group(1)!r} does not exist; create it first, "
                 f"e.g. createdb {missing.group(1)} (then run this again)")
        raise click.ClickException(
            f"{what} failed: {text[0] if text else type(exc).__name__}"
        ) from None


@click.group("db")
def db() -> None:
    """Create, upgrade or inspect the store's schema (alembic migrations)."""


@db.command("upgrade")
@click.argument("revision", default="head")
@dsn_option()
def upgrade(revision: str, dsn: str | None) -> None:
    """Upgrade the schema to REVISION (default: head); creates it in an empty database."""
    from simhash_pg.db import migrate

    target = _dsn(dsn)
    _run("upgrade", migrate.upgrade, target, revision)
    click.echo(f"schema at revision {migrate.current(target)}")


@db.command("downgrade")
@click.argument("revision", default="base")
@dsn_option()
@click.option("--yes", is_flag=True,
              help="Do not ask before destroying data; needed when stdin is not a terminal.")
def downgrade(revision: str, dsn: str | None, yes: bool) -> None:
    """Downgrade the schema to REVISION (default: base, which DROPS the tables).

    A downgrade that destroys data (the verification texts below 0003, the
    tables at base; docs/operations.md lists each revision's) says what and
    asks first.
    """
    from simhash_pg.db import migrate

    target = _dsn(dsn)
    losses = cast("list[tuple[str, str]]",
                  _run("downgrade", migrate.downgrade_losses, target, revision))
    if losses and not yes:
        what = "\n".join(f"- revision {rev}: {text}." for rev, text in losses)
        told = f"Downgrading to {revision} destroys:\n{what}\n"
        if sys.stdin is None or not sys.stdin.isatty():
            raise click.ClickException(
                f"{told}Nothing was changed: run again with --yes to go ahead."
            )
        click.confirm(f"{told}Continue?", abort=True)
    _run("downgrade", migrate.downgrade, target, revision)
    click.echo(f"schema at revision {migrate.current(target) or 'base (none)'}")


@db.command("current")
@dsn_option()
def current(dsn: str | None) -> None:
    """Print the schema revision of the database (none for an empty one)."""
    from simhash_pg.db import migrate

    rev = _run("reading the revision", migrate.current, _dsn(dsn))
    click.echo(rev or "none")
    if rev != migrate.HEAD:
        click.echo(f"(this simhash-pg expects {migrate.HEAD}: run `simhash-pg db upgrade`)",
                   err=True)


@db.command("check")
@dsn_option()
def check(dsn: str | None) -> None:
    """Fail if the database's tables differ from the package's models (alembic check)."""
    from simhash_pg.db import migrate

    _run("check", migrate.check, _dsn(dsn))
    click.echo("no differences")


@db.command("backfill-keys")
@click.option("--batch-size", type=click.IntRange(1), default=5000, show_default=True,
              help="Rows read per batch (a commit each).")
@dsn_option()
def backfill_keys(batch_size: int, dsn: str | None) -> None:
    """Give rows stored before revision 0016 their min-hash keys (safe to rerun)."""
    from simhash_pg.store import SimhashStore

    target = _dsn(dsn)

    def run() -> int:
        with SimhashStore(target) as store:
            return store.backfill_keys(batch_size=batch_size)

    changed = _run("backfill-keys", run)
    click.echo(f"{changed:,} rows given their min-hash keys")


command = db
