"""Rebuild ``sample.jsonl.gz`` from the redistributable part of an eval folder.

    uv run python -m lab.build_sample ../shared/eval

Only MIT-licensed documentation (the Rust book and its Chinese translation)
and SPDX licence texts go in; the news articles there are research-only and
must never ship. Near-duplicates are the real ones (revisions of a section,
licence variants) plus planted edits made here, deterministically.
"""

from __future__ import annotations

import gzip
import json
import random
import sys
from pathlib import Path
from typing import Any

BUDGET = 900_000  # bytes of JSON Lines before compression; the issue caps it at 1 MB
LICENCES = {
    "rust-lang/book": "MIT OR Apache-2.0",
    "KaiserY/trpl-zh-cn": "MIT",
}


def _load(path: Path) -> dict[str, dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return {d["id"]: d for d in map(json.loads, fh)}


def _licence_of(doc: dict[str, Any]) -> str:
    src = doc["source"]
    if src.startswith("git:"):
        repo = src.split(":")[1]
        return LICENCES[repo]
    return "licence text reproduced verbatim, as the SPDX License List does"


def _origin(doc: dict[str, Any]) -> str:
    src = doc["source"]
    if src.startswith("git:"):
        _, repo, path, date, commit, *_ = src.split(":")
        return f"{repo}@{commit}:{path} ({date})"
    return src


_FOOTERS = {
    "en": ["\n\nShare this page. Copyright the Rust Project Developers.",
           "\n\nThis chapter was mirrored from the Rust book. Report errors on the tracker."],
    "zh": ["\n\n来源：Rust 程序设计语言 简体中文版",
           "\n\n（本文转载自 Rust 中文社区，如有错误请反馈）"],
}


def _plant(doc: dict[str, Any], rng: random.Random) -> list[tuple[str, str]]:
    """A few realistic edits of one document: (edit name, new text)."""
    text: str = doc["text"]
    lang = doc["lang"]
    out = [("boilerplate", text + rng.choice(_FOOTERS[lang]))]
    paras = text.split("\n\n")
    if len(paras) >= 3:
        i = rng.randrange(len(paras) - 1)
        paras[i], paras[i + 1] = paras[i + 1], paras[i]
        out.append(("paragraphs_swapped", "\n\n".join(paras)))
    # light typos: drop or double a few characters
    chars = list(text)
    for _ in range(max(1, len(chars) // 300)):
        j = rng.randrange(len(chars))
        chars[j] = "" if rng.random() < 0.5 else chars[j] * 2
    out.append(("typos_light", "".join(chars)))
    if lang == "zh":
        wide = text.translate(str.maketrans(",.:;!?()", "，。：；！？（）"))
        out.append(("fullwidth_punctuation", wide))
    return out


def build(eval_dir: Path, out: Path, seed: int = 20261122) -> tuple[int, int]:
    rng = random.Random(seed)
    docs = _load(eval_dir / "docs_versions.jsonl") | _load(eval_dir / "docs_licenses.jsonl")
    pairs = [json.loads(x) for x in (eval_dir / "pairs.jsonl").open(encoding="utf-8")]
    real = [p for p in pairs
            if p["duplicate"] and p["kind"] in ("real_revision", "real_license")
            and p["a"] in docs and p["b"] in docs]
    rng.shuffle(real)

    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    size = 0

    def emit(doc: dict[str, Any], *, text: str | None = None, id_: str | None = None,
             group: str, edit: str | None = None) -> bool:
        nonlocal size
        row = {
            "id": id_ or doc["id"], "lang": doc["lang"], "text": text or doc["text"],
            "source": _origin(doc), "licence": _licence_of(doc), "group": group,
        }
        if edit:
            row["edit"] = edit
        line = json.dumps(row, ensure_ascii=False)
        if size + len(line.encode()) + 1 > BUDGET:
            return False
        rows.append(row)
        size += len(line.encode()) + 1
        return True

    # Real near-duplicates first: pairs of revisions and licence variants,
    # each pair a group, short documents preferred so more groups fit.
    real.sort(key=lambda p: len(docs[p["a"]]["text"]) + len(docs[p["b"]]["text"]))
    for p in real[:120]:
        if p["a"] in seen or p["b"] in seen:
            continue
        group = f"real:{p['a']}"
        if not (emit(docs[p["a"]], group=group) and emit(docs[p["b"]], group=group)):
            break
        seen.update((p["a"], p["b"]))

    # Planted edits of documents not yet used, then singletons to fill up.
    rest = sorted((d for i, d in docs.items() if i not in seen and len(d["text"]) < 2500),
                  key=lambda d: d["id"])
    rng.shuffle(rest)
    for doc in rest[:40]:
        if not emit(doc, group=f"planted:{doc['id']}"):
            break
        seen.add(doc["id"])
        for edit, text in _plant(doc, rng):
            emit(doc, text=text, id_=f"{doc['id']}~{edit}", group=f"planted:{doc['id']}",
                 edit=edit)
    for doc in rest[40:]:
        if doc["id"] in seen:
            continue
        if not emit(doc, group=f"single:{doc['id']}"):
            break

    rng.shuffle(rows)
    with gzip.GzipFile(out, "wb", mtime=0) as gz:
        for row in rows:
            gz.write((json.dumps(row, ensure_ascii=False) + "\n").encode())
    return len(rows), size


def main(argv: list[str]) -> None:
    eval_dir = Path(argv[1] if len(argv) > 1 else "../shared/eval")
    out = Path(__file__).with_name("sample.jsonl.gz")
    n, size = build(eval_dir, out)
    print(f"wrote {n} documents, {size} bytes of JSON Lines, {out.stat().st_size} gzipped -> {out}")


if __name__ == "__main__":
    main(sys.argv)
