"""SimhashStore on a real PostgreSQL: API, exactness, bulk paths, bad input."""

from __future__ import annotations

import os
import random
import re
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simhash_pg.bits import MAX_FINGERPRINT, hamming, to_signed, to_unsigned
from simhash_pg.store import (
    AddResult,
    Doc,
    Match,
    Pair,
    SchemaVersionError,
    SchemeMismatchError,
    SimhashStore,
    StoreConnectionError,
)

HYPO = settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture
def store(pg_dsn: str) -> Any:
    with SimhashStore(pg_dsn) as s:
        yield s


def flip(fp: int, n: int, rnd: random.Random) -> int:
    for bit in rnd.sample(range(64), n):
        fp ^= 1 << bit
    return fp


def snapshot(store: SimhashStore) -> list[tuple[Any, ...]]:
    return store.connection.execute(
        "SELECT id, key, fingerprint, duplicate_of, meta FROM simhash_documents ORDER BY id"
    ).fetchall()


def reset(store: SimhashStore) -> None:
    store.connection.execute("TRUNCATE simhash_documents RESTART IDENTITY")


# -- single documents -------------------------------------------------------------


def test_add_near_get_remove_count(store: SimhashStore) -> None:
    a = store.add(0x1234_5678_9ABC_DEF0, key="a", meta={"lang": "en"})
    assert a == AddResult(1, 0x1234_5678_9ABC_DEF0, None, None, True, key="a")
    assert a.status == "inserted"
    far = store.add(MAX_FINGERPRINT, key="far")
    assert far.inserted and far.id == 2
    assert store.count() == 2
    assert store.near(0x1234_5678_9ABC_DEF0 ^ 0b101) == [Match(1, "a", 2, {"lang": "en"})]
    assert store.near(MAX_FINGERPRINT, k=0) == [Match(2, "far", 0, None)]
    doc = store.get("a")
    assert doc is not None and doc.id == 1 and doc.fingerprint == 0x1234_5678_9ABC_DEF0
    assert store.get(2) is not None and store.get(2).key == "far"  # type: ignore[union-attr]
    assert store.get("nope") is None and store.get(99) is None
    assert store.remove("far") is True
    assert store.remove(2) is False
    assert store.count() == 1
    stats = store.stats()
    assert stats["rows"] == 1 and stats["table_bytes"] > 0 and stats["index_bytes"] > 0
    assert stats["scheme"]["name"]


def test_near_duplicate_policies(store: SimhashStore) -> None:
    base = 0xF0F0_F0F0_0F0F_0F0F
    first = store.add(base, key="first")
    dup = store.add(base ^ 0b111, key="second")  # distance 3
    assert dup == AddResult(first.id, base ^ 0b111, first.id, 3, False, key="second",
                            duplicate_key="first")
    assert dup.status == "duplicate"
    assert store.count() == 1
    linked = store.add(base ^ 0b1, key="third", on_duplicate="link")
    assert linked.inserted and linked.duplicate_of == first.id and linked.distance == 1
    assert linked.status == "linked"
    plain = store.add(base, key="fourth", dedup=False)
    assert plain.inserted and plain.duplicate_of is None
    assert store.add(base ^ 0b1111_0000).inserted  # distance 4 and 5 > k = 3
    assert store.count() == 4
    # removing the original leaves the linked row with duplicate_of NULL
    store.remove("first")
    third = store.get("third")
    assert third is not None and third.duplicate_of is None


def test_existing_key_is_idempotent(store: SimhashStore) -> None:
    r1 = store.add(12345, key="k", meta={"v": 1})
    r2 = store.add(99999999999, key="k", meta={"v": 2})
    assert r2.id == r1.id and not r2.inserted and r2.existing_key and r2.fingerprint == 12345
    assert r2.status == "existing_key"
    assert store.count() == 1
    assert store.get("k").meta == {"v": 1}  # type: ignore[union-attr]


