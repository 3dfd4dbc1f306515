"""Race-free dedup under load: 8 processes adding near-duplicates at once.

The pool holds base fingerprints and copies of them with 0..3 bits flipped,
so many adds in flight at the same moment are near-duplicates of each other.
Whatever the interleaving, the store must end with no two rows within k = 3
(``simhash_pairs(3)`` is empty), and every add must have been answered with
"inserted" or the id of a stored row within distance 3.
"""

from __future__ import annotations

import multiprocessing
import random
import time
from typing import Any

import numpy as np
import psycopg
import pytest

from lab.bench.hooks import store_with
from simhash_pg.bits import to_unsigned
from simhash_pg.store import AddResult, Doc, SimhashStore
from simhash_pg.store.options import WriterHooks

PROCESSES = 8
ADDS = 2000  # per process
BATCH = 100  # add_many batch size
BASES = 600


def make_pool(seed: int = 5) -> list[int]:
    """Bases far apart (random 64-bit), each with 6 copies 0..3 bits away."""
    rnd = random.Random(seed)
    pool: list[int] = []
    for _ in range(BASES):
        base = rnd.getrandbits(64)
        pool.append(base)
        for n in (0, 1, 1, 2, 3, 3):
            fp = base
            for bit in rnd.sample(range(64), n):
                fp ^= 1 << bit
            pool.append(fp)
    return pool


Outcome = tuple[int, bool, int, int | None]  # (fingerprint, inserted, id, distance)


def _outcome(fp: int, r: AddResult) -> Outcome:
    assert r.id is not None and r.error is None, r
    return (fp, r.inserted, r.id, r.distance)


def _worker(args: tuple[str, int, str, Any]) -> list[Outcome]:
    dsn, index, mode, barrier = args
    pool = make_pool()
    rnd = random.Random(1000 + index)
    # each process walks the pool in its own random order: near-duplicates of
    # one base arrive from several processes at about the same time
    picks = [pool[rnd.randrange(len(pool))] for _ in range(ADDS)]
    if mode == "mixed":
        mode = "add" if index % 2 == 0 else "add_many"
    out: list[Outcome] = []
    with SimhashStore(dsn) as store:
        barrier.wait()
        if mode == "add":
            for fp in picks:
                out.append(_outcome(fp, store.add(fp, dedup=True)))
        else:
            def collect(results: list[AddResult]) -> None:
                for r in results:
                    assert r.fingerprint is not None
                    out.append(_outcome(r.fingerprint, r))

            store.add_many((Doc(fp) for fp in picks), dedup=True, batch_size=BATCH,
                           progress=collect)
    return out


def _run(dsn: str, mode: str) -> list[Outcome]:
    # fork: spawn re-imports NumPy and psycopg in 8 children, which took
    # 20-40 s on a busy 2-core machine; the children never touch the
    # parent's connections and leave through os._exit.
    ctx = multiprocessing.get_context("fork")
    with ctx.Manager() as manager:
        barrier = manager.Barrier(PROCESSES)
        with ctx.Pool(PROCESSES) as procs:
            per = procs.map(_worker, [(dsn, i, mode, barrier) for i in range(PROCESSES)])
    return [o for outs in per for o in outs]


def _check(pg: psycopg.Connection, outcomes: list[Outcome]) -> tuple[int, int]:
    assert len(outcomes) == PROCESSES * ADDS
    rows = {
        r[0]: to_unsigned(r[1])
        for r in pg.execute("SELECT id, fingerprint FROM simhash_documents").fetchall()
    }
    assert pg.execute("SELECT count(*) FROM simhash_pairs(3)").fetchone() == (0,)
    inserted = [o for o in outcomes if o[1]]
    assert len(inserted) == len(rows) == len({o[2] for o in inserted})
    for fp, was_inserted, id_, distance in outcomes:
        assert id_ in rows
        if was_inserted:
            assert rows[id_] == fp
        else:
            assert distance is not None
            assert (rows[id_] ^ fp).bit_count() == distance <= 3
    # every fingerprint added is stored or has a stored row within 3
    stored = np.array(list(rows.values()), dtype=np.uint64)
    for fp in {o[0] for o in outcomes}:
        assert int(np.bitwise_count(stored ^ np.uint64(fp)).min()) <= 3
    return len(outcomes), len(rows)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["add", "add_many", "mixed"])
