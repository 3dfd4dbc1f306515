"""Searches by explicit probe values (revision 0009) against brute force, on a real PostgreSQL.

simhash_near_probes(fp, p0, p1, p2, p3, cap) promises every stored row with
b_i in p_i for some block i and hamming(row, fp) <= cap, nearest first, ties
by id; the batch forms promise the same per query.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_store_sql import flip, nested_plans

from simhash_pg.bits import MAX_FINGERPRINT, blocks, blocks_array, hamming, to_signed
from simhash_pg.db import migrate
from simhash_pg.text.probes import probe_hits

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

HYPO = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

Probes = list[list[int | None]]  # four lists of smallint block values, one per block


@dataclass(frozen=True)
class Row:
    """A stored row as the brute force sees it."""

    fp: int
    text: str | None = None
    sig: int | None = None
    meta: dict[str, Any] | None = None


def load(pg: psycopg.Connection, rows: list[Row]) -> None:
    """Replace the table's rows; row i gets id i + 1."""
    pg.execute("TRUNCATE simhash_documents RESTART IDENTITY")
    with pg.cursor() as cur, cur.copy(
        "COPY simhash_documents (fingerprint, verify_text, sentence_sig, meta) FROM STDIN"
    ) as copy:
        for r in rows:
            copy.write_row((to_signed(r.fp), r.text, r.sig,
                            None if r.meta is None else json.dumps(r.meta)))


def matches(fp: int, probes: Probes, cap: int, stored_fp: int) -> bool:
    return hamming(fp, stored_fp) <= cap and any(
        b in probes[i] for i, b in enumerate(blocks(stored_fp)))


def brute(rows: list[Row], fp: int, probes: Probes, cap: int) -> list[tuple[int, int]]:
    """(id, distance) of every row the promise covers, nearest first, ties by id."""
    found = [(hamming(fp, r.fp), i + 1) for i, r in enumerate(rows)
             if matches(fp, probes, cap, r.fp)]
    return [(i, d) for d, i in sorted(found)]


def sql_single(pg: psycopg.Connection, fp: int, probes: Probes, cap: int) -> list[tuple[int, int]]:
    got = pg.execute(
        "SELECT id, distance FROM simhash_near_probes(%s, %s::smallint[], %s::smallint[],"
        " %s::smallint[], %s::smallint[], %s)", [to_signed(fp), *probes, cap]
    ).fetchall()
    return [(r[0], r[1]) for r in got]


def packed(probes: list[Probes]) -> list[Probes]:
    """[query][block][value], each list NULL-padded to the longest (at least one value)."""
    width = max([1] + [len(p) for q in probes for p in q])
    return [[p + [None] * (width - len(p)) for p in q] for q in probes]


def sql_many(
    pg: psycopg.Connection, fps: list[int], probes: list[Probes], caps: list[int]
) -> list[list[tuple[int, int]]]:
    out: list[list[tuple[int, int]]] = [[] for _ in fps]
    for q, id_, dist in pg.execute(
        "SELECT query, id, distance FROM simhash_near_probes_many(%s::bigint[],"
        " %s::smallint[], %s::integer[])", [[to_signed(f) for f in fps], packed(probes), caps]
    ):
        out[q - 1].append((id_, dist))
    return out


# -- cases ----------------------------------------------------------------------


def probe_values(rnd: random.Random, fp: int, stored: list[int]) -> Probes:
    """Per block: the query's value, values a few bits away, stored rows' values, noise."""
    out: Probes = []
    for i, b in enumerate(blocks(fp)):
        values: list[int | None] = []
        for _ in range(rnd.randint(0, 12)):
            kind = rnd.random()
            if kind < 0.3:
                v = b
            elif kind < 0.7:
                v = ((b + 32768) ^ (1 << rnd.randrange(16)) ^ (1 << rnd.randrange(16))) - 32768
            elif kind < 0.9:
                v = blocks(rnd.choice(stored))[i]
            else:
                v = rnd.randint(-32768, 32767)
            values.append(v)
        out.append(values)
    return out


