"""``simhash-pg fingerprint`` and ``simhash-pg bench fingerprint``."""

from __future__ import annotations

import json

from click.testing import CliRunner

from simhash_pg.bits import blocks, to_signed
from simhash_pg.cli import cli
from simhash_pg.text.simhash import fingerprint

ZH = "市图书馆从下个月起延长开放时间，工作日开放到晚上九点。"
ZH_TRAD = "市圖書館從下個月起延長開放時間，工作日開放到晚上九點。"


def test_two_texts_and_their_distance() -> None:
    res = CliRunner().invoke(cli, ["fingerprint", ZH, ZH_TRAD, "--explain", "--top", "2"])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[0] == f"{fingerprint(ZH):016x}  arg1"
    assert lines[-1] == "distance: 0"
    assert "scheme: " in res.stderr


def test_json_lines_from_stdin_with_a_featureless_record() -> None:
    data = '{"id": "a", "text": "hello world again"}\n{"id": "b", "text": "，。"}\n'
    res = CliRunner().invoke(
        cli, ["fingerprint", "-i", "-", "--json", "--scheme", "words"], input=data
    )
    assert res.exit_code == 1  # done, with a skipped record
    a, b = (json.loads(x) for x in res.stdout.splitlines())
    fp = fingerprint("hello world again", scheme="words")
    assert a == {
        "key": "a",
        "fingerprint": fp,
        "hex": f"{fp:016x}",
        "bigint": to_signed(fp),
        "blocks": list(blocks(fp)),
    }
    assert b["fingerprint"] is None
    assert "skipped b" in res.stderr


def test_bad_scheme_is_a_usage_error() -> None:
    res = CliRunner().invoke(cli, ["fingerprint", "--scheme", "bogus", "x"])
    assert res.exit_code == 2
    assert "unknown scheme" in res.output


def test_bench_runs_without_the_eval_set(tmp_path: object) -> None:
    res = CliRunner().invoke(
        cli, ["bench", "fingerprint", "--docs", "3", "--repeat", "1", "--eval-dir", str(tmp_path)]
    )
    assert res.exit_code == 0, res.output
    assert "generated text" in res.stdout
    for name in ("zh-1KB", "zh-10KB", "en-1KB", "en-10KB", "bulk"):
        assert name in res.stdout