def test_concurrent_dedup_keeps_one_of_each_near_duplicate_group(
    pg: psycopg.Connection, pg_dsn: str, mode: str
) -> None:
    SimhashStore(pg_dsn).close()  # scheme recorded once, not raced by 8 openers
    start = time.perf_counter()
    outcomes = _run(pg_dsn, mode)
    seconds = time.perf_counter() - start
    ops, checked = _check(pg, outcomes)
    dups = sum(1 for o in outcomes if not o[1])
    print(f"\n[{mode}] {PROCESSES} processes x {ADDS} adds = {ops} operations in "
          f"{seconds:.1f} s; {checked} rows stored, {dups} answered as near-duplicates, "
          f"{checked} rows and {ops} answers checked, simhash_pairs(3) empty")


def test_batch_lock_keys_are_the_keys_simhash_add_takes(pg: psycopg.Connection) -> None:
    from simhash_pg.bits import to_signed
    from simhash_pg.store.locking import batch_lock_keys

    fps = [*make_pool()[:50], 0, 2**64 - 1, 2**63 - 1, 2**63]
    key1, key2 = batch_lock_keys(fps)
    sql_keys = pg.execute(
        "SELECT DISTINCT 1397246976 + i, simhash_block(fp, i)::integer"
        " FROM unnest(%s::bigint[]) AS fp, generate_series(0, 3) AS i ORDER BY 1, 2",
        [[to_signed(fp) for fp in fps]],
    ).fetchall()
    assert list(zip(key1, key2, strict=True)) == [tuple(r) for r in sql_keys]


def test_writer_lock_takes_blocks_and_keys_and_bounds_the_wait(pg: psycopg.Connection) -> None:
    lock = "SELECT simhash_writer_lock(%s, %s::integer[], %s::integer[], %s::text[])"
    held = ("SELECT classid::bigint, objid::bigint, mode FROM pg_locks WHERE locktype = 'advisory'"
            " AND pid = pg_backend_pid() ORDER BY 1, 2")
    with pg.transaction():
        keys = ["a", "b", "a", None]
        n = pg.execute(lock, ["shared", [1397246976, 1397246977], [-5, 6], keys]).fetchone()
        assert n == (5,)  # the store lock, two blocks, two distinct keys
        hashes = sorted(pg.execute("SELECT hashtext('a'), hashtext('b')").fetchone())  # type: ignore[arg-type]
        assert pg.execute(held).fetchall() == [
            (1397246976, 2**32 - 5, "ExclusiveLock"),  # objid is the key's 32 bits, unsigned
            (1397246977, 6, "ExclusiveLock"),
            (1397246980, 0, "ShareLock"),
            *sorted((1397246982, h % 2**32, "ExclusiveLock") for h in hashes),
        ]
    with pg.transaction():
        # sentence signatures: their own key space (revision 0011), distinct
        n = pg.execute(lock[:-1] + ", %s::integer[])",
                       ["shared", None, None, ["a"], [7, -3, 7, None]]).fetchone()
        assert n == (4,)  # the store lock, two distinct signatures, one key
        assert [r for r in pg.execute(held).fetchall() if r[0] == 1397246983] == [
            (1397246983, 7, "ExclusiveLock"), (1397246983, 2**32 - 3, "ExclusiveLock")]
    for args in (["bogus", None, None, None], ["shared", [1], [1], None],
                 ["shared", [1397246976], [None], None], ["shared", [1397246976], [], None]):
        with pytest.raises(psycopg.errors.InvalidParameterValue):
            pg.execute(lock, args)
    # the shorter of lock_timeout and simhash.lock_timeout ("0": none) bounds
    # the wait for the locks, and the session's lock_timeout is back afterwards
    for session, ours, limit in (("0", "250ms", 0.25), ("100ms", "30s", 0.1),
                                 ("1min", "0", None), ("0", "0", None)):
        with pg.transaction():
            pg.execute("SELECT set_config('lock_timeout', %s, true),"
                       " set_config('simhash.lock_timeout', %s, true)", [session, ours])
            if limit is not None:
                with psycopg.connect(pg.info.dsn) as holder:
                    holder.execute("SELECT pg_advisory_xact_lock(1397246980, 0)")
                    start = time.perf_counter()
                    with pytest.raises(psycopg.errors.LockNotAvailable), pg.transaction():
                        pg.execute(lock, ["shared", None, None, None])
                    waited = time.perf_counter() - start
                    assert limit - 0.01 <= waited < limit + 3
            pg.execute(lock, ["exclusive", None, None, None])
            assert pg.execute("SELECT current_setting('lock_timeout')").fetchone() == (session,)