@st.composite
def planted(draw: st.DrawFn) -> tuple[list[Row], list[int], list[Probes], list[int]]:
    """(rows, query fingerprints, probes, caps): a few hundred rows with near-duplicates."""
    rnd = random.Random(draw(st.integers(0, 2**32)))
    bases = [rnd.getrandbits(64) for _ in range(draw(st.integers(40, 120)))]
    fps = list(bases)
    for fp in bases:
        fps += [flip(fp, rnd.randint(0, 14), rnd) for _ in range(rnd.randint(0, 3))]
    fps += rnd.sample(fps, 5)  # identical fingerprints, several rows each
    rnd.shuffle(fps)
    sigs = [None, None, 11, 12, 13]
    rows = [Row(fp, rnd.choice([None, "text"]), rnd.choice(sigs),
                rnd.choice([None, {"n": i}])) for i, fp in enumerate(fps)]
    targets = [rnd.choice(fps) for _ in range(5)]
    queries = [flip(t, rnd.randint(0, 16), rnd) for t in targets]
    queries += [rnd.getrandbits(64), rnd.choice([0, MAX_FINGERPRINT])]
    probes = [probe_values(rnd, q, fps) for q in queries]
    caps = [draw(st.one_of(st.integers(0, 16), st.integers(0, 64))) for _ in queries]
    for i, target in enumerate(targets):
        if draw(st.booleans()):
            # the edges: a target found through one block only, exactly at the cap
            block = rnd.randrange(4)
            probes[i][block].append(blocks(target)[block])
            caps[i] = hamming(queries[i], target)
    return rows, queries, probes, caps


@given(planted())
@HYPO
def test_near_probes_equals_brute_force(
    pg: psycopg.Connection, case: tuple[list[Row], list[int], list[Probes], list[int]]
) -> None:
    rows, queries, probes, caps = case
    load(pg, rows)
    for fp, p, cap in zip(queries, probes, caps, strict=True):
        assert sql_single(pg, fp, p, cap) == brute(rows, fp, p, cap), (fp, p, cap)


@pytest.mark.slow
@given(planted())
@HYPO
def test_near_probes_many_equals_the_single_form_per_query(
    pg: psycopg.Connection, case: tuple[list[Row], list[int], list[Probes], list[int]]
) -> None:
    rows, queries, probes, caps = case
    load(pg, rows)
    single = [sql_single(pg, fp, p, cap) for fp, p, cap in zip(queries, probes, caps, strict=True)]
    assert sql_many(pg, queries, probes, caps) == single
    # the same query twice, and in another order, answers the same
    order = [*range(len(queries) - 1, -1, -1), 0]
    assert sql_many(pg, [queries[i] for i in order], [probes[i] for i in order],
                    [caps[i] for i in order]) == [single[i] for i in order]


def _lost_rows(pg: psycopg.Connection, max_id: int) -> None:
    pg.execute(
        "INSERT INTO simhash_meta (name, value) VALUES ('unverified_rows',"
        " jsonb_build_object('max_id', %s::bigint, 'stored_until', now()))"
        " ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value", [max_id])


@given(planted(), st.lists(st.sampled_from([None, 11, 12, 13, 99]), min_size=7, max_size=7),
       st.integers(0, 400))
