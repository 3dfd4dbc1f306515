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


def _default_versions() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    v3 = Scheme().to_dict() | {"version": 3}
    v2 = v3 | {"version": 2}
    v1 = {k: v for k, v in v2.items() if k != "visible"} | {"version": 1}
    return v1, v2, v3


def test_every_version_of_the_default_is_pinned() -> None:
    v1, v2, v3 = _default_versions()
    v4 = Scheme().to_dict()
    assert v4 == v3 | {"version": 4} and v3["visible"] is True
    assert _by(v1) and _by(v2) and _by(v3) and _by(v4)


def test_version_2_changes_only_texts_with_markup() -> None:
    # Stores keep their version: version 1's values above never change. Under
    # version 2, a text with no well-formed tag or entity fingerprints exactly
    # as under version 1; visible=false is version 1 for every text.
    from simhash_pg.text.visible import strip_markup

    v1, v2, _ = _default_versions()
    old, new, off = _by(v1), _by(v2), _by(v2 | {"visible": False})
    assert off == old
    changed = {name for name in TEXTS if new[name] != old[name]}
    assert changed == {name for name, t in TEXTS.items() if strip_markup(t) != t}
    # mixed_code's Vec<T> and lt_text stay text; en_ignorable holds &shy;&zwj;
    assert changed == {"html", "zh_markup", "en_escaped", "zh_escaped", "en_ignorable"}


def test_version_3_changes_only_texts_escaped_twice() -> None:
    # Version 3 differs from version 2 only where the visible text still holds
    # markup (an entity or a tag that the one decoding revealed); with
    # visible=false it is version 1.
    v1, v2, v3 = _default_versions()
    old, new = _by(v2), _by(v3)
    assert _by(v3 | {"visible": False}) == _by(v1)
    fp = Fingerprinter(v3)
    changed = {name for name in TEXTS if new[name] != old[name]}
    assert changed == {name for name, t in TEXTS.items() if fp.feature_text(t) != fp.normalize(t)}
    assert changed == {"en_escaped", "zh_escaped"}  # html's "&" and lt_text's "<" stay


def test_version_4_changes_only_texts_with_default_ignorables() -> None:
    # Version 4 drops the Default_Ignorable_Code_Points (issue 29): only texts
    # holding one (or an entity of one) fingerprint differently from version 3,
    # for every scheme name pinned under both.
    from simhash_pg.text.normalize import IGNORABLE
    from simhash_pg.text.visible import strip_markup

    pinned_v4 = [c["scheme"] for c in CASES if c["scheme"]["version"] == 4]
    assert len(pinned_v4) == len([c for c in CASES if c["scheme"]["version"] == 3])
    for v4 in pinned_v4:
        old, new = _by(v4 | {"version": 3}), _by(v4)
        changed = {name for name in TEXTS if new[name] != old[name]}
        assert changed == {name for name, t in TEXTS.items()
                           if IGNORABLE.search(strip_markup(t)) or IGNORABLE.search(t)}
        assert changed == {"en_ignorable", "zh_ignorable"}, v4