@pytest.mark.slow
def test_stream_bench_measures_locks_on_and_off(pg_dsn: str) -> None:
    from lab.bench import stream as bench
    from simhash_pg.store.locking import lock_batch

    # the bench's explicit store options, instead of patched module globals
    unlocked = store_with(add_function="simhash_add_unlocked")
    # verify="off" recorded: a text goes through the add function too, with its body
    with unlocked(pg_dsn, verify="off") as free, \
            pytest.raises(psycopg.errors.UndefinedFunction):
        free.add(1)  # the hook is honoured: no such function yet
    with pytest.raises(ValueError, match="add_function must be a plain SQL function name"):
        store_with(add_function="x(); DROP TABLE simhash_documents; --")
    with SimhashStore(pg_dsn) as plain:
        assert plain.writer_hooks == WriterHooks()  # the subclass changed no one else's
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        with conn.transaction():
            assert lock_batch(conn, [1], 3) == "pigeonhole"
        with conn.transaction():
            assert lock_batch(conn, [1], 3, pigeonhole=False) == "store"
        bench.make_unlocked_add(conn)
        src = conn.execute(
            "SELECT prosrc FROM pg_proc WHERE proname = 'simhash_add_unlocked'"
        ).fetchone()
        assert src is not None and "simhash_writer_lock" not in src[0]
    with unlocked(pg_dsn) as free:
        assert free.add(1).inserted and not free.add(1).inserted  # still dedups, unlocked
        text = "The unlocked copy takes the text as written too, as simhash_add does."
        assert free.add(text, key="t").inserted
        doc = free.document("t")
        assert doc is not None and doc.body == text
    for path in ("add", "add_many", "add_many S"):
        figures = bench.measure(pg_dsn, path, 2, 1.0, 50, 0.1, 1)
        for lock in (True, False):
            assert figures[lock]["done"] > 0 and figures[lock]["adds_s"] > 0


# -- overlapping keys: every writer completes (issue 18, item 4) -----------------

KEYED = 3000  # keys k0..k2999, added by every process in its own order


def _keyed_fp(index: int, n: int) -> int:
    """Process ``index``'s fingerprint for key n: random, so nobody's are near anybody's."""
    return random.Random(index * 1_000_003 + n).getrandbits(64)


def _keyed_worker(args: tuple[str, int, bool, int, Any]) -> list[tuple[str, str, int, int]]:
    dsn, index, dedup, batch, barrier = args
    order = list(range(KEYED))
    random.Random(index).shuffle(order)
    out: list[tuple[str, str, int, int]] = []

    def collect(results: list[AddResult]) -> None:
        for r in results:
            assert r.id is not None and r.key is not None and r.fingerprint is not None, r
            out.append((r.key, r.status, r.id, r.fingerprint))

    with SimhashStore(dsn) as store:
        barrier.wait()
        store.add_many((Doc(_keyed_fp(index, n), f"k{n}") for n in order), dedup=dedup,
                       batch_size=batch, progress=collect)
    return out


