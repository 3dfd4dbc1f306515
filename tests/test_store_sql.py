"""The schema and SQL functions against brute force, on a real PostgreSQL."""

from __future__ import annotations

import itertools
import random
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simhash_pg.bits import BLOCK_SHIFTS, MAX_FINGERPRINT, blocks, hamming, to_signed, to_unsigned
from simhash_pg.db import migrate

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

HYPO = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def load(pg: psycopg.Connection, fps: list[int]) -> list[int]:
    """Replace the table's rows with fps; return their ids in order."""
    pg.execute("TRUNCATE simhash_documents RESTART IDENTITY")
    with pg.cursor() as cur, cur.copy("COPY simhash_documents (fingerprint) FROM STDIN") as copy:
        for fp in fps:
            copy.write_row((to_signed(fp),))
    return list(range(1, len(fps) + 1))


def flip(fp: int, nbits: int, rnd: random.Random) -> int:
    for bit in rnd.sample(range(64), nbits):
        fp ^= 1 << bit
    return fp


@st.composite
def planted(draw: st.DrawFn, max_k: int, skewed: bool = False) -> tuple[list[int], list[int]]:
    """(stored fingerprints, queries): random bases with neighbours 0..max_k+1 bits away."""
    seed = draw(st.integers(0, 2**32))
    rnd = random.Random(seed)
    n = draw(st.integers(1, 40))
    if skewed:
        # few values per block: many rows share block values (real corpora)
        pool = [[rnd.getrandbits(16) for _ in range(3)] for _ in range(4)]

        def base() -> int:
            b = [rnd.choice(pool[i]) for i in range(4)]
            fp = (b[0] << 48) | (b[1] << 32) | (b[2] << 16) | b[3]
            return flip(fp, rnd.randint(0, 2), rnd)
    else:

        def base() -> int:
            return rnd.getrandbits(64)

    stored = [base() for _ in range(n)]
    for fp in list(stored):
        for _ in range(rnd.randint(0, 3)):
            stored.append(flip(fp, rnd.randint(0, max_k + 1), rnd))
    rnd.shuffle(stored)
    queries = [flip(rnd.choice(stored), rnd.randint(0, max_k + 1), rnd) for _ in range(4)]
    queries.append(base())
    return stored, queries


def brute_near(stored: list[int], q: int, k: int) -> list[tuple[int, int]]:
    found = [(hamming(fp, q), i + 1) for i, fp in enumerate(stored) if hamming(fp, q) <= k]
    return [(i, d) for d, i in sorted(found)]


def sql_near(pg: psycopg.Connection, q: int, k: int) -> list[tuple[int, int]]:
    rows = pg.execute(
        "SELECT id, distance FROM simhash_near(%s, %s)", [to_signed(q), k]
    ).fetchall()
    return [(r[0], r[1]) for r in rows]


# -- blocks -------------------------------------------------------------------

EDGES = [0, 1, 0xFFFF, 0x8000, 0x7FFF, 1 << 63, (1 << 63) - 1, MAX_FINGERPRINT,
         0x8000_8000_8000_8000, 0x7FFF_7FFF_7FFF_7FFF, 0xFFFF_0000_FFFF_0000]


def test_blocks_match_generated_columns_at_edges_and_random(pg: psycopg.Connection) -> None:
    rnd = random.Random(7)
    fps = EDGES + [rnd.getrandbits(64) for _ in range(500)]
    load(pg, fps)
    rows = pg.execute(
        "SELECT fingerprint, b0, b1, b2, b3, simhash_block(fingerprint, 0),"
        " simhash_block(fingerprint, 3) FROM simhash_documents ORDER BY id"
    ).fetchall()
    assert len(rows) == len(fps)
    for fp, row in zip(fps, rows, strict=True):
        assert to_unsigned(row[0]) == fp
        assert tuple(row[1:5]) == blocks(fp)
        assert (row[5], row[6]) == (blocks(fp)[0], blocks(fp)[3])


@given(st.integers(0, MAX_FINGERPRINT), st.integers(0, MAX_FINGERPRINT))
@HYPO
def test_hamming_and_block_functions(pg: psycopg.Connection, a: int, b: int) -> None:
    row = pg.execute(
        "SELECT simhash_hamming(%s, %s), simhash_block(%s, 0), simhash_block(%s, 1),"
        " simhash_block(%s, 2), simhash_block(%s, 3)",
        [to_signed(a), to_signed(b)] + [to_signed(a)] * 4,
    ).fetchone()
    assert row is not None
    assert row[0] == hamming(a, b)
    assert tuple(row[1:]) == blocks(a)


