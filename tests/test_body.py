"""Revision 0021: every text add keeps the text as written in ``body`` (issue 32, item 1).

The column is read through SQL, as an analyst would: a text added through
any of the store's paths has its visible text there (markup stripped, as the
fingerprint strips it; spaces, punctuation and case kept), a fingerprint
and a store opened with ``keep_text=False`` have NULL, and the migration
goes down and up with rows in place. Revision 0023: ``simhash_add`` takes
the body itself, so an unverified text add is one round trip, as a
fingerprint's is.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import pq

from simhash_pg import Doc
from simhash_pg.db import layout, migrate
from simhash_pg.store import SimhashStore
from simhash_pg.store.options import StoreOptions
from simhash_pg.text.normalize import written

MARKED_UP = ("<p class=\"lead\">The Council voted, on Tuesday, to close the <b>Old Bridge</b>"
             " &amp; the ferry.</p>\n<p>Repairs start in spring.</p>")
VISIBLE = (" The Council voted, on Tuesday, to close the  Old Bridge  & the ferry. \n"
           " Repairs start in spring. ")
OTHER = ("A winter storm closed the airport for two days; flights resume on Friday, "
         "the operator said.")
CHINESE = "今天上午，市政府宣布将在明年春天重新修建老桥。"


def bodies(pg: psycopg.Connection) -> dict[str | None, str | None]:
    return dict(pg.execute("SELECT key, body FROM simhash_documents").fetchall())


def test_visible_text_is_the_text_as_written() -> None:
    assert written(MARKED_UP, visible=True) == VISIBLE
    assert written("a\x00b \ud800", visible=True) == "a b \ufffd"  # what PostgreSQL can hold
    assert written("<p>x</p>") == "<p>x</p>"  # no markup rule: as given


@pytest.mark.parametrize("verify", ["off", "short", "all"])
def test_every_text_add_keeps_its_body(pg_dsn: str, pg: psycopg.Connection,
                                       verify: Any) -> None:
    with SimhashStore(pg_dsn, verify=verify) as store:
        assert store.fingerprinter.written(MARKED_UP) == VISIBLE
        assert store.add(MARKED_UP, key="single").inserted
        # a near-duplicate skipped stores nothing and changes no body
        assert not store.add(MARKED_UP + " ", key="again").inserted
        store.add_many([Doc(OTHER, key="many"), Doc(CHINESE, key="zh"), Doc(12345, key="int")])
        assert store.add(987654321, key="fp").inserted
    assert bodies(pg) == {"single": VISIBLE, "many": OTHER, "zh": CHINESE,
                          "int": None, "fp": None}


def test_a_linked_duplicate_keeps_its_own_body(pg_dsn: str, pg: psycopg.Connection) -> None:
    with SimhashStore(pg_dsn, on_duplicate="link") as store:
        first = store.add(OTHER, key="a")
        second = store.add(OTHER.upper(), key="b")
        assert second.duplicate_of == first.id
        doc = store.document("b")
        assert doc is not None and doc.body == OTHER.upper()
        got = store.get(second.id)  # type: ignore[arg-type]
        assert got is not None and got.body == OTHER.upper()
        docs = store.documents([first.id, second.id])  # type: ignore[list-item]
        assert [d.body for d in docs.values()] == [OTHER, OTHER.upper()]
    assert bodies(pg) == {"a": OTHER, "b": OTHER.upper()}


def test_keep_text_false_stores_no_body(pg_dsn: str, pg: psycopg.Connection) -> None:
    with SimhashStore(pg_dsn, keep_text=False, verify="off") as store:
        store.add(MARKED_UP, key="single")
        store.add_many([Doc(OTHER, key="many")])
        doc = store.document("single")
        assert doc is not None and doc.body is None
    with SimhashStore(pg_dsn, keep_text=False) as store:  # verify "all": the verified path
        store.add(CHINESE, key="zh")
    assert bodies(pg) == {"single": None, "many": None, "zh": None}
    with pytest.raises(ValueError, match="keep_text"):
        StoreOptions(keep_text="yes")  # type: ignore[arg-type]


def test_bulk_load_keeps_bodies(pg_dsn: str, pg: psycopg.Connection) -> None:
    with SimhashStore(pg_dsn) as store:
        assert store.bulk_load([Doc(MARKED_UP, key="t"), Doc(7, key="i")]) == 2
    assert bodies(pg) == {"t": VISIBLE, "i": None}


def test_a_body_is_set_only_with_its_row(pg_dsn: str, pg: psycopg.Connection) -> None:
    """verify="off": simhash_add inserts the row with its body, in one statement; a
    caller's open transaction holds it, and its rollback takes it away."""
    with SimhashStore(pg_dsn, verify="off") as store:
        conn = store.connection
        with conn.transaction(force_rollback=True):
            assert store.add(OTHER, key="rolled-back").inserted
            assert bodies(conn) == {"rolled-back": OTHER}
        assert store.count() == 0
        assert store.add(OTHER, key="kept").inserted
        # the key again: the stored row, its body unchanged
        assert store.add("Something else entirely, about gardens.", key="kept").existing_key
    assert bodies(pg) == {"kept": OTHER}


