"""The input readers: every format, and bad records named by file:line."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from simhash_pg.cli.inputs import BadRecord, InputError, Record, detect_format, read_inputs


def _read(*paths: str | Path, **kw: object) -> list[Record | BadRecord]:
    return list(read_inputs([str(p) for p in paths], **kw))  # type: ignore[arg-type]


def test_jsonl_keys_and_bad_lines(tmp_path: Path) -> None:
    f = tmp_path / "docs.jsonl"
    f.write_bytes(
        b'{"id": "a", "text": "first"}\n'
        b"{broken\n"
        b"\n"
        b"[1, 2]\n"
        b'{"id": "b"}\n'
        b'{"text": "no key here"}\n'
        b'{"url": "http://x", "text": "by url", "n": 3}\n'
        b'{"id": "c", "text": "\xff\xfe"}\n'
    )
    got = _read(f)
    assert [type(r).__name__ for r in got] == [
        "Record", "BadRecord", "BadRecord", "BadRecord", "Record", "Record", "BadRecord"]
    assert got[0] == Record("first", "a", f"{f}:1", {"id": "a", "text": "first"})
    assert isinstance(got[1], BadRecord) and got[1].where == f"{f}:2"
    assert "malformed JSON" in got[1].reason
    assert got[2].where == f"{f}:4" and "JSON object" in got[2].reason  # type: ignore[union-attr]
    assert got[3].where == f"{f}:5" and "'text' is missing" in got[3].reason  # type: ignore[union-attr]
    assert isinstance(got[4], Record) and got[4].key == f"{f}:6"  # falls back to file:line
    assert isinstance(got[5], Record) and got[5].key == "http://x"
    assert isinstance(got[6], BadRecord) and "UTF-8" in got[6].reason and got[6].where == f"{f}:8"


def test_jsonl_custom_fields(tmp_path: Path) -> None:
    f = tmp_path / "d.ndjson"
    f.write_text('{"body": "x", "ref": 7}\n{"body": "y"}\n', encoding="utf-8")
    got = _read(f, text_field="body", key_field="ref")
    assert isinstance(got[0], Record) and (got[0].text, got[0].key) == ("x", "7")
    assert isinstance(got[1], BadRecord) and "'ref'" in got[1].reason


def test_csv_multiline_bad_bytes_and_short_rows(tmp_path: Path) -> None:
    f = tmp_path / "d.csv"
    f.write_bytes(b'\xef\xbb\xbfid,text\n1,"multi\nline"\n2,\xff bad\n3,ok\n4\n')
    got = _read(f)
    assert got[0] == Record("multi\nline", "1", f"{f}:2", {"id": "1", "text": "multi\nline"})
    assert isinstance(got[1], BadRecord) and got[1].where == f"{f}:4"
    assert isinstance(got[2], Record) and got[2].where == f"{f}:5"
    assert isinstance(got[3], BadRecord) and "columns" in got[3].reason


def test_csv_missing_text_column(tmp_path: Path) -> None:
    f = tmp_path / "d.tsv"
    f.write_text("id\tbody\n1\thello\n", encoding="utf-8")
    got = _read(f)
    assert len(got) == 1 and isinstance(got[0], BadRecord) and "--text-field" in got[0].reason
    got = _read(f, text_field="body")
    assert got == [Record("hello", "1", f"{f}:2", {"id": "1", "body": "hello"})]


def test_lines_gzip_and_directory(tmp_path: Path) -> None:
    f = tmp_path / "d.txt.gz"
    with gzip.open(f, "wb") as gz:
        gz.write(b"one\n\ntwo\r\n\xc3(\n")
    got = _read(f)
    assert got[:2] == [Record("one", f"{f}:1", f"{f}:1"), Record("two", f"{f}:3", f"{f}:3")]
    assert isinstance(got[2], BadRecord) and got[2].where == f"{f}:4"

    d = tmp_path / "site"
    (d / "sub").mkdir(parents=True)
    (d / "a.md").write_text("# title", encoding="utf-8")
    (d / "sub" / "b.html").write_text(
        "<html><script>evil()</script><p>Tom &amp; Jerry</p></html>", encoding="utf-8")
    (d / "c.bin").write_bytes(b"\x00\x01")
    got = _read(d)
    assert [r.key for r in got if isinstance(r, Record)] == [str(d / "a.md"), str(d / "sub/b.html")]
    html = got[1]
    assert isinstance(html, Record) and "Tom & Jerry" in html.text and "evil" not in html.text


def test_stdin_sniffs_jsonl() -> None:
    got = list(read_inputs(["-"], stdin=io.BytesIO(b'{"text": "x", "id": 1}\n')))
    assert got == [Record("x", "1", "stdin:1", {"text": "x", "id": 1})]
    got = list(read_inputs(["-"], stdin=io.BytesIO(b"plain\n")))
    assert got == [Record("plain", "stdin:1", "stdin:1")]


def test_missing_file_and_unknown_format(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        _read(tmp_path / "nope.jsonl")
    with pytest.raises(InputError, match="unknown format"):
        detect_format("x", "xml")
    assert detect_format("a.JSONL.gz") == "jsonl" and detect_format("a.csv") == "csv"


@given(st.lists(st.text(min_size=1).filter(lambda s: s.strip() != ""), max_size=20))
def test_jsonl_round_trip(texts: list[str]) -> None:
    """Any text that JSON can carry comes back unchanged, in order."""
    data = "".join(json.dumps({"text": t, "id": i}) + "\n" for i, t in enumerate(texts))
    got = list(read_inputs(["-"], fmt="jsonl", stdin=io.BytesIO(data.encode("ascii"))))
    assert got == [Record(t, str(i), f"stdin:{i + 1}", {"text": t, "id": i})
                   for i, t in enumerate(texts)]