def test_block_number_out_of_range_is_an_error(pg: psycopg.Connection) -> None:
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="block number"):
        pg.execute("SELECT simhash_block(1, 4)")


def test_masks_and_probes(pg: psycopg.Connection) -> None:
    from math import comb

    for r in range(0, 17):
        masks = pg.execute("SELECT simhash_masks(%s)", [r]).fetchone()[0]  # type: ignore[index]
        assert len(masks) == len(set(masks)) == sum(comb(16, i) for i in range(r + 1))
        assert all(0 <= m < 65536 and m.bit_count() <= r for m in masks)
        # fewest bits first, as the recursive CTE of revision 0001 gave them
        assert masks == sorted(masks, key=lambda m: (m.bit_count(), m))
    clamped = pg.execute("SELECT simhash_masks(-3), simhash_masks(40) = simhash_masks(16)")
    assert clamped.fetchone() == ([0], True)
    probes = pg.execute("SELECT simhash_probes((-32768)::smallint, 1)").fetchone()[0]  # type: ignore[index]
    assert sorted(probes) == sorted([-32768] + [(1 << i) - 32768 for i in range(16)])


@given(st.integers(0, MAX_FINGERPRINT), st.integers(0, 5))
@HYPO
def test_probe_sets_are_the_probes_of_each_block(pg: psycopg.Connection, fp: int, r: int) -> None:
    row = pg.execute(
        "SELECT simhash_probe_sets(%(fp)s, %(r)s) = ARRAY["
        " simhash_probes(simhash_block(%(fp)s, 0), %(r)s),"
        " simhash_probes(simhash_block(%(fp)s, 1), %(r)s),"
        " simhash_probes(simhash_block(%(fp)s, 2), %(r)s),"
        " simhash_probes(simhash_block(%(fp)s, 3), %(r)s)]",
        {"fp": to_signed(fp), "r": r},
    ).fetchone()
    assert row == (True,)


# -- exactness ----------------------------------------------------------------


@given(planted(max_k=3))
@HYPO
def test_near_equals_brute_force_k0_to_3(
    pg: psycopg.Connection, data: tuple[list[int], list[int]]
) -> None:
    stored, queries = data
    load(pg, stored)
    for q in queries:
        for k in range(4):
            assert sql_near(pg, q, k) == brute_near(stored, q, k), (q, k)


@given(planted(max_k=12), st.booleans())
@HYPO
def test_near_equals_brute_force_k_up_to_12_and_skewed(
    pg: psycopg.Connection, data: tuple[list[int], list[int]], skew: bool
) -> None:
    stored, queries = data
    load(pg, stored)
    for q in queries:
        for k in (4, 5, 7, 8, 11, 12):
            assert sql_near(pg, q, k) == brute_near(stored, q, k), (q, k)


@given(planted(max_k=12, skewed=True))
@HYPO
def test_near_skewed_blocks_equals_brute_force(
    pg: psycopg.Connection, data: tuple[list[int], list[int]]
) -> None:
    stored, queries = data
    load(pg, stored)
    for q in queries:
        for k in (0, 1, 3, 4, 6, 9, 12, 16, 30, 64):
            assert sql_near(pg, q, k) == brute_near(stored, q, k), (q, k)


def test_near_above_probe_threshold_uses_scan_and_stays_exact(pg: psycopg.Connection) -> None:
    rnd = random.Random(3)
    stored = [rnd.getrandbits(64) for _ in range(300)]
    load(pg, stored)
    q = stored[0]
    for k in (15, 16, 20, 32, 64):
        assert sql_near(pg, q, k) == brute_near(stored, q, k)
    assert len(sql_near(pg, q, 64)) == 300


@given(planted(max_k=6))
@HYPO
def test_near_many_equals_near_in_query_order(
    pg: psycopg.Connection, data: tuple[list[int], list[int]]
) -> None:
    stored, queries = data
    load(pg, stored)
    for k in (3, 6):
        rows = pg.execute(
            "SELECT query, id, distance FROM simhash_near_many(%s, %s)",
            [[to_signed(q) for q in queries], k],
        ).fetchall()
        got: list[list[tuple[int, int]]] = [[] for _ in queries]
        for query, id_, dist in rows:
            got[query - 1].append((id_, dist))
        assert got == [brute_near(stored, q, k) for q in queries]


def brute_pairs(stored: list[int], k: int) -> list[tuple[int, int, int]]:
    return [
        (i + 1, j + 1, hamming(stored[i], stored[j]))
        for i in range(len(stored))
        for j in range(i + 1, len(stored))
        if hamming(stored[i], stored[j]) <= k
    ]


