"""The web page of ``simhash-pg serve``: its pages, its escaping, its side-by-side diff.

The pages run in-process here (FastAPI's TestClient, against the test
database); tests/test_serve_browser.py drives them in headless Chromium.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from _serving import TestClient, make_client
from hypothesis import given
from hypothesis import strategies as st

from simhash_pg.serve.textdiff import diff, lang_of, token_key, tokens

EN = "The harbour master counted forty ships at anchor before the storm came in."
EN2 = "The harbour master counted forty-one ships at anchor before the storm came in!"
ZH = "今天北京天气晴朗，气温适宜，市民纷纷走出家门到公园散步游玩。"
ZH2 = "今天北京天气晴朗，气温适宜，市民纷纷走出家门去公园散步游玩。"
SCRIPT = "<script>alert('x')</script> The harbour wall <b>fell</b> in the night & day."


@pytest.fixture
def client(pg_dsn: str) -> Iterator[TestClient]:
    with make_client(pg_dsn) as c:
        yield c


def add(client: TestClient, text: str, key: str, **kw: Any) -> dict[str, Any]:
    r = client.post("/v1/documents", json={"text": text, "key": key, **kw})
    assert r.status_code == 200, r.text
    out: dict[str, Any] = r.json()
    return out


def test_pages_render(client: TestClient) -> None:
    a = add(client, EN, "en-1")
    b = add(client, EN2, "en-2", dedup=False)
    add(client, ZH, "中文-1")
    for path in ("/", "/groups", "/recent", "/stats", f"/compare?a={a['id']}&b={b['id']}"):
        r = client.get(path)
        assert r.status_code == 200, (path, r.text)
        assert r.headers["content-type"] == "text/html; charset=utf-8"
        assert "script-src 'self'" in r.headers["content-security-policy"]
        assert '<meta charset="utf-8">' in r.text and '<html lang="en">' in r.text
    recent = client.get("/recent").text
    assert recent.index("中文-1") < recent.index("en-2") < recent.index("en-1")
    assert 'lang="zh"' in recent  # the Chinese text gets a CJK font
    stats = client.get("/stats").text
    assert "documents" in stats or "rows" in stats


def test_search_lists_near_duplicates_nearest_first(client: TestClient) -> None:
    far = add(client, EN2, "far")
    near = add(client, EN, "near", dedup=False)
    r = client.post("/search", json={"text": EN})
    assert r.status_code == 200, r.text
    rows = re.findall(r'<td class="num distance">(\d+)</td>\s*<td class="num">(\d+)</td>', r.text)
    assert [int(i) for _, i in rows] == [near["id"], far["id"]]
    assert int(rows[0][0]) == 0 < int(rows[1][0])
    bad = client.post("/search", json={"text": "。，！"})
    assert bad.status_code == 422 and "feature" in bad.json()["detail"]


def test_document_text_is_escaped(client: TestClient) -> None:
    doc = add(client, SCRIPT, "<script>k</script>", meta={"t": "<img src=x onerror=alert(1)>"})
    other = add(client, EN, "plain")
    pages = [client.get("/recent").text,
             client.get(f"/compare?a={doc['id']}&b={other['id']}").text,
             client.post("/search", json={"text": SCRIPT}).text,
             client.post("/compare-text", json={"text": SCRIPT, "b": doc["id"]}).text]
    for page in pages:
        assert "<script>k" not in page and "<img src=x" not in page
        assert "<script>alert" not in page
    assert "&lt;script&gt;k&lt;/script&gt;" in pages[0]
    assert "&lt;img src=x onerror=alert(1)&gt;" in pages[0]


def test_compare_marks_the_differences(client: TestClient) -> None:
    a = add(client, ZH, "zh-a")
    b = add(client, ZH2, "zh-b", dedup=False)
    page = client.get("/compare", params={"akey": "zh-a", "bkey": "zh-b"}).text
    assert '<span class="changed">到</span>' in page
    assert '<span class="changed">去</span>' in page
    by_id = client.get(f"/compare?a={a['id']}&b={b['id']}").text
    assert by_id == page
    assert client.get("/compare?a=999999&b=1").status_code == 404
    assert client.get(f"/compare?a={a['id']}").status_code == 400
    assert client.get("/compare?a=x&b=1").status_code == 422


def test_texts_the_store_does_not_keep_are_said_so(pg_dsn: str) -> None:
    # "off" keeps no verification text, keep_text=False no text as written
    with make_client(pg_dsn, verify="off", keep_text=False) as client:
        a = add(client, EN, "a")
        b = add(client, EN2, "b", dedup=False)
        page = client.get(f"/compare?a={a['id']}&b={b['id']}").text
    assert page.count("keeps no text for this document") == 2
    assert 'class="changed"' not in page
    # the evidence says what decided without texts: the distance (beyond k here)
    assert "<dd>not found by the look-up: distance " in page


def test_reads_that_need_the_token(pg_dsn: str) -> None:
    with make_client(pg_dsn, token="s3cret", token_for_reads=True) as client:
        assert client.get("/").status_code == 200  # no data on it; its search sends the token
        for path in ("/recent", "/groups", "/stats", "/compare?a=1&b=2"):
            r = client.get(path)
            assert r.status_code == 401 and "needs its token" in r.text, path
        assert client.post("/search", json={"text": EN}).status_code == 401
        ok = client.post("/search", json={"text": EN},
                         headers={"Authorization": "Bearer s3cret"})
        assert ok.status_code == 200


def test_writes_are_not_made_by_the_pages(pg_dsn: str) -> None:
    with make_client(pg_dsn, token="s3cret") as client:
        assert client.post("/v1/documents", json={"text": EN}).status_code == 401
        assert "needs its token for writes" in client.get("/").text
        for path in ("/", "/recent", "/groups", "/stats"):  # no page takes a write
            assert client.post(path, json={"text": EN}).status_code in (401, 404, 405, 422)
        assert client.get("/recent").text.count("<tr>") == 0


def test_static_files_are_served_from_static_only(client: TestClient) -> None:
    """StaticFiles: the page's files with their types and headers, nothing from elsewhere."""
    for name, kind in (("web.css", "text/css"), ("web.js", "javascript"),
                       ("favicon.svg", "image/svg+xml")):
        r = client.get(f"/static/{name}")
        assert r.status_code == 200 and kind in r.headers["content-type"], name
        assert r.headers["x-content-type-options"] == "nosniff"
        assert r.headers["cache-control"] == "max-age=300"
        again = client.get(f"/static/{name}", headers={"If-None-Match": r.headers["etag"]})
        assert again.status_code == 304, name
    assert client.head("/static/web.css").status_code == 200
    for bad in ("../web.py", "..%2Fweb.py", "web.py", "%2e%2e/app.py", "", "nope.js"):
        assert client.get(f"/static/{bad}").status_code == 404, bad
    assert client.post("/static/web.css").status_code == 405


