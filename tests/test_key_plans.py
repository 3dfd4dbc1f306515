"""Key look-ups walk an index and stop at the holder cap, on a big store's statistics.

Issue 28: under the candidate functions' forced generic plans, a key
look-up became a sequential scan of the partition once a store held about
3M keyed rows (3.0 s for two absent keys; 25 s a text query at 50M). The
planner decides from the statistics of what is stored, so this test
stores what a big store holds and ANALYZEs it, as autovacuum would:

- yesterday's partition: ``ROWS`` rows (4M by default), every one keyed
  with three keys and a short verification text, and one boilerplate key
  (a real sentence of the query's text) held by 10% of them. At revision
  0016 the look-up's generic plan weighs a GIN scan whose cost grows with
  the partition against a scan that stops after 17 matches, whose cost does
  not: for rows of this width they tie at about 3M rows;
- today's partition: a mix, half of its rows keyed;
- the default partition: no row keyed.

Yesterday's partition comes first in the partitions' Append, as in a
store a day old: at 0016 a partition ahead of the big one whose scan starts
at no cost (an empty or keyless one) hid the cliff, since the planner
priced the LIMIT as a fraction of the whole Append.

Then it runs every look-up path, the Python API's and the SQL functions an
analyst calls, with auto_explain capturing each plan (nested statements
included, with actual row counts), and asserts that no partition holding
rows was scanned sequentially, that the key look-ups ran (on the text
keys' index), and that no key scan read more rows than the holder cap
allows. On revision 0016 it fails: the look-up scans yesterday's partition.

Slow (loading the rows takes a minute or two): CI's `pytest -m slow` runs it.
``SIMHASH_PG_PLAN_ROWS`` sets the big partition's rows (fewer: a quick look,
whose statistics may not yet show the cliff).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from lab.bench._server import served
from lab.bench.plans import (
    capture_plans,
    log_plans,
    logged_plans,
    scan_nodes,
    seq_scans_of_filled_partitions,
)
from lab.bench.rows import keys_in_bulk_after
from simhash_pg.bits import blocks, to_signed
from simhash_pg.store import SimhashStore
from simhash_pg.text.signatures import BOILERPLATE_HOLDERS

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

ROWS = int(os.environ.get("SIMHASH_PG_PLAN_ROWS", "4000000"))

TEXT = ("The harbour authority reopened the northern quay on Monday after the storm. "
        "Officials said repairs to the breakwater would take most of the winter season. "
        "Ferry services to the islands resume on Wednesday with a reduced timetable.")
COPY_OF = TEXT.replace("Monday", "Tuesday")
OTHER = ("Rail unions announced a fresh strike over pay on Thursday across the region. "
         "Commuters were told to expect severe delays on every line into the capital city.")

# Uniform 64-bit values (random() has 53 bits: its low block would repeat).
_FILL = """
INSERT INTO simhash_documents (fingerprint, verify_text, sentence_hashes, created_at)
SELECT hashtextextended('f' || g, %(days)s),
       'a short verification text of a few words',
       CASE WHEN %(keyed)s = 0 OR g %% 100 >= %(keyed)s THEN NULL
            ELSE ARRAY[hashtextextended('a' || g, %(days)s), hashtextextended('b' || g, %(days)s),
                       hashtextextended('c' || g, %(days)s)]
                 || CASE WHEN g %% 10 = 0 THEN ARRAY[%(boiler)s::bigint] ELSE '{}' END END,
       now() - make_interval(days => %(days)s)