@pytest.mark.parametrize(("dedup", "batch"), [(True, 50), (False, 600)])
def test_concurrent_add_many_with_overlapping_keys_all_complete(
    pg: psycopg.Connection, pg_dsn: str, dedup: bool, batch: int
) -> None:
    SimhashStore(pg_dsn).close()
    ctx = multiprocessing.get_context("fork")
    start = time.perf_counter()
    with ctx.Manager() as manager:
        barrier = manager.Barrier(PROCESSES)
        with ctx.Pool(PROCESSES) as procs:
            # a writer that raises fails the map: every writer must complete
            per = procs.map(_keyed_worker,
                            [(pg_dsn, i, dedup, batch, barrier) for i in range(PROCESSES)])
    seconds = time.perf_counter() - start
    rows = {r[0]: (r[1], to_unsigned(r[2])) for r in pg.execute(
        "SELECT key, id, fingerprint FROM simhash_documents").fetchall()}
    # what a serial run stores: every key once, with the fingerprint of the
    # writer that got there first; every other writer is told existing_key
    assert sorted(rows) == sorted(f"k{n}" for n in range(KEYED))
    assert pg.execute("SELECT count(*) FROM simhash_keys").fetchone() == (KEYED,)
    inserted: dict[str, int] = {}
    for index, outs in enumerate(per):
        assert sorted(o[0] for o in outs) == sorted(rows), index
        for key, status, id_, fp in outs:
            assert id_ == rows[key][0], (index, key, status)
            if status == "inserted":
                assert key not in inserted
                inserted[key] = index
                assert fp == rows[key][1] == _keyed_fp(index, int(key[1:]))
            else:
                assert status == "existing_key", (index, key, status)
                assert fp == rows[key][1]
    assert len(inserted) == KEYED
    print(f"\n[dedup={dedup} batch={batch}] {PROCESSES} writers x {KEYED} keys in "
          f"{seconds:.1f} s, every writer completed")


# -- texts under the default (verify="all"): probed adds, no store-wide lock ---

TEXT_FAMILIES = 40
TEXT_VARIANTS = 8  # the seed text and 7 edited copies
_VOCAB = (
    "market stocks oil rally falls rise bank rates city council vote school budget storm "
    "warning river flood police report new plan train strike airport delay winter heat "
    "record crowd museum opens bridge closed election result tax cut hospital nurses "
    "minister said on tuesday after the talks that prices would keep climbing through "
    "spring while unions warned of further action across the region and its ports"
).split()


def _edit(rnd: random.Random, words: list[str]) -> str:
    w = list(words)
    for _ in range(rnd.randint(1, 6)):
        i = rnd.randrange(len(w))
        op = rnd.choice(("drop", "add", "replace"))
        if op == "drop":
            del w[i]
        elif op == "add":
            w.insert(i, rnd.choice(_VOCAB))
        else:
            w[i] = rnd.choice(_VOCAB)
    return ". ".join(" ".join(w[j : j + 10]).capitalize() for j in range(0, len(w), 10)) + "."


def make_texts(seed: int = 7) -> list[list[str]]:
    """Families of long texts: a seed text and copies with a few random word edits.

    The copies kept share no block value with the seed but lie within the
    probe cap: the pairs that only the probe locks make take turns (two
    fingerprints that share a block share that block's lock anyway).
    """
    from simhash_pg.bits import blocks
    from simhash_pg.text.simhash import Fingerprinter

    rnd = random.Random(seed)
    fpr = Fingerprinter()
    families = []
    for _ in range(TEXT_FAMILIES):
        words = rnd.choices(_VOCAB, k=rnd.randint(60, 90))
        family = [_edit(rnd, words)]
        b0 = blocks(fpr.fingerprint(family[0]))
        for _ in range(400):
            if len(family) == TEXT_VARIANTS:
                break
            text = _edit(rnd, words)
            fp = fpr.fingerprint(text)
            if ((fp ^ fpr.fingerprint(family[0])).bit_count() <= 13
                    and not any(x == y for x, y in zip(blocks(fp), b0, strict=True))):
                family.append(text)
        families.append(family)
    return families