def test_text_documents_use_the_fingerprinter(store: SimhashStore) -> None:
    text = ("The quick brown fox jumps over the lazy dog near the river bank, "
            "while the farmer watches the sheep graze in the green meadow all afternoon.")
    first = store.add(text, key="t1")
    assert first.inserted
    assert first.fingerprint == store.fingerprinter.fingerprint(text)
    again = store.add(text + " ", key="t2")
    assert not again.inserted and again.duplicate_of == first.id
    assert store.near(text)[0].id == first.id


# -- exactness ----------------------------------------------------------------------


@st.composite
def planted(draw: st.DrawFn, max_k: int) -> tuple[list[int], list[int]]:
    rnd = random.Random(draw(st.integers(0, 2**32)))
    skew = draw(st.booleans())
    pool = [rnd.getrandbits(16) for _ in range(3)]

    def base() -> int:
        if skew:  # many rows share block values
            return flip(sum(rnd.choice(pool) << s for s in (48, 32, 16, 0)), rnd.randint(0, 2),
                        rnd)
        return rnd.getrandbits(64)

    stored = [base() for _ in range(draw(st.integers(1, 30)))]
    for fp in list(stored):
        stored += [flip(fp, rnd.randint(0, max_k + 1), rnd) for _ in range(rnd.randint(0, 3))]
    queries = [flip(rnd.choice(stored), rnd.randint(0, max_k + 1), rnd) for _ in range(4)]
    return stored, [*queries, base()]


def brute(stored: list[int], q: int, k: int) -> list[tuple[int, int]]:
    return sorted((hamming(fp, q), i + 1) for i, fp in enumerate(stored) if hamming(fp, q) <= k)


@given(planted(max_k=12))
@HYPO
def test_near_and_near_many_equal_brute_force(
    store: SimhashStore, data: tuple[list[int], list[int]]
) -> None:
    stored, queries = data
    reset(store)
    store.add_many(stored, dedup=False)
    for k in (0, 1, 2, 3, 5, 8, 12):
        expect = [brute(stored, q, k) for q in queries]
        got = [[(m.distance, m.id) for m in store.near(q, k=k)] for q in queries]
        assert got == expect, k
        many = store.near_many(queries, k=k)
        assert [[(m.distance, m.id) for m in ms] for ms in many] == expect, k


def test_near_limit_and_many_empty(store: SimhashStore) -> None:
    store.add_many([0, 1, 3, 7], dedup=False)
    assert [m.id for m in store.near(0, k=3, limit=2)] == [1, 2]
    assert store.near_many([]) == []


def test_pairs_stream_every_pair_once(store: SimhashStore) -> None:
    rnd = random.Random(17)
    stored = [rnd.getrandbits(64) for _ in range(400)]
    stored += [flip(fp, rnd.randint(0, 4), rnd) for fp in stored[:300]]
    store.add_many(stored, dedup=False)
    for k in (3, 5):
        want = [Pair(i + 1, j + 1, hamming(stored[i], stored[j]))
                for i in range(len(stored)) for j in range(i + 1, len(stored))
                if hamming(stored[i], stored[j]) <= k]
        assert len(want) > 200
        assert sorted(store.pairs(k=k), key=lambda p: (p.a, p.b)) == want
    # a server-side cursor: a few rows, then closing it ends its transaction
    it = store.pairs(k=3)
    assert isinstance(next(it), Pair)
    assert store.connection.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
    it.close()
    assert store.connection.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    assert store.count() == 700
    with pytest.raises(ValueError, match="k must be between"):
        store.pairs(k=65)


# -- add_many -----------------------------------------------------------------------


def sequential_statuses(store: SimhashStore, docs: list[Doc], policy: str) -> list[tuple[Any, ...]]:
    out = []
    for d in docs:
        r = store.add(d.text, key=d.key, on_duplicate=policy)  # type: ignore[arg-type]
        out.append((r.status, r.distance))
    return out


@given(planted(max_k=6), st.sampled_from(["skip", "link"]), st.sampled_from([3, 6]),
       st.integers(1, 7))
