"""One pair's evidence, three ways: ``near --explain``, ``/v1/near?explain=true`` and the
web page's compare, in headless Chromium, agree for 20 (query, stored document) pairs.

The store holds a licence family's bases, sample documents (the first of each
sample group) and titles; the queries are the licence copies, the sample
groups' other members and title variants, so the pairs are found by probes,
by sentence and min-hash keys (some past the holder cap) and by title keys,
in English and Chinese.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from _serving import make_client
from click.testing import CliRunner
from test_rerun_stability import licence_family
from test_serve_browser import Server, browser  # noqa: F401 (a fixture)

from simhash_pg import Doc, SimhashStore, labels
from simhash_pg.cli.main import cli
from simhash_pg.data import iter_sample
from simhash_pg.serve import Settings
from simhash_pg.verify.evidence import Evidence, KeyMeet

playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

PAIRS = 20
TITLES = [("t:storm", "Storm warning issued for the river city tonight",
           "Storm warning issued for river city tonight"),
          ("t:zh", "今天北京天气晴朗，气温适宜，市民纷纷走出家门",
           "今天北京天气晴朗，气温适宜，市民纷纷走出家"),
          ("t:markets", "Markets rally as oil prices fall sharply on Monday",
           "Markets rally as oil prices fall sharply on Tuesday")]


def as_evidence(d: dict[str, Any]) -> Evidence:
    return Evidence(**(d | {"keys": [KeyMeet(**m) for m in d["keys"]]}))


@pytest.fixture
def pairs(pg_dsn: str) -> Iterator[list[tuple[str, list[int]]]]:
    """The queries and the ids near() finds for each, 20 pairs in all."""
    family = licence_family()
    stored = [Doc(t, key=k) for k, kind, t in family if kind == "base"]
    queries = [t for _, kind, t in family if kind.startswith("copy-of")][:6]
    first: dict[str, str] = {}
    others: list[str] = []
    for r in iter_sample():
        group = str(r["group"])
        if group in first:
            others.append(str(r["text"]))
        else:
            first[group] = str(r["text"])
            stored.append(Doc(str(r["text"]), key=f"s:{r['id']}"))
    stored += [Doc(a, key=key) for key, a, _ in TITLES]
    queries = [b for _, _, b in TITLES] + queries + others
    out: list[tuple[str, list[int]]] = []
    with SimhashStore(pg_dsn) as store:
        store.add_many(stored, dedup=False)
        for q in queries:
            ids = [m.id for m in store.near(q)]
            if ids and sum(len(i) for _, i in out) < PAIRS:
                out.append((q, ids[:PAIRS - sum(len(i) for _, i in out)]))
    assert sum(len(i) for _, i in out) == PAIRS
    yield out


def cli_evidence(dsn: str, query: str) -> tuple[dict[int, dict[str, Any]], str]:
    env = {"SIMHASH_PG_DSN": dsn}
    runner = CliRunner()
    res = runner.invoke(cli, ["near", "--explain", "--json", query], env=env,
                        catch_exceptions=False)
    assert res.exit_code == 0, res.output
    lines = [json.loads(x) for x in res.stdout.splitlines()]
    assert all(x["shared"] == labels.shared_value(x["evidence"]["similarity"]) for x in lines)
    text = runner.invoke(cli, ["near", "--explain", query], env=env, catch_exceptions=False)
    assert text.exit_code == 0, text.output
    return {x["id"]: x["evidence"] for x in lines}, text.stdout


def cli_rows(stdout: str, doc_id: int) -> list[tuple[str, str]]:
    """The evidence rows the CLI printed under ``#id key``."""
    lines = stdout.splitlines()
    at = next(i for i, x in enumerate(lines) if x.startswith(f"#{doc_id} "))
    rows = []
    for line in lines[at + 1:]:
        if not line.startswith("  "):
            break
        label, _, words = line.strip().partition(": ")
        rows.append((label, words))
    return rows


def test_cli_api_and_page_show_the_same_evidence(pg_dsn: str, pairs: list[tuple[str, list[int]]],
                                                browser: Any) -> None:  # noqa: F811
    expect = playwright_api.expect
    kinds: set[str] = set()
    with make_client(pg_dsn) as client, Server(Settings(dsn=pg_dsn, pool_min=1,
                                                        pool_max=2)) as server:
        page = browser.new_page(viewport={"width": 1100, "height": 800})
        for n, (query, ids) in enumerate(pairs):
            from_cli, stdout = cli_evidence(pg_dsn, query)
            # the API: ?explain=true, and the body's explain for every other query
            api = (client.post("/v1/near?explain=true", json={"text": query}) if n % 2
                   else client.post("/v1/near", json={"text": query, "explain": True}))
            assert api.status_code == 200, api.text
            from_api = {m["id"]: m["evidence"] for m in api.json()["matches"]}
            page.goto(server.url + "/")
            page.fill("#text", query)
            page.click("#search")
            table = page.locator("table.matches tbody tr")
            expect(table.first).to_be_visible()
            for doc_id in ids:
                ev = as_evidence(from_cli[doc_id])
                assert from_api[doc_id] == from_cli[doc_id]
                assert ev.verdict == "duplicate" and ev.similarity is not None
                kinds.update(ev.found_by)
                rows = labels.evidence_rows(ev)
                assert cli_rows(stdout, doc_id) == rows
                # the CLI's table leads with the same share, the distance after it
                cells = [[c.strip() for c in x.split("│")[1:4]] for x in stdout.splitlines()]
                assert [labels.shared(ev.similarity), str(ev.distance), str(doc_id)] in cells
                row = table.filter(has=page.locator(f'button[data-id="{doc_id}"]'))
                expect(row.locator("td.shared")).to_have_text(labels.shared(ev.similarity))
                expect(row.locator("td.distance")).to_have_text(str(ev.distance))
                row.locator("button.compare-text").click()
                expect(page.locator("#compare")).to_contain_text(
                    f"Your text looked up #{doc_id}:")
                dl = page.locator("#compare dl.evidence")
                expect(dl.locator("dd").first).to_have_text(rows[0][1])
                shown = list(zip(dl.locator("dt").all_inner_texts(),
                                 dl.locator("dd").all_inner_texts(), strict=True))
                assert [(a.strip(), " ".join(b.split())) for a, b in shown] == rows
                expect(page.locator("#compare .summary .shared")).to_have_text(
                    labels.shared(ev.similarity))
        page.close()
    # the pairs were found in the ways the evidence tells apart
    assert {"probe", "sentence", "min-hash", "title"} <= kinds, kinds