def round_trips(conn: psycopg.Connection, action: Callable[[], object], trace: Path) -> int:
    """How many round trips ``action`` makes on ``conn``: the messages that ask the
    server to answer (Sync, or a simple Query such as BEGIN), read from libpq's trace."""
    fd = os.open(trace, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        conn.pgconn.trace(fd)
        conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS)
        try:
            action()
        finally:
            conn.pgconn.untrace()
    finally:
        os.close(fd)
    sent = [line.split("\t") for line in trace.read_text().splitlines()]
    return sum(1 for m in sent if m[0] == "F" and m[2].split()[0] in ("Sync", "Query"))


@pytest.mark.parametrize("keep_text", [True, False])
def test_an_unverified_text_add_is_one_round_trip(pg_dsn: str, pg: psycopg.Connection,
                                                  tmp_path: Path, keep_text: bool) -> None:
    """verify="off": the body goes with simhash_add's call (revision 0023), not in an
    UPDATE of its own (BEGIN, simhash_add, UPDATE, COMMIT: four round trips)."""
    trace = tmp_path / "libpq.trace"
    with SimhashStore(pg_dsn, verify="off", keep_text=keep_text) as store:
        conn = store.connection
        # the statement prepared first (a Parse of its own: one more round trip, once)
        store.add("A warm-up text, about the harbour and its ships.", key="warm-up")
        for doc, key in ((MARKED_UP, "single"), (MARKED_UP + " ", "skipped"),
                         (MARKED_UP, "single"), (0x0123_4567_89AB_CDEF, "fp")):
            assert round_trips(conn, lambda d=doc, k=key: store.add(d, key=k), trace) == 1
        assert conn.info.transaction_status == pq.TransactionStatus.IDLE
    assert bodies(pg) == {"warm-up": "A warm-up text, about the harbour and its ships."
                          if keep_text else None,
                          "single": VISIBLE if keep_text else None, "fp": None}


_ADD = "SELECT id, inserted, duplicate_of FROM simhash_add"


def test_simhash_add_stores_the_body_of_the_row_it_inserts(pg: psycopg.Connection) -> None:
    def add(args: str, *params: object) -> tuple[Any, ...]:
        row = pg.execute(f"{_ADD}({args})", list(params)).fetchone()
        assert row is not None
        return tuple(row)

    fp = 0x0123_4567_89AB_CDEF
    a, inserted, _ = add("%s, 'a', p_body => 'first'", fp)
    assert inserted
    # the key again, another body: the stored row, its body unchanged
    assert add("%s, 'a', p_body => 'second'", fp ^ 0xFFFF) == (a, False, None)
    # a near-duplicate skipped: nothing stored, the first row's body unchanged
    assert add("%s, 'b', p_body => 'skipped'", fp ^ 1) == (a, False, a)
    # linked (six arguments by position) and inserted without a check: their own bodies
    _, inserted, dup = add("%s, 'c', NULL, 3, 'link', 'linked'", fp ^ 2)
    assert inserted and dup == a
    assert add("%s, 'd', NULL, 3, 'insert', 'unchecked'", fp)[1]
    # no key; and a call written for five parameters (before 0023): no body
    assert add("%s, p_body => 'no key'", ~fp & 0x7FFF_FFFF_FFFF_FFFF)[1]
    assert add("%s, 'e', NULL, 3, 'insert'", fp)[1]
    assert bodies(pg) == {"a": "first", "c": "linked", "d": "unchecked", None: "no key",
                          "e": None}
    # one simhash_add: the five-parameter one went (a call is never ambiguous)
    assert [r[0] for r in pg.execute(
        "SELECT oid::regprocedure::text FROM pg_proc WHERE proname = 'simhash_add'"
        " AND pronamespace = current_schema()::regnamespace")] == [
        "simhash_add(bigint,text,jsonb,integer,text,text)"]


