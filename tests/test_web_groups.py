"""Issue 32: the web page's groups after the README's plain ``dedup``, in headless Chromium.

``dedup`` (through its click entry point, no options but the report) links the
near-duplicates it finds, so the groups page shows every pair the report
lists, each with the same share of the text, and its compare explains it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from test_serve_browser import Server, _shot, browser  # noqa: F401 (a fixture)

from simhash_pg import labels
from simhash_pg.cli.main import cli
from simhash_pg.serve import Settings

playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

BASES = {
    "harbour": "The harbour master counted forty ships at anchor before the storm came in, "
               "and the pilots waited for the tide to turn before they went out again.",
    "budget": "The city council approved the new budget on Tuesday after a long debate "
              "about the cost of repairing the old bridges and the river embankment.",
    "天气": "今天北京天气晴朗，气温适宜，市民纷纷走出家门到公园散步游玩，享受难得的好天气。",
}
COPIES = {
    "harbour-2": BASES["harbour"].replace("forty", "forty-one"),
    "harbour-3": BASES["harbour"].replace("again.", "again that night."),
    "budget-2": BASES["budget"].replace("Tuesday", "Wednesday"),
    "天气-2": BASES["天气"].replace("到公园", "去公园"),
}


def test_groups_show_the_pairs_of_a_plain_dedup(browser: Any, pg_dsn: str,  # noqa: F811
                                                tmp_path: Path) -> None:
    expect = playwright_api.expect
    corpus = tmp_path / "news.jsonl"
    docs = {**BASES, "lone": "A lighthouse keeper's diary from the winter of 1911."} | COPIES
    corpus.write_text("".join(json.dumps({"key": k, "text": t}, ensure_ascii=False) + "\n"
                              for k, t in docs.items()), encoding="utf-8")
    report = tmp_path / "dups.jsonl"
    res = CliRunner().invoke(cli, ["dedup", str(corpus), "--report", str(report)],
                             env={"SIMHASH_PG_DSN": pg_dsn}, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert "unique 4 (4 new), duplicates 4" in res.output
    reported = {r["key"]: r for r in map(json.loads, report.read_text().splitlines())}
    assert set(reported) == set(COPIES)

    # a server that itself adds with "skip": the groups are dedup's
    with Server(Settings(dsn=pg_dsn, pool_min=1, pool_max=2)) as server:
        page = browser.new_page(viewport={"width": 1100, "height": 800})
        page.goto(server.url + "/groups")
        groups = page.locator("section.group")
        expect(groups).to_have_count(3)
        _shot(page, "groups")  # docs/img/web-groups.png
        for key, row in reported.items():
            member = page.locator("table.members tbody tr").filter(has_text=key)
            expect(member).to_have_count(1)
            # the report's number, in the page's words
            expect(member.locator("td.shared")).to_have_text(labels.shared(row["shared"]))
            expect(member.locator("td.distance")).to_have_text(str(row["distance"]))
        # a member's compare: the duplicate looks up the document it duplicates
        page.locator("table.members tbody tr").filter(has_text="harbour-2").get_by_role(
            "link", name="compare").click()
        expect(page.locator("dl.evidence dd").first).to_contain_text("near-duplicate: ")
        expect(page.locator(".summary .shared")).to_have_text(
            labels.shared(reported["harbour-2"]["shared"]))
        expect(page.locator("dl.evidence")).to_contain_text("found by")
        page.close()


def test_groups_after_a_dedup_skip_say_where_the_pairs_are(browser: Any,  # noqa: F811
                                                           pg_dsn: str, tmp_path: Path) -> None:
    corpus = tmp_path / "news.jsonl"
    corpus.write_text("".join(json.dumps({"key": k, "text": t}) + "\n"
                              for k, t in [("a", BASES["harbour"]),
                                           ("b", COPIES["harbour-2"])]), encoding="utf-8")
    res = CliRunner().invoke(cli, ["dedup", str(corpus), "--skip"],
                             env={"SIMHASH_PG_DSN": pg_dsn}, catch_exceptions=False)
    assert res.exit_code == 0 and "duplicates 1" in res.output, res.output
    with Server(Settings(dsn=pg_dsn, pool_min=1, pool_max=2)) as server:
        page = browser.new_page()
        page.goto(server.url + "/groups")
        text = " ".join(page.locator("main").inner_text().split())
        assert "No duplicate groups" in text and "dedup --skip" in text and "--report" in text
        page.close()
