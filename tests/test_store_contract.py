"""One contract, two stores: SimhashStore and AsyncSimhashStore.

Every test here runs against both (the ``either`` fixture): the async store's
coroutines are driven to completion on an event loop by a thin adapter, so
the same assertions hold the same results and errors. The 8 mixed sync and
async writers at the end store no near-duplicate pair between them.
"""

from __future__ import annotations

import asyncio
import random
import threading
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import psycopg
import pytest

from simhash_pg.store import (
    AddManyResult,
    AddResult,
    AsyncSimhashStore,
    Doc,
    Match,
    SimhashStore,
    StoreConnectionError,
)

WORDS = ("harbour lantern copper meadow signal winter garden timber orbit quarry "
         "ribbon saddle velvet walnut anchor pepper river market stone yonder").split()


def text(seed: int, n: int = 70) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) + str(rng.randrange(90)) for _ in range(n)) + "."


def variant(t: str) -> str:
    """One word changed: a near-duplicate under every mode's rule."""
    words = t.split()
    words[len(words) // 2] = "zeppelin7"
    return " ".join(words)


class Blocking:
    """An AsyncSimhashStore's coroutines, awaited one at a time on a private loop."""

    def __init__(self, store: AsyncSimhashStore, loop: asyncio.AbstractEventLoop) -> None:
        self.store = store
        self.loop = loop

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.store, name)
        if not callable(attr):
            return attr
        if name == "pairs":
            return lambda **kw: self.loop.run_until_complete(_collect(attr(**kw)))
        return lambda *a, **kw: self.loop.run_until_complete(attr(*a, **kw))


async def _collect(it: Any) -> list[Any]:
    return [x async for x in it]


@pytest.fixture(params=["sync", "async"])
def either(request: pytest.FixtureRequest, pg_dsn: str) -> Iterator[Any]:
    """Open a store of the parametrised kind: ``either(**options)``; all closed after."""
    opened: list[Any] = []
    loop = asyncio.new_event_loop()

    def open_store(dsn: str = pg_dsn, **options: Any) -> Any:
        if request.param == "sync":
            store: Any = SimhashStore(dsn, **options)
        else:
            store = Blocking(loop.run_until_complete(AsyncSimhashStore.open(dsn, **options)),
                             loop)
        opened.append(store)
        return store

    yield open_store
    for store in opened:
        store.close()
    loop.close()


def test_add_then_a_near_duplicate_is_skipped(either: Any) -> None:
    store = either()
    first = store.add(text(1), key="a", meta={"src": "x"})
    assert isinstance(first, AddResult) and first.inserted and first.id is not None
    dup = store.add(variant(text(1)), key="b")
    assert not dup.inserted and dup.id == first.id and dup.duplicate_key == "a"
    again = store.add(text(2), key="a")
    assert not again.inserted and again.existing_key
    assert store.count() == 1


def test_link_stores_the_duplicate_with_its_original(either: Any) -> None:
    store = either(on_duplicate="link")
    first = store.add(text(3), key="a")
    dup = store.add(variant(text(3)), key="b")
    assert dup.inserted and dup.duplicate_of == first.id
    assert store.get("b").duplicate_of == first.id


def test_near_and_near_many(either: Any) -> None:
    store = either()
    ids = [store.add(text(s), key=f"k{s}").id for s in range(5)]
    got = store.near(variant(text(2)))
    assert [m.id for m in got] == [ids[2]] and isinstance(got[0], Match)
    assert store.near(text(99)) == []
    fp = store.fingerprint(text(4))
    assert store.near(fp, k=0)[0].id == ids[4]
    many = store.near_many([text(0), text(99), fp])
    assert [[m.id for m in ms] for ms in many] == [[ids[0]], [], [ids[4]]]


def test_add_many_counts_and_decides_in_order(either: Any) -> None:
    store = either()
    docs = [Doc(text(s), key=f"k{s}") for s in range(20)]
    docs += [Doc(variant(text(s)), key=f"v{s}") for s in range(5)]
    docs.append(Doc("", key="empty"))
    seen: list[AddResult] = []
    result = store.add_many(docs, batch_size=7, progress=seen.extend)
    assert isinstance(result, AddManyResult)
    assert (result.read, result.inserted, result.duplicates, result.errors) == (26, 20, 5, 1)
    assert len(seen) == 26 and seen[-1].error
    assert store.count() == 20
    assert store.add_many([Doc(text(0), key="k0")]).existing_keys == 1


def test_pairs_remove_and_browse(either: Any) -> None:
    store = either(on_duplicate="link")
    a = store.add(text(5), key="a").id
    b = store.add(variant(text(5)), key="b").id
    store.add(text(6), key="c")
    pairs = store.pairs(k=64)
    assert {(p.a, p.b) for p in pairs} >= {(a, b)}
    assert store.document("a").key == "a"
    assert set(store.documents([a, b])) == {a, b}
    assert [d.key for d in store.recent(limit=2)] == ["c", "b"]
    assert [(g.id, g.size) for g in store.groups(limit=10)] == [(a, 2)]
    assert store.remove("c") and not store.remove("c")
    assert store.get("c") is None and store.count() == 2


