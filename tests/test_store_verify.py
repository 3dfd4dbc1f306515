"""Verification in the store: near/add/add_many re-check candidates (simhash_pg.verify).

The reference is brute force: every stored row, judged by ``verify.accept``
with what the row keeps in the database. The index path must agree with it
exactly, and add_many must decide as sequential add() calls would.
"""

from __future__ import annotations

import random
import re
import threading
from typing import Any

import pytest
import xxhash
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simhash_pg import hamming
from simhash_pg.bits import blocks, to_signed, to_unsigned
from simhash_pg.store import Doc, SimhashStore
from simhash_pg.text.signatures import (
    MIN_SENTENCE_CHARS,
    MIN_TITLE_KEY_CHARS,
    SENTENCE_HASH_SEED,
    TITLE_BAG_SEED,
    TITLE_GAP_SEED,
    TITLE_KEY_SEED,
    key_holders_found,
    longest_sentences,
    sentence_signature_signed,
)
from simhash_pg.verify import (
    PROBE_CAP,
    PROBE_LEAD,
    PROBE_PAIRS,
    PROBE_T,
    SHORT_K,
    policy_for,
    verification_text,
)

HYPO = settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

WORDS = (
    "market stocks oil rally falls rise bank rates city council vote school budget storm "
    "warning river flood police report new plan train strike airport delay winter heat "
    "record crowd museum opens bridge closed election result tax cut hospital nurses"
).split()


def reset(store: SimhashStore) -> None:
    store.connection.execute("TRUNCATE simhash_documents RESTART IDENTITY")


def rows(store: SimhashStore) -> list[tuple[Any, ...]]:
    return store.connection.execute(
        "SELECT id, key, fingerprint, duplicate_of, verify_text, sentence_sig, sentence_hashes"
        " FROM simhash_documents ORDER BY id"
    ).fetchall()


_M64 = (1 << 64) - 1


def _mix64(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)


def brute_minhash(vtext: str) -> set[int]:
    """The min-hash keys by their definition, one 8-gram at a time: per bin (a
    hash's top two bits), the least mixed value of an 8-gram of code points."""
    if len(vtext) < 50:
        return set()
    least: dict[int, int] = {}
    for i in range(len(vtext) - 7):
        g = 0
        for ch in vtext[i : i + 8]:
            g = (g * 0x100000001B3 + ord(ch)) & _M64
        h = _mix64(g)
        least[h >> 62] = min(least.get(h >> 62, h), h)
    return {to_signed(v) for v in least.values()}


