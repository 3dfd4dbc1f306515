"""Daily partitions in the past, for tests that place rows on earlier days."""

from __future__ import annotations

import psycopg


def past_day_partitions(pg: psycopg.Connection, days_back: int) -> list[str]:
    """Partitions for the last ``days_back`` UTC days (their rows move in); those made."""
    made = pg.execute(
        "SELECT simhash_create_partition((now() AT TIME ZONE 'UTC')::date - d)"
        " FROM generate_series(1, %s) AS d",
        [days_back],
    ).fetchall()
    return [r[0] for r in made if r[0] is not None]