@HYPO
def test_add_many_decides_like_sequential_adds(
    store: SimhashStore, data: tuple[list[int], list[int]], policy: str, k: int, batch: int
) -> None:
    stored, _ = data
    rnd = random.Random(len(stored))
    docs = [Doc(fp, key=f"k{rnd.randint(0, len(stored))}" if rnd.random() < 0.5 else None)
            for fp in stored]
    store.k = k
    reset(store)
    expect = sequential_statuses(store, docs, policy)
    expect_rows = sorted((r[1] or "", r[2]) for r in snapshot(store))
    reset(store)
    seen: list[AddResult] = []
    total = store.add_many(docs, batch_size=batch, on_duplicate=policy,  # type: ignore[arg-type]
                           progress=seen.extend)
    assert [(r.status, r.distance) for r in seen] == expect
    assert sorted((r[1] or "", r[2]) for r in snapshot(store)) == expect_rows
    assert total.read == len(docs)
    assert total.inserted == store.count()
    # every reported id is a stored row
    ids = {r[0] for r in snapshot(store)}
    assert all(r.id in ids for r in seen)


def test_add_many_counts_errors_and_reruns(store: SimhashStore) -> None:
    base = 0xABCD_EF01_2345_6789
    docs: list[Any] = [
        Doc(base, key="a", meta={"n": 1}),
        Doc(base ^ 1, key="b"),                    # near-duplicate of a, same batch
        Doc(2**64, key="too-big"),                 # out of range
        Doc(5, key="nul\x00key"),                  # NUL in key
        Doc(6, key="nulmeta", meta={"x": "a\x00"}),  # NUL in meta
        "",                                        # no features
        Doc(0x0F0F_0F0F_0F0F_0F0F, key="c"),
        7.5,                                       # not a document
    ]
    batches: list[list[AddResult]] = []
    total = store.add_many(docs, batch_size=4, progress=batches.append)
    assert [len(b) for b in batches] == [4, 4]
    flat = [r for b in batches for r in b]
    assert [r.status for r in flat] == ["inserted", "duplicate", "error", "error", "error",
                                        "error", "inserted", "error"]
    assert flat[1].duplicate_key == "a" and flat[1].distance == 1
    assert "out of range" in (flat[2].error or "")
    assert "NUL" in (flat[3].error or "") and "NUL" in (flat[4].error or "")
    assert (total.read, total.inserted, total.duplicates, total.errors, total.existing_keys) == (
        8, 2, 1, 5, 0)
    assert store.get("a").meta == {"n": 1}  # type: ignore[union-attr]
    # a rerun skips the keys already stored and stores nothing new
    again = store.add_many(docs[:2] + docs[6:7], batch_size=10)
    assert (again.existing_keys, again.inserted, again.duplicates) == (2, 0, 1)
    assert store.count() == 2


def test_add_many_texts_in_parallel(store: SimhashStore) -> None:
    rnd = random.Random(1)
    words = [f"w{i}" for i in range(500)]
    texts = [" ".join(rnd.choice(words) for _ in range(60)) for _ in range(40)]
    total = store.add_many([Doc(t, key=str(i)) for i, t in enumerate(texts)] + texts[:5],
                           workers=2)
    assert total.read == 45 and total.inserted + total.duplicates == 45
    assert total.duplicates >= 5


CONSTRAINTS = (
    "SELECT conname, contype, convalidated, pg_get_constraintdef(oid) FROM pg_constraint"
    " WHERE conrelid = 'simhash_documents'::regclass ORDER BY 1"
)


def test_bulk_load_fills_an_empty_store_and_rebuilds_indexes(store: SimhashStore) -> None:
    conn = store.connection
    before = conn.execute(
        "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'simhash_documents'"
        " ORDER BY 1"
    ).fetchall()
    constraints = conn.execute(CONSTRAINTS).fetchall()
    # the primary key (id, created_at), dropped and rebuilt on every partition
    # (no foreign key since revision 0005: duplicate_of is a plain column)
    assert "p" in {c[1] for c in constraints}
    rnd = random.Random(5)
    fps = [rnd.getrandbits(64) for _ in range(5000)]
    conn.execute("SET maintenance_work_mem = '77MB'")
    assert store.bulk_load(fps, batch_size=1500) == 5000
    # the builds' sort memory was the load's own (SET LOCAL), not the session's
    assert conn.execute("SHOW maintenance_work_mem").fetchone() == ("77MB",)
    after = conn.execute(
        "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'simhash_documents'"
        " ORDER BY 1"
    ).fetchall()
    assert after == before
    assert conn.execute(CONSTRAINTS).fetchall() == constraints
    assert store.count() == 5000
    assert [m.id for m in store.near(fps[1234], k=0)] == [1235]
    assert store.add(12345).id == 5001  # the identity continues after the loaded ids
    with pytest.raises(ValueError, match="empty"):
        store.bulk_load([1, 2])
    assert store.count() == 5001
    reset(store)
    assert store.bulk_load([Doc(1, key="x", meta={"a": 1}), Doc(2, key="y")]) == 2
    assert store.get("x").meta == {"a": 1}  # type: ignore[union-attr]


