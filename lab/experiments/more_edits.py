"""The default on more edit kinds no generator here makes (after scattered_edits).

Exploratory, written after the min-hash keys' first version (docs/quality.md,
"Scattered edits: min-hash keys"); it found 5-gram keys too common in English.
Run from the repository root:

    uv run python -m lab.experiments.more_edits

Kinds, 120 base articles each per language, labelled by the eval set's rule:
words split by a space (en: 8% of words; zh: a space after 5% of characters),
hard line wraps, Cyrillic look-alike letters (5% of those that have one), the
text twice, Markdown (a heading and a link), 3% of characters garbled
(dropped or replaced by another of the text's), a middle paragraph deleted,
an advertisement inserted.
"""

from __future__ import annotations

import argparse
import random

from lab import quality as Q
from lab.experiments.noise_eval import kind_table, step_decisions
from lab.noise import NoisePair, _jsonl, label, paragraphs

KINDS = ("split_words", "hard_wrap", "homoglyph", "doubled", "markdown", "garbled_3pct",
         "para_deleted", "ad_inserted")
_CYRILLIC = {"a": "а", "e": "е", "o": "о", "p": "р", "c": "с", "x": "х", "y": "у"}
_AD = {"zh": "【广告】限时优惠！扫码下载客户端，注册即送大礼包，详情请咨询客服热线400-800-1234。",
       "en": "ADVERTISEMENT: Subscribe today and get 50% off your first year. Offer ends"
             " Sunday. Terms apply."}
_LINK = {"zh": "[原文链接](https://news.example.com/2024/{}.html)",
         "en": "[Read the original](https://news.example.com/2024/{}.html)"}


def _split_words(t: str, lang: str, rng: random.Random) -> str:
    if lang == "zh":
        return "".join(c + (" " if rng.random() < 0.05 else "") for c in t)
    return " ".join(w[: len(w) // 2] + " " + w[len(w) // 2:]
                    if len(w) > 3 and rng.random() < 0.08 else w for w in t.split(" "))


def _garble(t: str, rng: random.Random) -> str:
    chars = list(t)
    return "".join(("" if rng.random() < 0.5 else rng.choice(chars))
                   if rng.random() < 0.03 else c for c in chars)


def generate(seed: int, per_kind: int = 120) -> list[NoisePair]:
    rng = random.Random(seed)
    eval_dir = Q.resolve_eval_dir(None)
    out: list[NoisePair] = []
    for lang in ("zh", "en"):
        pick = iter(rng.sample(list(_jsonl(eval_dir / f"corpus_{lang}.jsonl")),
                               len(KINDS) * per_kind))

        def add(kind: str, a: str, b: str, lang: str = lang) -> None:
            dup, ov = label(a, b, False)
            out.append(NoisePair(kind, kind, lang, False, a, b, dup, round(ov, 4)))

        width = 30 if lang == "zh" else 60
        for kind in KINDS:
            for _ in range(per_kind):
                t = next(pick)["text"]
                ps = paragraphs(t)
                if kind == "split_words":
                    b = _split_words(t, lang, rng)
                elif kind == "hard_wrap":
                    flat = t.replace("\n", " ")
                    b = "\n".join(flat[i:i + width] for i in range(0, len(flat), width))
                elif kind == "homoglyph":
                    b = "".join(_CYRILLIC[c] if c in _CYRILLIC and rng.random() < 0.05 else c
                                for c in t)
                elif kind == "doubled":
                    b = t + "\n" + t
                elif kind == "markdown":
                    b = "\n\n".join(["## " + ps[0], *ps[1:],
                                     _LINK[lang].format(rng.randint(1000, 9999))])
                elif kind == "garbled_3pct":
                    b = _garble(t, rng)
                elif kind == "para_deleted":
                    if len(ps) > 3:
                        i = rng.randrange(1, len(ps) - 1)
                        ps = ps[:i] + ps[i + 1:]
                    b = "\n".join(ps)
                else:  # ad_inserted
                    i = rng.randrange(len(ps) + 1)
                    b = "\n".join([*ps[:i], _AD[lang], *ps[i:]])
                add(kind, t, b)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--seed", type=int, default=99)
    args = ap.parse_args()
    ps, dec = step_decisions(generate(args.seed))
    print(kind_table(ps, dec, KINDS, list(dec)[-1:]))  # the default


if __name__ == "__main__":
    main()
