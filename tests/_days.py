"""Daily partitions in the past, for tests that place rows on earlier days."""

from __future__ import annotations

import datetime

import psycopg


def past_day_partitions(pg: psycopg.Connection, days_back: int) -> list[str]:
    """Partitions for the last ``days_back`` UTC days (their rows move in); those made."""
    made = pg.execute(
        "SELECT simhash_create_partition((now() AT TIME ZONE 'UTC')::date - d)"
        " FROM generate_series(1, %s) AS d",
        [days_back],
    ).fetchall()
    return [r[0] for r in made if r[0] is not None]



def utc_today() -> datetime.date:
    return datetime.datetime.now(datetime.timezone.utc).date()


def catch_up_to_today(conn: psycopg.Connection, migrated_on: datetime.date) -> bool:
    """Lay a clone of the template out as a migration made today would, if the template was
    migrated on an earlier UTC day: the session's template is made once, so a run crossing
    midnight UTC otherwise hands later tests yesterday's layout (a partition for yesterday,
    none for the day after tomorrow). Returns whether it had to; commits if so.

    The clone holds no rows: dropping the partitions before today loses nothing. (The
    day is the client's clock: the test server runs beside it.)
    """
    if utc_today() == migrated_on:
        return False
    conn.execute("SELECT count(*) FROM simhash_drop_partitions(now() - %s::timestamptz)",
                 [datetime.datetime.combine(utc_today(), datetime.time(),
                                            datetime.timezone.utc)])
    # today and one day ahead: a fresh store's layout (test_fresh_store_layout)
    conn.execute("SELECT count(*) FROM simhash_ensure_partitions(1)")
    conn.commit()
    return True
