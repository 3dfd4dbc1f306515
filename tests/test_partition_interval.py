"""Revision 0013: the partition interval (day, week or month), its functions, retention by it."""

from __future__ import annotations

import itertools
import json
import random
from datetime import date, datetime, timedelta, timezone

import psycopg
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simhash_pg.cli import cli
from simhash_pg.db import migrate
from simhash_pg.store import SchemaVersionError, SimhashStore
from simhash_pg.store.retention import purge, purge_candidates

HYPO = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
INTERVALS = ("day", "week", "month")
# times within two years of 2026, to the microsecond, as timestamptz holds them
TIMES = st.datetimes(min_value=datetime(2025, 1, 1), max_value=datetime(2027, 12, 31),
                     timezones=st.just(timezone.utc))


def _bounds(at: datetime, interval: str) -> tuple[datetime, datetime]:
    """The UTC interval holding ``at``, by hand: weeks from Monday, months from the 1st."""
    day = at.astimezone(timezone.utc).date()
    if interval == "week":
        lo = day - timedelta(days=day.weekday())
        hi = lo + timedelta(days=7)
    elif interval == "month":
        lo = day.replace(day=1)
        hi = date(lo.year + lo.month // 12, lo.month % 12 + 1, 1)
    else:
        lo, hi = day, day + timedelta(days=1)

    def utc(d: date) -> datetime:
        return datetime(d.year, d.month, d.day, tzinfo=timezone.utc)

    return utc(lo), utc(hi)


def _partitions(pg: psycopg.Connection) -> list[tuple[str, datetime | None, datetime | None]]:
    return [(r[0], r[1], r[2]) for r in pg.execute(
        "SELECT partition::text, lower_bound, upper_bound FROM simhash_partitions()")]


def _recorded(pg: psycopg.Connection) -> object:
    row = pg.execute("SELECT value FROM simhash_meta WHERE name = 'partition_interval'").fetchone()
    return row[0] if row else None


@HYPO
@given(at=TIMES, interval=st.sampled_from(INTERVALS))
def test_bounds_are_the_utc_day_week_or_month(pg: psycopg.Connection, at: datetime,
                                              interval: str) -> None:
    got = pg.execute("SELECT * FROM simhash_partition_bounds(%s, %s)", [at, interval]).fetchone()
    assert got == _bounds(at, interval)
    assert got[0] <= at < got[1]


def test_bounds_refuse_what_is_not_an_interval(pg: psycopg.Connection) -> None:
    for at, interval in ((datetime.now(timezone.utc), "hour"), (datetime.now(timezone.utc), None),
                         ("infinity", "day"), (None, "day")):
        with pytest.raises(psycopg.errors.InvalidParameterValue):
            pg.execute("SELECT * FROM simhash_partition_bounds(%s, %s)", [at, interval])
    assert pg.execute("SELECT simhash_partition_interval()").fetchone() == ("day",)


@HYPO
@given(at=TIMES, interval=st.sampled_from(INTERVALS))
def test_any_time_lands_in_the_partition_whose_bounds_hold_it(
    pg: psycopg.Connection, at: datetime, interval: str
) -> None:
    # partitions of the three intervals pile up over the examples: a new one
    # fills the gap around its day, never overlapping an older one
    made = pg.execute("SELECT simhash_create_partition(%s, %s)",
                      [at.astimezone(timezone.utc).date(), interval]).fetchone()
    row = pg.execute(
        "INSERT INTO simhash_documents (fingerprint, created_at) VALUES (1, %s)"
        " RETURNING tableoid::regclass::text", [at]).fetchone()
    assert row is not None
    parts = {name: (lo, hi) for name, lo, hi in _partitions(pg)}
    assert row[0] != "simhash_documents_default"
    lo, hi = parts[row[0]]
    assert lo is not None and hi is not None and lo <= at < hi
    want_lo, want_hi = _bounds(at, interval)
    if made is not None and made[0] is not None:  # made now: within the interval's bounds
        assert made[0] == row[0]
        assert want_lo <= lo and hi <= want_hi
        assert made[0] == "simhash_documents_p" + lo.strftime("%Y%m%d")
    bounds = sorted((lo, hi) for lo, hi in parts.values() if lo is not None)
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(bounds))


