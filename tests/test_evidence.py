"""A pair's evidence (simhash_pg.verify.evidence) against what the store decides.

Through a real store: for every query and every stored row, the evidence's
verdict is "duplicate" exactly for the rows ``near()`` returns, under each
verify mode, by probes (k = 3) and by radius (k = 6), with keys past the
holder cap (a licence family whose sentences are held by 36 rows).
"""

from __future__ import annotations

from collections import Counter

import pytest
from test_rerun_stability import licence_family

from simhash_pg import Doc, SimhashStore, labels
from simhash_pg.data import iter_sample
from simhash_pg.store.evidence import explain, explain_stored, pair_query
from simhash_pg.text.signatures import SHARED_SENTENCE_CAP

TITLES = [
    "Storm warning issued for the river city tonight",
    "Storm warning issued for river city tonight",
    "Storm warning issued for the river city on Monday night",
    "Markets rally as oil prices fall sharply on Monday",
    "Markets rally as oil prices fall on Monday - Wire",
    "今天北京天气晴朗，气温适宜，市民纷纷走出家门",
    "今天北京天气晴朗，气温适宜，市民纷纷走出家",
]


def corpus() -> tuple[list[Doc], list[str]]:
    """Stored documents and queries: a licence family (every other file stored), sample
    documents and titles (every other one stored); the queries are all of them."""
    family = [(k, t) for k, _, t in licence_family()]
    sample = [(f"s:{r['id']}", str(r["text"])) for r in list(iter_sample())[:60]]
    titles = [(f"t:{i}", t) for i, t in enumerate(TITLES)]
    docs = family + sample + titles
    stored = [Doc(t, key=k) for i, (k, t) in enumerate(docs) if i % 2 == 0 or k.startswith("lib")]
    return stored, [t for _, t in docs]


@pytest.mark.parametrize(("mode", "ks"), [("all", (3, 6)), ("short", (3,)), ("off", (3,))])
def test_the_evidence_says_duplicate_exactly_where_near_finds_one(
        pg_dsn: str, mode: str, ks: tuple[int, ...]) -> None:
    stored, queries = corpus()
    seen: Counter[str] = Counter()
    with SimhashStore(pg_dsn, verify=mode) as store:  # type: ignore[arg-type]
        store.add_many(stored, dedup=False)
        ids = [i for (i,) in store.connection.execute("SELECT id FROM simhash_documents")]
        for k in ks:
            for q in queries:
                near = [m.id for m in store.near(q, k=k)]
                evidence = explain(store, q, ids, k)
                assert {e.id for e in evidence} == set(ids)
                dup = {e.id for e in evidence if e.verdict == "duplicate"}
                assert dup == set(near), (k, q[:60])
                for e in evidence:
                    seen[e.verdict] += 1
                    seen.update(f"by {how}" for how in e.found_by)
                    seen["past the holder cap"] += any(m.finds is False and m.holders
                                                       and m.holders > SHARED_SENTENCE_CAP
                                                       for m in e.keys)
                    if e.verdict == "duplicate" and e.threshold is not None:
                        assert e.similarity is not None and e.similarity >= e.threshold
                    # every evidence has words for each of its parts
                    assert [label for label, _ in labels.evidence_rows(e)][:2] == \
                        ["decided", "found by"]
    if mode == "all":
        # the paths the evidence must tell apart were all taken
        for what in ("duplicate", "not a duplicate", "not found", "by probe", "by radius",
                     "by sentence", "by min-hash", "by title", "past the holder cap"):
            assert seen[what] > 0, (what, seen)
    else:
        assert seen["by probe"] == 0 and seen["by radius"] > 0


@pytest.mark.parametrize("keep_text", [True, False])
def test_a_stored_document_as_the_query(pg_dsn: str, keep_text: bool) -> None:
    """The compare of two stored documents: the keys and numbers of the text as it was added."""
    docs = [t for k, _, t in licence_family()[:6]]
    with SimhashStore(pg_dsn, keep_text=keep_text) as store:
        added = [store.add(t, dedup=False).id for t in docs]
        for i in range(1, len(docs)):
            assert added[i] is not None and added[i - 1] is not None
            stored = explain_stored(store, added[i], added[i - 1])
            (from_text,) = explain(store, docs[i], [added[i - 1]])
            assert stored is not None
            if keep_text:
                # the store keeps the text as written (body): the same evidence
                # as the pasted text's, probe values and keys' kinds included
                assert stored == from_text
                continue
            for part in ("distance", "similarity", "threshold", "signature", "equal_blocks",
                         "verdict"):
                assert getattr(stored, part) == getattr(from_text, part), part
            assert {m.key for m in stored.keys} == {m.key for m in from_text.keys}
            # without the text as written its probe values are not known
            assert stored.probe_blocks is None
        assert explain_stored(store, added[0], 10**9) is None


def test_a_query_s_keys_have_their_kinds(pg_dsn: str) -> None:
    with SimhashStore(pg_dsn) as store:
        for text in (TITLES[0], TITLES[5], licence_family()[0][2]):
            q = pair_query(store, text)
            assert q.vtext is not None and q.sentences is not None and q.titles is not None
            kinds = q.sentences | q.titles | set(q.vtext.minhash)
            assert set(q.vtext.hashes) <= kinds
        assert pair_query(store, 12345).vtext is None


def test_shares_are_rounded_down() -> None:
    assert labels.shared(0.7996) == "79% shared"  # below a bar of 80% never reads as 80%
    assert labels.shared(0.8) == "80% shared" and labels.shared(0.29) == "29% shared"
    assert labels.shared_value(0.99072) == 0.990
    assert labels.percent(1.0) == "100%"


def test_a_stored_query_without_its_text_is_decided_by_distance(pg_dsn: str) -> None:
    text = licence_family()[0][2]
    with SimhashStore(pg_dsn, verify="off") as store:  # keeps no text
        a, b = (store.add(t, dedup=False).id for t in (text, text + " "))
        assert a is not None and b is not None
        ev = explain_stored(store, b, a)
        assert ev is not None and ev.verdict == "duplicate" and not ev.query_text_kept
        assert labels.decided(ev) == ("near-duplicate: distance 0 <= k = 3 (distance alone: "
                                      "the store keeps no text for the querying document)")
