"""``simhash-pg bench scale`` end to end on a tiny store: the rows it lays out and its table."""

from __future__ import annotations

import psycopg
from click.testing import CliRunner

from lab.bench.rows import profile
from simhash_pg.cli.main import cli
from simhash_pg.db import migrate
from simhash_pg.text.signatures import SHARED_SENTENCE_CAP

N = 4000


def test_bench_scale_fills_text_rows_and_measures_each_mode(pg_dsn: str) -> None:
    res = CliRunner().invoke(cli, [
        "bench", "scale", "--n", str(N), "--texts", "20", "--queries", "10", "--seconds", "1",
        "--rounds", "1", "--clients", "1", "--bulk", "100", "--dsn", pg_dsn])
    assert res.exit_code == 0, res.output
    assert "bulk adds: add_many(dedup=False) of 100 new news texts" in res.output
    assert "growth" not in res.output  # one size: no growth table
    table = res.output.split("-" * 20)[-1]
    assert [line.split()[0] for line in table.splitlines()[1:4]] == ["off", "short", "all"]
    assert "all/short: near p50 " in res.output and "plan shape" in res.output
    # the same store measured again, after an upgrade (none to do here): no fill
    again = CliRunner().invoke(cli, [
        "bench", "scale", "--again", "--texts", "20", "--queries", "10", "--seconds", "1",
        "--rounds", "1", "--clients", "1", "--bulk", "10", "--dsn", pg_dsn])
    assert again.exit_code == 0, again.output
    assert f"--again: schema {migrate.HEAD} -> {migrate.HEAD}" in again.output
    assert "fill:" not in again.output and "all/short: near p50 " in again.output
    counts = set(profile("news", 400, 1).counts.tolist())
    with psycopg.connect(pg_dsn) as conn:
        # every synthetic row carries the keys the product stores for such a text, sorted
        lengths = {n for (n,) in conn.execute(
            "SELECT DISTINCT cardinality(sentence_hashes) FROM simhash_documents"
            " WHERE id <= %s", [N])}
        assert lengths and lengths <= counts, (lengths, counts)
        assert conn.execute(
            "SELECT count(*) FILTER (WHERE verify_text IS NULL OR sentence_sig IS NULL"
            " OR sentence_hashes <> ARRAY(SELECT unnest(sentence_hashes) ORDER BY 1))"
            " FROM simhash_documents WHERE id <= %s", [N]).fetchone() == (0,)
        # yesterday's partition and today's hold half each, the real rows came after
        parts = conn.execute(
            "SELECT tableoid::regclass::text, count(*), min(created_at)::date FROM"
            " simhash_documents WHERE id <= %s GROUP BY 1 ORDER BY 3", [N]).fetchall()
        assert [c for _, c, _ in parts] == [N // 2, N // 2], parts
        assert (parts[1][2] - parts[0][2]).days == 1
        assert conn.execute(
            "SELECT min(created_at) > (SELECT max(created_at) FROM simhash_documents"
            " WHERE id <= %s) FROM simhash_documents WHERE id > %s", [N, N]).fetchone() == (True,)
        # boilerplate: shared keys held by more rows than the holder cap (800 rows hold
        # one of 50 keys, the k-th most held by ~800 / (4.5 k): the first ten or so)
        shared = conn.execute(
            "SELECT count(*) FROM (SELECT k FROM simhash_documents, unnest(sentence_hashes) k"
            " WHERE id <= %s GROUP BY k HAVING count(*) > %s) s",
            [N, SHARED_SENTENCE_CAP]).fetchone()
        assert shared is not None and shared[0] >= 3, shared


def test_keys_in_bulk_fill_the_key_table_as_its_trigger_would(pg_dsn: str) -> None:
    from test_text_keys import keys_as_defined

    res = CliRunner().invoke(cli, [
        "bench", "scale", "--at", "1000,2000", "--keys-in-bulk", "--texts", "10", "--queries",
        "10", "--seconds", "1", "--rounds", "1", "--clients", "1", "--bulk", "20",
        "--dsn", pg_dsn])
    assert res.exit_code == 0, res.output
    assert "then their keys in bulk" in res.output
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        keys_as_defined(conn)  # the synthetic rows' keys, and the real rows' (by trigger)
        # every index built again, valid, on every partition
        for table, n in (("simhash_documents", 9), ("simhash_text_keys", 1)):
            assert conn.execute(
                "SELECT count(*), bool_and(x.indisvalid) FROM pg_index x"
                " WHERE x.indrelid = %s::regclass", [table]).fetchone() == (n, True)
            assert conn.execute(
                "SELECT count(*) FROM pg_partition_tree(%s) t JOIN pg_index x"
                " ON x.indrelid = t.relid WHERE t.isleaf AND x.indisvalid", [table]
            ).fetchone() == conn.execute(
                "SELECT %s * count(*) FROM pg_partition_tree(%s) WHERE isleaf", [n, table]
            ).fetchone()


def test_title_rows_carry_a_titles_keys() -> None:
    p = profile("titles", 400, 1, samples=300)
    assert 15 < p.counts.mean() < 30 and p.counts.max() <= 42
    assert 20 < p.chars < 80


def test_bench_scale_grows_one_store_and_measures_it_at_each_size(pg_dsn: str) -> None:
    texts = 20
    res = CliRunner().invoke(cli, [  # 4k: the sizes take k and M
        "bench", "scale", "--at", "2000,4k", "--texts", str(texts), "--queries", "10",
        "--seconds", "1", "--rounds", "1", "--clients", "1", "--bulk", "100", "--dsn", pg_dsn])
    assert res.exit_code == 0, res.output
    out = res.output
    assert "== at 2k synthetic rows (2,000) ==" in out
    assert "== at 4k synthetic rows (4,000) ==" in out
    assert out.count("all/short: near p50 ") == 2 and out.count("bulk adds: add_many") == 2
    assert "fill: 2,000 rows (ids 1..2,000)" in out
    growth = out.split("growth, verify 'all'")[1].splitlines()
    assert [line.split()[0] for line in growth[3:5]] == ["2k", "4k"], growth
    assert growth[5].startswith("growth 2k -> 4k: near p50 ") and "bulk adds " in growth[5]
    with psycopg.connect(pg_dsn) as conn:
        # the product stored the real texts once, first, right after the first 2,000 rows:
        # every synthetic row is older than they are
        first_real = conn.execute(
            "SELECT created_at, verify_text FROM simhash_documents WHERE id = 2001").fetchone()
        assert first_real is not None
        assert conn.execute("SELECT count(*) FROM simhash_documents WHERE verify_text = %s",
                            [first_real[1]]).fetchone() == (1,)
        parts = conn.execute(
            "SELECT tableoid::regclass::text, count(*), min(id), max(id) FROM simhash_documents"
            " WHERE created_at < %s GROUP BY 1 ORDER BY 1", [first_real[0]]).fetchall()
        assert [c for _, c, _, _ in parts] == [N // 2, N // 2], parts
        # in each day, each segment's rows come after the last one's: times grow with ids
        assert conn.execute(
            "SELECT count(*) FROM (SELECT created_at, lag(created_at) OVER (PARTITION BY"
            " tableoid ORDER BY id) AS before FROM simhash_documents WHERE created_at < %s) s"
            " WHERE created_at <= before", [first_real[0]]).fetchone() == (0,)
        # the second 2,000 ids come after the first point's rows (real texts, adds, bulk)
        ids = [i for (i,) in conn.execute(
            "SELECT id FROM simhash_documents WHERE created_at < %s ORDER BY id",
            [first_real[0]])]
        assert ids[:2000] == list(range(1, 2001))
        assert ids[2000] > 2000 + texts + 100 and ids[-1] - ids[2000] == 1999
        total = conn.execute("SELECT count(*) FROM simhash_documents").fetchone()
        assert total is not None and total[0] > N + texts + 2 * 100


def test_bench_scale_sizes_must_grow_and_replace_n() -> None:
    for args, why in ((["--at", "4000,2000"], "each larger than the last"),
                      (["--at", "50,2000"], "at least 100"), (["--at", "2k,x"], "separated by"),
                      (["--n", "5000", "--at", "2000,4000"], "--n and --at")):
        res = CliRunner().invoke(cli, ["bench", "scale", *args])
        assert res.exit_code == 2 and why in res.output, (args, res.output)


def test_the_benches_warm_up_reads_the_whole_store_by_the_products_rule(pg_dsn: str) -> None:
    """Every bench warms up by simhash_pg.store.warm's rule (tests/test_warm.py), and
    reads everything, the key table too (it did not, and a big store's keyed look-ups
    then measured cold reads): what shared buffers cannot hold waits in the OS cache."""
    from lab.bench.stream import _prewarm
    from lab.connect import connect as store_connect
    from simhash_pg.store.warm import warm_plan

    with store_connect(pg_dsn) as conn:
        plan = warm_plan(conn, budget=0, everything=True)
        keys = {r for (r,) in conn.execute(
            "SELECT p.relid::text FROM pg_partition_tree('simhash_text_keys') p WHERE p.isleaf")}
        assert keys and keys <= {r.name for r in plan}
        assert _prewarm(conn) == f"pg_prewarm of {len(plan)} relations"