def test_a_partition_fills_the_gap_between_days_already_made(pg: psycopg.Connection) -> None:
    # A Wednesday's and a Friday's day partitions; the week's partition around
    # the Monday stops at the Wednesday, the one around the Thursday is that day.
    # The week is weeks ahead of today: fixed dates met the store's own today's
    # and tomorrow's partitions once the calendar reached them.
    today = datetime.now(timezone.utc).date()
    monday = today + timedelta(days=21 + (7 - today.weekday()) % 7)
    day = [monday + timedelta(days=i) for i in range(7)]  # Monday .. Sunday
    pg.execute("SELECT simhash_create_partition(%s, 'day'), simhash_create_partition(%s, 'day')",
               [day[2], day[4]])
    assert pg.execute("SELECT simhash_create_partition(%s, 'week'),"
                      " simhash_create_partition(%s, 'week'),"
                      " simhash_create_partition(%s, 'week'),"
                      " simhash_create_partition(%s, 'week')",
                      [day[0], day[3], day[5], day[6]]).fetchone() == (
        f"simhash_documents_p{day[0]:%Y%m%d}", f"simhash_documents_p{day[3]:%Y%m%d}",
        f"simhash_documents_p{day[5]:%Y%m%d}", None)
    got = {name: (lo, hi) for name, lo, hi in _partitions(pg)}

    def utc(d: date) -> datetime:
        return datetime(d.year, d.month, d.day, tzinfo=timezone.utc)

    assert got[f"simhash_documents_p{day[0]:%Y%m%d}"] == (utc(day[0]), utc(day[2]))
    assert got[f"simhash_documents_p{day[5]:%Y%m%d}"] == (utc(day[5]), utc(day[6] + timedelta(1)))


def test_rows_waiting_in_the_default_partition_move_into_their_week(
    pg: psycopg.Connection
) -> None:
    pg.execute("INSERT INTO simhash_documents (key, fingerprint, created_at)"
               " VALUES ('w', 5, '2026-06-10 12:00+00'), ('x', 6, '2026-06-20 12:00+00')")
    assert pg.execute("SELECT simhash_create_partition('2026-06-09', 'week')").fetchone() == (
        "simhash_documents_p20260608",)
    assert pg.execute(
        "SELECT key, tableoid::regclass::text FROM simhash_documents ORDER BY key").fetchall() == [
        ("w", "simhash_documents_p20260608"), ("x", "simhash_documents_default")]
    assert pg.execute("SELECT key, id FROM simhash_keys ORDER BY key").fetchall() == (
        pg.execute("SELECT key, id FROM simhash_documents ORDER BY key").fetchall())


def test_ensure_makes_the_next_week_only_days_ahead_of_it(pg: psycopg.Connection) -> None:
    pg.execute("SELECT simhash_set_partition_interval('week', 0)").fetchall()
    today = datetime.now(timezone.utc)
    this_week = _bounds(today, "week")
    names = [n for n, lo, _ in _partitions(pg) if lo is not None]
    # no empty day made ahead is left: this week's partition only
    assert names == ["simhash_documents_p" + this_week[0].strftime("%Y%m%d")]
    days_left = (this_week[1] - today).days  # whole days until next Monday
    assert pg.execute("SELECT * FROM simhash_ensure_partitions(%s)", [days_left]).fetchall() == []
    assert pg.execute("SELECT * FROM simhash_ensure_partitions(%s)",
                      [days_left + 1]).fetchall() == [
        ("simhash_documents_p" + this_week[1].strftime("%Y%m%d"),)]
    assert _recorded(pg) == "week"
    assert pg.execute("SELECT simhash_partition_interval()").fetchone() == ("week",)