_INDEX_OIDS = (
    "SELECT c.relname, c.oid, x.indpred IS NOT NULL FROM pg_index x"
    " JOIN pg_class c ON c.oid = x.indexrelid"
    " WHERE x.indrelid = 'simhash_documents'::regclass ORDER BY 1"
)
_TRIGGERS = (
    "SELECT t.tgrelid::regclass::text, t.tgname, t.tgenabled FROM pg_trigger t"
    " WHERE t.tgname IN ('simhash_keys_insert', 'simhash_links_insert',"
    " 'simhash_text_keys_insert') ORDER BY 1, 2"
)


def test_an_array_load_keeps_the_partial_indexes_it_leaves_empty(store: SimhashStore) -> None:
    # A fingerprint array has no key, text or link: the partial indexes on
    # those columns stay through its COPY (the same index, not rebuilt), the
    # others are rebuilt; the keyed-row triggers are on again afterwards.
    conn = store.connection
    before = conn.execute(_INDEX_OIDS).fetchall()
    triggers = conn.execute(_TRIGGERS).fetchall()
    assert {t[2] for t in triggers} == {"O"} and len(triggers) >= 3
    fps = np.random.default_rng(4).integers(0, 2**64, size=3000, dtype=np.uint64)
    assert store.bulk_load(fps) == 3000
    after = conn.execute(_INDEX_OIDS).fetchall()
    assert [r[0] for r in after] == [r[0] for r in before]
    kept = {name for (name, oid, partial), (_, old, _) in zip(after, before, strict=True)
            if oid == old}
    assert kept == {name for name, _, partial in before if partial} and len(kept) == 3
    assert conn.execute(_TRIGGERS).fetchall() == triggers
    # the triggers work: a keyed add is recorded, a link too
    a = store.add("a keyed text added after the load, long enough to matter", key="k1")
    assert conn.execute("SELECT id FROM simhash_keys WHERE key = 'k1'").fetchone() == (a.id,)
    assert store.get("k1") is not None
    assert conn.execute("SELECT count(*) > 0 FROM simhash_text_keys WHERE id = %s",
                        [a.id]).fetchone() == (True,)  # its text's keys
    # a list of ints takes the general path: every index rebuilt
    reset(store)
    assert store.bulk_load([int(x) for x in fps[:10]]) == 10
    assert not {oid for _, oid, _ in conn.execute(_INDEX_OIDS)} & {oid for _, oid, _ in after}


