"""simhash_text_keys (revision 0017): a text's keys in a table of their own.

The table must always hold exactly one row per (distinct key, stored row),
in the partition of the row's day, whatever writes the rows: the store,
COPY, an analyst's INSERT, UPDATEs (a backfill, a row moved to another
day), deletes, purges and TRUNCATE. A property test compares it with its
definition after random sequences of such writes; the partitions' tests
check that the key table's partitions follow the documents' through
creation, moving rows out of the default partition, drops and interval
changes; and the migration's round trip keeps every look-up's answer.
"""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta, timezone
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simhash_pg.bits import blocks, to_signed
from simhash_pg.db import migrate
from simhash_pg.store import SimhashStore

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

_DEFINITION = (
    "SELECT DISTINCT h, d.id, d.created_at, d.fingerprint FROM simhash_documents d,"
    " unnest(d.sentence_hashes) AS h WHERE h IS NOT NULL"
)
_TABLE = "SELECT hash, id, created_at, fingerprint FROM simhash_text_keys"


def keys_as_defined(pg: psycopg.Connection, *, upgraded: bool = False) -> None:
    """The key table holds its definition exactly, each row in its day's partition.

    ``upgraded``: the rows may predate revision 0018, whose upgrade rewrites
    nothing: their fingerprint is NULL (the look-up reads the document's).
    """
    want = sorted(pg.execute(_DEFINITION).fetchall())
    got = pg.execute(_TABLE).fetchall()
    if upgraded:
        fps = {(h, i, at): fp for h, i, at, fp in want}
        got = [(h, i, at, fps.get((h, i, at)) if fp is None else fp) for h, i, at, fp in got]
    assert sorted(got) == want
    assert len(got) == len(set(got))  # no (key, row) twice
    misplaced = pg.execute(
        "SELECT k.tableoid::regclass::text, d.tableoid::regclass::text FROM simhash_text_keys k"
        " JOIN simhash_documents d ON d.id = k.id AND d.created_at = k.created_at"
        " WHERE replace(k.tableoid::regclass::text, 'text_keys', 'documents')"
        "       <> d.tableoid::regclass::text").fetchall()
    assert misplaced == []


_POOL = list(range(-5, 6))  # few keys, so rows share them
_hashes = st.one_of(st.none(), st.lists(st.one_of(st.none(), st.sampled_from(_POOL)),
                                        max_size=5))
_ops = st.lists(st.one_of(
    st.tuples(st.just("insert"), _hashes, st.integers(-3, 2)),
    st.tuples(st.just("copy"), st.lists(_hashes, min_size=1, max_size=4), st.integers(-3, 2)),
    st.tuples(st.just("set"), st.integers(0, 20), _hashes),
    st.tuples(st.just("move"), st.integers(0, 20), st.integers(-3, 2)),
    st.tuples(st.just("refingerprint"), st.integers(0, 20), st.integers(-2**63, 2**63 - 1)),
    st.tuples(st.just("delete"), st.integers(0, 20), st.none()),
    st.tuples(st.just("purge"), st.integers(1, 3), st.none()),
    st.tuples(st.just("truncate"), st.none(), st.none()),
), min_size=1, max_size=14)


def _at(days: int) -> datetime:
    # days ago or ahead; -3 and 2 fall in no made partition: the default one
    return datetime.now(timezone.utc).replace(microsecond=0) + timedelta(days=days, seconds=-1)


def _nth(pg: psycopg.Connection, i: int) -> tuple[int, datetime] | None:
    row = pg.execute("SELECT id, created_at FROM simhash_documents ORDER BY id OFFSET %s LIMIT 1",
                     [i]).fetchone()
    return None if row is None else (row[0], row[1])


