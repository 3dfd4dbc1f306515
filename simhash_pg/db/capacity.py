"""Whether the server has room for ``serve``'s connections, checked once at start.

Each worker opens a pool of up to ``--pool-size`` connections. ``serve``
logs in as a role that is no superuser (cli/serve.py, db/roles.py), so
PostgreSQL keeps ``superuser_reserved_connections`` (and, 16+,
``reserved_connections``) from it: however busy ``serve`` gets, an operator
can still connect. What ``serve`` can take is the rest, less what other
clients hold, and at most its role's ``CONNECTION LIMIT``. A pool that does
not fit would only fail later, under load (``FATAL: remaining connection
slots are reserved``, or ``too many connections for role``, each request a
503), so ``serve`` refuses to start instead, naming the numbers. Served as
a superuser anyway (``--allow-superuser``), the same check keeps it out of
the reserved slots it could take.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg

__all__ = ["Room", "check_room", "room"]

# each worker's handshake connection at start (closed before its pool opens;
# counted all the same, as workers start side by side)
MARGIN_PER_WORKER = 1

# Other clients' connections: to a role without pg_read_all_stats, other
# users' rows show no backend_type; a client backend is connected to a
# database, so those count when they have one (autovacuum workers, which do
# too, err on the safe side).
_ROOM = """
SELECT current_setting('max_connections')::int,
       current_setting('superuser_reserved_connections')::int,
       coalesce(current_setting('reserved_connections', true), '0')::int,
       (SELECT count(*)::int FROM pg_stat_activity
        WHERE coalesce(backend_type, 'client backend') = 'client backend'
          AND datid IS NOT NULL AND pid <> pg_backend_pid()),
       r.rolname, r.rolconnlimit,
       (SELECT count(*)::int FROM pg_stat_activity a
        WHERE a.usesysid = r.oid AND a.datid IS NOT NULL AND a.pid <> pg_backend_pid())
FROM pg_roles r WHERE r.rolname = coalesce(%s, current_user)
"""


@dataclass(frozen=True)
class Room:
    max_connections: int
    superuser_reserved: int
    reserved: int  # reserved_connections (PostgreSQL 16+), for pg_use_reserved_connections
    in_use: int  # other clients' connections now, not this one
    role: str = ""  # the role serve logs in as
    role_limit: int = -1  # its CONNECTION LIMIT (-1: none)
    role_in_use: int = 0  # its connections now, not this one

    @property
    def free(self) -> int:
        """The slots serve may take: none of the reserved ones, within its role's limit."""
        free = self.max_connections - self.superuser_reserved - self.reserved - self.in_use
        if self.role_limit >= 0:
            free = min(free, self.role_limit - self.role_in_use)
        return free


def room(conn: psycopg.Connection[Any], role: str | None = None) -> Room:
    """The server's connection limits and the connections in use, over ``conn``, for
    ``serve`` logging in as ``role`` (None: the connection's own)."""
    row = conn.execute(_ROOM, [role]).fetchone()
    assert row is not None  # current_user's row, or the role serve checked exists
    return Room(*row)


def check_room(r: Room, workers: int, pool_size: int) -> None:
    """ValueError naming the numbers when ``workers`` pools of ``pool_size`` do not fit."""
    need = workers * (pool_size + MARGIN_PER_WORKER)
    if need <= r.free:
        return
    limit = (f"; and role {r.role} has CONNECTION LIMIT {r.role_limit}, {r.role_in_use} "
             "in use" if r.role_limit >= 0 else "")
    raise ValueError(
        f"serve may open {need} connections ({workers} worker(s) x (--pool-size {pool_size} "
        f"+ {MARGIN_PER_WORKER} at start)), but the server has {max(r.free, 0)} free for it: "
        f"max_connections {r.max_connections} - superuser_reserved_connections "
        f"{r.superuser_reserved} - reserved_connections {r.reserved} - {r.in_use} in use"
        f"{limit}. Lower --workers or --pool-size, or raise max_connections")
