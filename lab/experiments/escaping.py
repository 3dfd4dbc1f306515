"""Scheme version 3 on escapings that ``lab.noise.escaped`` does not make.

Written after version 3 was chosen, to check it on data it was not chosen on
(docs/quality.md, "Escaped twice"). Run from the repository root:

    uv run python -m lab.experiments.escaping [--seed 11] [--per-kind 150]

Kinds (per language, each pair labelled by the eval set's rule):

- ``triple``: entities and three layers of escaping (``&amp;amp;nbsp;``);
- ``markup_shown``: a marked-up copy (``lab.noise.html_markup``) whose tags
  were escaped once, so a page shows them as text: most are *not*
  duplicates by the rule, a test of precision as much as recall;
- ``partly``: some paragraphs wrapped in escaped ``<p>`` tags;
- ``both_sides``: one side with escaped tags, the other with real tags,
  entities and its last tenth cut;
- ``title_escaped``: a title in quotes, escaped twice (``&amp;quot;``).

Prints the default store's decisions under scheme version 2 and 3, both
directions (lab.experiments.noise_eval's model of the store).
"""

from __future__ import annotations

import argparse
import html
import random

from lab import quality as Q
from lab.experiments.noise_eval import kind_table, step_decisions
from lab.noise import NoisePair, _entities, _jsonl, html_markup, label, paragraphs

KINDS = ("triple", "markup_shown", "partly", "both_sides", "title_escaped")


def generate(per_kind: int, seed: int) -> list[NoisePair]:
    eval_dir = Q.resolve_eval_dir(None)
    rng = random.Random(seed)
    out: list[NoisePair] = []
    for lang in ("zh", "en"):
        docs = list(_jsonl(eval_dir / f"corpus_{lang}.jsonl"))
        titles = [r["text"] for r in _jsonl(eval_dir / "titles.jsonl") if r["lang"] == lang]
        pick = iter(rng.sample(docs, 4 * per_kind))

        def add(kind: str, a: str, b: str, short: bool = False, lang: str = lang) -> None:
            dup, ov = label(a, b, short)
            out.append(NoisePair(kind, kind, lang, short, a, b, dup, round(ov, 4)))

        for _ in range(per_kind):
            t = next(pick)["text"]
            ents = "\n".join(_entities(p, rng, lang, 0.02) for p in paragraphs(t))
            add("triple", t, html.escape(html.escape(ents, quote=False), quote=False))
        for _ in range(per_kind):
            t = next(pick)["text"]
            add("markup_shown", t, html.escape(html_markup(t, rng, lang, False), quote=False))
        for _ in range(per_kind):
            t = next(pick)["text"]
            add("partly", t, "\n".join(html.escape(f"<p>{p}</p>", quote=False)
                                       if rng.random() < 0.3 else p for p in paragraphs(t)))
        for _ in range(per_kind):
            ps = paragraphs(next(pick)["text"])
            kept = ps[: max(1, int(len(ps) * 0.9))]
            add("both_sides", "\n".join(f"&lt;p&gt;{p}&lt;/p&gt;" for p in ps),
                "\n".join(f"<p>{_entities(p, rng, lang, 0.03)}</p>" for p in kept))
        q = "“" if lang == "zh" else '"'
        for t in rng.sample(titles, per_kind):
            add("title_escaped", t, html.escape(html.escape(f"{q}{t}{q}")), True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--per-kind", type=int, default=150)
    args = ap.parse_args()
    ps, dec = step_decisions(generate(args.per_kind, args.seed))
    print(kind_table(ps, dec, KINDS, list(dec)[-2:]))  # scheme version 2 and the default (3)


if __name__ == "__main__":
    main()
