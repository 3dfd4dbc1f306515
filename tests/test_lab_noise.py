"""lab/noise.py: its labelling rule agrees with ../shared/eval's labels; generation is stable.

Skips when the eval set is absent (a user's clone). SIMHASH_PG_EVAL_DIR points
elsewhere (e.g. from a git worktree that is not beside ``shared``).
"""

from __future__ import annotations

import json
import os
import random
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EVAL_DIR = Path(os.environ.get("SIMHASH_PG_EVAL_DIR", ROOT.parent / "shared" / "eval"))
pytestmark = pytest.mark.skipif(not (EVAL_DIR / "pairs.jsonl").exists(),
                                reason=f"the labelled near-duplicate eval set ({EVAL_DIR}), not "
                                       "shipped with the package, is not here")

sys.path.insert(0, str(ROOT))  # lab/ is beside the package, not installed
from lab.noise import KINDS, generate, label, overlap  # noqa: E402
from simhash_pg.text.normalize import normalize_visible  # noqa: E402
from simhash_pg.verify import alnum_only  # noqa: E402


def _sample(name: str, files: tuple[str, ...], k: int) -> list[tuple[str, str, dict[str, object]]]:
    pairs = [json.loads(x) for x in (EVAL_DIR / name).read_text(encoding="utf-8").splitlines()]
    pairs = random.Random(0).sample(pairs, k)
    need = {p["a"] for p in pairs} | {p["b"] for p in pairs}
    texts: dict[str, str] = {}
    for f in files:
        path = EVAL_DIR / f
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                rec = json.loads(line)
                if rec["id"] in need:
                    texts[rec["id"]] = rec["text"]
    return [(texts[p["a"]], texts[p["b"]], p) for p in pairs if p["a"] in texts and p["b"] in texts]


@pytest.mark.parametrize(("name", "files", "short"), [
    ("pairs.jsonl", ("corpus_zh.jsonl", "corpus_en.jsonl", "variants.jsonl",
                     "docs_versions.jsonl", "docs_licenses.jsonl"), False),
    ("pairs_short.jsonl", ("titles.jsonl", "short_variants.jsonl"), True),
])
def test_our_rule_reproduces_the_sets_labels(name: str, files: tuple[str, ...],
                                             short: bool) -> None:
    rows = _sample(name, files, 300)
    assert len(rows) > 250
    for a, b, p in rows:
        dup, ov = label(a, b, short)
        assert dup == p["duplicate"], (p, ov)
        assert ov == pytest.approx(p["overlap"], abs=5e-5)


def test_generation_is_deterministic_and_labelled_by_the_rule() -> None:
    one = generate(EVAL_DIR, per_kind=4, seed=3)
    assert one == generate(EVAL_DIR, per_kind=4, seed=3)
    assert one != generate(EVAL_DIR, per_kind=4, seed=4)
    assert {p.kind for p in one} == set(KINDS)
    for p in one:
        assert (p.duplicate, round(overlap(p.a, p.b, 2 if p.short else 5), 4)) == (
            label(p.a, p.b, p.short)[0], p.overlap)


def test_markup_pairs_are_the_clean_text_once_visible() -> None:
    for p in generate(EVAL_DIR, per_kind=20, seed=5):
        if p.kind == "html" and not {"<", "&"} & set(p.a):  # "&amp;#163;" stays "&#163;"
            assert ("<" in p.b) if p.detail == "heavy" else ("<" in p.b or "&" in p.b)
            assert alnum_only(normalize_visible(p.b)) == alnum_only(normalize_visible(p.a))


def test_held_out_kinds_are_deterministic_and_labelled_by_the_rule() -> None:
    from lab.noise import HELDOUT_KINDS, generate_heldout

    one = generate_heldout(EVAL_DIR, per_kind=4, seed=3)
    assert one == generate_heldout(EVAL_DIR, per_kind=4, seed=3)
    assert one != generate_heldout(EVAL_DIR, per_kind=4, seed=4)
    assert {p.kind for p in one} == set(HELDOUT_KINDS) and not set(HELDOUT_KINDS) & set(KINDS)
    for p in one:
        assert (p.duplicate, p.overlap) == (label(p.a, p.b, p.short)[0],
                                            round(label(p.a, p.b, p.short)[1], 4))
        if p.kind in ("reorder", "unicode"):
            assert p.duplicate  # formatting and order do not count for the rule