@pytest.mark.slow
@HYPO
def test_candidates_are_the_matches_plus_the_signature_rows(
    pg: psycopg.Connection, case: tuple[list[Row], list[int], list[Probes], list[int]],
    sigs: list[int | None], lost_max: int,
) -> None:
    rows, queries, probes, caps = case
    load(pg, rows)
    _lost_rows(pg, lost_max)
    got: list[list[tuple[Any, ...]]] = [[] for _ in queries]
    for q, *rest in pg.execute(
        "SELECT * FROM simhash_near_probes_candidates(%s::bigint[], %s::smallint[],"
        " %s::integer[], %s::bigint[])",
        [[to_signed(f) for f in queries], packed(probes), caps, sigs],
    ):
        got[q - 1].append(tuple(rest))
    for qi, (fp, p, cap, sig) in enumerate(zip(queries, probes, caps, sigs, strict=True)):
        want = []
        for i, r in enumerate(rows):
            if matches(fp, p, cap, r.fp) or (sig is not None and r.sig == sig):
                lost = r.text is None and i + 1 <= lost_max
                want.append((hamming(fp, r.fp), i + 1, None, r.meta, r.text, r.sig, lost))
        want.sort(key=lambda w: (w[0], w[1]))
        assert got[qi] == [(w[1], w[2], w[0], *w[3:]) for w in want], qi
        # the single-query form (revision 0014): the same rows
        one = pg.execute(
            "SELECT * FROM simhash_near_probes_candidates(%s, %s::smallint[], %s::smallint[],"
            " %s::smallint[], %s::smallint[], %s, %s)", [to_signed(fp), *p, cap, sig]
        ).fetchall()
        assert one == got[qi], qi
    # without signatures: the rows of the many form, with their columns
    plain = pg.execute(
        "SELECT query, id, key, distance FROM simhash_near_probes_candidates(%s::bigint[],"
        " %s::smallint[], %s::integer[])", [[to_signed(f) for f in queries], packed(probes), caps]
    ).fetchall()
    many = pg.execute(
        "SELECT * FROM simhash_near_probes_many(%s::bigint[], %s::smallint[], %s::integer[])",
        [[to_signed(f) for f in queries], packed(probes), caps],
    ).fetchall()
    assert plain == many


def test_empty_probe_lists_and_null_padding_match_nothing(pg: psycopg.Connection) -> None:
    fp = 0x0123_4567_89AB_CDEF
    load(pg, [Row(fp)])
    b = list(blocks(fp))
    assert sql_single(pg, fp, [[], [], [], []], 64) == []
    assert sql_single(pg, fp, [[None], [None], [None], [b[3]]], 0) == [(1, 0)]
    assert sql_many(pg, [fp, fp, fp], [[[], [], [], []], [[b[0]], [], [], []],
                                       [[None], [], [], []]], [64, 0, 64]) == [[], [(1, 0)], []]
    assert sql_many(pg, [], [], []) == []


BAD_SINGLE = [
    ("NULL, '{}', '{}', '{}', '{}', 3", "the fingerprint must not be NULL"),
    ("1, '{}', '{}', NULL, '{}', 3", "probe values of block 2 must not be NULL"),
    ("1, '{}', '{}', '{}', '{}', -1", "cap must be between 0 and 64"),
    ("1, '{}', '{}', '{}', '{}', 65", "cap must be between 0 and 64"),
    ("1, '{}', '{}', '{}', '{}', NULL", r"cap must be between 0 and 64 .*, got NULL"),
]


@pytest.mark.parametrize("args, message", BAD_SINGLE)
@pytest.mark.parametrize("form, extra", [("simhash_near_probes", ""),
                                         ("simhash_near_probes_candidates", ", NULL::bigint")])
def test_bad_arguments_of_the_single_forms(
    pg: psycopg.Connection, form: str, extra: str, args: str, message: str
) -> None:
    with pytest.raises(psycopg.DataError, match=message):
        pg.execute(f"SELECT * FROM {form}({_typed(args)}{extra})")


def _typed(args: str) -> str:
    """The six arguments with their types, so that NULL and '{}' resolve the function."""
    types = ["bigint", "smallint[]", "smallint[]", "smallint[]", "smallint[]", "integer"]
    return ", ".join(f"{a}::{t}" for a, t in zip(args.split(", "), types, strict=True))


