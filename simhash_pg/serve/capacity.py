"""Whether the server has room for ``serve``'s connections, checked once at start.

Each worker opens a pool of up to ``--pool-size`` connections. If workers x
pool size exceeds what the server allows, a busy ``serve`` takes every slot,
and then the slots PostgreSQL keeps for the superuser (which ``serve``,
connected as a superuser, may also take): no one, not even an operator, can
connect to fix it. So ``serve`` refuses to start when its connections would
not fit into the slots others leave free and the reserved ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Room", "check_room", "room"]

# each worker's handshake connection at start (closed before its pool opens;
# counted all the same, as workers start side by side)
MARGIN_PER_WORKER = 1

_ROOM = """
SELECT current_setting('max_connections')::int,
       current_setting('superuser_reserved_connections')::int,
       coalesce(current_setting('reserved_connections', true), '0')::int,
       (SELECT count(*)::int FROM pg_stat_activity
        WHERE backend_type = 'client backend' AND pid <> pg_backend_pid())
"""


@dataclass(frozen=True)
class Room:
    max_connections: int
    superuser_reserved: int
    reserved: int  # reserved_connections (PostgreSQL 16+), for pg_use_reserved_connections
    in_use: int  # other clients' connections now, not this one

    @property
    def free(self) -> int:
        return self.max_connections - self.superuser_reserved - self.reserved - self.in_use


def room(conn: Any) -> Room:
    """The server's connection limits and the connections in use, over ``conn``."""
    return Room(*conn.execute(_ROOM).fetchone())


def check_room(r: Room, workers: int, pool_size: int) -> None:
    """ValueError naming the numbers when ``workers`` pools of ``pool_size`` do not fit."""
    need = workers * (pool_size + MARGIN_PER_WORKER)
    if need <= r.free:
        return
    raise ValueError(
        f"serve may open {need} connections ({workers} worker(s) x (--pool-size {pool_size} "
        f"+ {MARGIN_PER_WORKER} at start)), but the server has {max(r.free, 0)} free: "
        f"max_connections {r.max_connections} - superuser_reserved_connections "
        f"{r.superuser_reserved} - reserved_connections {r.reserved} - {r.in_use} in use. "
        "Lower --workers or --pool-size, or raise max_connections")