def sql_pairs(pg: psycopg.Connection, k: int) -> list[tuple[int, int, int]]:
    # simhash_pairs streams its rows in no particular order
    rows = pg.execute("SELECT a, b, distance FROM simhash_pairs(%s)", [k]).fetchall()
    return sorted((r[0], r[1], r[2]) for r in rows)


@given(st.booleans().flatmap(lambda skewed: planted(max_k=3, skewed=skewed)))
@HYPO
def test_pairs_equal_brute_force(pg: psycopg.Connection, data: tuple[list[int], list[int]]) -> None:
    # planted neighbours 0..4 bits away (0: the same fingerprint twice); skewed
    # stores put many rows under one block value, so the 24-bit keys of the
    # pair form hold several rows; each pair exactly once (a sorted list)
    stored, _ = data
    load(pg, stored)
    for k in (0, 1, 2, 3, 5):
        assert sql_pairs(pg, k) == brute_pairs(stored, k), k


@given(planted(max_k=8), st.booleans())
@HYPO
def test_pairs_above_k3_equal_brute_force(
    pg: psycopg.Connection, data: tuple[list[int], list[int]], skew: bool
) -> None:
    stored, _ = data
    load(pg, stored)
    for k in (4, 8):
        assert sql_pairs(pg, k) == brute_pairs(stored, k), k


# The eight 24-bit keys of simhash_pairs: block i and one byte of block i+1.
PAIR_KEYS = [
    (0xFFFF << BLOCK_SHIFTS[i]) | (byte << BLOCK_SHIFTS[(i + 1) % 4])
    for i in range(4) for byte in (0xFF00, 0x00FF)
]


def test_pair_branch_covers_every_xor_of_up_to_3_bits(pg: psycopg.Connection) -> None:
    # the lemma behind simhash_pairs for k <= 3, exhaustively: every XOR of
    # at most 3 bits (43,745 of them) leaves one of the eight keys clear, and
    # simhash_pair_branch names the first such key
    xors = [sum(1 << b for b in bits) for r in range(4)
            for bits in itertools.combinations(range(64), r)]
    want = [next(n for n, key in enumerate(PAIR_KEYS) if x & key == 0) for x in xors]
    got = pg.execute("SELECT array_agg(simhash_pair_branch(x) ORDER BY o)"
                     " FROM unnest(%s::bigint[]) WITH ORDINALITY AS t (x, o)",
                     [[to_signed(x) for x in xors]]).fetchone()
    assert got is not None and got[0] == want
    # four bits can miss every key: one in each block's high byte
    four = sum(1 << (s + 15) for s in BLOCK_SHIFTS)
    assert pg.execute("SELECT simhash_pair_branch(%s)", [to_signed(four)]).fetchone() == (None,)


def test_pairs_is_inlined_and_streams(pg: psycopg.Connection) -> None:
    # a cursor gets rows as the scan finds them only if simhash_pairs is
    # inlined (a function scan collects every row first) and nothing sorts
    # the whole output
    for k in (3, 5):
        plan = [r[0] for r in pg.execute(
            "EXPLAIN (COSTS OFF) SELECT * FROM simhash_pairs(%s)", [k]).fetchall()]
        assert not any("Function Scan on simhash_pairs" in line for line in plan), plan
        assert not plan[0].lstrip().startswith(("Sort", "Unique", "HashAggregate")), plan


def test_near_id_leaves_out_the_row_itself(pg: psycopg.Connection) -> None:
    stored = [0, 1, 3, 0xFFFF_FFFF_FFFF_FFFF, 0]
    load(pg, stored)
    rows = pg.execute("SELECT id, distance FROM simhash_near_id(1, 3)").fetchall()
    assert [tuple(r) for r in rows] == [(5, 0), (2, 1), (3, 2)]


@pytest.mark.parametrize("k", [-1, 65, None])
def test_k_out_of_range_is_an_sql_error_naming_k(pg: psycopg.Connection, k: int | None) -> None:
    for sql in (
        "SELECT * FROM simhash_near(1, %s)",
        "SELECT * FROM simhash_pairs(%s)",
        "SELECT * FROM simhash_near_many(ARRAY[1::bigint], %s)",
    ):
        with pytest.raises(psycopg.errors.InvalidParameterValue, match="k must be between"):
            pg.execute(sql, [k])


# -- pair probes (revisions 0004, 0006) and single-block probes ---------------

# simhash.pair_probe_min_rows overrides the table-size threshold for every k:
# 0 forces the pair form ((b_i, b_(i+1)) probes), a huge value the
# single-block form.
FORMS = {"pairs": "0", "blocks": "1e30"}


