"""Revision 0026: a pair probe's second list is written out, so the plan keeps to block i's index.

Through the real database: on a small store's statistics every executed pair
branch (single and batch forms, a long text's 12 leading and 64 second
values) scans block i's index, index-only (on PostgreSQL 17+ with both blocks
as its keys), where 0025's plan took block i+1's index and checked block i in
the table; second lists
longer than the 96 values written out (an owner's larger 'pairs') still find
what the pair promise says (brute force), in both forms; the
migration goes down to 0025 and up with the answers unchanged.
"""

from __future__ import annotations

import random
import re

import psycopg
import pytest
from test_near_probes import (
    Probes,
    Row,
    _bulk,
    load,
    pair_matches,
    sql_candidates,
    sql_candidates_many,
)
from test_store_sql import nested_plans

from simhash_pg.bits import blocks, hamming, to_signed
from simhash_pg.db import migrate

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

WRITTEN = 96  # the second values the pair branches write out (sql/0026_pair_plan.sql)


def _probes(rnd: random.Random, fp: int, n: int) -> Probes:
    """n distinct block values per block, none the query's own (as a text's probes)."""
    own = blocks(fp)
    out: Probes = []
    for i in range(4):
        values = rnd.sample(range(-32768, 32768), n + 1)
        out.append([v for v in values if v != own[i]][:n])
    return out


def _flip1(value: int, bit: int) -> int:
    """A smallint block value with one of its 16 bits flipped."""
    return ((value + 32768) ^ (1 << bit)) - 32768


def _with_blocks(fp: int, probes: Probes, values: dict[int, int], rnd: random.Random) -> int:
    """A row with the given blocks (i: smallint value) and, in the other two, a
    value no pair reaches (neither probed nor within a bit of the query's own):
    so that only the pair of the given blocks can find it."""
    own = blocks(fp)
    out = 0
    for i in range(4):
        v = values.get(i)
        while v is None:
            v = rnd.randrange(-32768, 32768)
            if v in probes[i] or ((v + 32768) ^ (own[i] + 32768)).bit_count() <= 1:
                v = None
        out |= (v + 32768) << (48 - 16 * i)
    return out


def test_a_small_stores_batch_pair_branches_use_block_is_index(pg: psycopg.Connection) -> None:
    _bulk(pg, 120_000)
    part = pg.execute(
        "SELECT tableoid::regclass::text FROM simhash_documents LIMIT 1").fetchone()[0]  # type: ignore[index]
    rnd = random.Random(7)
    fps = [rnd.getrandbits(64) for _ in range(2)]
    probes = [_probes(rnd, fp, 64) for fp in fps]
    many = nested_plans(
        pg, "SELECT * FROM simhash_near_probes_candidates(%s::bigint[], %s::smallint[],"
        " %s::integer[], NULL, NULL, NULL, 0, %s::boolean[], 12)",
        [[to_signed(f) for f in fps], probes, [13, 13], [True, True]])
    # PostgreSQL 17+ takes both blocks as index keys (skipping between the
    # second list's values); before it, block i's key and block i+1 checked in
    # the index entry: either way block i's index, never the table
    both = pg.info.server_version >= 170000
    assert f"Seq Scan on {part} " not in many, many
    for i in range(4):
        j = (i + 1) % 4
        cond = (rf"Index Cond: \(\(b{i} = ANY .*\) AND \(b{j} = ANY " if both
                else rf"Index Cond: \(b{i} = ANY .*\)\n\s*Filter: .*\(b{j} = ANY ")
        # the executed pair branch
        assert re.search(rf"Index Only Scan using {part}_b{i}_b{j}_fingerprint_idx on "
                         rf"{part} .*\(actual time.*\n\s*{cond}", many), (i, many)


