"""Revision 0024: a long text's pairs of blocks are led by its first values only.

Through the real database: the migration moves a store whose 'probes' record is
revision 0019's default to the new one (and back), keeps one its owner chose,
and leaves rows alone; the forms refuse a negative lead; a store's long-text
look-up with the default lead finds the rows the model says (brute force:
tests/test_near_probes.py), and reaches a row through a leading value but not
through a value past the lead.
"""

from __future__ import annotations

import psycopg
import pytest
from psycopg.types.json import Jsonb

from simhash_pg import SimhashStore
from simhash_pg.bits import blocks_array, to_signed
from simhash_pg.db import migrate
from simhash_pg.text.probes import probe_hits
from simhash_pg.verify import PROBE_CAP, PROBE_LEAD, PROBE_PAIRS, PROBE_T

OLD_DEFAULT = {"t": 8, "cap": 13, "pairs": 32}
NEW_DEFAULT = {"t": 8, "cap": 13, "pairs": 64, "lead": 12}
GET = "SELECT value FROM simhash_meta WHERE name = 'probes'"
SET = "UPDATE simhash_meta SET value = %s WHERE name = 'probes'"


def test_the_new_default_is_the_one_the_migration_records() -> None:
    assert {"t": PROBE_T, "cap": PROBE_CAP, "pairs": PROBE_PAIRS, "lead": PROBE_LEAD} \
        == NEW_DEFAULT


def test_migration_0024_moves_the_default_record_and_keeps_an_owners(
        pg_dsn: str, pg: psycopg.Connection) -> None:
    with SimhashStore(pg_dsn) as store:
        store.add("The council met on Tuesday to vote on the new school budget for "
                  "next year, and the vote was delayed again.", key="a")
    rows = pg.execute("SELECT id, key, fingerprint FROM simhash_documents").fetchall()
    assert pg.execute(GET).fetchone() == (NEW_DEFAULT,)
    assert migrate.downgrade_losses_between("0024", "0023") == []

    migrate.downgrade(pg_dsn, "0023")
    assert pg.execute(GET).fetchone() == (OLD_DEFAULT,)
    assert pg.execute("SELECT id, key, fingerprint FROM simhash_documents").fetchall() == rows
    migrate.upgrade(pg_dsn)
    assert pg.execute(GET).fetchone() == (NEW_DEFAULT,)

    # an owner's record: kept up, its lead (which 0023 does not read) dropped down
    pg.execute(SET, [Jsonb({"t": 5, "cap": 12, "pairs": 40, "lead": 7})])
    migrate.downgrade(pg_dsn, "0023")
    assert pg.execute(GET).fetchone() == ({"t": 5, "cap": 12, "pairs": 40},)
    migrate.upgrade(pg_dsn)
    assert pg.execute(GET).fetchone() == ({"t": 5, "cap": 12, "pairs": 40},)
    with SimhashStore(pg_dsn) as store:  # every pair value leads, as it chose before 0024
        assert (store.policy.probe_pairs, store.policy.probe_lead) == (40, None)
    migrate.check(pg_dsn)


@pytest.mark.parametrize("call", [
    "SELECT * FROM simhash_near_probes_candidates(1::bigint, '{}', '{}', '{}', '{}', 3,"
    " NULL, NULL, NULL, 0, true, -1)",
    "SELECT * FROM simhash_near_probes_candidates('{1}'::bigint[], '{{{1},{1},{1},{1}}}',"
    " '{3}', NULL, NULL, NULL, 0, '{true}', -1)",
])
def test_a_negative_lead_is_refused_by_name(pg: psycopg.Connection, call: str) -> None:
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="lead must be NULL"):
        pg.execute(call)


def test_a_row_is_reached_through_a_leading_value_only(pg_dsn: str,
                                                       pg: psycopg.Connection) -> None:
    """Two stored rows 6 bits from the query (past the pair lemma's 3), each with
    block 1 one bit off (a second value) and blocks 2 and 3 two bits off (reached
    by no pair): one whose block 0 is the query's first probe, one whose block 0
    is its second. The single and batch forms, and probe_hits, find the first
    only with lead 1, both with lead 2 or NULL (every value leads), none with 0."""
    q = 0x0123_4567_89AB_CDEF
    near_a = q ^ (1 << 63) ^ (1 << 47) ^ (3 << 30) ^ (3 << 14)
    near_b = q ^ (1 << 62) ^ (1 << 46) ^ (3 << 28) ^ (3 << 12)

    def b(fp: int, i: int) -> int:
        return ((fp >> (48 - 16 * i)) & 0xFFFF) - 32768

    with SimhashStore(pg_dsn) as store:
        ia = store.add(near_a, key="a").id
        ib = store.add(near_b, key="b").id
    probes: list[list[int]] = [[b(near_a, 0), b(near_b, 0)], [], [], []]
    one = ("SELECT id FROM simhash_near_probes_candidates(%s, %s::smallint[], %s::smallint[],"
           " %s::smallint[], %s::smallint[], 13, NULL, NULL, NULL, 0, true, %s) ORDER BY id")
    many = ("SELECT id FROM simhash_near_probes_candidates(%s::bigint[], %s::smallint[],"
            " '{13}', NULL, NULL, NULL, 0, '{true}', %s) ORDER BY id")
    packed = [[p + [None] * (2 - len(p)) for p in probes]]
    for lead, want in ((1, [ia]), (None, [ia, ib]), (2, [ia, ib]), (0, [])):
        assert [r[0] for r in pg.execute(one, [to_signed(q), *probes, lead])] == want, lead
        assert [r[0] for r in pg.execute(many, [[to_signed(q)], packed, lead])] == want, lead
        hit = probe_hits(q, probes, blocks_array([near_a, near_b]), pairs=True, lead=lead)
        assert [i for i, h in zip((ia, ib), hit, strict=True) if h] == want, lead
