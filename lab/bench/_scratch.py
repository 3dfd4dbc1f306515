"""A scratch database for benchmarks: never a user's store."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import click

from simhash_pg.cli.options import dsn_option

F = TypeVar("F", bound=Callable[..., Any])


def scratch_options(func: F) -> F:
    """--dsn, --home and --keep: where a benchmark gets the database it empties."""
    options: tuple[Callable[[F], F], ...] = (
        # never from SIMHASH_PG_DSN: the benchmark downgrades the database to base
        dsn_option("Benchmark this (scratch!) database instead of a throwaway server: "
                   "it is EMPTIED.", from_env=False),
        click.option("--home", type=click.Path(file_okay=False), default=None,
                     help="Data directory for the throwaway server (default: a temp dir)."),
        click.option("--keep", is_flag=True, help="Keep the throwaway server and its data."),
    )
    for option in reversed(options):
        func = option(func)
    return func


@contextlib.contextmanager
def scratch_dsn(
    dsn: str | None = None,
    *,
    home: str | Path | None = None,
    keep: bool = False,
    dbname: str = "simhash_bench",
    settings: dict[str, str] | None = None,
    small: bool = False,
) -> Iterator[str]:
    """Yield ``dsn`` as given, or that of a throwaway embedded server.

    The throwaway server lives in ``home`` (default: a new temp dir), runs with
    the settings the embedded store would get on this machine, and is deleted
    on exit unless ``keep``.
    """
    if dsn is not None:
        yield dsn
        return
    from simhash_pg.db.server import LocalServer, sized_settings, temporary_home

    # a given home is made by the server if missing, never opened up by us
    base = Path(home) if home else temporary_home("shpg-bench-")
    server = LocalServer(base, settings=settings or sized_settings(small=small))
    url = server.start(dbname=dbname)
    try:
        yield url
    finally:
        if keep:
            click.echo(f"kept: {server.home} ({url})")
        else:
            server.destroy()
            shutil.rmtree(server.home, ignore_errors=True)