BAD_MANY = [
    ("NULL", "'{{{1},{2},{3},{4}}}'", "'{3}'", "must not be NULL"),
    ("'{1}'", "NULL", "'{3}'", "must not be NULL"),
    ("'{1}'", "'{{{1},{2},{3},{4}}}'", "NULL", "must not be NULL"),
    ("'{1,NULL}'", "'{{{1},{2},{3},{4}}}'", "'{3,3}'", "fingerprint 2 is NULL"),
    ("'{1}'", "'{{{1},{2},{3},{4},{5}}}'", "'{3}'", r"1 x 4 x n .* got \[1:1\]\[1:5\]\[1:1\]"),
    ("'{1}'", "'{{1,2,3,4}}'", "'{3}'", r"1 x 4 x n .* got \[1:1\]\[1:4\]"),
    ("'{1,2}'", "'{{{1},{2},{3},{4}}}'", "'{3,3}'", r"2 x 4 x n .* got \[1:1\]\[1:4\]\[1:1\]"),
    ("'{1}'", "'{{{1},{2},{3},{4}}}'", "'{3,4}'", "one cap per fingerprint"),
    ("'{1}'", "'{{{1},{2},{3},{4}}}'", "'{65}'", r"cap must be between 0 and 64 .*, got 65"),
    ("'{1}'", "'{{{1},{2},{3},{4}}}'", "'{NULL}'", r"cap must be between 0 and 64 .*, got NULL"),
    ("'[0:0]={1}'", "'{{{1},{2},{3},{4}}}'", "'{3}'", "must start at subscript 1"),
]


@pytest.mark.parametrize("fps, probes, caps, message", BAD_MANY)
@pytest.mark.parametrize("form", ["simhash_near_probes_many", "simhash_near_probes_candidates"])
def test_bad_arguments_of_the_batch_forms(
    pg: psycopg.Connection, form: str, fps: str, probes: str, caps: str, message: str
) -> None:
    with pytest.raises(psycopg.DataError, match=message):
        pg.execute(f"SELECT * FROM {form}({fps}::bigint[], {probes}::smallint[],"
                   f" {caps}::integer[])")


def test_one_signature_per_query(pg: psycopg.Connection) -> None:
    with pytest.raises(psycopg.DataError, match="one signature"):
        pg.execute("SELECT * FROM simhash_near_probes_candidates('{1}', '{{{1},{2},{3},{4}}}',"
                   " '{3}', '{1,2}')")


def test_values_outside_smallint_are_refused_by_type(pg: psycopg.Connection) -> None:
    with pytest.raises(psycopg.errors.NumericValueOutOfRange):
        pg.execute("SELECT * FROM simhash_near_probes_many('{1}', %s::smallint[], '{3}')",
                   [[[[1], [2], [3], [40000]]]])


# -- plans ------------------------------------------------------------------------


def _bulk(pg: psycopg.Connection, n: int) -> None:
    pg.execute(
        "INSERT INTO simhash_documents (fingerprint) SELECT"
        " ((random() * 4294967295)::bigint - 2147483648) # ((random() * 4294967295)::bigint << 32)"
        " FROM generate_series(1, %s)", [n])
    pg.execute("VACUUM ANALYZE simhash_documents")


def test_explain_each_block_is_an_index_only_scan_of_its_index(pg: psycopg.Connection) -> None:
    _bulk(pg, 120_000)
    rnd = random.Random(3)
    fps = [r[0] for r in pg.execute("SELECT fingerprint FROM simhash_documents LIMIT 3")]
    part = pg.execute(
        "SELECT tableoid::regclass::text FROM simhash_documents LIMIT 1").fetchone()[0]  # type: ignore[index]
    probes = [[[b] + [rnd.randint(-32768, 32767) for _ in range(10)]
               for b in blocks(fp % (1 << 64))] for fp in fps]
    single = nested_plans(
        pg, "SELECT * FROM simhash_near_probes(%s, %s::smallint[], %s::smallint[],"
        " %s::smallint[], %s::smallint[], 13)", [fps[0], *probes[0]])
    many = nested_plans(
        pg, "SELECT * FROM simhash_near_probes_many(%s::bigint[], %s::smallint[], %s::integer[])",
        [fps, probes, [13, 13, 13]])
    for plans in (single, many):
        for i in range(4):
            idx = f"{part}_b{i}_b{(i + 1) % 4}_fingerprint_idx"
            assert f"Index Only Scan using {idx} on {part}" in plans, plans
        assert f"Seq Scan on {part} " not in plans, plans
        assert "Heap Fetches: 0" in plans, plans