def force_form(pg: psycopg.Connection, form: str) -> None:
    pg.execute(f"SET simhash.pair_probe_min_rows = '{FORMS[form]}'")


def sql_near_many(
    pg: psycopg.Connection, queries: list[int], k: int
) -> list[list[tuple[int, int]]]:
    rows = pg.execute(
        "SELECT query, id, distance FROM simhash_near_many(%s, %s)",
        [[to_signed(q) for q in queries], k],
    ).fetchall()
    got: list[list[tuple[int, int]]] = [[] for _ in queries]
    for query, id_, dist in rows:
        got[query - 1].append((id_, dist))
    return got


# the pair form under hypothesis is the suite's longest test (about 90 s): CI's slow run
@pytest.mark.parametrize("form", [pytest.param("pairs", marks=pytest.mark.slow), "blocks"])
@given(data=planted(max_k=12), skewed=planted(max_k=12, skewed=True))
@HYPO
def test_near_and_near_many_both_forms_equal_brute_force(
    pg: psycopg.Connection,
    form: str,
    data: tuple[list[int], list[int]],
    skewed: tuple[list[int], list[int]],
) -> None:
    force_form(pg, form)
    for stored, queries in (data, skewed):
        load(pg, stored)
        for k in (0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 15):
            want = [brute_near(stored, q, k) for q in queries]
            assert [sql_near(pg, q, k) for q in queries] == want, (form, k)
            assert sql_near_many(pg, queries, k) == want, (form, k)


def _spread(bits_per_block: tuple[int, ...], rnd: random.Random) -> int:
    """A 64-bit mask with the given number of bits set in blocks 0..3."""
    mask = 0
    for block, nbits in enumerate(bits_per_block):
        for bit in rnd.sample(range(16), nbits):
            mask |= 1 << (48 - 16 * block + bit)
    return mask


@pytest.mark.parametrize("form", list(FORMS))
def test_every_spread_of_up_to_15_bits_over_the_blocks_is_found(
    pg: psycopg.Connection, form: str
) -> None:
    # The lemmas case by case (0004's for k <= 3, 0006's block i within k/4
    # bits and block i+1 within k/2 for every k): all 3,876 ways to put <= 15
    # differing bits into the blocks, each stored once, each searched at
    # exactly its distance (the hardest k for it) and above; near_many at
    # several k. E.g. (0, 1, 0, 2) needs block 0 equal and block 1 within 1
    # bit; a pair form probing b_(i+1) by equality only would miss most.
    rnd = random.Random(12)
    spreads = [
        (a, b, c, d)
        for a in range(16) for b in range(16) for c in range(16) for d in range(16)
        if a + b + c + d <= 15
    ]
    assert len(spreads) == 3876
    base = rnd.getrandbits(64)
    stored = [base ^ _spread(s, rnd) for s in spreads]
    stored += [rnd.getrandbits(64) for _ in range(300)]
    load(pg, stored)
    force_form(pg, form)
    by_k = [brute_near(stored, base, k) for k in range(16)]
    for k in range(16):
        assert len(by_k[k]) >= sum(1 for s in spreads if sum(s) <= k)
        assert sql_near(pg, base, k) == by_k[k], (form, k)
    for k in (4, 6, 7, 9, 11):
        queries = [base, base ^ 1, base ^ (1 << 40)]
        assert sql_near_many(pg, queries, k) == [brute_near(stored, q, k) for q in queries]


def test_pair_indexes_cost_no_bytes_over_single_block_indexes(pg: psycopg.Connection) -> None:
    # the second smallint sits in the alignment padding before the bigint
    _bulk(pg, 20_000)
    pg.execute("REINDEX INDEX simhash_documents_b0_idx")  # both built sorted, 90% full
    pg.execute(
        "CREATE INDEX single_b0 ON simhash_documents (b0, fingerprint)"
        " WITH (deduplicate_items = off)"
    )
    sizes = pg.execute(
        "SELECT pg_relation_size('simhash_documents_b0_idx'), pg_relation_size('single_b0')"
    ).fetchone()
    assert sizes is not None and sizes[0] == sizes[1]


# -- plans --------------------------------------------------------------------


def _bulk(pg: psycopg.Connection, n: int) -> None:
    pg.execute(
        "INSERT INTO simhash_documents (fingerprint) SELECT"
        " ((random() * 4294967295)::bigint - 2147483648) # ((random() * 4294967295)::bigint << 32)"
        " FROM generate_series(1, %s)",
        [n],
    )
    pg.execute("VACUUM ANALYZE simhash_documents")


