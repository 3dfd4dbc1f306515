"""``simhash-pg bench async`` and ``bench keep-text`` end to end on small stores."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from simhash_pg.cli.main import cli
from simhash_pg.store import SimhashStore


def _ratios(output: str) -> dict[str, float]:
    return {m[1]: float(m[2]) for m in re.finditer(r"^(near|add): async runs at ([\d.]+)x",
                                                   output, re.M)}


def test_bench_async_prints_both_stores_side_by_side(pg_dsn: str) -> None:
    # through the entry point's group: a command invoked on its own would keep
    # click's default help option, and docs/cli.md shows the group's (-h too)
    res = CliRunner().invoke(cli, ["bench", "async", "--n", "200", "--queries", "20",
                                   "--adds", "20", "--dsn", pg_dsn])
    assert res.exit_code == 0, res.output
    for row in ("near sync", "near async", "add sync", "add async"):
        assert re.search(rf"^{row} +[\d.]+ +[\d.]+ +\d+$", res.output, re.M), res.output
    assert set(_ratios(res.output)) == {"near", "add"}
    with SimhashStore(pg_dsn) as store:
        # the scratch fill, then the adds through both: half of them edited copies
        assert 200 < store.count() < 240


def test_bench_async_measures_a_store_as_it_is(pg_dsn: str) -> None:
    with SimhashStore(pg_dsn) as store:
        store.add_many([f"the {i}th text of a store that is measured as it is, "
                        f"with words enough to fingerprint {i * 7919}" for i in range(50)],
                       dedup=False)
    res = CliRunner().invoke(cli, ["bench", "async", "--store", pg_dsn, "--queries", "10",
                                   "--adds", "10"])
    assert res.exit_code == 0, res.output
    assert res.output.startswith("simhash-pg bench async: 50 rows")
    with SimhashStore(pg_dsn) as store:
        assert store.count() >= 50  # nothing emptied



@pytest.mark.parametrize("verify", [None, "off"])  # None: a scratch store's default, all
def test_bench_keep_text_compares_both_stores(pg_dsn: str, verify: str | None) -> None:
    mode = ["--verify", verify] if verify else []
    res = CliRunner().invoke(cli, ["bench", "keep-text", "--n", "200", "--adds", "10",
                                   "--batches", "2", "--batch-size", "20", *mode,
                                   "--dsn", pg_dsn])
    assert res.exit_code == 0, res.output
    assert f"verify={verify or 'all'}," in res.output, res.output
    assert re.search(r"^keep/without: add p50 [\d.]+x, add_many docs/s [\d.]+x$",
                     res.output, re.M), res.output
    with SimhashStore(pg_dsn) as store:
        rows = store.connection.execute(
            "SELECT count(*) FILTER (WHERE body IS NOT NULL), count(*) FILTER (WHERE body IS NULL)"
            " FROM simhash_documents").fetchone()
    assert rows is not None and rows[0] > 200 and rows[1] > 0  # both stores wrote


def test_bench_keep_text_edits_an_unverified_stores_own_texts(pg_dsn: str) -> None:
    # verify "off" keeps no verification text: the bench edits the texts as written
    with SimhashStore(pg_dsn, verify="off") as store:
        store.add_many([f"the {i}th text of an unverified store, measured as it is, "
                        f"with words enough to fingerprint {i * 7919}" for i in range(50)],
                       dedup=False)
    res = CliRunner().invoke(cli, ["bench", "keep-text", "--store", pg_dsn, "--adds", "10",
                                   "--batches", "1", "--batch-size", "10"])
    assert res.exit_code == 0, res.output
    assert res.output.startswith("simhash-pg bench keep-text: 50 rows, verify=off,"), res.output
