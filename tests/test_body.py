"""Revision 0021: every text add keeps the text as written in ``body`` (issue 32, item 1).

The column is read through SQL, as an analyst would: a text added through
any of the store's paths has its visible text there (markup stripped, as the
fingerprint strips it; spaces, punctuation and case kept), a fingerprint
and a store opened with ``keep_text=False`` have NULL, and the migration
goes down and up with rows in place.
"""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from simhash_pg import Doc
from simhash_pg.db import migrate
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
    """verify="off": simhash_add inserts, the body follows in its transaction; a
    caller's open transaction holds both, and its rollback takes both away."""
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
