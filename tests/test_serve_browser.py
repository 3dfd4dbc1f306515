"""The web page in a real headless Chromium (Playwright, pointed at the system's browser).

A real uvicorn serves the app on a free loopback port against the test
database. Skipped, with the reason, where no Chromium or no Playwright is
installed (.ci/run installs Debian's ``chromium`` where it can). With
``SIMHASH_PG_SCREENSHOTS=<dir>`` the test also saves the docs' screenshots
there (``docs/img``: see docs/serve.md).
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
import uvicorn

from simhash_pg.serve import Settings, create_app

playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

CHROMIUM_ENV = "SIMHASH_PG_CHROMIUM"
SCREENSHOTS_ENV = "SIMHASH_PG_SCREENSHOTS"


def _chromium() -> str | None:
    for candidate in (os.environ.get(CHROMIUM_ENV), "/usr/bin/chromium",
                      shutil.which("chromium"), shutil.which("chromium-browser")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


CHROMIUM = _chromium()
NO_CHROMIUM = (f"no Chromium found (/usr/bin/chromium, PATH or ${CHROMIUM_ENV}); "
               "Debian: apt-get install chromium")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason=NO_CHROMIUM)

EN = ("The harbour master counted forty ships at anchor before the storm came in, "
      "and the pilots waited for the tide.")
EN2 = ("The harbour master counted forty-one ships at anchor before the storm came in, "
       "and the pilots waited for the morning tide.")
ZH = "今天北京天气晴朗，气温适宜，市民纷纷走出家门到公园散步游玩，享受难得的好天气。"
ZH2 = "今天北京天气晴朗，气温适宜，市民纷纷走出家门去公园散步游玩，享受难得的好天气！"
ZH3 = "上海昨日发布暴雨蓝色预警，预计未来三小时内部分地区将出现短时强降水。"
SCRIPT = "<script>document.title='owned'</script> A headline with <b>markup</b> in it."


class Server:
    """uvicorn in a thread, on a socket bound here (so its port is known before it starts)."""

    def __init__(self, settings: Settings) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        config = uvicorn.Config(create_app(settings), log_level="warning", lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]},
                                       daemon=True)

    def __enter__(self) -> Server:
        self.thread.start()
        deadline = time.monotonic() + 60
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the server did not start")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(30)
        self.sock.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    # here too, not only in this module's mark: other modules take this fixture
    if CHROMIUM is None:
        pytest.skip(NO_CHROMIUM)
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def server(pg_dsn: str) -> Iterator[Server]:
    settings = Settings(dsn=pg_dsn, pool_min=1, pool_max=4, on_duplicate="link",
                        token="web-test-token")
    with Server(settings) as s:
        yield s


def _add(server: Server, text: str, key: str, **kw: Any) -> dict[str, Any]:
    r = httpx.post(f"{server.url}/v1/documents", json={"text": text, "key": key, **kw},
                   headers={"Authorization": "Bearer web-test-token"}, timeout=30)
    assert r.status_code == 200, r.text
    out: dict[str, Any] = r.json()
    return out


def _shot(page: Any, name: str) -> None:
    where = os.environ.get(SCREENSHOTS_ENV)
    if where:
        Path(where).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(where) / f"web-{name}.png"), full_page=True)


def test_the_web_page_in_chromium(browser: Any, server: Server) -> None:
    expect = playwright_api.expect
    en = _add(server, EN, "news/en-1", meta={"source": "wire"})
    en2 = _add(server, EN2, "news/en-2")
    zh = _add(server, ZH, "新闻/北京-1")
    zh2 = _add(server, ZH2, "新闻/北京-2")
    _add(server, ZH3, "新闻/上海-1")
    script = _add(server, SCRIPT, "<script>key</script>")
    assert en2["status"] == zh2["status"] == "linked"  # on_duplicate="link": both kept, linked
    assert en2["duplicate_of"] == en["id"] and zh2["duplicate_of"] == zh["id"]

    context = browser.new_context(viewport={"width": 1100, "height": 700}, locale="zh-CN")
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    refused = "the server responded with a status of 401"  # the add without the token

    # search a pasted Chinese text: its near-duplicates, nearest first, with their distance
    page.goto(server.url + "/")
    expect(page).to_have_title("Search · simhash-pg")
    page.fill("#text", ZH2)
    page.click("#search")
    rows = page.locator("table.matches tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.nth(0).locator("td.distance")).to_have_text("0")
    expect(rows.nth(0)).to_contain_text("新闻/北京-2")
    expect(rows.nth(1)).to_contain_text("新闻/北京-1")
    assert int(rows.nth(1).locator("td.distance").inner_text()) > 0
    _shot(page, "search")

    # the pasted text beside a stored one, their differences marked
    rows.nth(1).locator("button.compare-text").click()
    expect(page.locator("#compare .doc-text").first).to_be_visible()
    # (both as written: the punctuation differs too)
    expect(page.locator("#compare .side").nth(0).locator(".changed")).to_have_text(["去", "！"])
    expect(page.locator("#compare .side").nth(1).locator(".changed")).to_have_text(["到", "。"])
    expect(page.locator("#compare .side").nth(0).locator(".doc-text")).to_have_text(ZH2)

    # an upload fills the text; adding without the token is refused, with it is done
    page.set_input_files("#file", files=[{"name": "t.txt", "mimeType": "text/plain",
                                          "buffer": ZH3.encode()}])
    expect(page.locator("#text")).to_have_value(ZH3)
    page.fill("#text", "A brand new text about lighthouses and their keepers on the coast.")
    page.click("#add")
    expect(page.locator("#add-result")).to_contain_text("bearer token")
    page.fill("#token", "web-test-token")
    page.fill("#key", "lighthouse")
    page.click("#add")
    expect(page.locator("#add-result")).to_contain_text("inserted as #")

    # two stored English documents side by side: word differences marked
    page.goto(f"{server.url}/compare?a={en['id']}&b={en2['id']}")
    changed = page.locator(".side").nth(1).locator(".changed")
    expect(changed.first).to_be_visible()
    assert "one" in "".join(changed.all_inner_texts())
    # as written: case and punctuation, marked word by word
    expect(page.locator(".side").nth(1).locator(".doc-text")).to_have_text(EN2)
    expect(page.locator("p.summary")).to_contain_text("word by word")
    _shot(page, "compare")
    page.goto(f"{server.url}/compare?a={zh['id']}&b={zh2['id']}")
    expect(page.locator(".side").nth(0).locator(".doc-text")).to_have_attribute("lang", "zh")
    expect(page.locator(".side").nth(1).locator(".changed")).to_have_text(["去", "！"])
    expect(page.locator("p.summary")).to_contain_text("character by character")
    _shot(page, "compare-zh")

    # groups (the link policy), recent (newest first), stats
    page.goto(server.url + "/groups")
    groups = page.locator("section.group")
    expect(groups).to_have_count(2)
    expect(groups.nth(1)).to_contain_text("新闻/北京-2")
    groups.nth(1).get_by_role("link", name="compare").click()
    expect(page).to_have_url(f"{server.url}/compare?a={zh['id']}&b={zh2['id']}")
    # (the docs' groups screenshot is test_web_groups's: the groups after a plain dedup)
    page.goto(server.url + "/recent")
    keys = page.locator("table.recent tbody tr td:nth-child(3) .key").all_inner_texts()
    assert keys[:2] == ["lighthouse", "<script>key</script>"]
    _shot(page, "recent")
    page.goto(server.url + "/stats")
    expect(page.locator("table.stats")).to_contain_text("schema_revision")
    _shot(page, "stats")

    # a stored <script> is text: shown as written, never run
    page.goto(f"{server.url}/compare?a={script['id']}&b={en['id']}")
    expect(page).to_have_title("Compare · simhash-pg")
    expect(page.locator(".side").nth(0).locator("h3")).to_contain_text("<script>key</script>")
    assert page.locator("main script").count() == 0
    page.goto(server.url + "/recent")
    expect(page.locator("table.recent")).to_contain_text("<script>key</script>")
    assert page.title() == "Recent documents · simhash-pg"
    assert [e for e in errors if refused not in e] == []
    context.close()


LICENCE = ("Copyright (c) 2019 The Harbour Authors\n\n"
           "Permission is granted to anyone to use, copy, modify and share this work, for any "
           "purpose, free of charge, provided that the notice above and this permission notice "
           "appear in all copies.\n\n"
           "THE WORK IS PROVIDED \"AS IS\", WITHOUT WARRANTY OF ANY KIND. IN NO EVENT SHALL THE "
           "AUTHORS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY ARISING FROM THE WORK OR "
           "ITS USE.")
LICENCE2 = ("Copyright (C) 2021 Lighthouse Keepers Ltd.\n\n"
            "Permission is granted to anyone to use, copy, modify and distribute this software, "
            "for any purpose, with or without fee, provided that the notice above and this "
            "permission notice appear in all copies.\n\n"
            "THE SOFTWARE IS PROVIDED \"AS IS\", WITHOUT WARRANTY OF ANY KIND. IN NO EVENT SHALL "
            "THE AUTHORS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY ARISING FROM THE "
            "SOFTWARE OR ITS USE.")


def test_a_licence_pair_as_written(browser: Any, server: Server) -> None:
    """Issue 32: which clauses two licence files share, readable as written."""
    expect = playwright_api.expect
    a = _add(server, LICENCE, "harbour/LICENSE", dedup=False)
    b = _add(server, LICENCE2, "lighthouse/COPYING", dedup=False)
    page = browser.new_page(viewport={"width": 1100, "height": 700})
    page.goto(f"{server.url}/compare?a={a['id']}&b={b['id']}")
    sides = page.locator(".side .doc-text")
    expect(sides.nth(0)).to_have_text(LICENCE)  # line breaks, case and quotes as written
    expect(sides.nth(1)).to_have_text(LICENCE2)
    shared = sides.nth(1).locator(".same").all_inner_texts()
    assert any("provided that the notice above and this permission notice" in t for t in shared)
    assert any("WITHOUT WARRANTY OF ANY KIND. IN NO EVENT SHALL" in t for t in shared)
    changed = sides.nth(1).locator(".changed").all_inner_texts()
    assert any("distribute this software" in t for t in changed)
    _shot(page, "compare-licence")
    page.close()


def _wrapped_numbers(page: Any) -> list[str]:
    """The numeric cells (id, distance) whose number is broken over more than one line."""
    return list(page.evaluate("""() => [...document.querySelectorAll('td.num')].filter(td => {
        const r = document.createRange(); r.selectNodeContents(td);
        return r.getClientRects().length > 1; }).map(td => td.textContent.trim())"""))


def test_ids_stay_on_one_line_beside_long_unspaced_texts(browser: Any, pg_dsn: str) -> None:
    """Issue 32: "79 / 9" on Recent and the search page, beside normalised texts."""
    import random

    from simhash_pg import Doc, SimhashStore

    rng = random.Random(32)
    base = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(600))
    fill = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(300))
            for _ in range(4)]
    near = [base[:590] + "edit" + str(i) for i in range(4)]
    with psycopg.connect(pg_dsn, autocommit=True) as conn:  # six-digit ids
        conn.execute("SELECT setval(pg_get_serial_sequence('simhash_documents', 'id'), 99990)")
    with SimhashStore(pg_dsn) as store:
        store.add_many([Doc(t, key=f"k{i}") for i, t in enumerate(fill + near)], dedup=False)
    settings = Settings(dsn=pg_dsn, pool_min=1, pool_max=2)
    with Server(settings) as server:
        page = browser.new_page(viewport={"width": 900, "height": 700})
        page.goto(server.url + "/recent")
        assert page.locator("table.recent td.num").count() > 5
        assert _wrapped_numbers(page) == []
        page.goto(server.url + "/")
        page.fill("#text", base)
        page.click("#search")
        playwright_api.expect(page.locator("table.matches tbody tr").first).to_be_visible()
        assert page.locator("table.matches td.num").count() >= 4
        assert _wrapped_numbers(page) == []
        page.close()