@given(_ops)
@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_the_key_table_holds_its_definition_through_any_writes(
        pg: psycopg.Connection, ops: list[tuple[str, Any, Any]]) -> None:
    pg.execute("TRUNCATE simhash_documents")
    pg.execute("SELECT simhash_create_partition((now() AT TIME ZONE 'UTC')::date - 1)")
    rnd = random.Random(len(ops))
    for op, a, b in ops:
        if op == "insert":
            pg.execute("INSERT INTO simhash_documents (fingerprint, sentence_hashes, created_at)"
                       " VALUES (%s, %s, %s)", [rnd.getrandbits(63), a, _at(b)])
        elif op == "copy":
            with pg.cursor() as cur, cur.copy(
                    "COPY simhash_documents (fingerprint, sentence_hashes, created_at)"
                    " FROM STDIN") as copy:
                copy.set_types(["int8", "int8[]", "timestamptz"])
                for hs in a:
                    copy.write_row((rnd.getrandbits(63), hs, _at(b)))
        elif op in ("set", "move", "refingerprint", "delete") and (row := _nth(pg, a)) is not None:
            if op == "set":
                pg.execute("UPDATE simhash_documents SET sentence_hashes = %s"
                           " WHERE id = %s AND created_at = %s", [b, *row])
            elif op == "refingerprint":  # the key rows carry it (revision 0018)
                pg.execute("UPDATE simhash_documents SET fingerprint = %s"
                           " WHERE id = %s AND created_at = %s", [b, *row])
            elif op == "move":  # to another day's partition: a delete and an insert
                pg.execute("UPDATE simhash_documents SET created_at = %s"
                           " WHERE id = %s AND created_at = %s", [_at(b), *row])
            else:
                pg.execute("DELETE FROM simhash_documents WHERE id = %s AND created_at = %s",
                           row)
        elif op == "purge":
            pg.execute("SELECT * FROM simhash_drop_partitions(make_interval(days => %s))", [a])
            pg.execute("DELETE FROM simhash_documents WHERE created_at < now() - "
                       "make_interval(days => %s)", [a])
        elif op == "truncate":
            pg.execute("TRUNCATE simhash_documents")
        keys_as_defined(pg)


def test_the_store_writes_keys_and_finds_by_them(pg: psycopg.Connection, pg_dsn: str) -> None:
    base = ("The council postponed the vote on the school budget until next spring, "
            "officials said on Tuesday. ") * 3
    with SimhashStore(pg_dsn) as store:
        store.add_many([base + f" Item {i} of the list closed the meeting." for i in range(3)],
                       dedup=False)
        r = store.add("A wholly other text about rail strikes and airport delays in winter, "
                      "with unions warning of further action across the region.")
        assert r.inserted
        keys_as_defined(pg)
        assert pg.execute("SELECT count(*) FROM simhash_text_keys").fetchone()[0] > 4  # type: ignore[index]
        found = store.near(base + " Item 7 of the list closed the meeting.")
        assert len(found) == 3


def test_a_new_partition_takes_its_keys_from_the_default(pg: psycopg.Connection) -> None:
    later = date.today() + timedelta(days=40)
    at = datetime(later.year, later.month, later.day, 12, tzinfo=timezone.utc)
    pg.execute("INSERT INTO simhash_documents (fingerprint, sentence_hashes, created_at)"
               " VALUES (1, '{7,8}', %s), (2, '{8}', %s)", [at, at])
    where = "SELECT DISTINCT tableoid::regclass::text FROM simhash_text_keys"
    assert pg.execute(where).fetchall() == [("simhash_text_keys_default",)]
    (made,) = pg.execute("SELECT simhash_create_partition(%s)", [later]).fetchone()  # type: ignore[misc]
    assert pg.execute(where).fetchall() == [(made.replace("documents", "text_keys"),)]
    keys_as_defined(pg)
    assert pg.execute("SELECT id FROM simhash_sentence_matches('{8}') ORDER BY 1"
                      ).fetchall() == [(1,), (2,)]


def test_dropped_and_relaid_partitions_take_their_keys_along(pg: psycopg.Connection) -> None:
    pg.execute("SELECT simhash_create_partition((now() AT TIME ZONE 'UTC')::date - 3)")
    pg.execute("INSERT INTO simhash_documents (fingerprint, sentence_hashes, created_at)"
               " VALUES (1, '{5}', now() - interval '3 days'), (2, '{5}', now())")
    steps = pg.execute("SELECT action, relation FROM simhash_drop_partitions('2 days')").fetchall()
    old = f"p{(datetime.now(timezone.utc) - timedelta(days=3)).strftime('%Y%m%d')}"
    assert ("drop", f"simhash_documents_{old}") in steps
    assert ("drop keys", f"simhash_text_keys_{old}") in steps
    assert pg.execute("SELECT to_regclass(%s)", [f"simhash_text_keys_{old}"]).fetchone() == (None,)
    keys_as_defined(pg)
    # a weekly layout drops the empty days ahead and makes a week: the keys follow
    pg.execute("SELECT simhash_set_partition_interval('week')")
    docs = {r[0] for r in pg.execute("SELECT relid::regclass::text FROM"
                                     " pg_partition_tree('simhash_documents') WHERE isleaf")}
    keys = {r[0] for r in pg.execute("SELECT relid::regclass::text FROM"
                                     " pg_partition_tree('simhash_text_keys') WHERE isleaf")}
    assert keys == {d.replace("documents", "text_keys") for d in docs}
    keys_as_defined(pg)


