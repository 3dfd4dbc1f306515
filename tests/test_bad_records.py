"""Records the store cannot hold: a clear error through the API, skipped by ``dedup``.

A key too long for the key index, a lone surrogate (valid JSON, not valid
UTF-8) in a key or a meta value: the API refuses them with a ValueError
naming the problem and leaves the store as it was. A text with a lone
surrogate is fingerprinted as the scheme says (U+FFFD, dropped), and output
files write texts by that rule. ``dedup`` goes by the same rules (issue 29):
it reports a bad key like a malformed line and stores the rest of the batch,
and stores a text with a lone surrogate as the HTTP API does.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_cli import doc, rows, run, summary_numbers

from simhash_pg.store import Doc, SimhashStore
from simhash_pg.textrules import MAX_KEY_BYTES

HYPO = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
LONG_KEY = "k" * 3000  # over PostgreSQL's btree limit (2704 bytes) too
LIMIT = f"{MAX_KEY_BYTES:,}"


@pytest.fixture
def store(pg_dsn: str) -> Any:
    with SimhashStore(pg_dsn) as s:
        yield s


def snapshot(store: SimhashStore) -> list[tuple[Any, ...]]:
    return store.connection.execute(
        "SELECT id, key, fingerprint, duplicate_of, meta FROM simhash_documents ORDER BY id"
    ).fetchall()


BAD_CALLS: list[tuple[Any, str]] = [
    (lambda s: s.add(1, key=LONG_KEY), f"3,000 bytes.*limit is {LIMIT} bytes"),
    (lambda s: s.add("some text here", key=LONG_KEY), f"limit is {LIMIT} bytes"),
    (lambda s: s.add(1, key="é" * (MAX_KEY_BYTES // 2 + 1)), f"limit is {LIMIT} bytes"),
    (lambda s: s.add(1, key="a\udc80"), r"key contains a lone surrogate \(\\udc80"),
    (lambda s: s.add(1, meta={"a": ["x\udc80"]}), "meta contains a lone surrogate"),
    (lambda s: s.add(1, meta={"\udc80": 1}), "meta contains a lone surrogate"),
    (lambda s: s.get(LONG_KEY), f"limit is {LIMIT} bytes"),
    (lambda s: s.get("\udc80"), "lone surrogate"),
    (lambda s: s.remove(LONG_KEY), f"limit is {LIMIT} bytes"),
    (lambda s: s.remove("\udc80"), "lone surrogate"),
]


def test_bad_keys_texts_and_meta_are_clear_errors_and_change_nothing(
    store: SimhashStore,
) -> None:
    store.add_many([Doc(10, key="x"), Doc(2**63 + 5, key="y", meta={"m": 1})], dedup=False)
    before = snapshot(store)
    for call, match in BAD_CALLS:
        with pytest.raises(ValueError, match=match):
            call(store)
        assert snapshot(store) == before, match


def test_add_many_reports_bad_records_and_stores_the_rest(store: SimhashStore) -> None:
    docs = [
        Doc(doc(1), key="a"),
        Doc(doc(2), key=LONG_KEY),
        Doc(doc(3), key="b\udc80"),
        Doc(doc(4) + " \udc80", key="c"),
        Doc(doc(5), key="d", meta={"m": "\ud83d"}),
        Doc(doc(6), key="e"),
    ]
    res: list[Any] = []
    total = store.add_many(docs, batch_size=100, progress=res.extend)
    assert total.errors == 3 and total.inserted == 3
    errors = [r.error for r in res]
    assert errors[0] is None and errors[3] is None and errors[5] is None
    assert f"limit is {LIMIT} bytes" in errors[1]
    assert r"key contains a lone surrogate (\udc80 at character 1)" in errors[2]
    assert "meta contains a lone surrogate" in errors[4]
    assert [k for _, k, *_ in snapshot(store)] == ["a", "c", "e"]
    # the text's lone surrogate is dropped, as the fingerprint's normalisation says
    assert res[3].fingerprint == store.fingerprint(doc(4))
    vtext = store.connection.execute(
        "SELECT verify_text FROM simhash_documents WHERE key = 'c'").fetchone()
    assert vtext is not None and vtext[0] and "\ufffd" not in vtext[0]


def test_bulk_load_refuses_a_long_key_and_stays_empty(store: SimhashStore) -> None:
    with pytest.raises(ValueError, match=f"limit is {LIMIT} bytes"):
        store.bulk_load([Doc(1, key="a"), Doc(2, key=LONG_KEY)])
    assert store.count() == 0


@HYPO
@given(key=st.text(st.characters(codec="utf-8", exclude_characters="\x00"),
                   min_size=1, max_size=MAX_KEY_BYTES // 2)
       .map(lambda s: (s * (MAX_KEY_BYTES // len(s.encode()) + 2))))
def test_key_limit_is_in_utf8_bytes(store: SimhashStore, key: str) -> None:
    """A key is stored and found again iff it fits in MAX_KEY_BYTES bytes of UTF-8."""
    n = len(key.encode())
    assert n > MAX_KEY_BYTES
    # the longest prefix that fits, and one character more
    fits = key
    while len(fits.encode()) > MAX_KEY_BYTES:
        fits = fits[:-1]
    over = key[: len(fits) + 1]
    store.connection.execute("TRUNCATE simhash_documents RESTART IDENTITY")
    res = store.add(7, key=fits)
    assert res.inserted and store.get(fits) is not None
    with pytest.raises(ValueError, match=f"limit is {LIMIT} bytes"):
        store.add(8, key=over)
    assert store.count() == 1


# -- dedup ------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".tsv", ".txt"])
def test_output_files_write_texts_by_the_fingerprint_rule(tmp_path: Path, suffix: str) -> None:
    from simhash_pg.cli.dedup import REPORT_FIELDS, _Writer

    path = tmp_path / f"out{suffix}"
    with path.open("w", encoding="utf-8", newline="") as fh:
        w = _Writer(fh, str(path), REPORT_FIELDS)
        w.write({"key": "k1", "text": "a\udc80b \ud83d\ude00", "where": "x:1",
                 "extra": {"nested": "\ud800"}})
        w.write({"key": "k2", "text": "fine"})
    got = path.read_text(encoding="utf-8")  # strict: valid UTF-8 throughout
    assert "a\ufffdb \U0001f600" in got and "fine" in got


def _jsonl_with_bad_records(path: Path) -> tuple[list[str], dict[int, str]]:
    """20 good documents and, in the middle, two the store cannot hold (bad keys)
    and two it can (a lone surrogate in the text, in another field)."""
    lines = [json.dumps({"id": f"g{i}", "text": doc(100 + i), "lang": "en"}) for i in range(20)]
    bad = {
        8: json.dumps({"id": "L" * 3000, "text": doc(500)}),
        # json.dumps writes a lone surrogate as the escape "\udc80": valid JSON
        10: json.dumps({"id": "bad\udc80key", "text": doc(501)}),
    }
    lone = {
        12: json.dumps({"id": "g19a", "text": doc(502) + " \udc80"}),
        14: json.dumps({"id": "g19b", "text": doc(503), "title": "x\udc80"}),
    }
    assert '"bad\\udc80key"' in bad[10]
    for at in sorted(bad | lone):
        lines.insert(at, (bad | lone)[at])
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return lines, {at + 1: reason for at, reason in zip(
        sorted(bad), [f"key is 3,000 bytes in UTF-8; the limit is {LIMIT} bytes",
                      r"key contains a lone surrogate (\udc80 at character 3)"],
        strict=True)}


@pytest.mark.parametrize("batch", ["100", "3"])
def test_dedup_skips_bad_records_and_stores_the_rest(pg_dsn: str, tmp_path: Path,
                                                     batch: str) -> None:
    src = tmp_path / "in.jsonl"
    lines, bad = _jsonl_with_bad_records(src)
    out, report = tmp_path / "unique.jsonl", tmp_path / "report.csv"
    proc = run("dedup", str(src), "--out", str(out), "--report", str(report),
               "--batch-size", batch, "--workers", "1", dsn=pg_dsn, check=1)
    assert "Traceback" not in proc.stderr
    for line, reason in bad.items():
        assert f"{src}:{line}: " in proc.stderr and reason in proc.stderr, (line, proc.stderr)
    assert proc.stderr.count("(skipped)") == len(bad)
    nums = summary_numbers(proc.stdout)
    assert nums == {"read": 24, "unique": 22, "new": 22, "duplicates": 0, "errors": 2}
    good = [json.loads(x)["id"] for at, x in enumerate(lines, 1) if at not in bad]
    assert len(good) == 22 and "g19a" in good and "g19b" in good
    assert [k for k, _, _ in rows(pg_dsn)] == good
    written = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert [w["id"] for w in written] == good
    # no duplicates: the report lists the skipped records
    reported = list(csv.DictReader(report.open(encoding="utf-8", newline="")))
    assert [r["where"] for r in reported] == [f"{src}:{line}" for line in bad]

    # the rerun stores nothing new and stops at nothing
    before = rows(pg_dsn)
    proc = run("dedup", str(src), "--out", str(out), dsn=pg_dsn, check=1)
    nums = summary_numbers(proc.stdout)
    assert nums["new"] == 0 and nums["unique"] == 22 and nums["errors"] == 2
    assert rows(pg_dsn) == before
    assert len(out.read_text(encoding="utf-8").splitlines()) == 22


def test_dedup_and_the_http_api_store_a_text_with_a_lone_surrogate_alike(
    pg_dsn: str, tmp_path: Path
) -> None:
    # one rule for both (issue 29): dedup skipped this record, the API stored it
    from _serving import make_client

    text = doc(600) + " \udc80"
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"id": "by-dedup", "text": text}) + "\n", encoding="utf-8")
    proc = run("dedup", str(src), "--workers", "1", dsn=pg_dsn, check=0)
    assert summary_numbers(proc.stdout)["new"] == 1 and "skipped" not in proc.stderr
    body = json.dumps({"text": text, "key": "by-api", "dedup": False}).encode()
    with make_client(pg_dsn) as client:
        got = client.post("/v1/documents", content=body,
                          headers={"content-type": "application/json"})
    assert got.status_code in (200, 201), got.text
    stored = {key: fp for key, fp, _ in rows(pg_dsn)}
    assert stored.keys() == {"by-dedup", "by-api"}
    assert stored["by-dedup"] == stored["by-api"]
    with SimhashStore(pg_dsn) as store:  # the text rule: U+FFFD, dropped
        assert store.fingerprinter.fingerprint(text) == store.fingerprinter.fingerprint(doc(600))


def test_dedup_strict_stops_at_a_bad_key(pg_dsn: str, tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    _jsonl_with_bad_records(src)
    proc = run("dedup", str(src), "--strict", "--batch-size", "4", "--workers", "1",
               dsn=pg_dsn, check=3)
    assert f"--strict: {src}:9: key is 3,000 bytes" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert [k for k, _, _ in rows(pg_dsn)] == [f"g{i}" for i in range(8)]