# -- roles and migrations ---------------------------------------------------------

SIGNATURES = [
    "simhash_check_probes(bigint[], smallint[], integer[], bigint[])",
    "simhash_near_probes(bigint, smallint[], smallint[], smallint[], smallint[], integer)",
    "simhash_probe_matches(bigint[], smallint[], integer[])",
    "simhash_near_probes_many(bigint[], smallint[], integer[])",
    "simhash_near_probes_candidates(bigint[], smallint[], integer[], bigint[])",
    "simhash_near_probes_candidates(bigint, smallint[], smallint[], smallint[], smallint[],"
    " integer, bigint)",
]


def _present(pg: psycopg.Connection) -> list[bool]:
    return [pg.execute("SELECT to_regprocedure(%s) IS NOT NULL", [s]).fetchone()[0]  # type: ignore[index]
            for s in SIGNATURES]


def _granted_to_reader(pg: psycopg.Connection) -> list[bool]:
    return [pg.execute(
        "SELECT EXISTS (SELECT 1 FROM pg_proc p, aclexplode(p.proacl) a"
        " WHERE p.oid = to_regprocedure(%s) AND a.grantee = 'simhash_reader'::regrole)", [s]
    ).fetchone()[0] for s in SIGNATURES]  # type: ignore[index]


def test_the_reader_may_search_by_probes(pg: psycopg.Connection) -> None:
    fp = 0x0123_4567_89AB_CDEF
    load(pg, [Row(fp, "x", 5)])
    b = list(blocks(fp))
    assert _granted_to_reader(pg) == [True] * len(SIGNATURES)
    with pg.transaction(force_rollback=True):
        pg.execute("SET LOCAL ROLE simhash_reader")
        assert sql_single(pg, fp, [[b[0]], [], [], []], 3) == [(1, 0)]
        assert sql_many(pg, [fp], [[[], [b[1]], [], []]], [3]) == [[(1, 0)]]
        assert pg.execute(
            "SELECT id FROM simhash_near_probes_candidates(%s::bigint[], %s::smallint[],"
            " '{0}', '{5}')", [[to_signed(fp ^ 0xFF)], packed([[[], [], [], []]])]
        ).fetchall() == [(1,)]


def test_migration_0009_round_trip(pg: psycopg.Connection, pg_dsn: str) -> None:
    rnd = random.Random(9)
    fps = [rnd.getrandbits(64) for _ in range(200)]
    fps += [flip(fp, rnd.randint(0, 12), rnd) for fp in fps[:100]]
    rows = [Row(fp) for fp in fps]
    load(pg, rows)
    queries = [flip(fp, rnd.randint(0, 12), rnd) for fp in fps[:20]]
    probes = [probe_values(rnd, q, fps) for q in queries]
    want = [brute(rows, q, p, 13) for q, p in zip(queries, probes, strict=True)]
    near = pg.execute("SELECT * FROM simhash_near_many(%s::bigint[], 6)",
                      [[to_signed(q) for q in queries]]).fetchall()
    assert sql_many(pg, queries, probes, [13] * len(queries)) == want
    assert migrate.downgrade_losses_between("0009", "0008") == []
    migrate.downgrade(pg_dsn, "0008")
    assert migrate.current(pg_dsn) == "0008"
    assert _present(pg) == [False] * len(SIGNATURES)
    # the radius searches do not depend on them
    assert pg.execute("SELECT * FROM simhash_near_many(%s::bigint[], 6)",
                      [[to_signed(q) for q in queries]]).fetchall() == near
    migrate.upgrade(pg_dsn)
    assert migrate.current(pg_dsn) == migrate.HEAD
    assert _present(pg) == _granted_to_reader(pg) == [True] * len(SIGNATURES)
    assert sql_many(pg, queries, probes, [13] * len(queries)) == want
    assert [sql_single(pg, q, p, 13) for q, p in zip(queries, probes, strict=True)] == want
    migrate.check(pg_dsn)