@HYPO
@given(
    interval=st.sampled_from(INTERVALS),
    ages=st.lists(st.floats(min_value=0.0, max_value=75.0), min_size=1, max_size=40),
    made=st.lists(st.booleans(), min_size=40, max_size=40),
    retention=st.floats(min_value=0.01, max_value=45.0),
    whole=st.sampled_from([None, True, False]),
)
def test_retention_never_drops_a_row_younger_than_the_window(
    pg: psycopg.Connection, interval: str, ages: list[float], made: list[bool],
    retention: float, whole: bool | None,
) -> None:
    pg.execute("TRUNCATE simhash_documents")
    for name, lo, _ in _partitions(pg):
        if lo is not None:
            pg.execute(f"DROP TABLE {name}")
    pg.execute("SELECT simhash_set_partition_interval(%s)", [interval]).fetchall()
    for age, part in zip(ages, made, strict=False):
        if part:  # else the row waits in the default partition
            pg.execute("SELECT simhash_create_partition(((now() - %s * interval '1 day')"
                       " AT TIME ZONE 'UTC')::date)", [age])
    ids = [pg.execute("INSERT INTO simhash_documents (key, fingerprint, created_at) VALUES"
                      " (%s, %s, now() - %s * interval '1 day') RETURNING id",
                      [f"r{i}", i, age]).fetchone()[0]  # type: ignore[index]
           for i, age in enumerate(ages)]
    before = dict(pg.execute("SELECT id, created_at FROM simhash_documents").fetchall())
    # one cutoff for the count and the purge (each would read its own now())
    row = pg.execute("SELECT now() - %s::interval", [timedelta(days=retention)]).fetchone()
    assert row is not None
    _, would = purge_candidates(pg, row[0], whole_partitions=whole)
    res = purge(pg, row[0], batch_size=7, whole_partitions=whole)
    after = dict(pg.execute(
        "SELECT d.id, p.upper_bound FROM simhash_documents d"
        " JOIN simhash_partitions() p ON p.partition = d.tableoid").fetchall())
    assert set(after) <= set(ids)
    for i, created in before.items():
        if created >= res.cutoff:
            assert i in after  # never younger than the window
        elif whole is False or (whole is None and interval == "day"):
            assert i not in after  # exact: nothing older stays
        elif i in after:  # whole partitions: an old row stays only in a partly old one
            assert after[i] is not None and after[i] > res.cutoff
    assert res.deleted == len(before) - len(after) == would
    if whole or (whole is None and interval != "day"):
        assert res.batches == 0
    assert pg.execute("SELECT count(*) FROM simhash_keys").fetchone() == (len(after),)


def test_a_new_store_records_its_interval_and_lays_out_its_partitions(
    pg_dsn: str, pg: psycopg.Connection
) -> None:
    with SimhashStore(pg_dsn, partition_interval="week", retention=timedelta(days=30)) as store:
        assert store.partition_interval == "week"
        store.add_many([1, 2, 3], dedup=False)
    assert _recorded(pg) == "week"
    lows = [lo for _, lo, _ in _partitions(pg) if lo is not None]
    week = _bounds(datetime.now(timezone.utc), "week")
    # the fresh store's empty days ahead went: this week's partition, perhaps the next
    assert lows[0] == week[0] and lows in ([week[0]], [week[0], week[1]])
    with SimhashStore(pg_dsn) as store:  # none asked for: the recorded one
        assert store.partition_interval == "week"
    # back to days: this week's partition holds rows and stays; the days after it
    # are made by day (none here: it reaches past them)
    with SimhashStore(pg_dsn, partition_interval="day", retention=timedelta(days=2)) as store:
        assert store.partition_interval == "day"
        assert store.count() == 3
    assert _recorded(pg) == "day"
    assert next(lo for _, lo, _ in _partitions(pg) if lo is not None) == week[0]
    with pytest.raises(ValueError, match="partition_interval"):
        SimhashStore(pg_dsn, partition_interval="hour")  # type: ignore[arg-type]


def test_only_the_owner_changes_the_interval(pg_dsn: str, pg: psycopg.Connection) -> None:
    from psycopg import sql
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    role = f"interval_writer_{random.getrandbits(32):x}"
    pg.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD 'x'").format(sql.Identifier(role)))
    pg.execute(sql.SQL("GRANT USAGE ON SCHEMA simhash TO {}").format(sql.Identifier(role)))
    pg.execute(sql.SQL("GRANT SELECT, INSERT ON simhash_meta TO {}").format(sql.Identifier(role)))
    pg.execute(sql.SQL("GRANT SELECT ON simhash_documents, alembic_version TO {}").format(
        sql.Identifier(role)))
    params = {k: v for k, v in conninfo_to_dict(pg_dsn).items() if v is not None}
    params |= {"user": role, "password": "x"}
    try:
        with SimhashStore(make_conninfo(**params), migrate=False) as store:
            assert store.partition_interval == "day"
        with pytest.raises(SchemaVersionError, match="only its owner"):
            SimhashStore(make_conninfo(**params), migrate=False, partition_interval="week")
        assert _recorded(pg) == "day"
    finally:
        pg.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
        pg.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


