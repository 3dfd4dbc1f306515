"""``simhash-pg bench text`` end to end on a small store: synthetic texts and a --corpus."""

from __future__ import annotations

import json
import random
from pathlib import Path

from click.testing import CliRunner

from lab.bench import text as bench_text
from lab.bench.text import command, edit_text


def _rows(output: str) -> dict[str, list[str]]:
    return {line.split()[0]: line.split()[1:] for line in output.splitlines()
            if line.split()[:1] in (["off"], ["short"], ["all"])}


def test_bench_text_with_a_corpus_finds_the_edited_copies(pg_dsn: str, tmp_path: Path) -> None:
    rnd = random.Random(5)
    words = "market storm river council budget museum bridge airport winter nurses".split()
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(
        json.dumps({"text": " ".join(rnd.choices(words, k=150)) + f" {i}"}) + "\n"
        for i in range(60)), encoding="utf-8")
    try:
        res = CliRunner().invoke(command, [
            "--n", "2000", "--texts", "40", "--queries", "20", "--seconds", "1",
            "--rounds", "1", "--clients", "1", "--corpus", str(corpus), "--dsn", pg_dsn])
    finally:  # the corpus is module state, set for the forked clients
        bench_text._STORED.clear()
        bench_text._HELD.clear()
    assert res.exit_code == 0, res.output
    assert "40 corpus texts (20 held back for the adds)" in res.output
    rows = _rows(res.output)
    assert set(rows) == {"off", "short", "all"}
    # every query is an edited copy of a stored text: the default finds its source
    assert rows["all"][2] == "100%", res.output


def test_edit_text_edits_words_or_characters() -> None:
    rnd = random.Random(1)
    spaced = " ".join(f"w{i}" for i in range(40))
    out = edit_text(rnd, spaced, 3)
    assert out != spaced and set(out.split(" ")) <= set(spaced.split(" "))
    cjk = "北京天气晴朗今天很好" * 5
    out = edit_text(rnd, cjk, 3)
    assert out != cjk and " " not in out and set(out) <= set(cjk)