def test_a_writer_needs_no_grant_and_the_reader_may_read(pg: psycopg.Connection) -> None:
    pg.execute("DROP ROLE IF EXISTS keys_writer")
    pg.execute("CREATE ROLE keys_writer")
    pg.execute("GRANT USAGE ON SCHEMA simhash TO keys_writer")
    try:
        pg.execute("GRANT INSERT, DELETE, UPDATE ON simhash_documents TO keys_writer")
        pg.execute("GRANT SELECT ON simhash_documents TO keys_writer")
        pg.execute("GRANT USAGE ON SEQUENCE simhash_documents_id_seq TO keys_writer")
        with pg.transaction(force_rollback=True):
            pg.execute("SET LOCAL ROLE keys_writer")
            pg.execute("INSERT INTO simhash_documents (fingerprint, sentence_hashes)"
                       " VALUES (3, '{9}')")
            pg.execute("RESET ROLE")
            keys_as_defined(pg)
            pg.execute("SET LOCAL ROLE simhash_reader")
            assert pg.execute("SELECT count(*) FROM simhash_text_keys").fetchone() == (1,)
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                pg.execute("INSERT INTO simhash_text_keys VALUES (1, 1, now(), 1)")
    finally:
        pg.execute("DROP OWNED BY keys_writer")
        pg.execute("DROP ROLE keys_writer")


def test_migration_0017_round_trip(pg: psycopg.Connection, pg_dsn: str) -> None:
    rnd = random.Random(17)
    fps = [rnd.getrandbits(64) for _ in range(60)]
    migrate.downgrade(pg_dsn, "0016")
    assert pg.execute("SELECT to_regclass('simhash_text_keys')").fetchone() == (None,)
    with pg.cursor() as cur, cur.copy(
            "COPY simhash_documents (fingerprint, sentence_hashes) FROM STDIN") as copy:
        for i, fp in enumerate(fps):  # key i % 20 is held by 3 rows; some rows hold none
            copy.write_row((to_signed(fp), None if i % 7 == 0 else [i % 20, 100 + i, i % 20]))
    q = fps[3]
    single = ("SELECT id FROM simhash_near_probes_candidates(%s, %s::smallint[],"
              " %s::smallint[], %s::smallint[], %s::smallint[], 3, NULL, %s::bigint[])")
    args = [to_signed(q), *[[b] for b in blocks(q)], [5, 103, 999]]
    before = pg.execute(single, args).fetchall()
    assert sorted(before) == [(4,), (6,), (26,), (46,)]  # itself; 5 is held by rows 6, 26, 46
    assert migrate.downgrade_losses_between("0019", "0016") == []  # 0020 drops a role
    migrate.upgrade(pg_dsn)  # fills the table from the rows stored
    keys_as_defined(pg, upgraded=True)
    assert pg.execute("SELECT to_regclass('simhash_documents_sentence_hashes_idx')"
                      ).fetchone() == (None,)
    assert pg.execute(single, args).fetchall() == before
    migrate.check(pg_dsn)
    migrate.downgrade(pg_dsn, "0016")
    assert pg.execute(single, args).fetchall() == before
    migrate.upgrade(pg_dsn)
    keys_as_defined(pg, upgraded=True)


def test_migration_0018_round_trip(pg: psycopg.Connection, pg_dsn: str) -> None:
    # key 7 is held by 20 rows: past the cap of 16, within 256
    rnd = random.Random(18)
    q = rnd.getrandbits(64)
    fps = [q ^ (1 << i) if i < 5 else rnd.getrandbits(64) for i in range(20)]
    with pg.cursor() as cur, cur.copy(
            "COPY simhash_documents (fingerprint, sentence_hashes) FROM STDIN") as copy:
        for fp in fps:
            copy.write_row((to_signed(fp), [7]))
    near = "SELECT id FROM simhash_sentence_matches('{7}', %s)"
    found = {r[0] for r in pg.execute(near, [to_signed(q)])}
    assert len(found) == 16 and {1, 2, 3, 4, 5} <= found
    migrate.downgrade(pg_dsn, "0017")
    assert pg.execute("SELECT id FROM simhash_sentence_matches('{7}')").fetchall() == []
    assert pg.execute("SELECT to_regprocedure('simhash_sentence_matches(bigint[], bigint)')"
                      ).fetchone() == (None,)
    migrate.upgrade(pg_dsn)  # rewrites nothing: the key rows' fingerprints are NULL
    keys_as_defined(pg, upgraded=True)
    assert pg.execute("SELECT count(*) FROM simhash_text_keys WHERE fingerprint IS NULL"
                      ).fetchone() == (20,)
    # ranked by their documents' fingerprints instead, alike
    assert {r[0] for r in pg.execute(near, [to_signed(q)])} == found
    migrate.check(pg_dsn)
