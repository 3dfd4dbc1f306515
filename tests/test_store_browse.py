"""The store's listings (store/browse.py) against brute force over the whole table.

What serve's web page, ``/v1/groups`` and ``dedup`` read, now through the
store: groups of linked duplicates, the newest rows a page at a time, rows
by id or key with their kept text, and a rerun's known keys.
"""

from __future__ import annotations

import random
from collections import defaultdict

import pytest

from simhash_pg import SimhashStore
from simhash_pg.bits import hamming, to_unsigned


def _fill(store: SimhashStore, seed: int) -> None:
    """Fingerprints in clusters (linked duplicates within k = 3) and keys on some."""
    rnd = random.Random(seed)
    for c in range(12):
        head = rnd.getrandbits(64)
        for j in range(rnd.randrange(1, 6)):
            fp = head ^ sum(1 << b for b in rnd.sample(range(64), rnd.randrange(0, 3))) if j \
                else head
            store.add(fp, key=f"c{c}-{j}" if rnd.random() < 0.7 else None,
                      meta={"c": c} if j == 0 else None)
    # a text, so that a row keeps one
    store.add("The harbour master counted forty ships at anchor before the storm.",
              key="text")


def _rows(store: SimhashStore) -> list[tuple[int, str | None, int, int | None]]:
    return [(i, k, to_unsigned(fp), dup) for i, k, fp, dup in store.connection.execute(
        "SELECT id, key, fingerprint, duplicate_of FROM simhash_documents ORDER BY id")]


@pytest.mark.parametrize(("seed", "limit"), [(1, 1), (2, 3), (3, 7)])
def test_groups_recent_and_documents_are_the_table(pg_dsn: str, seed: int,
                                                    limit: int) -> None:
    with SimhashStore(pg_dsn, k=3, on_duplicate="link") as store:
        _fill(store, seed)
        rows = _rows(store)
        fps = {i: fp for i, _, fp, _ in rows}
        keys = {i: k for i, k, _, _ in rows}
        members: dict[int, list[int]] = defaultdict(list)
        for i, _, _, dup in rows:
            if dup is not None:
                members[dup].append(i)
        assert members  # the clusters linked something

        # groups, page by page, are every head with its members, by id
        got, after = [], 0
        while page := store.groups(limit=limit, after=after):
            assert len(page) <= limit
            got += page
            after = page[-1].id
        assert [g.id for g in got] == sorted(members)
        for g in got:
            assert (g.key, g.size) == (keys[g.id], len(members[g.id]) + 1)
            assert [(m.id, m.key, m.distance) for m in g.members] == [
                (i, keys[i], hamming(fps[i], fps[g.id])) for i in sorted(members[g.id])[:100]]

        # recent, page by page, is every row, newest first
        seen: list[int] = []
        before = None
        while recent := store.recent(limit=limit, before=before):
            seen += [d.id for d in recent]
            before = recent[-1].id
        assert seen == sorted(fps, reverse=True)

        # documents and document are get() plus the kept text
        ids = [i for i, *_ in rows] + [10**12]
        docs = store.documents(ids)
        assert sorted(docs) == sorted(fps)
        for i in fps:
            base = store.get(i)
            assert base is not None
            assert docs[i] == store.document(i)
            assert (docs[i].id, docs[i].key, docs[i].fingerprint, docs[i].duplicate_of,
                    docs[i].created_at, docs[i].meta) == (
                base.id, base.key, base.fingerprint, base.duplicate_of, base.created_at,
                base.meta)
            key = keys[i]
            if key is not None:
                assert store.document(key) == docs[i]
        assert store.document(10**12) is None and store.document("no such key") is None
        text = store.document("text")
        assert text is not None and text.text is not None and "harbour" in text.text

        # a rerun's known keys: what an add of an existing key returns
        reader = store.key_reader()
        assert reader is not None
        with reader:
            wanted = [k for k in keys.values() if k is not None] + ["no such key"]
            known = reader.known(wanted)
        assert set(known) == set(wanted) - {"no such key"}
        for k, res in known.items():
            assert res.id is not None
            again = store.add(fps[res.id], key=k)
            assert (res.id, res.fingerprint, res.existing_key, res.inserted) == (
                again.id, again.fingerprint, True, False)
