"""The roles a store's clients log in as, and ``simhash-pg serve``'s own logins.

The migrations make two NOLOGIN group roles: ``simhash_reader`` (revision
0002: SELECT and the read functions) and ``simhash_writer`` (revision 0020:
a reader that may also add, update and remove documents and make the
partitions ahead). A login role that is a member of one gets its rights.

``serve`` never logs in as a superuser (issue 29): on the embedded server it
logs in as ``simhash_serve`` (a member of simhash_writer) or, with
``--read-only``, as ``simhash_serve_reader`` (a member of simhash_reader),
which the store's owner makes here at every start if missing; pg_hba.conf
lets them in by ``peer``, as the OS users who may be the superuser
(server_auth.py), so no password exists anywhere. With a DSN of the
user's, :func:`check_login` says whether its role may serve.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import psycopg

__all__ = ["READER", "SERVE_LOGINS", "WRITER", "Login", "check_login", "dsn_as",
           "ensure_serve_login", "login_of"]

READER = "simhash_reader"
WRITER = "simhash_writer"
# serve's login on the embedded server, by read_only
SERVE_LOGINS = {False: "simhash_serve", True: "simhash_serve_reader"}
_COMMENT = "simhash-pg: the login of `simhash-pg serve` (a member of {group})"

# Attributes a login of serve's must not have (pg_roles column: ALTER ROLE's word):
# each is more than a writer needs.
_POWERS = {"rolsuper": "SUPERUSER", "rolcreaterole": "CREATEROLE", "rolcreatedb": "CREATEDB",
           "rolreplication": "REPLICATION", "rolbypassrls": "BYPASSRLS"}

_LOGIN = """
SELECT r.rolname, r.rolsuper, r.rolcreaterole OR r.rolcreatedb OR r.rolreplication
           OR r.rolbypassrls,
       pg_has_role(r.oid, c.relowner, 'USAGE'),
       has_table_privilege(r.oid, c.oid, 'INSERT'),
       r.rolconnlimit
FROM pg_roles r, pg_class c
WHERE r.rolname = {role} AND c.oid = 'simhash_documents'::regclass
"""


@dataclass(frozen=True)
class Login:
    """What a role may do to the store, as far as serve cares."""

    name: str
    superuser: bool
    powers: bool  # CREATEROLE, CREATEDB, REPLICATION or BYPASSRLS
    owner: bool  # owns simhash_documents (or is a member of its owner): DDL, DROP
    can_write: bool  # INSERT on simhash_documents
    connection_limit: int  # rolconnlimit; -1: none


def login_of(conn: psycopg.Connection[Any], role: str | None = None) -> Login:
    """The :class:`Login` of ``role`` (None: the connection's current_user)."""
    from psycopg import sql

    who = sql.Literal(role) if role is not None else sql.SQL("current_user")
    row = conn.execute(sql.SQL(_LOGIN).format(role=who)).fetchone()
    if row is None:
        raise ValueError(f"role {role} does not exist")
    return Login(*row)


def check_login(login: Login, *, read_only: bool, allow_superuser: bool) -> list[str]:
    """Whether ``serve`` may log in as ``login`` (a DSN the user gave): warnings to print.

    ValueError, naming the fix, for a superuser (unless ``allow_superuser``)
    and for a role that cannot write unless serve is ``read_only``.
    """
    warnings: list[str] = []
    group = READER if read_only else WRITER
    if login.superuser:
        if not allow_superuser:
            raise ValueError(
                f"the DSN logs in as {login.name}, a superuser: every request would run with "
                "superuser rights, and a busy server could take the connections PostgreSQL "
                f"keeps for superusers. Give a DSN of a login role that is a member of {group} "
                f"(CREATE ROLE serve LOGIN PASSWORD '...'; GRANT {group} TO serve), or leave "
                "--dsn out to serve the embedded server (serve then logs in as a role of its "
                "own); or, knowing this, pass --allow-superuser")
        warnings.append(f"serving as the superuser {login.name} (--allow-superuser)")
    elif login.owner:
        warnings.append(f"the DSN logs in as {login.name}, the store's owner: a request "
                        "could alter or drop its tables. Prefer a member of " + group)
    elif login.powers:
        warnings.append(f"the DSN logs in as {login.name}, which may create roles or "
                        "databases, replicate or bypass row security: more than serve needs")
    if not read_only and not login.can_write:
        raise ValueError(
            f"role {login.name} may not add documents (no INSERT on simhash_documents): "
            f"GRANT {WRITER} TO {login.name}, or serve it --read-only")
    if read_only and login.can_write:
        warnings.append(f"--read-only, but role {login.name} may write: serve refuses writes "
                        f"itself; a member of {READER} alone would have the database refuse "
                        "them too")
    return warnings


def ensure_serve_login(conn: psycopg.Connection[Any], *, read_only: bool) -> str:
    """Make serve's login role on this server if missing, as the store's owner; its name.

    A member of simhash_writer (simhash_reader if ``read_only``), LOGIN and
    nothing more; no password (pg_hba.conf lets it in by peer). A role of
    that name with more rights (made by someone else, or changed since) is
    refused, not changed: ValueError naming it.
    """
    import psycopg
    from psycopg import sql

    name = SERVE_LOGINS[read_only]
    group = READER if read_only else WRITER
    role = sql.Identifier(name)
    found = conn.execute(
        sql.SQL("SELECT rolcanlogin, {} FROM pg_roles WHERE rolname = %s")
        .format(sql.SQL(", ").join(map(sql.Identifier, _POWERS))), [name]).fetchone()
    if found is None:
        try:
            with conn.transaction():
                conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(role))
                conn.execute(sql.SQL("COMMENT ON ROLE {} IS {}").format(
                    role, sql.Literal(_COMMENT.format(group=group))))
        except (psycopg.errors.DuplicateObject, psycopg.errors.UniqueViolation):
            pass  # another serve made it at the same moment
    else:
        can_login, *powers = found
        extra = [word for word, on in zip(_POWERS.values(), powers, strict=True) if on]
        if extra:
            raise ValueError(
                f"role {name} exists with {', '.join(extra)}: serve will not log in as it. "
                f"ALTER ROLE {name} {' '.join('NO' + w for w in extra)}, or drop it (serve "
                "makes it again)")
        if not can_login:
            conn.execute(sql.SQL("ALTER ROLE {} LOGIN").format(role))
    conn.execute(sql.SQL("GRANT {} TO {}").format(sql.Identifier(group), role))
    if read_only:
        login = login_of(conn, name)
        if login.can_write:
            raise ValueError(
                f"role {name} may write to the store (a member of {WRITER}, or granted "
                f"INSERT): it must only read. REVOKE {WRITER} FROM {name}")
    return name


def dsn_as(dsn: str, user: str) -> str:
    """``dsn`` logging in as ``user``, without the password (peer needs none)."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    params = {k: v for k, v in conninfo_to_dict(dsn).items()
              if k not in ("password", "passfile") and v is not None}
    params["user"] = user
    return make_conninfo("", **params)