# 79 probes + 17 (the own value and its flips) = 96, all written; 80 = 97; 100 = 117
@pytest.mark.parametrize("n", [WRITTEN - 17, WRITTEN - 16, 100])
def test_second_lists_past_the_written_ones_find_what_the_promise_says(
        pg: psycopg.Connection, n: int) -> None:
    """n probes a block: 79 make a second list of 96 (79, the own value and its
    16 flips: all written out), 80 one of 97, 100 one of 117 (the arrays as they
    are). Rows sit at every kind of position: a leading value or the own one in
    block i, and in block i+1 the first probe, the last, the own value and its
    last flip (the last element of the second list); with random rows beside."""
    rnd = random.Random(n)
    fp = rnd.getrandbits(64)
    short_fp = rnd.getrandbits(64)
    p, short_p = _probes(rnd, fp, n), _probes(rnd, short_fp, 4)
    own = blocks(fp)
    rows = [Row(rnd.getrandbits(64)) for _ in range(300)]
    for i in range(4):
        j = (i + 1) % 4
        for lead_value in (p[i][0], p[i][11], own[i]):
            for second in (p[j][0], p[j][-1], own[j], _flip1(own[j], 15)):
                rows.append(Row(_with_blocks(fp, p, {i: lead_value, j: second}, rnd)))
        # past the lead (12): found only where every value leads
        rows.append(Row(_with_blocks(fp, p, {i: p[i][-1], j: p[j][-1]}, rnd)))
    rows.append(Row(short_fp ^ 1))
    load(pg, rows)
    for lead in (12, None):
        want = [(id_, d) for d, id_ in sorted(
            (hamming(fp, r.fp), k + 1) for k, r in enumerate(rows)
            if pair_matches(fp, p, 64, r.fp, lead))]
        assert len(want) >= (4 * 12 if lead else 4 * 13)
        assert sql_candidates(pg, fp, p, 64, True, lead) == want
        want_short = [(id_, d) for d, id_ in sorted(
            (hamming(short_fp, r.fp), k + 1) for k, r in enumerate(rows)
            if pair_matches(short_fp, short_p, 64, r.fp, lead))]
        # in a batch, lists are NULL-padded to the longest: the short query's
        # second lists are as long as the long one's
        assert sql_candidates_many(pg, [fp, short_fp], [p, short_p], [64, 64], [True, True],
                                   lead) == [want, want_short]


def test_migration_0026_down_and_up_keeps_the_answers(
        pg_dsn: str, pg: psycopg.Connection) -> None:
    rnd = random.Random(3)
    fp = rnd.getrandbits(64)
    p = _probes(rnd, fp, 64)
    rows = [Row(rnd.getrandbits(64)) for _ in range(200)]
    rows += [Row(_with_blocks(fp, p, {i: p[i][0], (i + 1) % 4: p[(i + 1) % 4][-1]}, rnd))
             for i in range(4)]
    load(pg, rows)
    want = sql_candidates(pg, fp, p, 64, True, 12)
    want_many = sql_candidates_many(pg, [fp], [p], [64], [True], 12)
    assert len(want) == 4 and want_many == [want]
    body = "SELECT string_agg(prosrc, '') FROM pg_proc WHERE proname = %s"
    marks = {"simhash_probe_matches": "s1[96]", "simhash_near_probes_candidates": "hits := ARRAY("}
    for name, mark in marks.items():
        assert mark in pg.execute(body, [name]).fetchone()[0]  # type: ignore[index]
    assert migrate.downgrade_losses_between("0026", "0025") == []
    migrate.downgrade(pg_dsn, "0025")
    for name, mark in marks.items():
        assert mark not in pg.execute(body, [name]).fetchone()[0]  # type: ignore[index]
    assert sql_candidates(pg, fp, p, 64, True, 12) == want
    migrate.upgrade(pg_dsn)
    assert sql_candidates(pg, fp, p, 64, True, 12) == want
    assert sql_candidates_many(pg, [fp], [p], [64], [True], 12) == want_many
    migrate.check(pg_dsn)