def nested_plans(pg: psycopg.Connection, sql: str, args: list[Any]) -> str:
    """EXPLAIN ANALYZE of the statements run inside functions (auto_explain)."""
    notices: list[str] = []
    pg.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
    try:
        pg.execute("LOAD 'auto_explain'")
    except psycopg.errors.InsufficientPrivilege:
        pytest.skip("LOAD auto_explain needs a superuser")
    for setting in ("log_min_duration = 0", "log_nested_statements = on",
                    "log_analyze = on", "log_level = notice"):
        pg.execute(f"SET auto_explain.{setting}")
    pg.execute(sql, args).fetchall()
    pg.execute("SET auto_explain.log_min_duration = -1")
    return "\n".join(notices)


def test_explain_near_uses_block_indexes_not_a_seq_scan(pg: psycopg.Connection) -> None:
    _bulk(pg, 120_000)
    fp = pg.execute("SELECT fingerprint FROM simhash_documents LIMIT 1").fetchone()[0]  # type: ignore[index]
    # the rows are in today's partition; its indexes are named after it
    part = pg.execute(
        "SELECT tableoid::regclass::text FROM simhash_documents LIMIT 1"
    ).fetchone()[0]  # type: ignore[index]
    assert part.startswith("simhash_documents_p"), part
    outer = "\n".join(
        r[0] for r in pg.execute("EXPLAIN SELECT * FROM simhash_near(%s, 3)", [fp])
    )
    assert "Seq Scan" not in outer
    for k in (3, 6):
        plans = nested_plans(pg, "SELECT * FROM simhash_near(%s, %s)", [fp, k])
        for i in range(4):
            # the index the partition got from the parent's (b_i, b_i+1, fingerprint) one
            idx = f"{part}_b{i}_b{(i + 1) % 4}_fingerprint_idx"
            assert f"Index Only Scan using {idx} on {part}" in plans, plans
        assert f"Seq Scan on {part} " not in plans, plans
        assert "Heap Fetches: 0" in plans, plans
    # above the probe threshold it scans, by design
    assert f"Seq Scan on {part} " in nested_plans(
        pg, "SELECT * FROM simhash_near(%s, 20)", [fp]
    )


# k >= 4 probes block i by an array too: on a table of 120,000 rows the
# planner rightly prefers block i+1's own index (a few heap rows), from about
# 1M rows on the pair index, as at 10M and 50M (docs/scaling.md).
@pytest.mark.parametrize("k, n", [(3, 120_000), pytest.param(6, 1_000_000, marks=pytest.mark.slow)])
def test_explain_pair_form_is_index_only_on_the_pair_indexes(
    pg: psycopg.Connection, k: int, n: int
) -> None:
    if k > 3 and pg.info.server_version < 170000:
        pytest.skip("before PostgreSQL 17 the pair form serves k <= 3 only")
    _bulk(pg, n)
    fp = pg.execute("SELECT fingerprint FROM simhash_documents LIMIT 1").fetchone()[0]  # type: ignore[index]
    part = pg.execute(
        "SELECT tableoid::regclass::text FROM simhash_documents LIMIT 1"
    ).fetchone()[0]  # type: ignore[index]
    # partitioned (revision 0005): the size that counts is the largest partition's
    reltuples = pg.execute(
        "SELECT reltuples FROM pg_class WHERE oid = %s::regclass", [part]
    ).fetchone()[0]  # type: ignore[index]
    assert reltuples > 0.9 * n
    # below the threshold: one block probed; above it: pairs. The threshold
    # is compared with pg_class.reltuples (n rows here).
    for threshold, pairs in (("1e30", False), (str(int(0.8 * n)), True),
                             (str(int(1.7 * n)), False), ("0", True)):
        pg.execute(f"SET simhash.pair_probe_min_rows = '{threshold}'")
        for fn in ("SELECT * FROM simhash_near(%s, %s)",
                   "SELECT * FROM simhash_near_many(ARRAY[%s::bigint], %s)"):
            plans = nested_plans(pg, fn, [fp, k])
            for i in range(4):
                j = (i + 1) % 4
                assert f"Index Only Scan using {part}_b{i}_b{j}_fingerprint_idx" in plans, plans
                if pg.info.server_version < 170000:
                    continue  # before 17 the planner may keep b_(i+1) as a filter at this size
                assert (f"AND (c.b{j} = ANY" in plans or f"AND (b{j} = ANY" in plans) == pairs, (
                    threshold, plans)
            # (the empty partitions made ahead are read by Seq Scans of no pages)
            assert f"Seq Scan on {part} " not in plans, plans
            assert "Heap Fetches: 0" in plans, plans
    pg.execute("RESET simhash.pair_probe_min_rows")


