"""``simhash-pg bench store``'s floor race, with the floor in a database of its own."""

from __future__ import annotations

import time

import numpy as np
import psycopg
from psycopg import sql

from lab.bench.floor import FLOOR_TABLE
from lab.bench.store import _adds
from simhash_pg.store import SimhashStore


def test_the_floor_races_in_its_own_database(pg_dsn: str, capsys: object) -> None:
    info = psycopg.conninfo.conninfo_to_dict(pg_dsn)
    floor_db = f"{info['dbname']}_floor"
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(floor_db)))
    floor_dsn = psycopg.conninfo.make_conninfo(pg_dsn, dbname=floor_db)
    try:
        fps = np.random.default_rng(3).integers(0, 2**64, size=3000, dtype=np.uint64)
        with psycopg.connect(pg_dsn, autocommit=True) as conn, SimhashStore(pg_dsn) as store:
            store.bulk_load(fps)
            _adds(conn, store, fps, 2000, 1, False, 3, floor_dsn)
            # the floor table went where it was sent, and is gone after the race
            assert conn.execute("SELECT to_regclass(%s)", [FLOOR_TABLE]).fetchone() == (None,)
        out = capsys.readouterr().out  # type: ignore[attr-defined]
        assert "in its own server" in out and out.count("x the floor") == 3
        # the floor's statements ran in its database: its build (table, COPY,
        # key, 4 indexes, vacuum, prewarm), then a checkpoint, a COPY per race
        # and the drop, each committed on its own. (Its inserted rows are not
        # countable: statistics of a table dropped before they were flushed go.)
        commits = 0
        with psycopg.connect(pg_dsn, autocommit=True) as c:  # from outside the floor's
            for _ in range(50):  # statistics reach the view a moment after a backend ends
                row = c.execute("SELECT xact_commit FROM pg_stat_database"
                                " WHERE datname = %s", [floor_db]).fetchone()
                commits = row[0] if row else 0
                if commits >= 14:
                    break
                time.sleep(0.1)
        assert commits >= 14
    finally:
        with psycopg.connect(pg_dsn, autocommit=True) as admin:
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier(floor_db)))