def test_an_array_load_streams_in_chunks(store: SimhashStore,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # one COPY statement, its rows sent a chunk at a time: the chunks join up
    from simhash_pg.store import pgcopy

    monkeypatch.setattr(pgcopy, "CHUNK_ROWS", 7)
    fps = np.random.default_rng(9).integers(0, 2**64, size=30, dtype=np.uint64)
    assert store.bulk_load(fps) == 30
    got = store.connection.execute("SELECT id, fingerprint FROM simhash_documents ORDER BY id")
    assert got.fetchall() == [(i + 1, to_signed(int(fp))) for i, fp in enumerate(fps)]


# -- bad input ------------------------------------------------------------------------


BAD_CALLS: list[tuple[Any, type[Exception], str]] = [
    (lambda s: s.add(-1), ValueError, "out of range"),
    (lambda s: s.add(2**64), ValueError, "out of range"),
    (lambda s: s.add(True), TypeError, "str"),
    (lambda s: s.add(1.5), TypeError, "str"),
    (lambda s: s.add(1, key="a\x00b"), ValueError, "key contains a NUL"),
    (lambda s: s.add(1, meta={"a": ["x\x00"]}), ValueError, "meta contains a NUL"),
    (lambda s: s.add(1, meta={"a\x00": 1}), ValueError, "meta contains a NUL"),
    (lambda s: s.add(1, meta={"a": float("nan")}), ValueError, "JSON"),
    (lambda s: s.add(1, k=65), ValueError, "k must be between 0 and 64"),
    (lambda s: s.add(1, k=-1), ValueError, "k must be between 0 and 64"),
    (lambda s: s.near(1, k=65), ValueError, "k must be between 0 and 64"),
    (lambda s: s.near(2**64), ValueError, "out of range"),
    (lambda s: s.near(1, limit=0), ValueError, "limit"),
    (lambda s: s.near(1, limit=2**63), ValueError, "limit"),  # not "bigint out of range"
    (lambda s: s.near_many([1, -5]), ValueError, "out of range"),
    (lambda s: s.add_many([1], k=99), ValueError, "k must be between"),
    (lambda s: s.get("a\x00"), ValueError, "NUL"),
    (lambda s: s.remove(1.0), TypeError, "id"),
    (lambda s: s.add(1, on_duplicate="drop"), ValueError, "on_duplicate"),
]


def test_bad_input_is_a_clear_error_and_changes_nothing(store: SimhashStore) -> None:
    store.add_many([Doc(10, key="x"), Doc(2**63 + 5, key="y", meta={"m": 1})], dedup=False)
    before = snapshot(store)
    for call, exc, match in BAD_CALLS:
        with pytest.raises(exc, match=match):
            call(store)
        assert snapshot(store) == before, match


def test_unreachable_dsn_names_the_host(tmp_path: Path) -> None:
    with pytest.raises(StoreConnectionError, match=re.escape("127.0.0.1:1/nodb")):
        SimhashStore("postgresql://nobody@127.0.0.1:1/nodb", connect_timeout=2)
    with pytest.raises(StoreConnectionError, match=re.escape(str(tmp_path))):
        SimhashStore(f"host={tmp_path} dbname=x user=y", connect_timeout=2)


def test_another_scheme_is_refused_naming_both(pg_dsn: str) -> None:
    with SimhashStore(pg_dsn, scheme="chars:n=4") as s:
        s.add(42, key="x")
        before = snapshot(s)
    with pytest.raises(SchemeMismatchError) as err:
        SimhashStore(pg_dsn, scheme="words")
    assert '"name":"chars"' in str(err.value) and '"name":"words"' in str(err.value)
    with SimhashStore(pg_dsn) as s:  # no scheme: the stored one
        assert s.scheme.name == "chars" and s.scheme.to_dict()["n"] == 4
        assert snapshot(s) == before


def test_engine_argument_and_dsn_property(pg_dsn: str) -> None:
    from sqlalchemy import create_engine

    from simhash_pg.db.migrate import sqlalchemy_url

    engine = create_engine(sqlalchemy_url(pg_dsn))
    with SimhashStore(engine=engine) as s:
        s.add(77, key="e")
        with psycopg.connect(s.dsn) as other:
            assert other.execute("SELECT key FROM simhash_documents").fetchall() == [("e",)]
    engine.dispose()


def test_outdated_schema_without_migrate_asks_for_db_upgrade(pg: psycopg.Connection,
                                                             pg_dsn: str) -> None:
    from simhash_pg.db import migrate

    migrate.downgrade(pg_dsn, "base")
    with pytest.raises(SchemaVersionError, match="simhash-pg db upgrade"):
        SimhashStore(pg_dsn, migrate=False)
    with SimhashStore(pg_dsn) as s:  # migrate=True creates it
        assert s.count() == 0


def test_sql_add_function_matches_the_store(store: SimhashStore) -> None:
    conn = store.connection
    row = conn.execute("SELECT inserted FROM simhash_add(%s)", [to_signed(5)]).fetchone()
    assert row == (True,)
    row = conn.execute("SELECT id, inserted, distance FROM simhash_add(%s)", [4]).fetchone()
    assert row == (1, False, 1)
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="on_duplicate"):
        conn.execute("SELECT * FROM simhash_add(1, NULL, NULL, 3, 'nope')")


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("SIMHASH_PG_TEST_DSN") is not None,
                    reason="uses the embedded binaries")