def _block_indexdefs(pg: psycopg.Connection) -> list[str]:
    return [
        r[0].split(" USING btree ")[1]
        for r in pg.execute(
            "SELECT pg_get_indexdef(indexrelid) FROM pg_index"
            " WHERE indexrelid::regclass::text ~ '^simhash_documents_b[0-3]_idx$'"
            " ORDER BY indexrelid::regclass::text"
        )
    ]


def _same_in_both_forms(
    pg: psycopg.Connection, queries: list[int], want: dict[int, list[list[tuple[int, int]]]]
) -> None:
    for form in FORMS:
        force_form(pg, form)
        for k, w in want.items():
            assert [sql_near(pg, q, k) for q in queries] == w, (form, k)
            assert sql_near_many(pg, queries, k) == w, (form, k)


def test_migration_0004_round_trip_keeps_results(pg: psycopg.Connection, pg_dsn: str) -> None:
    rnd = random.Random(5)
    stored = [rnd.getrandbits(64) for _ in range(300)]
    stored += [flip(fp, rnd.randint(0, 3), rnd) for fp in stored[:100]]
    load(pg, stored)
    queries = [flip(fp, rnd.randint(0, 3), rnd) for fp in stored[:30]]
    want = {k: [brute_near(stored, q, k) for q in queries] for k in (0, 3, 6)}
    pair_defs = [
        "(b0, b1, fingerprint) WITH (deduplicate_items=off)",
        "(b1, b2, fingerprint) WITH (deduplicate_items=off)",
        "(b2, b3, fingerprint) WITH (deduplicate_items=off)",
        "(b3, b0, fingerprint) WITH (deduplicate_items=off)",
    ]
    assert _block_indexdefs(pg) == pair_defs
    migrate.downgrade(pg_dsn, "0003")
    assert migrate.current(pg_dsn) == "0003"
    assert _block_indexdefs(pg) == [
        f"(b{i}, fingerprint) WITH (deduplicate_items=off)" for i in range(4)
    ]
    for k, w in want.items():
        assert [sql_near(pg, q, k) for q in queries] == w, k
        assert sql_near_many(pg, queries, k) == w, k
    migrate.upgrade(pg_dsn)
    assert migrate.current(pg_dsn) == migrate.HEAD
    assert _block_indexdefs(pg) == pair_defs
    _same_in_both_forms(pg, queries, want)
    migrate.check(pg_dsn)


def test_migration_0006_round_trip_keeps_results(pg: psycopg.Connection, pg_dsn: str) -> None:
    rnd = random.Random(6)
    stored = [rnd.getrandbits(64) for _ in range(300)]
    stored += [flip(fp, rnd.randint(0, 10), rnd) for fp in stored[:150]]
    load(pg, stored)
    queries = [flip(fp, rnd.randint(0, 10), rnd) for fp in stored[:30]]
    want = {k: [brute_near(stored, q, k) for q in queries] for k in (0, 3, 6, 10)}

    def volatility() -> str:
        row = pg.execute("SELECT provolatile FROM pg_proc WHERE proname = 'simhash_masks'")
        return str(row.fetchone()[0])  # type: ignore[index]

    assert "simhash_mask_sets" in _tables(pg) and volatility() == "s"
    migrate.downgrade(pg_dsn, "0005")
    assert migrate.current(pg_dsn) == "0005"
    assert "simhash_mask_sets" not in _tables(pg)
    assert not {"simhash_use_pairs", "simhash_probe_sets"} & _functions(pg)
    assert volatility() == "i"  # 0001's recursive CTE again
    _same_in_both_forms(pg, queries, want)
    migrate.upgrade(pg_dsn)
    assert migrate.current(pg_dsn) == migrate.HEAD
    _same_in_both_forms(pg, queries, want)
    migrate.check(pg_dsn)