def test_migration_0014_round_trip(pg: psycopg.Connection, pg_dsn: str) -> None:
    # 0014 adds the single-query form of the candidates; the batch form stays
    rnd = random.Random(13)
    fps = [rnd.getrandbits(64) for _ in range(100)]
    load(pg, [Row(fp, "t", i) for i, fp in enumerate(fps)])
    q = flip(fps[0], 5, rnd)
    p = [[b, *vs] for b, vs in zip(blocks(fps[0]), probe_values(rnd, q, fps), strict=True)]
    single = ("SELECT id, distance FROM simhash_near_probes_candidates(%s, %s::smallint[],"
              " %s::smallint[], %s::smallint[], %s::smallint[], 13, 7)")
    want = pg.execute(single, [to_signed(q), *p]).fetchall()
    assert want == [(r[1], r[3]) for r in pg.execute(
        "SELECT * FROM simhash_near_probes_candidates(%s::bigint[], %s::smallint[], '{13}',"
        " '{7}')", [[to_signed(q)], packed([p])]).fetchall()]
    assert (1, hamming(q, fps[0])) in want and (8, hamming(q, fps[7])) in want  # sig 7: row 8
    searched = sql_single(pg, q, p, 13)
    assert searched == [(i, d) for i, d in want if d <= 13]  # no signature rows
    language = ("SELECT l.lanname FROM pg_proc f JOIN pg_language l ON l.oid = f.prolang"
                " WHERE f.oid = to_regprocedure(%s)")
    assert pg.execute(language, [SIGNATURES[1]]).fetchone() == ("sql",)  # 0014's wrapper
    assert migrate.downgrade_losses_between("0014", "0013") == []
    migrate.downgrade(pg_dsn, "0013")
    assert _present(pg) == [True] * (len(SIGNATURES) - 1) + [False]
    assert pg.execute(language, [SIGNATURES[1]]).fetchone() == ("plpgsql",)  # 0009's again
    assert sql_single(pg, q, p, 13) == searched
    migrate.upgrade(pg_dsn)
    assert _present(pg) == _granted_to_reader(pg) == [True] * len(SIGNATURES)
    assert pg.execute(single, [to_signed(q), *p]).fetchall() == want
    migrate.check(pg_dsn)


def test_migration_0019_round_trip(pg: psycopg.Connection, pg_dsn: str) -> None:
    """0019 adds the pair forms; the old argument lists keep searching by single
    blocks across the upgrade, and the downgrade restores their definitions."""
    rnd = random.Random(19)
    fps = [rnd.getrandbits(64) for _ in range(200)]
    fps += [fps[0] ^ (1 << 40), fps[0] ^ (1 << 3) ^ (1 << 20) ^ (1 << 60)]  # 1 and 3 bits away
    load(pg, [Row(fp, "t", i) for i, fp in enumerate(fps)])
    p = [[b] for b in blocks(fps[0])]
    old = ("SELECT id, distance FROM simhash_near_probes_candidates(%s, %s::smallint[],"
           " %s::smallint[], %s::smallint[], %s::smallint[], 13, NULL, NULL, NULL, 0)")
    before = pg.execute(old, [to_signed(fps[0]), *p]).fetchall()
    pairs = sql_candidates(pg, fps[0], p, 13, True)
    assert {1, len(fps) - 1, len(fps)} <= {i for i, _ in pairs}  # within 3 bits: found
    assert pairs == [(i + 1, d) for d, i in sorted(
        (hamming(fps[0], f), i) for i, f in enumerate(fps) if pair_matches(fps[0], p, 13, f))]
    new_forms = ["simhash_block_near1(bigint, integer)",
                 "simhash_probe_matches(bigint[], smallint[], integer[], boolean[])"]
    assert migrate.downgrade_losses_between("0019", "0018") == []
    migrate.downgrade(pg_dsn, "0018")
    assert [pg.execute("SELECT to_regprocedure(%s) IS NOT NULL", [f]).fetchone()
            for f in new_forms] == [(False,), (False,)]
    assert pg.execute(old, [to_signed(fps[0]), *p]).fetchall() == before
    migrate.upgrade(pg_dsn)
    assert pg.execute(old, [to_signed(fps[0]), *p]).fetchall() == before
    assert sql_candidates(pg, fps[0], p, 13, True) == pairs
    migrate.check(pg_dsn)


