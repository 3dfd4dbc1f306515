"""Directories only the server's user can enter, made and checked without following links.

The home, data and socket directories may sit at predictable paths in shared
places such as /tmp, where another user could plant a symbolic link or a
directory of their own first: each is opened with O_NOFOLLOW and its owner
and mode checked before it is used. The directories above the home are never
changed; :func:`access_hint` explains a failure they cause.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from pathlib import Path

from simhash_pg.db.server_auth import (
    ROOT_HOME,
    SYSTEM_USER,
    ServerError,
    os_user_name,
    server_ids,
)


def open_dir(path: Path, what: str, advice: str = "remove it") -> int:
    """An fd on the directory ``path`` itself, never on what a symbolic link there names.

    Only a link or a file where the directory should be is a planted thing
    to remove; any other failure (EACCES above all: another user's
    directory) is said as it is, and nobody is told to delete anything.
    """
    try:
        return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as exc:
        if exc.errno == errno.EACCES:
            raise denied(what, path) from exc
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise ServerError(f"{what} {path}: cannot open it: {exc.strerror}") from exc
        kind = "a symbolic link" if path.is_symlink() else "not a directory"
        raise ServerError(
            f"{what} {path} is {kind}: refusing to use it (someone may have planted it "
            f"there to take over what it points to); {advice}"
        ) from exc


def denied(what: str, path: Path) -> ServerError:
    """EACCES on ``path`` or below: which directory is closed to this user, whose it is,
    and what to do instead (never to delete it: it is someone's data)."""
    import pwd

    uid = os.geteuid()
    closed = _closed_directory(path, uid, os.getegid()) if uid else None
    where = "read it" if closed in (None, path) else f"enter {closed}"
    try:
        you = f"{pwd.getpwuid(uid).pw_name}, uid {uid}"
    except KeyError:
        you = f"uid {uid}"
    return ServerError(
        f"{what} {path}: permission denied: you ({you}) cannot {where}"
        f"{_owned_by(closed or path)}. Run simhash-pg as the user who made it, or set "
        "SIMHASH_PG_HOME to a directory of your own"
    )


def _owned_by(path: Path) -> str:
    """", owned by uid N (mode)" for a message, or "" when even that cannot be seen."""
    try:
        st = path.stat()
    except OSError:
        return " (nor see who owns it)"
    return f" (owned by uid {st.st_uid}, {stat.filemode(st.st_mode)})"


def private_dir(
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
    fd = open_dir(path, what, advice)
    try:
        st = os.fstat(fd)
        if created and ids:
            os.fchown(fd, *ids)
        elif st.st_uid != owner:
            raise ServerError(
                f"{what} {path} exists and is owned by uid {st.st_uid}, not by the "
                f"server's user ({os_user_name(owner)}): refusing to use it; {advice}"
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


def own_home(home: Path) -> None:
    """Make the home if it is missing; refuse one that others could tamper with.

    The home belongs to whoever starts the server (its lock file is written
    there, by root when root starts it); the data and socket directories
    inside belong to the server's user. A home made here is 0700, or 0711
    under root so that the server's user can pass through. The directories
    above it are never changed: the server's user must already be able to
    enter them (see :func:`access_hint`).
    """
    try:
        home.parent.mkdir(parents=True, exist_ok=True)
        os.mkdir(home, 0o700)
        created = True
    except FileExistsError:
        created = False
    except PermissionError as exc:  # a directory above it this user may not enter
        raise denied("the server's home", home) from exc
    fd = open_dir(home, "the server's home")
    try:
        st = os.fstat(fd)
        if created:
            os.fchmod(fd, 0o711 if os.geteuid() == 0 else 0o700)
        elif st.st_uid != os.geteuid():
            raise ServerError(
                f"the server's home {home} belongs to uid {st.st_uid}, not to you "
                f"(uid {os.geteuid()}): start the server as its owner, or set "
                "SIMHASH_PG_HOME to a directory of your own"
            )
        elif st.st_mode & 0o002 or (st.st_mode & 0o020 and not _private_group(st)):
            raise ServerError(
                f"the server's home {home} is writable by other users "
                f"({stat.filemode(st.st_mode)}), who could replace the server's files: "
                f"chmod go-w {home}"
            )
    finally:
        os.close(fd)


def access_hint(*paths: Path) -> str:
    """Why the server's user may have failed to reach ``paths``, if that is the cause."""
    ids = server_ids()
    if ids is None:
        return ""
    for path in paths:
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


def remove_own_dir(path: Path) -> None:
    """Remove the directory ``path`` only if the server's user owns it (never a link)."""
    try:
        st = path.lstat()
    except OSError:
        return
    ids = server_ids()
    if stat.S_ISDIR(st.st_mode) and st.st_uid == (ids[0] if ids else os.geteuid()):
        shutil.rmtree(path, ignore_errors=True)