# simhash_add as the catalog has it: definition, settings, security, owner, grants
_ADD_FUNCTION = """
SELECT p.oid::regprocedure::text, pg_get_functiondef(p.oid), p.prosecdef, p.proconfig,
       p.proowner::regrole::text,
       array(SELECT CASE a.grantee WHEN 0 THEN 'PUBLIC' ELSE a.grantee::regrole::text END
                    || ' ' || a.privilege_type || ' from ' || a.grantor::regrole::text
             FROM aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) AS a ORDER BY 1),
       obj_description(p.oid, 'pg_proc')
FROM pg_proc p WHERE p.proname = 'simhash_add' AND p.pronamespace = current_schema()::regnamespace
"""


def test_migration_0023_round_trip_keeps_rows_and_restores_simhash_add(
        pg_dsn: str, pg: psycopg.Connection) -> None:
    from psycopg.conninfo import make_conninfo
    from psycopg.sql import SQL, Identifier

    with SimhashStore(pg_dsn, verify="off") as store:
        ids = [store.add(t, key=k).id for k, t in (("a", MARKED_UP), ("b", OTHER))]
        store.add(987654321, key="fp")
        found = [(m.id, m.distance) for m in store.near(OTHER)]
    rows = pg.execute("SELECT id, key, body FROM simhash_documents ORDER BY id").fetchall()
    assert bodies(pg) == {"a": VISIBLE, "b": OTHER, "fp": None}
    assert migrate.downgrade_losses_between("0023", "0022") == []  # nothing to ask about

    migrate.downgrade(pg_dsn, "0022")
    assert migrate.current(pg_dsn) == "0022"
    assert pg.execute("SELECT id, key, body FROM simhash_documents ORDER BY id").fetchall() \
        == rows
    restored = pg.execute(_ADD_FUNCTION).fetchall()
    # exactly 0022's: as a database that never saw 0023 has it
    fresh = f"{pg.info.dbname}_at_0022"
    pg.execute(SQL("CREATE DATABASE {} TEMPLATE template0").format(Identifier(fresh)))
    try:
        fresh_dsn = make_conninfo(pg_dsn, dbname=fresh)
        migrate.upgrade(fresh_dsn, "0022")
        with psycopg.connect(fresh_dsn) as conn:
            layout.use_schema(conn, layout.schema_name())
            assert conn.execute(_ADD_FUNCTION).fetchall() == restored
    finally:
        pg.execute(SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(Identifier(fresh)))
    assert [r[0] for r in restored] == ["simhash_add(bigint,text,jsonb,integer,text)"]
    assert pg.execute("SELECT inserted FROM simhash_add(42, 'old-call')").fetchone() == (True,)

    migrate.upgrade(pg_dsn)
    migrate.check(pg_dsn)
    assert [r[0] for r in pg.execute(_ADD_FUNCTION)] == [
        "simhash_add(bigint,text,jsonb,integer,text,text)"]
    with SimhashStore(pg_dsn, verify="off") as store:
        assert [(m.id, m.distance) for m in store.near(OTHER)] == found
        assert store.add(CHINESE, key="c").inserted
        assert store.add(OTHER + " ", key="b2").duplicate_of == ids[1]
    assert bodies(pg) == {"a": VISIBLE, "b": OTHER, "fp": None, "old-call": None,
                          "c": CHINESE}