FROM generate_series(1, %(n)s) AS g
"""


@pytest.fixture
def big(pg: psycopg.Connection, pg_dsn: str) -> dict[str, Any]:
    """The big store; returns the boilerplate key and the stored text's id."""
    with SimhashStore(pg_dsn) as store:
        r = store.add(TEXT)
        store.add(OTHER)
    row = pg.execute("SELECT sentence_hashes FROM simhash_documents WHERE id = %s",
                     [r.id]).fetchone()
    assert row and row[0]
    boiler = row[0][0]
    pg.execute("SELECT simhash_create_partition(((now() - interval '1 day')"
               " AT TIME ZONE 'UTC')::date)")
    # the keyless rows three days back, where no partition is: the default one
    # keys and indexes in bulk afterwards: the same store as the trigger makes
    # (tests/test_bench_scale.py), in a fraction of the time
    with keys_in_bulk_after(pg):
        for n, keyed, days in ((ROWS, 100, 1), (ROWS // 10, 50, 0), (ROWS // 10, 0, 3)):
            pg.execute(_FILL, {"n": n, "keyed": keyed, "boiler": boiler, "days": days})
    pg.execute("ANALYZE simhash_documents")
    pg.execute("ANALYZE simhash_text_keys")
    holders = pg.execute("SELECT count(*) FROM simhash_text_keys WHERE hash = %s",
                         [boiler]).fetchone()
    assert holders and holders[0] >= ROWS // 10  # boilerplate: far past the cap
    return {"boiler": boiler, "id": r.id}


def _check_plans(conn: psycopg.Connection[Any], plans: list[dict[str, Any]]) -> None:
    assert plans, "no plan captured"
    assert seq_scans_of_filled_partitions(conn, plans) == []
    for node in (n for p in plans for n in scan_nodes(p)):
        if node["Relation Name"].startswith("simhash_text_keys"):
            # per loop: one key, and the scan stops at the 257th row (the count
            # that tells boilerplate) or at the 16 nearest of at most 256
            assert node.get("Actual Rows", 0) <= BOILERPLATE_HOLDERS + 1, node


def _check(conn: psycopg.Connection[Any], run: Callable[[], Any]) -> Any:
    """Run ``run`` with its plans captured; check them; return its result."""
    with capture_plans(conn, analyze=True) as plans:
        out = run()
    _check_plans(conn, plans)
    return out


def _pair_scans(plans: list[dict[str, Any]]) -> set[int]:
    """The blocks i whose pair probes (revision 0019) ran as one scan of block i's
    index with both b_i and b_(i+1) as index conditions."""
    got = set()
    for n in (n for p in plans for n in scan_nodes(p)):
        cond, name = n.get("Index Cond", ""), n.get("Index Name", "")
        for i in range(4):
            j = (i + 1) % 4
            if (name.endswith(f"_b{i}_b{j}_fingerprint_idx") and f"(b{i} = ANY" in cond
                    and f"(b{j} = ANY" in cond and n.get("Actual Loops", 0) > 0):
                got.add(i)
    return got


def _read_keys(plans_of: Callable[[], Any], conn: psycopg.Connection[Any]) -> bool:
    """Whether ``plans_of`` looked keys up in the text keys' index."""
    with capture_plans(conn) as plans:
        plans_of()
    return any(n["Relation Name"].startswith("simhash_text_keys")
               and n["Node Type"] in ("Index Scan", "Index Only Scan")
               for p in plans for n in scan_nodes(p))


def test_every_key_look_up_walks_an_index_on_a_big_store(
        big: dict[str, Any], pg: psycopg.Connection, pg_dsn: str, simhash_pg_server: Any,
        writer_dsn: str, tmp_path: Path) -> None:
    boiler, own = big["boiler"], big["id"]
    with SimhashStore(pg_dsn) as store:
        conn = store.connection
        assert _read_keys(lambda: store.near(COPY_OF), conn)  # the keys are looked up
        found = _check(conn, lambda: store.near(COPY_OF))
        assert [m.id for m in found] == [own]
        # a long text probes pairs of blocks: on a big store's statistics each
        # pair is one scan of block i's index, the btree skipping unprobed b_(i+1)
        assert store.policy.probes_pairs(store.policy.prepare(
            store.fingerprinter.normalize(COPY_OF)).text)
        with capture_plans(conn, analyze=True) as plans:
            store.near(COPY_OF)
        assert _pair_scans(plans) == {0, 1, 2, 3}
        many = _check(conn, lambda: store.near_many([COPY_OF, OTHER, "nothing like it here"]))
        assert [m.id for m in many[0]] == [own] and len(many[1]) == 1
        assert not _check(conn, lambda: store.add(COPY_OF)).inserted  # verified duplicate
        _check(conn, lambda: store.add(OTHER + " A new third sentence of its own follows."))
        counts = _check(conn, lambda: store.add_many(
            [COPY_OF, TEXT + " Extra.", "Another unrelated text about a school budget vote "
             "that the council postponed again until the spring."]))
        assert (counts.duplicates, counts.inserted) == (2, 1)
        fp = pg.execute("SELECT fingerprint FROM simhash_documents WHERE id = %s",
                        [own]).fetchone()
        assert fp is not None
        near_fp = _check(conn, lambda: store.near(fp[0] & (2**64 - 1)))  # by fingerprint
        assert own in [m.id for m in near_fp]
    # the SQL functions an analyst calls, by hand, and as an app's prepared
    # statement once the server plans it generically (after five runs)
    probes = [[b] for b in blocks(fp[0] & (2**64 - 1))]
    _check(pg, lambda: pg.execute(
        "SELECT * FROM simhash_sentence_matches(%s::bigint[])", [[boiler, 424242]]).fetchall())
    pg.execute("SET plan_cache_mode = force_generic_plan")
    try:
        _check(pg, lambda: pg.execute("SELECT * FROM simhash_sentence_matches(%s::bigint[])",
                                      [[boiler, 424242]], prepare=True).fetchall())
    finally:
        pg.execute("RESET plan_cache_mode")
    got = _check(pg, lambda: pg.execute(
        "SELECT id FROM simhash_near_probes_candidates(%s, %s::smallint[], %s::smallint[],"
        " %s::smallint[], %s::smallint[], 13, NULL, %s::bigint[], %s::bigint[], 22)",
        [fp[0], *probes, [boiler, 7], [boiler]]).fetchall())
    assert (own,) in got
    _check(pg, lambda: pg.execute(
        "SELECT query, id FROM simhash_near_probes_candidates(%s::bigint[], %s::smallint[],"
        " %s::integer[], %s::bigint[], %s::bigint[], %s::bigint[], 22)",
        [[fp[0], to_signed(99)], [probes, [[1], [2], [3], [4]]], [13, 13], [None, None],
         [[boiler, 7], [8, None]], [[boiler], [9]]]).fetchall())
    _check(pg, lambda: pg.execute("SELECT * FROM simhash_near(%s, 3)", [fp[0]]).fetchall())
    # the paths that run in processes of their own: `dedup` and `serve`
    logfile = simhash_pg_server.logfile
    if logfile is None:
        pytest.skip("a server of the user's: its log is not ours to read")
    offset = logfile.stat().st_size
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": f"c{i}", "text": t}) + "\n"
                           for i, t in enumerate([COPY_OF, OTHER + " Once more.", TEXT[::-1]])))
    exe = shutil.which("simhash-pg", path=str(Path(sys.executable).parent)) or "simhash-pg"
    with log_plans(pg, analyze=True):
        proc = subprocess.run([exe, "dedup", str(src), "--dsn", pg_dsn], capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        with served(writer_dsn, token="t") as server:
            for path, body in (("/v1/near", {"text": COPY_OF}),
                               ("/v1/near/batch", {"docs": [{"text": COPY_OF},
                                                            {"text": OTHER}]}),
                               ("/v1/documents", {"text": COPY_OF + " And a coda."}),
                               ("/v1/documents/batch", {"docs": [{"text": TEXT + " Coda."}]})):
                r = httpx.post(server.url + path, json=body, timeout=60,
                               headers={"Authorization": "Bearer t"})
                assert r.status_code < 300, (path, r.text)
    plans = logged_plans(logfile, offset)
    assert any(n["Relation Name"].startswith("simhash_text_keys")
               for p in plans for n in scan_nodes(p))  # they looked keys up
    _check_plans(pg, plans)
