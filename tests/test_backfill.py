"""Min-hash keys for rows stored before revision 0016: ``SimhashStore.backfill_keys``
and ``simhash-pg db backfill-keys``, through a real store."""

from __future__ import annotations

import random
from typing import Any

import psycopg
import pytest
from test_downgrade import cli

from simhash_pg.store import SimhashStore
from simhash_pg.text.signatures import MIN_MINHASH_CHARS, minhash_keys

_WORDS = ("harbour council storm budget tunnel ferry school river bridge vote strike "
          "rail winter flood market report police airport delay heat").split()


def _texts(n: int, seed: int) -> list[str]:
    rnd = random.Random(seed)
    long_ = [". ".join(" ".join(rnd.choices(_WORDS, k=12)) for _ in range(6)) + "."
             for _ in range(n)]
    return [*long_, "Storm closes bridge", "Council vote delayed"]  # two short texts


def _rows(dsn: str) -> dict[int, tuple[Any, ...]]:
    with psycopg.connect(dsn) as conn:
        return {r[0]: r[1:] for r in conn.execute(
            "SELECT id, verify_text, sentence_hashes FROM simhash_documents")}


def _strip_keys(dsn: str) -> None:
    """Make every row as revision 0015 stored it: its min-hash keys taken out."""
    with psycopg.connect(dsn) as conn:
        for id_, (vtext, hashes) in _rows(dsn).items():
            keys = set(minhash_keys(vtext or ""))
            if hashes is not None and keys:
                conn.execute("UPDATE simhash_documents SET sentence_hashes = %s WHERE id = %s",
                             [[h for h in hashes if h not in keys] or None, id_])


def test_backfill_gives_old_rows_exactly_what_add_stores(pg_dsn: str) -> None:
    with SimhashStore(pg_dsn) as store:
        store.add_many(_texts(40, 1), dedup=False)
        added = _rows(pg_dsn)
        long_rows = [i for i, (vtext, _) in added.items() if len(vtext) >= MIN_MINHASH_CHARS]
        assert len(long_rows) == 40 and all(set(minhash_keys(added[i][0])) <= set(added[i][1])
                                            for i in long_rows)
        _strip_keys(pg_dsn)
        assert _rows(pg_dsn) != added
        assert store.backfill_keys(batch_size=7) == 40  # batches that end mid-way
        assert _rows(pg_dsn) == added
        assert store.backfill_keys() == 0  # idempotent: nothing left to give


def test_backfill_fills_rows_without_any_hashes(pg_dsn: str) -> None:
    # rows stored before revision 0015 hold no sentence hashes at all
    with SimhashStore(pg_dsn) as store:
        store.add_many(_texts(5, 2), dedup=False)
        with psycopg.connect(pg_dsn) as conn:
            conn.execute("UPDATE simhash_documents SET sentence_hashes = NULL")
        assert store.backfill_keys() == 5
        for vtext, hashes in _rows(pg_dsn).values():
            assert (hashes or []) == sorted(minhash_keys(vtext))


def test_backfill_refuses_a_store_without_sentence_keys(pg_dsn: str) -> None:
    with SimhashStore(pg_dsn, verify="short") as store, pytest.raises(ValueError, match="verify"):
        store.backfill_keys()
    with SimhashStore(pg_dsn) as store, pytest.raises(ValueError, match="batch_size"):
        from simhash_pg.store.backfill import backfill_minhash_keys

        backfill_minhash_keys(store.connection, batch_size=0)


def test_the_command_backfills(pg_dsn: str) -> None:
    with SimhashStore(pg_dsn) as store:
        store.add_many(_texts(12, 3), dedup=False)
    added = _rows(pg_dsn)
    _strip_keys(pg_dsn)
    proc = cli("db", "backfill-keys", "--batch-size", "5", dsn=pg_dsn)
    assert "12 rows given their min-hash keys" in proc.stdout
    assert _rows(pg_dsn) == added
    assert "0 rows given" in cli("db", "backfill-keys", dsn=pg_dsn).stdout
