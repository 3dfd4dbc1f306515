"""``simhash-pg bench fingerprint``: fingerprinting speed next to its baselines.

On the same texts and in the same run:

- bare ``jieba.lcut`` (the floor that Chinese tokenisation sets);
- the ``zh-tfidf`` scheme and the default scheme, one core;
- the PyPI ``simhash`` package, ``Simhash(features)``, on exactly the weighted
  features our ``zh-tfidf`` votes with, against our
  :func:`~simhash_pg.text.simhash.fingerprint_features` of the same list;
- bulk ``fingerprint_many`` on one core and on all cores.

Texts: articles from ``../shared/eval`` cut or joined to about 1 KB and 10 KB
of UTF-8 when that folder exists, else generated text (jieba dictionary words
for Chinese, Zipf-distributed pseudo-words for English). Each figure is the
best of ``--repeat`` interleaved passes, in CPU time for one process (a
shared machine's load moves wall time far more) and in wall time for bulk.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

from lab.evaluation import default_eval_dir
from simhash_pg.cli.options import json_flag, workers_option

SIZES = {"1KB": 1024, "10KB": 10 * 1024}


def _fit(parts: Sequence[str], target: int, rng: random.Random, count: int) -> list[str]:
    """``count`` texts of about ``target`` UTF-8 bytes, cut or joined from ``parts``."""
    out: list[str] = []
    while len(out) < count:
        text = ""
        while len(text.encode()) < target:
            text += ("\n" if text else "") + rng.choice(parts)
        # Cut back to the target at a character boundary.
        raw = text.encode()[:target]
        out.append(raw.decode("utf-8", "ignore"))
    return out


def _corpus(lang: str, eval_dir: Path) -> list[str] | None:
    path = eval_dir / f"corpus_{lang}.jsonl"
    if not path.exists():
        return None
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line)["text"] for line in fh if line.strip()]


def _generated(lang: str, rng: random.Random) -> list[str]:
    if lang == "zh":
        from simhash_pg.text.features import import_jieba

        jieba = import_jieba()

        words: list[str] = []
        freqs: list[int] = []
        with (Path(jieba.__file__).parent / "dict.txt").open(encoding="utf-8") as fh:
            for line in fh:
                w, f, *_ = line.split()
                if int(f) >= 1000:
                    words.append(w)
                    freqs.append(int(f))
        punct = "，。、；"
        return [
            "".join(
                w + (rng.choice(punct) if rng.random() < 0.1 else "")
                for w in rng.choices(words, weights=freqs, k=400)
            )
            for _ in range(50)
        ]
    vocab = [
        "".join(rng.choices("etaoinshrdlcumwfgypbvkjxqz", k=rng.randint(1, 9))) for _ in range(8000)
    ]
    weights = [1 / (i + 1) for i in range(len(vocab))]
    return [" ".join(rng.choices(vocab, weights=weights, k=400)) + "." for _ in range(50)]


def build_texts(docs: int, eval_dir: Path | None = None, seed: int = 0) -> dict[str, list[str]]:
    """``{"zh-1KB": [...], "zh-10KB": ..., "en-1KB": ..., "en-10KB": ...}``."""
    d = eval_dir if eval_dir is not None else default_eval_dir()
    rng = random.Random(seed)
    sets: dict[str, list[str]] = {}
    for lang in ("zh", "en"):
        parts = _corpus(lang, d) or _generated(lang, rng)
        for label, size in SIZES.items():
            sets[f"{lang}-{label}"] = _fit(parts, size, rng, docs)
    return sets


def _best(
    fn: Callable[[], object],
    repeat: int,
    before: Callable[[], None] = lambda: None,
    clock: Callable[[], float] = time.process_time,
) -> float:
    """Best of ``repeat`` runs. One-process figures use this process's CPU
    time, which other load on a shared machine barely moves; the bulk figures
    need wall time."""
    best = float("inf")
    for _ in range(repeat):
        before()
        t0 = clock()
        fn()
        best = min(best, clock() - t0)
    return best


def run(
    docs: int = 40,
    repeat: int = 3,
    workers: int | None = None,
    eval_dir: Path | None = None,
    echo: Callable[[str], None] = print,
) -> dict[str, Any]:
    import logging
    import warnings

    from simhash_pg.text.features import clear_caches, import_jieba

    jieba = import_jieba()
    logging.getLogger("jieba").setLevel(logging.WARNING)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # its old regex literals
        import simhash as pypi_simhash

    from simhash_pg.text.simhash import Fingerprinter, fingerprint_features
    from simhash_pg.text.workers import cpu_count

    ncores = workers or cpu_count()
    sets = build_texts(docs, eval_dir)
    source = (
        "../shared/eval articles"
        if _corpus("zh", eval_dir or default_eval_dir())
        else ("generated text")
    )
    default = Fingerprinter()
    tfidf = Fingerprinter("zh-tfidf")
    for f in (default, tfidf):
        f.fingerprint("预热 warm up")
    jieba.initialize()
    jieba.lcut("预热")

    results: dict[str, Any] = {"sets": {}}
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    echo(
        f"texts: {source}; {docs} docs per set; best of {repeat}; one-process rows in CPU "
        f"time; bulk in wall time on {ncores} cores; load average {load:.1f}"
    )
    hmm = tfidf.scheme.hmm
    echo(
        f"jieba.lcut(HMM={hmm}) is the floor for zh-tfidf (same HMM setting); "
        "lcut() with its default HMM=True is shown too."
    )
    head = (
        f"{'set':<8} {'MB':>5} | {'lcut(HMM=' + str(hmm) + ')':>15} {'lcut()':>7} | "
        f"{'zh-tfidf':>15} {'/floor':>6} | {'default(auto)':>15} {'/floor':>6} | "
        f"{'PyPI simhash':>12} {'ours':>7} {'x':>5}"
    )
    echo(head)
    echo(
        f"{'':<8} {'':>5} | {'docs/s  MB/s':>15} {'docs/s':>7} | {'docs/s  MB/s':>15} {'':>6} | "
        f"{'docs/s  MB/s':>15} {'':>6} | {'same features, docs/s':>26}"
    )
    echo("-" * len(head))
    for name, texts in sets.items():
        mb = sum(len(t.encode()) for t in texts) / 2**20
        n = len(texts)
        feats = [tfidf.features(t) for t in texts]

        def lcut(texts: list[str] = texts) -> None:
            for t in texts:
                jieba.lcut(t, HMM=hmm)

        def lcut_default(texts: list[str] = texts) -> None:
            for t in texts:
                jieba.lcut(t)

        def fp_tfidf(texts: list[str] = texts) -> None:
            for t in texts:
                tfidf.fingerprint(t)

        def fp_auto(texts: list[str] = texts) -> None:
            for t in texts:
                default.fingerprint(t)

        def pypi(feats: list[list[tuple[str, float]]] = feats) -> None:
            for f in feats:
                pypi_simhash.Simhash(f)

        def ours(feats: list[list[tuple[str, float]]] = feats) -> None:
            for f in feats:
                fingerprint_features(f)

        # Interleaved rounds, best of each: drift on a shared machine hits all
        # contenders alike. Caches start cold and stay warm, as in a long run.
        clear_caches()
        timed: dict[str, Callable[[], None]] = {
            "jieba": lcut,
            "jieba-default": lcut_default,
            "zh-tfidf": fp_tfidf,
            "auto": fp_auto,
            "pypi": pypi,
            "ours": ours,
        }
        best = dict.fromkeys(timed, float("inf"))
        for _ in range(repeat):
            for key, fn in timed.items():
                best[key] = min(best[key], _best(fn, 1))
        t_jieba, t_tfidf, t_auto = best["jieba"], best["zh-tfidf"], best["auto"]
        t_pypi, t_ours = best["pypi"], best["ours"]
        t_jdef = best["jieba-default"]
        row = {
            "docs": n,
            "mb": mb,
            "jieba": t_jieba,
            "jieba_default_hmm": t_jdef,
            "zh-tfidf": t_tfidf,
            "auto": t_auto,
            "pypi": t_pypi,
            "ours_same_features": t_ours,
        }
        results["sets"][name] = row
        echo(
            f"{name:<8} {mb:>5.2f} | {n / t_jieba:>7.0f} {mb / t_jieba:>7.2f} {n / t_jdef:>7.0f} | "
            f"{n / t_tfidf:>7.0f} {mb / t_tfidf:>6.2f} {t_tfidf / t_jieba:>5.2f}x | "
            f"{n / t_auto:>7.0f} {mb / t_auto:>6.2f} {t_auto / t_jieba:>5.2f}x | "
            f"{n / t_pypi:>12.0f} {n / t_ours:>7.0f} {t_pypi / t_ours:>4.1f}x"
        )

    everything = [t for texts in sets.values() for t in texts]
    echo("")
    echo("bulk fingerprint_many over all sets, repeated (8x, 4x) so that the work outweighs")
    echo("starting workers and warming their caches; best of 2:")
    for f, label, copies in ((default, "default(auto)", 8), (tfidf, "zh-tfidf", 4)):
        batch = everything * copies
        mb_all = sum(len(t.encode()) for t in batch) / 2**20
        walls: dict[int, float] = {}
        cpus: dict[int, float] = {}
        for n in sorted({1, ncores}):
            walls[n] = cpus[n] = float("inf")
            for _ in range(min(repeat, 2)):
                clear_caches()
                c0, t0 = os.times(), time.perf_counter()
                f.fingerprint_many(batch, workers=n)
                wall, c1 = time.perf_counter() - t0, os.times()
                cpu = (c1.user - c0.user) + (c1.children_user - c0.children_user)
                cpu += (c1.system - c0.system) + (c1.children_system - c0.children_system)
                walls[n] = min(walls[n], wall)
                cpus[n] = min(cpus[n], cpu)
        t1, tn = walls[1], walls[ncores]
        results[f"bulk-{label}"] = {"wall": walls, "cpu": cpus}
        echo(
            f"  {label:<14} {len(batch)} docs, {mb_all:.1f} MB: "
            f"1 core {len(batch) / t1:>6.0f} docs/s {mb_all / t1:>5.2f} MB/s | "
            f"{ncores} cores {len(batch) / tn:>6.0f} docs/s {mb_all / tn:>5.2f} MB/s | "
            f"speed-up {t1 / tn:.2f}x"
        )
        # On a shared, loaded machine wall time cannot show what the cores would
        # do; total CPU time shows the parallel overhead, hence this estimate.
        echo(
            f"  {'':<14} CPU s, all processes: 1 core {cpus[1]:.2f}, {ncores} cores "
            f"{cpus[ncores]:.2f} -> speed-up with {ncores} idle cores at most "
            f"{ncores * cpus[1] / cpus[ncores]:.2f}x"
        )
    echo("")
    echo(
        "targets: zh-tfidf <= 1.3x the jieba.lcut floor on Chinese; >= 10x PyPI simhash on "
        "the same features; bulk >= 1.7x on 2 cores. A loaded machine (load average above the core "
        "count) depresses the multi-core figure."
    )
    return results


@click.command("fingerprint")
@click.option(
    "--docs",
    type=click.IntRange(1),
    default=40,
    show_default=True,
    help="Documents per set (4 sets: zh/en x 1 KB/10 KB).",
)
@click.option(
    "--repeat",
    type=click.IntRange(1),
    default=3,
    show_default=True,
    help="Passes per figure; the best is reported.",
)
@workers_option("Processes for the bulk figure. Default: all cores.")
@click.option(
    "--eval-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where the eval corpus lives (default ../shared/eval beside the checkout).",
)
@json_flag("Also print the raw timings as JSON.")
def command(
    docs: int, repeat: int, workers: int | None, eval_dir: Path | None, as_json: bool
) -> None:
    """Fingerprinting speed: docs/s and MB/s vs jieba.lcut and PyPI simhash."""
    results = run(docs=docs, repeat=repeat, workers=workers, eval_dir=eval_dir, echo=click.echo)
    if as_json:
        click.echo(json.dumps(results, indent=1))