def make_titles(seed: int = 11) -> list[list[str]]:
    """Families of titles: a seed title of 8-10 words and copies with one word
    swapped, added or left out, each more than 13 bits from the seed and sharing no
    block value with it, and a duplicate of it by the rule: found by a title key
    alone (the sentence lock space), never by a probe."""
    from simhash_pg.bits import blocks
    from simhash_pg.text.simhash import Fingerprinter
    from simhash_pg.verify import VerifyPolicy, verification_text

    rnd = random.Random(seed)
    fpr, policy = Fingerprinter(), VerifyPolicy("all")
    families = []
    while len(families) < TEXT_FAMILIES:
        words = rnd.sample(_VOCAB, rnd.randint(8, 10))
        seed_title = " ".join(words).capitalize()
        fp0, v0 = fpr.fingerprint(seed_title), verification_text(seed_title)
        family = [seed_title]
        for _ in range(300):
            if len(family) == TEXT_VARIANTS:
                break
            w = list(words)
            i = rnd.randrange(len(w))
            op = rnd.choice(("replace", "add", "drop"))
            if op == "replace":
                w[i] = rnd.choice(_VOCAB)
            elif op == "add":
                w.insert(i, rnd.choice(_VOCAB))
            else:
                del w[i]
            title = " ".join(w).capitalize()
            fp = fpr.fingerprint(title)
            if (title not in family and (fp ^ fp0).bit_count() > 13
                    and not any(x == y for x, y in zip(blocks(fp), blocks(fp0), strict=True))
                    and policy.text_rule.similarity(v0, verification_text(title))
                    >= policy.text_rule.threshold(True)):
                family.append(title)
        if len(family) >= 4:
            families.append(family)
    return families


def _text_worker(args: tuple[str, int, bool, Any, bool, bool]) -> int:
    dsn, index, probe_locks, barrier, batches, titles = args
    families = make_titles() if titles else make_texts()
    rnd = random.Random(2000 + index)
    n = 0
    with store_with(probe_locks=probe_locks)(dsn) as store:
        assert store.verify == "all"
        for f, family in enumerate(families):
            # every process at the same family at once, each in its own order
            order = list(range(len(family)))
            rnd.shuffle(order)
            barrier.wait()
            if batches and index % 2:  # odd processes: the family as one add_many batch
                store.add_many([Doc(family[v], meta={"family": f, "variant": v})
                                for v in order])
                n += len(order)
                continue
            for v in order:
                store.add(family[v], meta={"family": f, "variant": v})
                n += 1
    return n


def _later_rows_finding_earlier(pg_dsn: str, titles: bool = False) -> list[tuple[int, int]]:
    """(earlier id, later id) of stored pairs the later row's own near() finds."""
    families = make_titles() if titles else make_texts()
    bad = []
    with SimhashStore(pg_dsn) as store:
        stored = store.connection.execute(
            "SELECT id, (meta->>'family')::integer, (meta->>'variant')::integer"
            " FROM simhash_documents ORDER BY id"
        ).fetchall()
        for id_, f, v in stored:
            bad += [(m.id, id_) for m in store.near(families[f][v]) if m.id < id_]
    return bad


@pytest.mark.parametrize(("probe_locks", "batches", "titles"), [
    (True, False, False), (False, False, False), (True, True, False),
    # titles found by a title key alone: the keys' locks are what serialises them
    (True, False, True), (False, False, True), (True, True, True),
])
def test_concurrent_text_adds_store_no_duplicates_under_the_default(
    pg: psycopg.Connection, pg_dsn: str, probe_locks: bool, batches: bool, titles: bool
) -> None:
    pg.execute("TRUNCATE simhash_documents RESTART IDENTITY")
    SimhashStore(pg_dsn).close()  # recorded once, not raced by 8 openers
    ctx = multiprocessing.get_context("fork")
    start = time.perf_counter()
    with ctx.Manager() as manager:
        barrier = manager.Barrier(PROCESSES)
        with ctx.Pool(PROCESSES) as procs:
            done = procs.map(_text_worker,
                             [(pg_dsn, i, probe_locks, barrier, batches, titles)
                              for i in range(PROCESSES)])
    seconds = time.perf_counter() - start
    bad = _later_rows_finding_earlier(pg_dsn, titles)
    n = pg.execute("SELECT count(*) FROM simhash_documents").fetchone()
    print(f"\n[probe_locks={probe_locks} batches={batches} titles={titles}] {sum(done)} "
          "text adds in "
          f"{seconds:.1f} s, "
          f"{n[0] if n else 0} rows stored, {len(bad)} duplicate pairs stored")
    if probe_locks:
        assert bad == []
    else:
        # own blocks alone do not serialise near-duplicates that share none
        assert bad, "without the probe locks the load test should store duplicates"