def test_migration_0023_keeps_simhash_adds_grants_both_ways(pg_dsn: str,
                                                             pg: psycopg.Connection) -> None:
    """An operator's grants on simhash_add (PUBLIC's revoked, a role's given) go to
    the function that replaces it, up and down, as revision 0020's to the writer do."""
    def grants() -> list[Any]:
        return [(r[4], r[5]) for r in pg.execute(_ADD_FUNCTION)]

    pg.execute("REVOKE EXECUTE ON FUNCTION simhash_add(bigint, text, jsonb, integer, text, text)"
               " FROM PUBLIC")
    pg.execute("GRANT EXECUTE ON FUNCTION simhash_add(bigint, text, jsonb, integer, text, text)"
               " TO simhash_reader WITH GRANT OPTION")
    at_head = grants()
    assert not any(g.startswith("PUBLIC ") for g in at_head[0][1]), at_head
    assert any(g.startswith("simhash_writer EXECUTE") for g in at_head[0][1]), at_head
    migrate.downgrade(pg_dsn, "0022")
    assert grants() == at_head
    migrate.upgrade(pg_dsn)
    assert grants() == at_head


def _body_column(pg: psycopg.Connection) -> int:
    return pg.execute("SELECT count(*) FROM pg_attribute WHERE attrelid = "
                      "'simhash_documents'::regclass AND attname = 'body' AND NOT attisdropped"
                      ).fetchone()[0]  # type: ignore[index]


def test_migration_0021_round_trip_with_rows(pg_dsn: str, pg: psycopg.Connection) -> None:
    with SimhashStore(pg_dsn) as store:
        ids = [store.add(t, key=k).id for k, t in (("a", MARKED_UP), ("b", OTHER))]
        found = [(m.id, m.distance) for m in store.near(OTHER)]
    assert bodies(pg) == {"a": VISIBLE, "b": OTHER}
    # the downgrade drops data: `db downgrade` asks first
    assert [r for r, _ in migrate.downgrade_losses_between("0021", "0020")] == ["0021"]

    migrate.downgrade(pg_dsn, "0020")
    assert _body_column(pg) == 0
    assert pg.execute("SELECT id, key FROM simhash_documents ORDER BY id").fetchall() == [
        (ids[0], "a"), (ids[1], "b")]

    migrate.upgrade(pg_dsn)
    migrate.check(pg_dsn)
    assert _body_column(pg) == 1
    # every partition has it (added to the parent)
    assert pg.execute(
        "SELECT bool_and(EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = t.relid"
        " AND a.attname = 'body' AND NOT a.attisdropped))"
        " FROM pg_partition_tree('simhash_documents') t").fetchone() == (True,)
    assert bodies(pg) == {"a": None, "b": None}  # the texts went with the downgrade
    with SimhashStore(pg_dsn) as store:
        assert [(m.id, m.distance) for m in store.near(OTHER)] == found
        assert store.add(CHINESE, key="c").inserted
        old = store.document("a")
        assert old is not None and old.body is None and old.text is not None
    assert bodies(pg)["c"] == CHINESE


def test_the_commands_keep_text_unless_told_not_to(pg_dsn: str, pg: psycopg.Connection,
                                                   tmp_path: Any) -> None:
    from click.testing import CliRunner

    from simhash_pg.cli.main import cli

    def run(*args: str) -> None:
        res = CliRunner().invoke(cli, [*args, "--dsn", pg_dsn])
        assert res.exit_code == 0, res.output

    run("add", MARKED_UP, "--key", "kept")
    run("add", OTHER, "--key", "not-kept", "--no-keep-text")
    corpus = tmp_path / "in.jsonl"
    corpus.write_text(f'{{"key": "d1", "text": "{CHINESE}"}}\n', encoding="utf-8")
    run("dedup", str(corpus), "--no-keep-text", "-q")
    corpus.write_text('{"key": "d2", "text": "Entirely new words about gardens."}\n')
    run("dedup", str(corpus), "-q")
    assert bodies(pg) == {"kept": VISIBLE, "not-kept": None, "d1": None,
                          "d2": "Entirely new words about gardens."}
