"""Golden fingerprints: fixed forever.

A failure here means fingerprints changed. Every stored fingerprint made with
that scheme would silently stop matching new ones, so never "update" these
values: restore the old behaviour, or add a new scheme version and golden
values for it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from simhash_pg.text.schemes import Scheme
from simhash_pg.text.simhash import Fingerprinter

GOLDEN = Path(__file__).parent / "golden"
TEXTS: dict[str, str] = json.loads((GOLDEN / "texts.json").read_text(encoding="utf-8"))
CASES: list[dict[str, Any]] = json.loads(
    (GOLDEN / "fingerprints.json").read_text(encoding="utf-8")
)["schemes"]


def test_golden_set_covers_every_scheme_name() -> None:
    assert {c["scheme"]["name"] for c in CASES} == {"auto", "zh-tfidf", "words", "chars"}
    assert any(c["scheme"] == Scheme().to_dict() for c in CASES), "default scheme not pinned"


@pytest.mark.parametrize("case", CASES, ids=lambda c: Scheme.from_dict(c["scheme"]).to_json())
def test_golden(case: dict[str, Any]) -> None:
    fp = Fingerprinter(case["scheme"])
    got = {name: format(fp.fingerprint(text), "016x") for name, text in TEXTS.items()}
    assert got == case["fingerprints"]


_CHILD = """
import json, sys
from simhash_pg.text.simhash import Fingerprinter
texts = json.loads(sys.stdin.read())
out = [[format(Fingerprinter(c["scheme"]).fingerprint(t), "016x") for t in texts.values()]
       for c in json.loads(open(sys.argv[1], encoding="utf-8").read())["schemes"]]
print(json.dumps(out))
"""


@pytest.mark.parametrize("seed", ["0", "12345"])
def test_same_fingerprints_in_other_processes(seed: str) -> None:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(GOLDEN / "fingerprints.json")],
        input=json.dumps(TEXTS),
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    expected = [[c["fingerprints"][k] for k in TEXTS] for c in CASES]
    assert json.loads(proc.stdout) == expected


def _by(scheme: dict[str, Any]) -> dict[str, str]:
    return next(c["fingerprints"] for c in CASES if c["scheme"] == scheme)


def test_both_versions_of_the_default_are_pinned() -> None:
    v2 = Scheme().to_dict()
    v1 = {k: v for k, v in v2.items() if k != "visible"} | {"version": 1}
    assert v2["version"] == 2 and v2["visible"] is True
    assert _by(v1) and _by(v2)


def test_version_2_changes_only_texts_with_markup() -> None:
    # Stores keep their version: version 1's values above never change. Under
    # version 2, a text with no well-formed tag or entity fingerprints exactly
    # as under version 1; visible=false is version 1 for every text.
    from simhash_pg.text.visible import strip_markup

    v2 = Scheme().to_dict()
    v1 = {k: v for k, v in v2.items() if k != "visible"} | {"version": 1}
    old, new, off = _by(v1), _by(v2), _by(v2 | {"visible": False})
    assert off == old
    changed = {name for name in TEXTS if new[name] != old[name]}
    assert changed == {name for name, t in TEXTS.items() if strip_markup(t) != t}
    assert changed == {"html", "zh_markup"}  # mixed_code's Vec<T> and lt_text stay text