@pytest.mark.parametrize("title", [False, True], ids=["long text", "title"])
def test_probed_text_add_takes_no_store_wide_exclusive_lock(
    pg: psycopg.Connection, pg_dsn: str, title: bool
) -> None:
    """Under the default, a text add locks its probe values, never the whole store
    exclusively: titles too (they are probed like long texts)."""
    from simhash_pg.store.locking import (
        KEY_LOCK,
        LOCK_BASE,
        SIGNATURE_LOCK,
        STORE_LOCK,
        probe_lock_keys,
        signature_lock_key,
    )

    text = "Council vote on the school budget delayed" if title else make_texts()[0][0]
    with SimhashStore(pg_dsn) as store:
        fp, probes = store.fingerprinter.fingerprint_probes(text, store.policy.probe_depth)
        pairs = store.policy.probes_pairs(store.policy.prepare(
            store.fingerprinter.normalize(text)).text)
        assert pairs != title  # a long text probes pairs of blocks (revision 0019)
        conn = store.connection
        with conn.transaction(force_rollback=True):  # the add's locks held until here
            store.add(text, dedup=True)
            pid = conn.info.backend_pid
            held = pg.execute(
                "SELECT classid::bigint, objid::bigint, mode FROM pg_locks"
                " WHERE locktype = 'advisory' AND pid = %s", [pid]
            ).fetchall()
    store_locks = [m for c, o, m in held if c == STORE_LOCK and o == 0]
    assert store_locks == ["ShareLock"]
    # its sentence signature (revision 0011) and sentence hashes (0015) in their
    # own key space, no key lock
    vt = store.policy.prepare(store.fingerprinter.normalize(text))
    sig_locks = {(c, o) for c, o, m in held if c == SIGNATURE_LOCK}
    values = ([] if vt.sig is None else [vt.sig]) + list(vt.hashes)
    assert sig_locks == {(SIGNATURE_LOCK, signature_lock_key(v) & 0xFFFFFFFF) for v in values}
    assert title or (vt.sig is not None and vt.hashes)  # the long text has both
    assert not [c for c, o, m in held if c == KEY_LOCK]
    blocks = {(c, o) for c, o, m in held if LOCK_BASE <= c < LOCK_BASE + 4}
    # a title: the probe values the look-up budget leaves beside its keys, 48
    # in all (its many keys leave fewer than T = 8); a long text: its pair
    # probes' leading values per block, the first 12 (revision 0024; a row a
    # pair reaches has its block among them), which the budget does not trim
    t = (max(1, min(store.policy.probe_t or 1, (48 - len(values)) // 4)) if title
         else store.policy.probe_lead or 0)
    assert not title or (t < (store.policy.probe_t or 1) and 4 * t + len(values) <= 48)
    assert title or (len(values), t) == (8, 12)
    probes = tuple(p[:t] for p in probes)
    k1, k2 = probe_lock_keys([fp], [probes])
    # advisory objid is the key2 int4 as an unsigned oid
    assert blocks == {(a, b & 0xFFFFFFFF) for a, b in zip(k1, k2, strict=True)}
    assert len(blocks) > 4  # probe values, not only the own blocks


def test_migration_0011_round_trip(pg: psycopg.Connection, pg_dsn: str) -> None:
    """0011 gives simhash_writer_lock the signature key space; its downgrade restores
    0008's function (keys and blocks only), and both keep their search_path."""
    from simhash_pg.db import migrate

    forms = ("SELECT p.pronargs, p.proconfig FROM pg_proc p"
             " WHERE p.proname = 'simhash_writer_lock' ORDER BY 1")

    def state() -> list[tuple[int, bool]]:
        return [(n, any(c.startswith("search_path=") for c in cfg or []))
                for n, cfg in pg.execute(forms).fetchall()]

    assert state() == [(5, True)]
    assert migrate.downgrade_losses_between("0011", "0010") == []
    migrate.downgrade(pg_dsn, "0010")
    assert migrate.current(pg_dsn) == "0010"
    assert state() == [(4, True)]
    with pg.transaction():
        assert pg.execute("SELECT simhash_writer_lock('shared', NULL, NULL, ARRAY['k'])"
                          ).fetchone() == (2,)
    migrate.upgrade(pg_dsn)
    assert migrate.current(pg_dsn) == migrate.HEAD
    assert state() == [(5, True)]
    migrate.check(pg_dsn)