def test_a_locked_page_does_not_reach_the_database(pg_dsn: str) -> None:
    """The lock is a dependency that runs before the store's: no connection is borrowed."""
    with make_client(pg_dsn, token="s3cret", token_for_reads=True) as client:
        pool = client.app.state.serve.pool  # type: ignore[attr-defined]
        before = pool.get_stats().get("requests_num", 0)
        for path in ("/recent", "/groups", "/stats", "/compare?a=1&b=2", "/compare?a=x"):
            r = client.get(path)
            assert r.status_code == 401 and "needs its token" in r.text, path
            assert r.headers["content-type"].startswith("text/html"), path
            assert "default-src 'none'" in r.headers["content-security-policy"], path
        assert pool.get_stats().get("requests_num", 0) == before
        # (which counts: a read with the token borrows one)
        client.get("/v1/stats", headers={"Authorization": "Bearer s3cret"})
        assert pool.get_stats().get("requests_num", 0) > before
    with make_client(pg_dsn, token="s3cret") as client:  # reads open: the pages answer
        for path in ("/recent", "/groups", "/stats"):
            assert client.get(path).status_code == 200, path


def test_web_pages_stay_out_of_the_openapi_schema(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    assert not {"/", "/search", "/compare", "/groups", "/recent", "/stats"} & set(paths)


# -- the diff ------------------------------------------------------------------


def test_tokens() -> None:
    assert tokens("the cat, sat") == ["the", " ", "cat", ",", " ", "sat"]
    assert tokens("北京 天气abc") == ["北", "京", " ", "天", "气", "abc"]
    assert tokens("北京，天气abc") == ["北", "京", "，", "天", "气", "abc"]
    # letters and digits only (a verification text): characters
    assert tokens("stocksrally北京") == list("stocksrally北京")
    assert [token_key(t) for t in tokens("The\n\tＣａｔ")] == ["the", " ", "cat"]


def test_a_lone_shared_word_between_changes_is_part_of_the_change() -> None:
    d = diff("we sold the red car today", "we bought the blue car today")
    assert [(p.op, p.text) for p in d.a] == [("same", "we "), ("changed", "sold the red"),
                                             ("same", " car today")]
    assert [(p.op, p.text) for p in d.b] == [("same", "we "), ("changed", "bought the blue"),
                                             ("same", " car today")]
    # two shared words stay shared
    d = diff("we sold the old red car", "we bought the old blue car")
    assert ("same", " the old ") in [(p.op, p.text) for p in d.a]


def test_diff_by_words_and_by_characters() -> None:
    d = diff("the quick brown fox", "the quick red fox")
    assert d.by == "words"
    assert [(p.op, p.text) for p in d.b] == [("same", "the quick "), ("changed", "red"),
                                             ("same", " fox")]
    d = diff("北京天气晴朗", "北京天气很晴朗")
    assert d.by == "characters"
    assert [(p.op, p.text) for p in d.b] == [("same", "北京天气"), ("changed", "很"),
                                             ("same", "晴朗")]
    assert lang_of(ZH) == "zh" and lang_of(EN) is None and lang_of(None) is None


_texts = st.text(st.sampled_from(list("ab 北京,\n\tx")), max_size=60)


@given(_texts, _texts)
def test_diff_pieces_rebuild_both_texts(a: str, b: str) -> None:
    d = diff(a, b)
    assert "".join(p.text for p in d.a) == a
    assert "".join(p.text for p in d.b) == b
    # what is marked shared is the same on both sides, in the same order (up to
    # the kind of white space: tokens match by token_key)
    def shared(pieces: list[Any]) -> str:
        return re.sub(r"\s+", " ", "".join(p.text for p in pieces if p.op == "same"))

    assert shared(d.a) == shared(d.b)
    assert (d.ratio == 1.0) == ([token_key(t) for t in tokens(a)]
                                == [token_key(t) for t in tokens(b)])


def test_recent_and_groups_are_paginated(pg_dsn: str) -> None:
    with make_client(pg_dsn, on_duplicate="link") as client:
        docs = [{"fingerprint": (i * 0x9E3779B97F4A7C15) % 2**64, "key": f"fp{i}"}
                for i in range(55)]
        assert client.post("/v1/documents/batch", json={"docs": docs,
                                                        "dedup": False}).status_code == 200
        first = client.get("/recent").text
        keys = re.findall(r'<span class="key">(fp\d+)</span>', first)
        assert keys == [f"fp{i}" for i in range(54, 4, -1)]
        older = re.search(r'href="(/recent\?before=\d+)"', first)
        assert older is not None
        rest = client.get(older.group(1)).text
        assert re.findall(r'<span class="key">(fp\d+)</span>', rest) == [
            f"fp{i}" for i in range(4, -1, -1)]
        assert "/recent?before=" not in rest
        # groups: a duplicate linked to a stored document, and its compare link
        head = client.post("/v1/documents", json={"text": EN, "key": "head"}).json()
        dup = client.post("/v1/documents", json={"text": EN2, "key": "dup"}).json()
        assert dup["status"] == "linked"
        groups = client.get("/groups").text
        assert f'href="/compare?a={head["id"]}&amp;b={dup["id"]}"' in groups
        assert client.get(f"/groups?after={head['id']}").text.count('class="group"') == 0


@pytest.mark.parametrize("version", [1, 2])
def test_a_pasted_text_is_normalised_as_the_store_keeps_it(pg_dsn: str, version: int) -> None:
    # the compare view sets a pasted text beside a stored one: both must be the
    # store's verification text, under the store's own scheme (version 1 keeps tags)
    from simhash_pg.serve.web import _normalise
    from simhash_pg.store import SimhashStore
    from simhash_pg.text.schemes import Scheme

    marked = ('<p class="notice">The community pool&nbsp;will be <b>closed</b> for maintenance'
              " from Monday to Wednesday.</p>")
    with SimhashStore(pg_dsn, scheme=Scheme(version=version)) as s:
        s.add(marked, key="m")
        stored = s.connection.execute(
            "SELECT verify_text FROM simhash_documents WHERE key = 'm'").fetchone()
        assert stored is not None and stored[0]
        assert _normalise(s, marked) == stored[0]


# -- the text as written (revision 0021) ---------------------------------------------

LICENCE = ("Permission is hereby granted, free of charge, to any person obtaining a copy of "
           "this software. THE SOFTWARE IS PROVIDED \"AS IS\", WITHOUT WARRANTY OF ANY KIND.")
LICENCE2 = ("Permission is hereby granted, free of charge, to any person obtaining a copy of "
            "this package. THE PACKAGE IS PROVIDED \"AS IS\", WITHOUT WARRANTY OF ANY KIND!")


def sides(page: str) -> list[list[tuple[str, str]]]:
    """Each side's marked pieces, (op, text), unescaped."""
    import html

    return [[(op, html.unescape(t)) for op, t in
             re.findall(r'<span class="(same|changed)">(.*?)</span>', side, re.DOTALL)]
            for side in re.findall(r'<div class="doc-text"[^>]*>(.*?)</div>', page, re.DOTALL)]


def test_compare_shows_english_as_written_marked_by_words(client: TestClient) -> None:
    a = add(client, LICENCE, "mit")
    b = add(client, LICENCE2, "mit-package", dedup=False)
    page = client.get(f"/compare?a={a['id']}&b={b['id']}").text
    assert "marked word by word" in page and "shown as written" in page
    left, right = sides(page)
    assert "".join(t for _, t in left) == LICENCE  # case and punctuation as written
    assert "".join(t for _, t in right) == LICENCE2
    # the words that differ, with the one shared word between them ("THE"):
    # a changed passage reads as one
    assert left == [
        ("same", "Permission is hereby granted, free of charge, to any person obtaining a "
                 "copy of this "),
        ("changed", "software. THE SOFTWARE"),
        ("same", ' IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND'),
        ("changed", "."),
    ]
    assert [t for op, t in right if op == "changed"] == ["package. THE PACKAGE", "!"]


def test_compare_shows_chinese_as_written_marked_by_characters(client: TestClient) -> None:
    a = add(client, ZH, "zh-a")
    b = add(client, ZH2, "zh-b", dedup=False)
    page = client.get(f"/compare?a={a['id']}&b={b['id']}").text
    assert "marked character by character" in page
    left, right = sides(page)
    assert "".join(t for _, t in left) == ZH and "，" in ZH  # punctuation kept
    assert ("changed", "到") in left and ("changed", "去") in right
    assert ("same", "今天北京天气晴朗，气温适宜，市民纷纷走出家门") in left


def test_pages_show_the_text_as_written(client: TestClient) -> None:
    marked = "<p>The <b>Harbour</b> Master counted forty ships &amp; two boats.</p>"
    doc = add(client, marked, "marked")
    visible = "The  Harbour  Master counted forty ships &amp; two boats."  # escaped &
    assert visible in client.get("/recent").text
    assert visible in client.post("/search", json={"text": marked}).text
    # a pasted text is shown as pasted (its visible text), beside the stored one
    pasted = "The Harbour Master counted FORTY ships & two boats!"
    page = client.post("/compare-text", json={"text": pasted, "b": doc["id"]}).text
    left, right = sides(page)
    assert "".join(t for _, t in left) == pasted
    assert "".join(t for _, t in right) == \
        " The  Harbour  Master counted forty ships & two boats. "
    # words match whatever their case: FORTY is shared, the "!" is not
    assert left == [("same", "The Harbour Master counted FORTY ships & two boats"),
                    ("changed", "!")]
    assert client.get("/v1/documents/marked").json()["body"] == \
        " The  Harbour  Master counted forty ships & two boats. "


def test_a_body_with_markup_left_in_is_escaped(pg_dsn: str) -> None:
    from simhash_pg.store import SimhashStore
    from simhash_pg.text.schemes import Scheme

    # scheme version 1 strips no markup: the body is the text as given, <script> and all
    with SimhashStore(pg_dsn, scheme=Scheme(version=1)) as s:
        a = s.add(SCRIPT, key="s").id
        b = s.add(SCRIPT.replace("night", "day"), key="t", dedup=False).id
        assert s.connection.execute("SELECT body FROM simhash_documents WHERE key = 's'"
                                    ).fetchone() == (SCRIPT,)
    with make_client(pg_dsn) as client:
        pages = [client.get("/recent").text, client.get(f"/compare?a={a}&b={b}").text,
                 client.post("/search", json={"text": SCRIPT}).text,
                 client.post("/compare-text", json={"text": SCRIPT, "b": a}).text]
    for page in pages:
        assert "<script>alert" not in page and "<b>fell" not in page
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in pages[0]
    # a tag the visible text keeps (a bare attribute is text): escaped too
    with make_client(pg_dsn) as client:
        add(client, "<script nonce>alert(1)</script> more words here", "bare")
        assert "<script nonce>" not in client.get("/recent").text
        assert "&lt;script nonce&gt;alert(1)" in client.get("/recent").text
