"""The default on edit kinds no generator here makes, and the lead that fixed the weakest.

Exploratory, written after every default but the min-hash keys was chosen
(docs/quality.md, "Scattered edits: min-hash keys"). Run from the repository
root:

    uv run python -m lab.experiments.scattered_edits            # the default, per kind
    uv run python -m lab.experiments.scattered_edits --minhash  # the min-hash lead

Kinds, 150 base articles each per language, labelled by the eval set's rule:
every number changed; sentences shuffled within paragraphs; a paragraph
repeated with an editor's note; 4% of characters (zh) or words (en) dropped
at random; a reprint (lead moved, a note on top, some numbers changed).

``--minhash``: for copies with 3-4% of characters (zh) or 8% of words (en)
dropped that the rule calls duplicates, the fingerprint distance against
the probes' cap (13), and how often any of m min-hash values of the rule's
5-gram sets are equal: what m such keys per text would find.
"""

from __future__ import annotations

import argparse
import random
import re
from typing import Any

import numpy as np
import xxhash

from lab import quality as Q
from lab.experiments.noise_eval import kind_table, step_decisions
from lab.noise import NoisePair, _jsonl, join, label, paragraphs, sentences
from simhash_pg.text.simhash import Fingerprinter
from simhash_pg.verify import alnum_only

KINDS = ("numbers", "sentence_shuffle", "para_repeat_note", "drop_4pct", "reprint")
_NUM = re.compile(r"\d+")
_NOTE = {"zh": ["（编者按：本文已于发稿后更新部分数据。）",
                "【更正】此前报道中的一处表述有误，现已修改。",
                "本文来源：新华社，转载请注明出处。责任编辑：王明"],
         "en": ["Editor's note: this story was updated with new figures after publication.",
                "Correction: an earlier version of this article misstated a date.",
                "Additional reporting by our correspondents; edited for length and clarity."]}


def _drop(text: str, lang: str, rate: float, rng: random.Random) -> str:
    if lang == "zh":
        return "".join(c for c in text if rng.random() > rate)
    return " ".join(w for w in text.split(" ") if rng.random() > rate)


def generate(seed: int, per_kind: int = 150) -> list[NoisePair]:
    rng = random.Random(seed)
    eval_dir = Q.resolve_eval_dir(None)
    out: list[NoisePair] = []
    for lang in ("zh", "en"):
        pick = iter(rng.sample(list(_jsonl(eval_dir / f"corpus_{lang}.jsonl")), 5 * per_kind))

        def add(kind: str, a: str, b: str, lang: str = lang) -> None:
            dup, ov = label(a, b, False)
            out.append(NoisePair(kind, kind, lang, False, a, b, dup, round(ov, 4)))

        def renumber(m: re.Match[str]) -> str:
            return str(rng.randint(1, 10 ** len(m.group())))

        for _ in range(per_kind):
            t = next(pick)["text"]
            add("numbers", t, _NUM.sub(renumber, t))
        for _ in range(per_kind):
            t = next(pick)["text"]
            pars = []
            for p in paragraphs(t):
                ss = sentences(p, lang)
                rng.shuffle(ss)
                pars.append(join(ss, lang))
            add("sentence_shuffle", t, "\n".join(pars))
        for _ in range(per_kind):
            t = next(pick)["text"]
            ps = paragraphs(t)
            i = rng.randrange(len(ps))
            add("para_repeat_note", t, "\n".join([*ps[: i + 1], rng.choice(_NOTE[lang]), *ps[i:]]))
        for _ in range(per_kind):
            t = next(pick)["text"]
            add("drop_4pct", t, _drop(t, lang, 0.04, rng))
        for _ in range(per_kind):
            t = next(pick)["text"]
            ps = paragraphs(t)
            if len(ps) > 2:
                ps = [ps[1], ps[0], *ps[2:]]
            b = _NUM.sub(lambda m: str(int(m.group()) + 1) if rng.random() < 0.3 else m.group(),
                         "\n".join(ps))
            add("reprint", t, rng.choice(_NOTE[lang]) + "\n" + b)
    return out


def cmd_default(seed: int) -> None:
    ps, dec = step_decisions(generate(seed))
    print(kind_table(ps, dec, KINDS, list(dec)[-1:]))  # the default


def cmd_minhash(seed: int, m_max: int = 8) -> None:
    rng = random.Random(seed)
    fp = Fingerprinter()
    mul = np.array([rng.getrandbits(64) | 1 for _ in range(m_max)], dtype=np.uint64)
    add = np.array([rng.getrandbits(64) for _ in range(m_max)], dtype=np.uint64)

    def mins(text: str) -> Any:
        v = alnum_only(fp.normalize(text))
        grams = {v[i : i + 5] for i in range(max(1, len(v) - 4))}
        h = np.array([xxhash.xxh3_64_intdigest(g.encode()) for g in grams], dtype=np.uint64)
        return (h[None, :] * mul[:, None] + add[:, None]).min(axis=1)

    ev = Q.resolve_eval_dir(None)
    for lang, rate in (("zh", 0.04), ("zh", 0.03), ("en", 0.08)):
        found = []
        for d in rng.sample(list(_jsonl(ev / f"corpus_{lang}.jsonl")), 200):
            t = d["text"]
            b = _drop(t, lang, rate, rng)
            dup, ov = label(t, b, False)
            if dup:
                found.append((ov, (fp.fingerprint(t) ^ fp.fingerprint(b)).bit_count(),
                              mins(t) == mins(b)))
        n = len(found)
        near = sum(f[1] <= 13 for f in found) / n
        equal = ", ".join(
            f"any of {m} min-hashes equal {sum(f[2][:m].any() for f in found) / n:.2f}"
            for m in (2, 4, 8))
        print(f"{lang}, {rate:.0%} dropped: {n} duplicates, overlap median "
              f"{np.median([f[0] for f in found]):.3f}, distance median "
              f"{np.median([f[1] for f in found]):.0f}, within 13 bits {near:.2f}; {equal}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--minhash", action="store_true")
    args = ap.parse_args()
    (cmd_minhash if args.minhash else cmd_default)(args.seed)


if __name__ == "__main__":
    main()