def brute_near(store: SimhashStore, text: str, k: int) -> list[tuple[int, int]]:
    """(id, distance) of every stored row accept() takes, nearest first, ties by id.

    Under "all", a text query at k <= 3 (titles too) is
    searched by margin-ranked probes: a row is a candidate iff one of its
    block values is among the query's probe values of that block and it lies
    within the cap, or its sentence signature equals the query's; the rule
    then judges it with the cap as its distance limit. Any other query: every
    row, judged by the rule.
    """
    sc = store.scheme
    q = verification_text(text, html=sc.html, t2s=sc.t2s, visible=bool(sc.visible))
    qsig = sentence_signature_signed(text, html=sc.html, t2s=sc.t2s, visible=bool(sc.visible))
    qhashes = {
        to_signed(xxhash.xxh3_64_intdigest(s.encode(), SENTENCE_HASH_SEED))
        for s in longest_sentences(text, html=sc.html, t2s=sc.t2s, visible=bool(sc.visible))
        if len(s) >= MIN_SENTENCE_CHARS
    }
    qminhash = brute_minhash(q)
    qhashes |= qminhash
    bare = re.sub(r"\d", "", q)  # a title's key: its verification text without digits
    if len(q) < 100 and len(bare) >= MIN_TITLE_KEY_CHARS:
        qhashes.add(to_signed(xxhash.xxh3_64_intdigest(bare.encode(), TITLE_KEY_SEED)))
    # and its word-set and gap keys (words with one run of 1 or 2 left out; 1 above
    # 19 words), none above 37 words or from 62 characters
    words = [w for w in (re.sub(r"[\W\d_]", "", w) for w in text.lower().split()) if w]
    if len(q) < 62 and 2 <= len(words) <= 37 and len("".join(words)) >= 8:
        # the word-set key (its words sorted) and the end gaps (a gap of no word)
        for seed, parts in ((TITLE_BAG_SEED, sorted(words)), (TITLE_GAP_SEED, ["\x1e", *words]),
                            (TITLE_GAP_SEED, [*words, "\x1e"])):
            qhashes.add(to_signed(xxhash.xxh3_64_intdigest("\x1f".join(parts).encode(), seed)))
        for width in (1, 2) if len(words) <= 19 else (1,):
            for i in range(len(words) - width + 1):
                kept = words[:i] + words[i + width:]
                if len(kept) >= 2 and len("".join(kept)) >= MIN_TITLE_KEY_CHARS:
                    gap = "\x1f".join([*words[:i], "\x1e", *words[i + width:]])
                    qhashes.add(to_signed(xxhash.xxh3_64_intdigest(gap.encode(), TITLE_GAP_SEED)))
    # a long text (no title keys: 100 characters or more) probes its pairs'
    # values per block by pairs of blocks when the store records them (0019)
    pp = store.policy.probe_pairs
    pairs = len(q) >= 100 and pp is not None
    fp, probes = store.fingerprinter.fingerprint_probes(text, pp if pp and pairs else PROBE_T)
    # 48 look-ups: the keys first, then 4 per probe value (at least the own values)
    t = pp if pp and pairs else max(1, min(PROBE_T, (48 - len(qhashes) - (qsig is not None)) // 4))
    probes = tuple(p[:t] for p in probes)
    own = blocks(fp)

    def reached(sb: tuple[int, ...]) -> bool:
        if not pairs:
            return any(b in p for b, p in zip(sb, probes, strict=True))
        # block i among its leading probes (revision 0024) or the own value,
        # block i + 1 among the probes, the own value or one bit from it
        lead = store.policy.probe_lead
        return any((sb[i] in probes[i][:lead] or sb[i] == own[i])
                   and (sb[(i + 1) % 4] in probes[(i + 1) % 4]
                        or ((sb[(i + 1) % 4] ^ own[(i + 1) % 4]) & 0xFFFF).bit_count() <= 1)
                   for i in range(4))
    probed = store.verify == "all" and k <= 3
    stored = rows(store)
    # each key finds its holders by the look-up's rule: all of at most 16, the
    # 16 nearest of at most 256, none of more (boilerplate)
    finders: dict[int, set[int]] = {}
    for h in qhashes:
        for i in key_holders_found(((r[0], r[2]) for r in stored if h in (r[6] or ())), fp):
            finders.setdefault(i, set()).add(h)
    hits = []
    for id_, _, sfp, _, vtext, sig, _hashes in stored:
        d = hamming(fp, to_unsigned(sfp))
        # an equal signature, one of the longest sentences (or a title key) in
        # common, or a min-hash key in common within 22 bits
        shared = finders.get(id_, set())
        same_sig = ((qsig is not None and sig == qsig) or bool(shared - qminhash)
                    or (bool(shared) and d <= 22))
        if probed and not same_sig and not (
            d <= max(k, PROBE_CAP) and reached(blocks(to_unsigned(sfp)))
        ):
            continue
        if policy_for(store.verify).accept(q, [(vtext, d, same_sig)], k, probed=probed)[0]:
            hits.append((d, id_))
    return [(i, d) for d, i in sorted(hits)]


@st.composite
def corpus(draw: st.DrawFn) -> list[str]:
    """Titles and multi-sentence texts, each with a few edited copies."""
    texts: list[str] = []
    for _ in range(draw(st.integers(2, 6))):
        n = draw(st.sampled_from([3, 4, 6, 24, 40]))
        words = draw(st.lists(st.sampled_from(WORDS), min_size=n, max_size=n))
        texts.append(_sentences(words))
        for _ in range(draw(st.integers(0, 3))):
            w = list(words)
            op = draw(st.sampled_from(["drop", "add", "swap", "punct", "tail"]))
            i = draw(st.integers(0, len(w) - 1))
            if op == "drop" and len(w) > 2:
                del w[i]
            elif op == "add":
                w.insert(i, draw(st.sampled_from(WORDS)))
            elif op == "swap":
                j = draw(st.integers(0, len(w) - 1))
                w[i], w[j] = w[j], w[i]
            text = _sentences(w)
            if op == "punct":
                text = text.upper() + "!!"
            elif op == "tail":
                text += " Read more at our site."
            texts.append(text)
    return draw(st.permutations(texts))


def _sentences(words: list[str]) -> str:
    # sentences of 8 words, so that long texts have a sentence signature
    parts = [" ".join(words[i : i + 8]) for i in range(0, len(words), 8)]
    return ". ".join(p.capitalize() for p in parts) + "."


@HYPO
@given(corpus(), st.sampled_from(["short", "all"]), st.sampled_from([3, 6]))
def test_near_equals_brute_force(pg_dsn: str, texts: list[str], mode: Any, k: int) -> None:
    with SimhashStore(pg_dsn, verify=mode) as store:
        reset(store)
        store.add_many([Doc(t, key=str(i)) for i, t in enumerate(texts)], dedup=False)
        for t in texts:
            want = brute_near(store, t, k)
            assert [(m.id, m.distance) for m in store.near(t, k=k)] == want
        got = store.near_many(texts, k=k)
        assert [[(m.id, m.distance) for m in ms] for ms in got] == [
            brute_near(store, t, k) for t in texts
        ]


def families(rnd: random.Random) -> tuple[list[str], list[int]]:
    """A few hundred rows: long texts with many randomly edited copies, plus bare
    fingerprints planted a few bits from the texts' (where probes and radius differ)."""
    texts: list[str] = []
    for _ in range(14):
        words = rnd.choices(WORDS, k=rnd.randint(40, 64))
        texts.append(_sentences(words))
        for _ in range(rnd.randint(16, 20)):
            w = list(words)
            for _ in range(rnd.randint(1, 8)):
                i = rnd.randrange(len(w))
                op = rnd.choice(["drop", "add", "replace"])
                if op == "drop" and len(w) > 2:
                    del w[i]
                elif op == "add":
                    w.insert(i, rnd.choice(WORDS))
                else:
                    w[i] = rnd.choice(WORDS)
            texts.append(_sentences(w))
    rnd.shuffle(texts)
    masks = [sum(1 << b for b in rnd.sample(range(64), rnd.randint(3, 14))) for _ in range(80)]
    return texts, masks


@settings(max_examples=4, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.integers(0, 2**32))  # a seed: hypothesis' own draws of this much data run dry
def test_probed_near_equals_brute_force_on_planted_rows(pg_dsn: str, seed: int) -> None:
    texts, masks = families(random.Random(seed))
    with SimhashStore(pg_dsn, verify="all") as store:
        reset(store)
        store.add_many(texts, dedup=False)
        fps = store.fingerprinter.fingerprint_many(texts)
        # bare fingerprints 3..14 bits from a text's: judged by distance alone
        store.add_many([fps[j] ^ m for j, m in enumerate(masks)], dedup=False)
        assert len(rows(store)) >= 300
        queries = texts[:: max(1, len(texts) // 40)]
        for t in queries:
            assert [(m.id, m.distance) for m in store.near(t)] == brute_near(store, t, 3)
        got = store.near_many(queries)
        assert [[(m.id, m.distance) for m in ms] for ms in got] == [
            brute_near(store, t, 3) for t in queries
        ]


@HYPO
@given(corpus(), st.sampled_from(["off", "short", "all"]), st.sampled_from([3, 6]),
       st.sampled_from(["skip", "link"]))
def test_add_many_decides_as_sequential_adds(
    pg_dsn: str, texts: list[str], mode: Any, k: int, policy: Any
) -> None:
    with SimhashStore(pg_dsn, verify=mode, k=k, on_duplicate=policy) as store:
        reset(store)
        seq = [store.add(t) for t in texts]
        seq_rows = rows(store)
        reset(store)
        many: list[Any] = []
        store.add_many(texts, batch_size=7, progress=many.extend)
        many_rows = rows(store)
    # add_many reserves ids for a whole batch: compare by the input that made each row
    assert decisions(many) == decisions(seq)
    assert by_input(many_rows, many) == by_input(seq_rows, seq)
    # and no two stored documents verify as near-duplicates of each other
    if policy == "skip":
        assert all(r.duplicate_of is None for r in seq if r.inserted)


def decisions(results: list[Any]) -> list[tuple[Any, ...]]:
    made = {r.id: i for i, r in enumerate(results) if r.inserted}
    return [(r.status, made.get(r.id), made.get(r.duplicate_of), r.distance) for r in results]


def by_input(table: list[tuple[Any, ...]], results: list[Any]) -> list[tuple[Any, ...]]:
    made = {r.id: i for i, r in enumerate(results) if r.inserted}
    return [(made[r[0]], r[1], r[2], made.get(r[3]), r[4], r[5]) for r in table]


def test_short_title_variant_found_beyond_k3(pg_dsn: str) -> None:
    a = "Storm warning issued for the river city tonight"
    b = "Storm warning issued for river city tonight"
    with SimhashStore(pg_dsn, verify="short") as store:
        assert 3 < hamming(store.fingerprint(a), store.fingerprint(b)) <= SHORT_K
        first = store.add(a, key="a")
        dup = store.add(b, key="b")
        assert first.inserted and not dup.inserted and dup.duplicate_of == first.id
        assert [m.key for m in store.near(b)] == ["a"]
    with SimhashStore(pg_dsn, verify="off") as plain:
        assert plain.near(b) == []  # k = 3 alone misses it


def test_unrelated_titles_at_small_distance_rejected(pg_dsn: str) -> None:
    # found by search: 8 bits apart, bigram Jaccard 0.38
    a, b = "Oil new stocks plan", "Stocks rates plan city"
    with SimhashStore(pg_dsn, verify="short", k=8) as store:
        assert hamming(store.fingerprint(a), store.fingerprint(b)) <= 8
        store.add(a)
        assert store.near(b) == []
        assert store.add(b).inserted
    with SimhashStore(pg_dsn, verify="off", k=8) as plain:
        assert len(plain.near(b)) == 2  # unverified, each finds the other


def test_sentence_signature_finds_reprint_only_under_all(pg_dsn: str) -> None:
    core = ("The council voted on Tuesday to close the old bridge for repairs until the "
            "spring. Engineers found cracks in two of the main supports during a routine "
            "inspection last week. Traffic will be diverted through the river road and the "
            "new tunnel under the harbour. The mayor said the repairs would cost less than a "
            "new bridge. ")
    a = "City news, Monday.\n" + core + "Subscribe for more."
    b = "From our partners.\n" + core + "Comments are closed. Share this."
    with SimhashStore(pg_dsn, verify="all") as store:
        first = store.add(a)
        sig = store.connection.execute(
            "SELECT sentence_sig FROM simhash_documents WHERE id = %s", [first.id]
        ).fetchone()
        assert sig == (sentence_signature_signed(b),) and sig[0] is not None
        # Reprints whose SimHash moved beyond k = 11 are rare and hard to write
        # by hand: move the stored fingerprint 20 bits away instead.
        store.connection.execute(
            "UPDATE simhash_documents SET fingerprint = fingerprint # 1048575 WHERE id = %s",
            [first.id],
        )
        assert [(m.id, m.distance > SHORT_K) for m in store.near(b)] == [(first.id, True)]
        assert not store.add(b).inserted
    with SimhashStore(pg_dsn, verify="short") as short:
        assert short.near(b) == []


def test_mode_recorded_and_texts_kept(pg_dsn: str) -> None:
    long_text = "A longer document about the winter storm and the river flood. " * 3
    with SimhashStore(pg_dsn, verify="short") as store:
        assert store.verify == "short" and store.stats()["verify"] == "short"
        store.add("Short title here", key="s")
        store.add(long_text, key="l")
        kept = dict(store.connection.execute(
            "SELECT key, verify_text FROM simhash_documents").fetchall())
        assert kept == {"s": "shorttitlehere", "l": None}
    with SimhashStore(pg_dsn, verify="all") as strict:
        assert strict.verify == "all"
        strict.add(long_text + " Again.", key="l2", dedup=False)
        row = strict.connection.execute(
            "SELECT verify_text IS NOT NULL, sentence_sig IS NOT NULL"
            " FROM simhash_documents WHERE key = 'l2'").fetchone()
        assert row == (True, True)
    with SimhashStore(pg_dsn, verify="off") as off:
        # a reader asking for less still writes what the database's mode keeps
        off.add("Another short one", key="s2")
        assert off.get("s2") is not None
        assert off.connection.execute(
            "SELECT verify_text FROM simhash_documents WHERE key = 's2'").fetchone() == (
                "anothershortone",)
    with SimhashStore(pg_dsn) as again:
        assert again.verify == "short"  # recorded by the first open


def test_new_store_verifies_all(pg_dsn: str) -> None:
    with SimhashStore(pg_dsn) as store:
        assert store.verify == "all"


def test_bad_verify_mode(pg_dsn: str) -> None:
    with pytest.raises(ValueError, match="verify must be one of off, short, all"):
        SimhashStore(pg_dsn, verify="some")  # type: ignore[arg-type]


def test_fingerprint_queries_are_not_verified(pg_dsn: str) -> None:
    a, b = "Oil new stocks plan", "Stocks rates plan city"
    with SimhashStore(pg_dsn, verify="short", k=8) as store:
        store.add(a)
        fp = store.fingerprint(b)
        assert [m.distance for m in store.near(fp)] == [hamming(fp, store.fingerprint(a))]


def test_concurrent_short_adds_store_no_verified_pair(pg_dsn: str) -> None:
    # each pair's two titles are added at the same moment by two connections
    pairs = [(f"Council vote on {w} budget delayed again",
              f"Council vote on the {w} budget delayed again") for w in WORDS[:24]]
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def run(side: int) -> None:
        try:
            with SimhashStore(pg_dsn) as store:
                for i, pair in enumerate(pairs):
                    barrier.wait(timeout=30)
                    store.add(pair[side], key=f"{side}-{i}")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(s,)) for s in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    with SimhashStore(pg_dsn) as store:
        stored = store.connection.execute("SELECT id, key FROM simhash_documents").fetchall()
        assert 1 <= len(stored) <= len(pairs)
        for id_, key in stored:
            side, i = map(int, key.split("-"))
            found = [m.id for m in store.near(pairs[i][side])]
            # the rule is the later add's look-up (probes are the query's own):
            # no stored row finds an earlier one (as tests/test_concurrency.py)
            assert id_ in found and not [f for f in found if f < id_]


def test_bulk_load_keeps_what_add_keeps(pg_dsn: str) -> None:
    texts = ["Short title one", "A longer document about the winter storm. " * 4,
             "Another title here"]
    with SimhashStore(pg_dsn, verify="all") as store:
        reset(store)
        for t in texts:
            store.add(t, dedup=False)
        added = [r[4:] for r in rows(store)]
        reset(store)
        assert store.bulk_load(texts) == 3
        assert [r[4:] for r in rows(store)] == added
        assert all(v is not None for v, _, _ in added)
        assert added[1][2] is not None  # the long text's sentence hashes, kept too
        assert [m.distance for m in store.near(texts[0])] == [0]


@pytest.mark.parametrize("mode", ["off", "short", "all"])
def test_each_text_is_normalised_once(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch, mode: Any
) -> None:
    """One normalisation per text per add (and per query): fingerprint and VText share it.

    A normalisation is counted by its NFKC step (rule 5, which only normalize()
    runs), on the real code path. The text as written that an add keeps
    (``body``, revision 0021) is one more pass of rules 2-4 per added text,
    for people, not a normalisation: it is counted apart by rule 2, which both
    run, so neither pass can double unseen.
    """
    import simhash_pg.text.normalize as N

    calls = {"nfkc": 0, "rule 2": 0}
    real_fix, real_unicodedata = N.fix_surrogates, N.unicodedata

    def fix(text: str) -> str:
        calls["rule 2"] += 1
        return real_fix(text)

    class CountedUnicodedata:
        def normalize(self, form: str, text: str) -> str:
            calls["nfkc"] += form == "NFKC"
            return real_unicodedata.normalize(form, text)  # type: ignore[arg-type]

    monkeypatch.setattr(N, "fix_surrogates", fix)
    monkeypatch.setattr(N, "unicodedata", CountedUnicodedata())
    title = "Stocks rally as oil prices fall"
    for keep_text in (True, False):
        with SimhashStore(pg_dsn, verify=mode, keep_text=keep_text) as store:
            tag = "kept" if keep_text else "bare"
            for run, texts, added in [
                (lambda t=tag: store.add(title, key=f"a{t}"), 1, 1),
                (lambda: store.add(title + " again"), 1, 1),
                (lambda: store.near(title), 1, 0),
                (lambda: store.near_many([title, "Election results in Ohio", 7]), 2, 0),
                (lambda t=tag: store.add_many([Doc(title + " today", f"b{t}"), "another title"],
                                        workers=1), 2, 2),
            ]:
                calls.update({"nfkc": 0, "rule 2": 0})
                run()
                bodies = added if keep_text else 0
                assert calls == {"nfkc": texts, "rule 2": texts + bodies}, (mode, tag, calls)


def test_probes_are_recorded_and_read_back(pg_dsn: str) -> None:
    import psycopg
    from psycopg.types.json import Jsonb

    from simhash_pg.store import SchemaVersionError

    get = "SELECT value FROM simhash_meta WHERE name = 'probes'"
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("DELETE FROM simhash_meta WHERE name = 'probes'")
        # a store made before probes: the first writer records today's defaults
        with SimhashStore(pg_dsn) as store:
            assert (store.policy.probe_t, store.policy.probe_cap) == (PROBE_T, PROBE_CAP)
        assert conn.execute(get).fetchone() == (
            {"t": PROBE_T, "cap": PROBE_CAP, "pairs": PROBE_PAIRS, "lead": PROBE_LEAD},)
        try:
            # a recorded budget is what every client probes with
            conn.execute("UPDATE simhash_meta SET value = %s WHERE name = 'probes'",
                         [Jsonb({"t": 5, "cap": 12})])
            with SimhashStore(pg_dsn) as store:
                assert (store.policy.probe_t, store.policy.probe_cap) == (5, 12)
                # a record made before revision 0019: single blocks for every text
                assert store.policy.probe_pairs is None
            conn.execute("UPDATE simhash_meta SET value = %s WHERE name = 'probes'",
                         [Jsonb({"t": 5, "cap": 12, "pairs": 3})])
            with SimhashStore(pg_dsn) as store:
                assert store.policy.probe_pairs == 3
                # a record made before revision 0024: every pair value leads
                assert store.policy.probe_lead is None
            conn.execute("UPDATE simhash_meta SET value = %s WHERE name = 'probes'",
                         [Jsonb({"t": 5, "cap": 12, "pairs": 9, "lead": 2})])
            with SimhashStore(pg_dsn) as store:
                assert (store.policy.probe_pairs, store.policy.probe_lead) == (9, 2)
            for bad in ({"t": 0, "cap": 13}, {"t": 11, "cap": 65}, {"t": 11}, [11, 13],
                        {"t": 8, "cap": 13, "pairs": 0}, {"t": 8, "cap": 13, "pairs": True},
                        {"t": 8, "cap": 13, "pairs": 64, "lead": -1},
                        {"t": 8, "cap": 13, "pairs": 64, "lead": "12"}):
                conn.execute("UPDATE simhash_meta SET value = %s WHERE name = 'probes'",
                             [Jsonb(bad)])
                with pytest.raises(SchemaVersionError, match="records probes"):
                    SimhashStore(pg_dsn)
        finally:
            conn.execute("UPDATE simhash_meta SET value = %s WHERE name = 'probes'",
                         [Jsonb({"t": PROBE_T, "cap": PROBE_CAP, "pairs": PROBE_PAIRS,
                                 "lead": PROBE_LEAD})])


def test_the_rule_version_is_recorded_and_old_stores_keep_1(pg_dsn: str) -> None:
    import psycopg
    from psycopg.types.json import Jsonb

    from simhash_pg.store import SchemaVersionError

    get = "SELECT value FROM simhash_meta WHERE name = 'rule'"
    title = "ITunes user sues Apple over iPod"
    prefixed = "In pictures: " + title
    with SimhashStore(pg_dsn) as store:  # a new store: the labelling rule's overlap
        assert store.policy.rule == 2
        store.add(title, key="t")
        assert store.near(prefixed) == []  # overlap 0.74 < 0.8
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        assert conn.execute(get).fetchone() == (2,)
        # a store made before the record (it has a scheme): rule 1, as it decided before
        conn.execute("DELETE FROM simhash_meta WHERE name = 'rule'")
        with SimhashStore(pg_dsn) as store:
            assert store.policy.rule == 1
            assert [m.key for m in store.near(prefixed)] == ["t"]  # Jaccard 0.74 >= 0.72
        assert conn.execute(get).fetchone() == (1,)
        for bad in (3, "2", True, None):
            conn.execute("UPDATE simhash_meta SET value = %s WHERE name = 'rule'", [Jsonb(bad)])
            with pytest.raises(SchemaVersionError, match="records duplicate rule"):
                SimhashStore(pg_dsn)
