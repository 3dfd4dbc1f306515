"""Options and helpers shared by the commands that open a store."""

from __future__ import annotations

import functools
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

if TYPE_CHECKING:
    from simhash_pg.store import SimhashStore

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")

# Exit codes, documented in the README's CLI reference.
EXIT_OK = 0
EXIT_SKIPPED = 1  # done, but some records were skipped
EXIT_USAGE = 2  # bad options, unreadable input, unreachable database
EXIT_STOPPED = 3  # stopped early (--strict, or a database error); committed work kept
EXIT_INTERRUPTED = 130  # Ctrl-C (SIGTERM: 143, 128 + the signal); committed work kept


def store_options(func: F) -> F:
    """--dsn, --scheme, --k and --verify, for every command that opens a store."""

    @click.option("--dsn", envvar="SIMHASH_PG_DSN", default=None, show_envvar=True,
                  help="PostgreSQL connection string. Default: the embedded server.")
    @click.option("--scheme", default=None,
                  help="Fingerprint scheme for a new store (auto, zh-tfidf, words, chars, "
                       "or a JSON dict). An existing store keeps its own.")
    @click.option("--k", "k", type=click.IntRange(0, 64), default=None,
                  help="Hamming distance that counts as a near-duplicate (default: the "
                       "store's, 3).")
    @click.option("--verify", type=click.Choice(["off", "short", "all"]), default=None,
                  help="Re-check text matches: off, short (texts under 50 characters) "
                       "or all (also long texts, and the sentence signature; the "
                       "default of a new store). Default: the store's own mode.")
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def parse_scheme(value: str | None) -> Any:
    if value is None:
        return None
    text = value.strip()
    if text.startswith("{"):
        import json

        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise click.BadParameter(f"not a JSON object: {exc}", param_hint="--scheme") from exc
    return text


def open_store(
    dsn: str | None, scheme: str | None, k: int | None, verify: str | None = None
) -> SimhashStore:
    """Open a store, turning connection and scheme problems into usage errors."""
    import psycopg

    from simhash_pg.store import SimhashStore

    kwargs: dict[str, Any] = {"scheme": parse_scheme(scheme)}
    if k is not None:
        kwargs["k"] = k
    if verify is not None:
        kwargs["verify"] = verify
    try:
        return SimhashStore(dsn, **kwargs)
    # StoreConnectionError is an OSError, SchemeMismatchError a ValueError,
    # SchemaVersionError a RuntimeError: each names its problem already.
    except (ValueError, OSError, RuntimeError, psycopg.Error) as exc:
        fail(str(exc))


def fresh_database(dbname: str) -> str:
    """The DSN of a new, empty ``dbname`` on the embedded server (dropped first if it exists).

    For commands that own a database of their own (``demo``, ``eval``), never a user's store.
    """
    import psycopg
    from psycopg import sql

    from simhash_pg.db.server import get_default_server

    server = get_default_server()
    server.start(dbname=None)
    with psycopg.connect(server.dsn("postgres"), autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
                     .format(sql.Identifier(dbname)))
    return server.start(dbname=dbname)


def fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    click.echo(f"simhash-pg: error: {message}", err=True)
    sys.exit(code)


class StopRequested(BaseException):
    """A signal came while :meth:`StopSignals.pull` waited for input."""


class StopSignals:
    """SIGINT (Ctrl-C) and SIGTERM, handled alike by every command that works in batches.

    Installed as a context manager. ``graceful=True``: the first signal only
    asks the command to stop after the batch in hand (``reason`` then says
    why, and the command's loop checks it), except that input read through
    :meth:`pull` stops at once, since it may wait forever for a line; a
    second signal stops at once, as KeyboardInterrupt. ``graceful=False``:
    KeyboardInterrupt at the first, as Python does for SIGINT. Either way
    ``exit_code`` is 128 + the signal (130 for SIGINT, 143 for SIGTERM). A
    signal the process was started with ignored (``nohup``, ``&``) stays
    ignored.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self, graceful: bool = True) -> None:
        self.graceful = graceful
        self.signum: int | None = None
        self._reading = False
        self._saved: dict[int, Any] = {}

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is None:
            self.signum = signum
            if self._reading and self.graceful:
                raise StopRequested
            if self.graceful:
                # os.write, not click.echo: the handler may run inside a write to stderr
                os.write(2, f"simhash-pg: {signal.Signals(signum).name}: stopping after this "
                            "batch (send it again to stop at once)\n".encode())
                return
        raise KeyboardInterrupt

    def pull(self, it: Iterator[T]) -> T:
        """``next(it)``, or StopRequested if the first signal comes meanwhile."""
        self._reading = True
        try:
            return next(it)
        finally:
            self._reading = False

    @property
    def reason(self) -> str | None:
        """Why to stop, once a signal came; else None."""
        if self.signum is None:
            return None
        return f"interrupted by {signal.Signals(self.signum).name}"

    @property
    def exit_code(self) -> int:
        return 128 + (self.signum or signal.SIGINT)

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                old = signal.getsignal(sig)
                if old is not signal.SIG_IGN:
                    self._saved[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, old in self._saved.items():
            signal.signal(sig, old if old is not None else signal.SIG_DFL)
        self._saved.clear()