def test_default_store_starts_and_reuses_the_embedded_server(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    from simhash_pg.db.server import LocalServer

    home = Path(tempfile.mkdtemp(prefix="shpg-home-"))
    home.chmod(0o755)
    monkeypatch.setenv("SIMHASH_PG_HOME", str(home))
    monkeypatch.delenv("SIMHASH_PG_DSN", raising=False)
    try:
        with SimhashStore() as s:
            s.add(1, key="one")
            dsn = s.dsn
        assert "host=" in dsn
        with SimhashStore() as s:  # reused, data kept
            assert s.dsn == dsn and s.get("one") is not None
    finally:
        LocalServer(home).destroy()


def test_locked_batches_wait_for_the_store_lock_and_adds_wait_for_batches(
    store: SimhashStore, pg_dsn: str
) -> None:
    """The lock protocol of simhash_add and add_many(lock_batches=True)."""
    import threading

    def finishes_within(func: Any, seconds: float) -> tuple[bool, threading.Thread]:
        t = threading.Thread(target=func)
        t.start()
        t.join(seconds)
        return not t.is_alive(), t

    with psycopg.connect(pg_dsn) as holder:  # plays a batch in progress
        holder.execute("SELECT pg_advisory_xact_lock(1397246980, 0)")
        with SimhashStore(pg_dsn, lock_batches=True) as locked, \
                SimhashStore(pg_dsn, lock_batches=False) as unlocked, SimhashStore(pg_dsn) as adder:
            far = [0x1111_2222_3333_4444, 0x5555_6666_7777_8888]
            done, _ = finishes_within(lambda: unlocked.add_many(far), 5)
            assert done  # unlocked batches do not wait (the race issue 5 removes)
            done_b, tb = finishes_within(lambda: locked.add_many([0x9999_AAAA_BBBB_CCCC]), 1)
            done_a, ta = finishes_within(lambda: adder.add(0xDDDD_EEEE_FFFF_0000), 1)
            assert not done_b and not done_a  # both wait for the batch in progress
            holder.commit()
            tb.join(10)
            ta.join(10)
            assert not tb.is_alive() and not ta.is_alive()
    assert store.count() == 4


@HYPO
@given(st.lists(st.integers(0, MAX_FINGERPRINT), max_size=40))
def test_binary_copy_data_round_trips(pg: psycopg.Connection, fps: list[int]) -> None:
    """The one binary COPY writer: bigint and bit(64) fields read back as written."""
    import numpy as np

    from simhash_pg.store.pgcopy import binary_copy_data

    pg.execute("DROP TABLE IF EXISTS copied")
    pg.execute("CREATE TABLE copied (id bigint, fp bigint, bits bit(64))")
    ids = np.arange(1, len(fps) + 1, dtype=np.int64)
    values = np.array(fps, dtype=np.uint64)
    bit64 = np.dtype([("bits", ">i4"), ("value", ">u8")])
    bits = np.empty(len(fps), dtype=bit64)
    bits["bits"] = 64
    bits["value"] = values
    data = binary_copy_data((">i8", ids), (">u8", values), (bit64, bits))
    with pg.cursor() as cur, cur.copy("COPY copied FROM STDIN (FORMAT BINARY)") as copy:
        copy.write(data)
    got = pg.execute("SELECT id, fp, bits::text FROM copied ORDER BY id").fetchall()
    assert got == [(i + 1, to_signed(fp), format(fp, "064b")) for i, fp in enumerate(fps)]


def test_a_store_keeps_its_scheme_version(pg_dsn: str) -> None:
    """A store made before scheme version 2 keeps fingerprinting as version 1.

    New stores fingerprint the visible text (tags stripped, entities decoded);
    one that records version 1 (as every store made before did) opens with it
    and stores and finds exactly what it did before.
    """
    from simhash_pg.text.schemes import Scheme
    from simhash_pg.text.simhash import Fingerprinter

    plain = "The community pool will be closed for maintenance from Monday to Wednesday."
    marked = ('<p class="notice">The community pool&nbsp;will be <b>closed</b> for maintenance'
              " from Monday to Wednesday.</p>")
    v1 = Scheme(version=1)
    with SimhashStore(pg_dsn, scheme=v1) as s:  # what an older simhash-pg recorded
        s.add(marked, key="old")
    with psycopg.connect(pg_dsn) as c:
        assert c.execute("SELECT value FROM simhash_meta WHERE name = 'scheme'").fetchone() == (
            v1.to_dict(),)
        assert "visible" not in v1.to_dict()
    with SimhashStore(pg_dsn) as s:
        assert s.scheme == v1 and not s.scheme.visible
        s.add(plain, key="plain")
        got = dict(s.connection.execute(
            "SELECT key, fingerprint FROM simhash_documents").fetchall())
        assert to_unsigned(got["old"]) == Fingerprinter(v1).fingerprint(marked)
        assert to_unsigned(got["plain"]) == Fingerprinter(v1).fingerprint(plain)
        assert Fingerprinter(v1).fingerprint(marked) != Fingerprinter(v1).fingerprint(plain)
        assert [m.key for m in s.near(marked, k=0)] == ["old"]


def test_a_new_store_fingerprints_the_visible_text(pg_dsn: str) -> None:
    plain = "The community pool will be closed for maintenance from Monday to Wednesday."
    marked = ('<p class="notice">The community pool&nbsp;will be <b>closed</b> for maintenance'
              " from Monday to Wednesday.</p>")
    with SimhashStore(pg_dsn) as s:
        assert s.scheme.to_dict()["version"] == 4 and s.scheme.visible
        a = s.add(marked, key="marked")
        assert [m.key for m in s.near(plain, k=0)] == ["marked"]
        assert s.add(plain, key="plain", dedup=True).duplicate_of == a.id


_ARTICLE = ("<p>The community pool will be closed for maintenance from Monday to Wednesday, "
            "the council said on Tuesday.</p><p>Swimming lessons move to the school gym; members "
            "keep their usual time slots, and the sauna reopens on Thursday morning.</p>")


def test_a_new_store_sees_through_double_escaping(pg_dsn: str) -> None:
    # A page encoded twice: "<p>" shows as "&lt;p&gt;". Its fingerprint is the
    # article's (version 3), so the look-up finds it; verification still
    # compares the text the labelling rule sees, which calls the two duplicates.
    import html

    from simhash_pg.text.schemes import Scheme
    from simhash_pg.text.simhash import Fingerprinter
    from simhash_pg.verify.overlap import overlap

    escaped = html.escape(_ARTICLE, quote=False)
    rule = Fingerprinter(Scheme(version=2))
    assert overlap(*(rule.normalize(t) for t in (_ARTICLE, escaped))) >= 0.8
    assert rule.fingerprint(escaped) != rule.fingerprint(_ARTICLE)
    with SimhashStore(pg_dsn) as s:
        a = s.add(_ARTICLE, key="article")
        assert [m.distance for m in s.near(escaped, k=0)] == [0]
        assert s.add(escaped, key="escaped", dedup=True).duplicate_of == a.id


def test_a_version_2_store_keeps_version_2(pg_dsn: str) -> None:
    import html

    from simhash_pg.text.schemes import Scheme
    from simhash_pg.text.simhash import Fingerprinter

    v2 = Scheme(version=2)
    escaped = html.escape(_ARTICLE, quote=False)
    with SimhashStore(pg_dsn, scheme=v2) as s:  # what simhash-pg 2026-11 recorded
        s.add(_ARTICLE, key="article")
    with SimhashStore(pg_dsn) as s:
        assert s.scheme == v2
        s.add(escaped, key="escaped", dedup=False)
        got = dict(s.connection.execute(
            "SELECT key, fingerprint FROM simhash_documents").fetchall())
        assert to_unsigned(got["escaped"]) == Fingerprinter(v2).fingerprint(escaped)
        assert to_unsigned(got["escaped"]) != Fingerprinter().fingerprint(escaped)