@given(st.lists(st.tuples(*[st.lists(st.integers(-32768, 32767), max_size=5)] * 4),
                min_size=1, max_size=4).filter(lambda ps: any(b for p in ps for b in p)))
@HYPO
def test_the_store_passes_probes_as_the_array_the_sql_expects(
    pg: psycopg.Connection, probes: list[tuple[list[int], ...]]
) -> None:
    """The look-up sends probe lists as the text form of a 3-D smallint[]: the server
    reads back the lists as given, each NULL-padded to the longest."""
    from simhash_pg.store.lookup import _probe_array

    got = pg.execute("SELECT %s::smallint[]", [_probe_array(probes)]).fetchone()
    assert got is not None
    assert got[0] == packed([[list(b) for b in p] for p in probes])


# -- pairs of blocks (revision 0019) ---------------------------------------------


def pair_matches(fp: int, probes: Probes, cap: int, stored_fp: int,
                 lead: int | None = None) -> bool:
    """The pair form's promise, written out: for some cyclic i, block i among the
    first ``lead`` probes (all: None; revision 0024) or the query's own, block
    i + 1 among the probes, the query's own or one bit from it; within cap."""
    q, s = blocks(fp), blocks(stored_fp)
    leading = [p if lead is None else p[:lead] for p in probes]

    def near1(a: int, b: int) -> bool:
        return ((a + 32768) ^ (b + 32768)).bit_count() <= 1

    return hamming(fp, stored_fp) <= cap and any(
        (s[i] in leading[i] or s[i] == q[i])
        and (s[(i + 1) % 4] in probes[(i + 1) % 4] or near1(s[(i + 1) % 4], q[(i + 1) % 4]))
        for i in range(4))


def sql_candidates(pg: psycopg.Connection, fp: int, probes: Probes, cap: int,
                   pairs: bool, lead: int | None = None) -> list[tuple[int, int]]:
    # without lead: revision 0019's form (every value leads), else 0024's
    got = pg.execute(
        "SELECT id, distance FROM simhash_near_probes_candidates(%s, %s::smallint[],"
        " %s::smallint[], %s::smallint[], %s::smallint[], %s, NULL, NULL, NULL, 0, %s"
        + (")" if lead is None else ", %s)"),
        [to_signed(fp), *[[v for v in p if v is not None] for p in probes], cap, pairs,
         *([] if lead is None else [lead])],
    ).fetchall()
    return [(r[0], r[1]) for r in got]


def sql_candidates_many(pg: psycopg.Connection, fps: list[int], probes: list[Probes],
                        caps: list[int], pairs: list[bool],
                        lead: int | None = None) -> list[list[tuple[int, int]]]:
    out: list[list[tuple[int, int]]] = [[] for _ in fps]
    for q, id_, dist in pg.execute(
        "SELECT query, id, distance FROM simhash_near_probes_candidates(%s::bigint[],"
        " %s::smallint[], %s::integer[], NULL, NULL, NULL, 0, %s::boolean[]"
        + (")" if lead is None else ", %s::integer)"),
        [[to_signed(f) for f in fps], packed(probes), caps, pairs,
         *([] if lead is None else [lead])],
    ):
        out[q - 1].append((id_, dist))
    return out


@given(planted(), st.lists(st.booleans(), min_size=7, max_size=7),
       st.one_of(st.none(), st.integers(0, 8)))
# found by this test: the one-bit flips of a block above 32767 overflowed smallint
# (an operator precedence slip in simhash_block_near1)
@example(([Row(MAX_FINGERPRINT), Row(MAX_FINGERPRINT ^ 1 << 63), Row(0)], [MAX_FINGERPRINT],
          [[[], [], [], []]], [3]), [True], None)
