"""``simhash-pg bench scale`` end to end on a tiny store: the rows it lays out and its table."""

from __future__ import annotations

import psycopg
from click.testing import CliRunner

from lab.bench.rows import profile
from simhash_pg.cli.main import cli
from simhash_pg.text.signatures import SHARED_SENTENCE_CAP

N = 4000


def test_bench_scale_fills_text_rows_and_measures_each_mode(pg_dsn: str) -> None:
    res = CliRunner().invoke(cli, [
        "bench", "scale", "--n", str(N), "--texts", "20", "--queries", "10", "--seconds", "1",
        "--rounds", "1", "--clients", "1", "--dsn", pg_dsn])
    assert res.exit_code == 0, res.output
    table = res.output.split("-" * 20)[-1]
    assert [line.split()[0] for line in table.splitlines()[1:4]] == ["off", "short", "all"]
    assert "all/short: near p50 " in res.output and "plan shape" in res.output
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


def test_title_rows_carry_a_titles_keys() -> None:
    p = profile("titles", 400, 1, samples=300)
    assert 15 < p.counts.mean() < 30 and p.counts.max() <= 42
    assert 20 < p.chars < 80
