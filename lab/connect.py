"""The lab's own sessions on a store: autocommit, search_path at the store's schema.

Benchmarks and experiments read and load the store's tables by their short
names, as the store's own sessions do (simhash_pg.db.layout).
"""

from __future__ import annotations

from typing import Any

import psycopg

from simhash_pg.db import layout


def connect(dsn: str) -> psycopg.Connection[Any]:
    conn = psycopg.connect(dsn, autocommit=True)
    layout.use_schema(conn, layout.schema_name())
    return conn