def test_purge_and_stats(either: Any) -> None:
    store = either(retention=timedelta(days=2))
    store.add(text(7), key="a")
    assert store.stats()["rows"] == 1
    assert store.purge(older_than=timedelta(0)).deleted == 1
    assert store.count() == 0


def test_bad_input_raises_the_same_errors(either: Any) -> None:
    store = either()
    with pytest.raises(ValueError, match="k must be between"):
        store.near(text(1), k=65)
    with pytest.raises(ValueError, match="key is 2,000 bytes"):
        store.add(text(1), key="x" * 2000)
    with pytest.raises(TypeError):
        store.add(3.5)
    with pytest.raises(ValueError, match="limit"):
        store.near(text(1), limit=0)
    assert store.count() == 0  # nothing stored by a refused call


def test_a_bad_option_or_database_raises_on_open(either: Any) -> None:
    with pytest.raises(ValueError, match="on_duplicate"):
        either(on_duplicate="merge")
    with pytest.raises(StoreConnectionError):
        either(dsn="postgresql://nobody@127.0.0.1:1/none", connect_timeout=2)


def test_the_async_store_stays_off_the_event_loop(pg_dsn: str) -> None:
    async def main() -> tuple[str, str]:
        loop_thread = threading.current_thread().name
        async with await AsyncSimhashStore.open(pg_dsn) as store:
            ran_in = await store._run(lambda: threading.current_thread().name)
            # concurrent calls on one store take turns on its one thread
            results = await asyncio.gather(*(store.add(text(s), key=f"k{s}") for s in range(8)))
            assert all(r.inserted for r in results) and await store.count() == 8
        assert store.closed
        with pytest.raises(ValueError, match="closed"):
            await store.count()
        return loop_thread, ran_in

    loop_thread, ran_in = asyncio.run(main())
    assert ran_in.startswith("simhash-pg-async") and ran_in != loop_thread


# -- writers of both kinds at once -----------------------------------------------

FAMILIES = 12


def _family(f: int) -> list[str]:
    base = text(1000 + f)
    words = base.split()
    out = [base]
    for i in range(5):
        w = list(words)
        w[(i * 11 + 3) % len(w)] = f"edit{i}x"
        out.append(" ".join(w))
    return out


def _sync_writer(dsn: str, seed: int, barrier: threading.Barrier) -> None:
    rnd = random.Random(seed)
    with SimhashStore(dsn) as store:
        barrier.wait()
        for f in range(FAMILIES):
            for t in rnd.sample(_family(f), 6):
                store.add(t)


async def _async_writers(dsn: str, seeds: list[int], barrier: threading.Barrier) -> None:
    async def one(seed: int) -> None:
        rnd = random.Random(seed)
        async with await AsyncSimhashStore.open(dsn) as store:
            await asyncio.get_running_loop().run_in_executor(None, barrier.wait)
            for f in range(FAMILIES):
                family = rnd.sample(_family(f), 6)
                await store.add_many(family[:3], batch_size=3)
                for t in family[3:]:
                    await store.add(t)

    await asyncio.gather(*(one(s) for s in seeds))


def test_mixed_sync_and_async_writers_store_no_near_duplicates(pg_dsn: str) -> None:
    barrier = threading.Barrier(8)
    threads = [threading.Thread(target=_sync_writer, args=(pg_dsn, s, barrier))
               for s in range(4)]
    for t in threads:
        t.start()
    asyncio.run(_async_writers(pg_dsn, [10, 11, 12, 13], barrier))
    for t in threads:
        t.join()
    with SimhashStore(pg_dsn) as store:
        # one per family: every other copy was refused as its near-duplicate
        assert store.count() == FAMILIES
        for f in range(FAMILIES):
            assert len(store.near(_family(f)[0])) == 1
    with psycopg.connect(pg_dsn) as conn:
        pairs = conn.execute(
            "SELECT count(*) FROM simhash_documents a JOIN simhash_documents b "
            "ON a.id < b.id AND bit_count((a.fingerprint # b.fingerprint)::bit(64)) <= 3"
        ).fetchone()
    assert pairs == (0,)


def test_the_async_example_stores_one_of_two_copies(pg_dsn: str) -> None:
    import asyncio
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "examples" / "async_app.py"
    spec = importlib.util.spec_from_file_location("async_app_example", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    seen = asyncio.run(module.crawl(pg_dsn, module.PAGES))
    assert seen["c"] is None
    # a and b are copies: whichever worker got there first stored its page
    assert {seen["a"], seen["b"]} in ({None, "a"}, {None, "b"})