def _stored_and_queries(
    pg: psycopg.Connection, seed: int, n: int, max_bits: int
) -> tuple[list[int], list[int]]:
    """n random rows and n/2 copies within max_bits, loaded; n/10 queries near them."""
    rnd = random.Random(seed)
    stored = [rnd.getrandbits(64) for _ in range(n)]
    stored += [flip(fp, rnd.randint(0, max_bits), rnd) for fp in stored[: n // 2]]
    load(pg, stored)
    pg.execute("ANALYZE simhash_documents")
    return stored, [flip(fp, rnd.randint(0, max_bits), rnd) for fp in stored[: n // 10]]


def _use_pairs_calls(pg: psycopg.Connection, sql: str, args: list[Any]) -> int:
    """How often running sql called simhash_use_pairs (track_functions counts it)."""
    # the view holds what the backend has not yet flushed, so take a difference
    count = (
        "SELECT coalesce(sum(calls), 0) FROM pg_stat_xact_user_functions"
        " WHERE funcname = 'simhash_use_pairs'"
    )
    with pg.transaction():
        pg.execute("SET LOCAL track_functions = 'all'")
        before = pg.execute(count).fetchone()[0]  # type: ignore[index]
        pg.execute(sql, args).fetchall()
        after = pg.execute(count).fetchone()[0]  # type: ignore[index]
    return int(after - before)


def _k3_unset_form(pg: psycopg.Connection, fp: int) -> tuple[bool, int]:
    """Revision 0007's rule with the setting unset: use_pairs(3), and its calls by near(k=3)."""
    pg.execute("RESET simhash.pair_probe_min_rows")
    row = pg.execute("SELECT simhash_use_pairs(3)").fetchone()
    calls = _use_pairs_calls(pg, "SELECT * FROM simhash_near(%s, 3)", [to_signed(fp)])
    return bool(row[0]), calls  # type: ignore[index]


def test_k3_pair_form_at_every_size_without_the_catalog_query(pg: psycopg.Connection) -> None:
    # Revision 0007: on PostgreSQL 17+, k <= 3 takes the pair form on a table of
    # any size, decided without calling simhash_use_pairs; k >= 4 and older
    # servers keep 0006's size rule; the setting, when set, still decides.
    stored, queries = _stored_and_queries(pg, 7, 400, 3)
    new = pg.info.server_version >= 170000
    assert _k3_unset_form(pg, queries[0]) == (new, 0 if new else 1)
    for k in (0, 1, 2, 3):
        row = pg.execute("SELECT simhash_use_pairs(%s)", [k]).fetchone()
        assert row[0] is new, k  # type: ignore[index]
        want = [brute_near(stored, q, k) for q in queries]
        assert [sql_near(pg, q, k) for q in queries] == want, k
        assert sql_near_many(pg, queries, k) == want, k
    assert pg.execute("SELECT simhash_use_pairs(4)").fetchone()[0] is False  # type: ignore[index]
    assert _use_pairs_calls(pg, "SELECT * FROM simhash_near(%s, 6)", [to_signed(queries[0])]) == 1
    # set, the setting decides k <= 3 too (through simhash_use_pairs)
    force_form(pg, "blocks")
    assert _use_pairs_calls(pg, "SELECT * FROM simhash_near(%s, 3)", [to_signed(queries[0])]) == 1
    assert pg.execute("SELECT simhash_use_pairs(3)").fetchone()[0] is False  # type: ignore[index]
    pg.execute("RESET simhash.pair_probe_min_rows")
    if new:  # (last: auto_explain stays loaded, and its instrumentation skews the counts)
        plans = nested_plans(pg, "SELECT * FROM simhash_near(%s, %s)", [to_signed(queries[0]), 3])
        for i in range(4):
            j = (i + 1) % 4
            assert f"AND (c.b{j} = ANY" in plans or f"AND (b{j} = ANY" in plans, plans


def test_migration_0007_round_trip(pg: psycopg.Connection, pg_dsn: str) -> None:
    stored, queries = _stored_and_queries(pg, 8, 300, 6)
    want = {k: [brute_near(stored, q, k) for q in queries] for k in (0, 3, 6)}
    new = pg.info.server_version >= 170000
    assert _k3_unset_form(pg, queries[0]) == (new, 0 if new else 1)
    migrate.downgrade(pg_dsn, "0006")
    assert migrate.current(pg_dsn) == "0006"
    assert _k3_unset_form(pg, queries[0]) == (False, 1)  # 0006: by size, 450 rows
    _same_in_both_forms(pg, queries, want)
    migrate.upgrade(pg_dsn)
    assert migrate.current(pg_dsn) == migrate.HEAD
    assert _k3_unset_form(pg, queries[0]) == (new, 0 if new else 1)
    _same_in_both_forms(pg, queries, want)
    migrate.check(pg_dsn)


def _0008_state(pg: psycopg.Connection) -> tuple[bool, bool, bool, bool]:
    """(lock function, links trigger, reader may take int4-pair / bigint advisory locks)."""
    row = pg.execute(
        "SELECT EXISTS (SELECT 1 FROM pg_proc WHERE proname = 'simhash_writer_lock'),"
        " EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = 'simhash_links_insert'"
        " AND tgrelid = 'simhash_documents'::regclass),"
        " has_function_privilege('simhash_reader', 'pg_advisory_lock(integer, integer)',"
        " 'EXECUTE'),"
        " has_function_privilege('simhash_reader', 'pg_advisory_lock(bigint)', 'EXECUTE')"
    ).fetchone()
    assert row is not None
    return (row[0], row[1], row[2], row[3])


def test_migration_0008_round_trip(pg: psycopg.Connection, pg_dsn: str) -> None:
    from simhash_pg.store import SimhashStore

    base = 0x0F0F_1234_5678_9ABC
    with SimhashStore(pg_dsn) as store:
        a = store.add(base, key="a")
        assert store.add(base ^ 1, key="b", on_duplicate="link").duplicate_of == a.id
    assert _0008_state(pg) == (True, True, False, True)
    migrate.downgrade(pg_dsn, "0007")
    assert migrate.current(pg_dsn) == "0007"
    assert _0008_state(pg) == (False, False, True, True)  # PostgreSQL's default again
    add = "SELECT inserted, duplicate_of FROM simhash_add(%s, %s, NULL, 3, %s)"
    # 0005's simhash_add: no lock function to call
    assert pg.execute(add, [to_signed(base ^ 2), "c", "link"]).fetchone() == (True, a.id)
    assert pg.execute(add, [to_signed(base), "a", "insert"]).fetchone() == (False, None)
    migrate.upgrade(pg_dsn)
    assert migrate.current(pg_dsn) == migrate.HEAD
    assert _0008_state(pg) == (True, True, False, True)
    assert pg.execute(add, [to_signed(base ^ 4), "d", "link"]).fetchone() == (True, a.id)
    assert pg.execute(add, [to_signed(base), "a", "insert"]).fetchone() == (False, None)
    assert pg.execute("SELECT count(*) FROM simhash_documents").fetchone() == (4,)
    migrate.check(pg_dsn)


# -- migrations ---------------------------------------------------------------


def _tables(pg: psycopg.Connection) -> set[str]:
    rows = pg.execute(
        "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
    ).fetchall()
    return {r[0] for r in rows}


def _functions(pg: psycopg.Connection) -> set[str]:
    rows = pg.execute(
        "SELECT proname FROM pg_proc WHERE proname LIKE 'simhash%%'"
        " AND pronamespace = current_schema()::regnamespace"
    ).fetchall()
    return {r[0] for r in rows}


@pytest.mark.parametrize("populated", [False, True])
def test_migrations_round_trip(pg: psycopg.Connection, pg_dsn: str, populated: bool) -> None:
    if populated:
        _bulk(pg, 2000)
    assert migrate.current(pg_dsn) == migrate.HEAD == migrate.script_head()
    assert {"simhash_documents", "simhash_meta"} <= _tables(pg)
    migrate.downgrade(pg_dsn, "base")
    assert migrate.current(pg_dsn) is None
    assert not {"simhash_documents", "simhash_meta"} & _tables(pg)
    assert _functions(pg) == set()
    migrate.upgrade(pg_dsn)
    assert migrate.current(pg_dsn) == migrate.HEAD
    assert "simhash_near" in _functions(pg)
    assert pg.execute("SELECT count(*) FROM simhash_documents").fetchone() == (0,)
    migrate.check(pg_dsn)


def test_alembic_check_finds_no_difference(pg_dsn: str) -> None:
    migrate.check(pg_dsn)


def test_alembic_check_detects_a_difference(pg: psycopg.Connection, pg_dsn: str) -> None:
    # proves the check above can fail
    from alembic.util import AutogenerateDiffsDetected

    pg.execute("DROP INDEX simhash_documents_b2_idx")
    with pytest.raises(AutogenerateDiffsDetected):
        migrate.check(pg_dsn)


def test_migration_0012_round_trip(pg: psycopg.Connection, pg_dsn: str) -> None:
    # 0012 replaces simhash_pairs; its downgrade restores the block self-joins
    rnd = random.Random(10)
    stored = [rnd.getrandbits(64) for _ in range(150)]
    stored += [flip(fp, rnd.randint(0, 4), rnd) for fp in stored[:80]]
    load(pg, stored)
    want = brute_pairs(stored, 3)
    assert sql_pairs(pg, 3) == want
    assert migrate.downgrade_losses_between("0012", "0011") == []
    migrate.downgrade(pg_dsn, "0011")
    assert migrate.current(pg_dsn) == "0011"
    assert pg.execute("SELECT to_regprocedure('simhash_pair_branch(bigint)')").fetchone() == (None,)
    assert pg.execute("SELECT a, b, distance FROM simhash_pairs(3)").fetchall() == want
    migrate.upgrade(pg_dsn)
    assert migrate.current(pg_dsn) == migrate.HEAD
    assert sql_pairs(pg, 3) == want
    migrate.check(pg_dsn)