# revision 0024's leading count: none but the own value leads, an empty list
@example(([Row(MAX_FINGERPRINT), Row(MAX_FINGERPRINT ^ 1 << 63), Row(0)], [MAX_FINGERPRINT],
          [[[], [5], [], []]], [3]), [True], 0)
@HYPO
def test_pair_probes_equal_brute_force(
    pg: psycopg.Connection, case: tuple[list[Row], list[int], list[Probes], list[int]],
    pairs: list[bool], lead: int | None,
) -> None:
    """The pair form (single query and batch, mixed with single-block queries)
    returns what its promise says, which probes.probe_hits (the batch's own rows,
    the eval's model) computes too; every row within min(3, cap) is among them.
    With ``lead`` (revision 0024) only the first ``lead`` values of block i lead a
    pair; without it, the forms of revision 0019 (every value leads)."""
    rows, queries, probes, caps = case
    load(pg, rows)
    table = blocks_array([r.fp for r in rows])
    want_all = []
    for fp, p, cap, pair in zip(queries, probes, caps, pairs, strict=True):
        want = sorted((hamming(fp, r.fp), i + 1) for i, r in enumerate(rows)
                      if (pair_matches(fp, p, cap, r.fp, lead) if pair
                          else matches(fp, p, cap, r.fp)))
        want_all.append([(i, d) for d, i in want])
        hits = probe_hits(fp, [[v for v in b if v is not None] for b in p], table, pairs=pair,
                          lead=lead)
        dist = np.array([hamming(fp, r.fp) for r in rows])
        assert sorted(np.nonzero(hits & (dist <= cap))[0] + 1) == sorted(i for _, i in want)
        if pair:
            found = {j for _, j in want}
            assert all(int(i) + 1 in found for i in np.nonzero(dist <= min(3, cap))[0])
        assert sql_candidates(pg, fp, p, cap, pair, lead) == want_all[-1], (fp, p, cap, pair)
    assert sql_candidates_many(pg, queries, probes, caps, pairs, lead) == want_all


def test_pair_form_searches_by_both_blocks(pg: psycopg.Connection) -> None:
    """EXPLAIN of a pair query, single and batch forms: every pair branch scans a
    block index with b_(i+1)'s values as an index condition (not a filter),
    never the partition sequentially. Which of the two indexes holding b_(i+1)
    depends on the statistics: on a big store's, block i's index with both
    blocks as keys (tests/test_key_plans.py); on this small table the single
    form may take block i+1's and check block i in the table, where the batch
    form keeps to block i's since revision 0026 (tests/test_pair_plan.py)."""
    _bulk(pg, 120_000)
    part = pg.execute(
        "SELECT tableoid::regclass::text FROM simhash_documents LIMIT 1").fetchone()[0]  # type: ignore[index]
    fp = to_signed(0x0123456789ABCDEF)
    single = nested_plans(pg, "SELECT * FROM simhash_near_probes_candidates(%s, %s::smallint[],"
                          " %s::smallint[], %s::smallint[], %s::smallint[], 13, NULL, NULL,"
                          " NULL, 0, true)", [fp, [1, 2], [3], [4], [5]])
    many = nested_plans(pg, "SELECT * FROM simhash_near_probes_candidates(%s::bigint[],"
                        " %s::smallint[], %s::integer[], NULL, NULL, NULL, 0, %s::boolean[])",
                        [[fp, 5], packed([[[1, 2], [3], [4], [5]], [[6], [7], [8], [9]]]),
                         [13, 13], [True, True]])
    for text in (single, many):
        assert f"Seq Scan on {part} " not in text, text
        for i in range(4):
            j = (i + 1) % 4
            # an executed scan (the single-block branches are never executed)
            assert re.search(rf"Index (Only )?Scan using {part}_b\d_b\d_fingerprint_idx on "
                             rf"{part} .*\(actual time.*\n.*Index Cond: .*\(b{j} = ANY",
                             text), (i, text)