def test_purge_command_sets_the_interval(pg_dsn: str, pg: psycopg.Connection) -> None:
    # a dry run counts as a monthly purge would (the partly old day's rows
    # stay), and records nothing
    pg.execute("SELECT simhash_create_partition((now() AT TIME ZONE 'UTC')::date - 40)")
    pg.execute("INSERT INTO simhash_documents (fingerprint, created_at) VALUES (1,"
               " ((now() AT TIME ZONE 'UTC')::date - 40)::timestamp AT TIME ZONE 'UTC'"
               " + interval '1 second')")
    counts = {}
    for interval in ("day", "month"):
        dry = CliRunner().invoke(cli, ["purge", "--older-than", "40d", "--dry-run", "--json",
                                       "--partition-interval", interval, "--dsn", pg_dsn])
        assert dry.exit_code == 0, dry.output
        counts[interval] = json.loads(dry.output)["would_delete"]
    assert counts == {"day": 1, "month": 0}
    assert _recorded(pg) in (None, "day")
    out = CliRunner().invoke(cli, ["purge", "--older-than", "30d", "--partition-interval",
                                   "month", "--json", "--dsn", pg_dsn])
    assert out.exit_code == 0, out.output
    # its day partition is wholly before a 30-day cutoff: dropped
    assert json.loads(out.output)["dropped_partitions"] == [
        "simhash_documents_p" + (datetime.now(timezone.utc).date() - timedelta(days=40)
                                 ).strftime("%Y%m%d")]
    assert _recorded(pg) == "month"
    month = _bounds(datetime.now(timezone.utc), "month")
    assert next(lo for _, lo, _ in _partitions(pg) if lo is not None) == month[0]


def test_upgrade_and_downgrade_through_alembic(pg_dsn: str, pg: psycopg.Connection) -> None:
    with SimhashStore(pg_dsn, partition_interval="week", retention=timedelta(days=30)) as store:
        store.add_many([0x1234, 0x1235], dedup=False)
    rows = pg.execute("SELECT id, fingerprint, created_at, tableoid::regclass::text"
                      " FROM simhash_documents ORDER BY id").fetchall()
    parts = _partitions(pg)
    migrate.downgrade(pg_dsn, "0012")
    assert migrate.current(pg_dsn) == "0012"
    # 0005's functions again: one day a call, the interval neither taken nor read
    fns = {r[0] for r in pg.execute(
        "SELECT oid::regprocedure::text FROM pg_proc WHERE proname LIKE 'simhash\\_%%partition%%'")}
    assert fns == {"simhash_create_partition(date)", "simhash_ensure_partitions(integer)",
                   "simhash_drop_partitions(interval)", "simhash_partitions()"}
    assert pg.execute("SELECT simhash_create_partition((now() AT TIME ZONE 'UTC')::date)"
                      ).fetchone() == (None,)  # this week's partition holds today
    assert _partitions(pg) == parts
    assert pg.execute("SELECT id, fingerprint, created_at, tableoid::regclass::text"
                      " FROM simhash_documents ORDER BY id").fetchall() == rows
    assert _recorded(pg) == "week"  # kept for a re-upgrade; nothing at 0012 reads it
    # an old store at 0012 without the record keeps days after the upgrade
    pg.execute("DELETE FROM simhash_meta WHERE name = 'partition_interval'")
    migrate.upgrade(pg_dsn)
    assert pg.execute("SELECT simhash_partition_interval()").fetchone() == ("day",)
    with SimhashStore(pg_dsn, retention=timedelta(days=2)) as store:
        assert store.partition_interval == "day"
        assert [m.distance for m in store.near(0x1234, k=1)] == [0, 1]
    assert _recorded(pg) == "day"
    # and a re-upgraded store that recorded weeks makes weeks again
    pg.execute("UPDATE simhash_meta SET value = '\"week\"' WHERE name = 'partition_interval'")
    migrate.downgrade(pg_dsn, "0012")
    migrate.upgrade(pg_dsn)
    assert pg.execute("SELECT simhash_partition_interval()").fetchone() == ("week",)
    made = [r[0] for r in pg.execute("SELECT * FROM simhash_ensure_partitions(9)")]
    assert made, _partitions(pg)
    made_bounds = [(lo, hi) for name, lo, hi in _partitions(pg) if name in made]
    assert made_bounds and all(lo.weekday() == 0 and hi - lo == timedelta(days=7)
                               for lo, hi in made_bounds)
