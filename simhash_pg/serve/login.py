"""Who ``serve``'s workers log in as, decided once at start (cli/serve.py).

On the embedded server: serve's own login (db/roles.py), made by the
store's owner if missing, reached by peer authentication. With a DSN of the
user's: that DSN, if its role may serve (never a superuser, unless the user
says so).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import psycopg

from simhash_pg.db.roles import check_login, dsn_as, ensure_serve_login, login_of

__all__ = ["LoginError", "ServeLogin", "check_serve_login", "serve_login"]


class LoginError(RuntimeError):
    """serve's workers could not log in as the role chosen for them."""


@dataclass(frozen=True)
class ServeLogin:
    dsn: str  # what the workers connect with
    role: str  # the role they log in as
    warnings: tuple[str, ...] = ()


def serve_login(conn: psycopg.Connection[Any], dsn: str, *, embedded: bool, read_only: bool,
                allow_superuser: bool) -> ServeLogin:
    """The workers' login, over ``conn``: the store's owner's on the embedded server
    (``embedded``), else the connection of the user's ``dsn``. ValueError: refused."""
    if embedded:
        role = ensure_serve_login(conn, read_only=read_only)
        return ServeLogin(dsn_as(dsn, role), role)
    login = login_of(conn)
    warnings = check_login(login, read_only=read_only, allow_superuser=allow_superuser)
    return ServeLogin(dsn, login.name, tuple(warnings))


def check_serve_login(dsn: str, role: str, wait: float = 5.0) -> None:
    """Log in as the workers will, once, and check it is as ``role``.

    Tried again for up to ``wait`` seconds: a server whose pg_hba.conf was
    just rewritten (an older embedded server, upgraded by this start) reloads
    it a moment after being told to.
    """
    import psycopg

    from simhash_pg.db.admin import logged_in_as

    try:
        user = logged_in_as(dsn, wait)
    except psycopg.OperationalError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
        raise LoginError(f"serve cannot log in as {role}: {first}") from None
    if user != role:
        raise LoginError(f"serve logged in as {user or '?'}, not as {role}")
