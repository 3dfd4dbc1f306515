"""``simhash-pg eval``: precision, recall and F1 on a labelled near-duplicate set."""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import click
import numpy as np

EVAL_DB = "simhash_eval"
# The store's k today, and the k recommended from docs/quality.md.
MAIN_KS = (3, 9)


def _fmt(x: float | None) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


def _prf(c: dict[str, Any]) -> str:
    if c["tp"] + c["fn"] == 0:  # negatives only: precision and recall say nothing
        return f"FP {c['fp']}/{c['fp'] + c['tn']}"
    return f"{_fmt(c['precision'])} {_fmt(c['recall'])} {_fmt(c['f1'])}"


def build_report(
    eval_dir: Path,
    *,
    schemes: list[str | None],
    ks: list[int],
    peers: bool,
    store: bool,
    dsn: str | None,
    sample: int | None,
    seed: int,
    workers: int | None,
    progress: Any,
    store_verify: tuple[str, ...] = ("short", "all"),
) -> dict[str, Any]:
    """Run the whole evaluation and return the JSON-able report."""
    from lab import quality as Q
    from simhash_pg import verify as V
    from simhash_pg.text.schemes import get_scheme
    from simhash_pg.text.signatures import DEFAULT_SENTENCES

    t0 = time.perf_counter()
    first = get_scheme(schemes[0])
    sets = []
    for short in (False, True):
        f = eval_dir / ("pairs_short.jsonl" if short else "pairs.jsonl")
        if f.exists():
            progress(f"loading {f.name}")
            sets.append(
                Q.load_pairs(
                    eval_dir, short=short, sample=sample, seed=seed, html=first.html, t2s=first.t2s
                )
            )
    if not sets:
        raise click.UsageError(f"no pairs.jsonl or pairs_short.jsonl in {eval_dir}")

    rules = []
    for k in ks:
        rules += [Q.Rule(k=k, short_verify=False), Q.Rule(k=k), Q.Rule(k=k, sentences=True)]
    rules += [Q.Rule(long_verify=True), Q.Rule(long_verify=True, sentences=True)]
    results = [
        Q.measure_set(ps, schemes, peers=peers, workers=workers, progress=progress) for ps in sets
    ]

    store_info: dict[str, Any] = {"used": store}
    # display name -> (verify mode, k, per set: which pairs the store matched)
    store_verified: dict[str, tuple[str, int, list[Any]]] = {}
    if store:
        from simhash_pg.commands._common import fresh_database
        from simhash_pg.store import SimhashStore

        k_max = max(r.max_k for r in rules)
        target = dsn or fresh_database(EVAL_DB)
        t = time.perf_counter()
        # Keep every text (verify="all") so that every mode can be asked for
        # below; the distances come from an unverified reader.
        with SimhashStore(target, scheme=first, verify="all") as writer:
            Q.store_distances(sets, writer, 0, progress=progress)
        with SimhashStore(target, scheme=first, verify="off") as st:
            dists = Q.store_distances(sets, st, k_max, progress=progress)
        for mode in store_verify:
            for k in ks if mode != "all" else ks[:1]:
                with SimhashStore(target, scheme=first, verify=mode) as st:  # type: ignore[arg-type]
                    store_verified[f"SimhashStore verify={mode} k={k}"] = (
                        mode, k, Q.store_decisions(sets, st, k, progress=progress))
        store_info["seconds"] = round(time.perf_counter() - t, 2)
        store_info["k_queried"] = k_max
        for res, d in zip(results, dists, strict=True):
            res.store_distance = d
            # Exactness check: the store must return b exactly when the
            # fingerprints are within k_max.
            fp_within = res.distance <= k_max
            st_within = d <= k_max
            store_info[res.pairs.name] = {
                "pairs": len(d),
                "disagree_with_fingerprints": int(
                    (fp_within != st_within).sum() + (fp_within & (d != res.distance)).sum()
                ),
            }

    report: dict[str, Any] = {
        "eval_dir": str(eval_dir),
        "scheme": first.to_json(),
        "schemes": [get_scheme(s).to_json() for s in schemes],
        "ks": ks,
        "sample": sample,
        "via": "store" if store else "fingerprints",
        "store": store_info,
        "constants": {
            "SHORT_TEXT_CHARS": V.SHORT_TEXT_CHARS,
            "SHORT_K": V.SHORT_K,
            "SHORT_NGRAM": V.SHORT_NGRAM,
            "SHORT_THRESHOLD": V.SHORT_THRESHOLD,
            "LONG_K": V.LONG_K,
            "LONG_NGRAM": V.LONG_NGRAM,
            "LONG_THRESHOLD": V.LONG_THRESHOLD,
            "SENTENCES": DEFAULT_SENTENCES,
        },
        "peers": {
            "simhash": "PyPI simhash, Simhash(text) defaults (char 4-grams of word chars)",
            "minhash": "datasketch MinHashLSH(threshold=0.8, num_perm=128), "
            "char 3-grams of lower-cased word chars",
        }
        if peers
        else None,
        "sets": {},
    }
    for res in results:
        ps = res.pairs
        systems = Q.systems(
            res,
            [r for r in rules if ps.name == "documents" or not r.sentences],
            ks,
            via_store=store,
        )
        if store:
            # the store's own verified answers, and whether they agree with
            # the rule that models them (they must: same accept())
            si = sets.index(ps)
            for name, (mode, k, dets) in store_verified.items():
                systems[name] = dets[si]
                rule = (Q.Rule(long_verify=True, sentences=ps.name == "documents")
                        if mode == "all" else Q.Rule(k=k, short_verify=mode == "short"))
                model = Q.decide(rule, res.store_distance if res.store_distance is not None
                                 else res.distance, res.similarity, ps.short, res.sentences)
                store_info[ps.name].setdefault("verified_disagree_with_rule", {})[name] = int(
                    (model != dets[si]).sum())
        entry: dict[str, Any] = {
            "pairs": len(ps),
            "duplicates": int(ps.duplicate.sum()),
            "seconds": res.seconds,
            "systems": {},
            "long_ge_200": {},
            "misses": {},
        }
        for name, det in systems.items():
            entry["systems"][name] = {
                dim: {g: c.to_dict() for g, c in groups.items()}
                for dim, groups in Q.breakdown(det, ps).items()
            }
            entry["long_ge_200"][name] = Q.counts(det[ps.long], ps.duplicate[ps.long]).to_dict()
        for r in (*(Q.Rule(k=k) for k in ks), Q.Rule(long_verify=True, sentences=True)):
            if r.label() not in systems:
                continue
            entry["misses"][r.label()] = Q.misses(systems[r.label()], ps)
        # k sweeps on fingerprint distances: plain, and with verification.
        sweeps: dict[str, Any] = {}
        all_dists = {first.to_json(): res.distance, **res.other_schemes}
        for name, d in all_dists.items():
            plain = Q.sweep(d, ps.duplicate)
            verified = Q.sweep(
                d,
                ps.duplicate,
                passes=res.similarity >= np.where(ps.short, V.SHORT_THRESHOLD, V.LONG_THRESHOLD),
            )
            sweeps[name] = {
                "auc": round(Q.auc_of(d, ps.duplicate, ps.lang, ps.kind), 4),
                "plain": {str(k): c.to_dict() for k, c in plain.items()},
                "verified": {str(k): c.to_dict() for k, c in verified.items()},
                "best_plain": Q.best_k(plain),
                "best_verified": Q.best_k(verified),
                "histogram": Q.histogram(d, ps.duplicate),
            }
            if ps.name == "documents":
                lp = Q.sweep(d[ps.long], ps.duplicate[ps.long])
                sweeps[name]["best_plain_long_ge_200"] = Q.best_k(lp)
        if res.peer_simhash is not None:
            ps_sweep = Q.sweep(res.peer_simhash, ps.duplicate)
            sweeps["simhash (PyPI)"] = {
                "auc": round(Q.auc_of(res.peer_simhash, ps.duplicate, ps.lang, ps.kind), 4),
                "plain": {str(k): c.to_dict() for k, c in ps_sweep.items()},
                "best_plain": Q.best_k(ps_sweep),
                "histogram": Q.histogram(res.peer_simhash, ps.duplicate),
            }
        entry["sweep"] = sweeps
        if ps.name == "documents":
            entry["sentences"] = _sentence_summary(res, ks)
        report["sets"][ps.name] = entry
    report["seconds"] = round(time.perf_counter() - t0, 2)
    return report


def _sentence_summary(res: Any, ks: list[int]) -> dict[str, Any]:
    """What the n-longest-sentences signature adds to SimHash (OR-combined)."""
    from lab import quality as Q
    from simhash_pg import verify as V

    ps = res.pairs
    sig = res.sentences
    ok = res.similarity >= np.where(ps.short, V.SHORT_THRESHOLD, V.LONG_THRESHOLD)
    out: dict[str, Any] = {"alone": Q.counts(sig, ps.duplicate).to_dict()}
    variants = [(f"k={k}", res.distance <= k, sig) for k in sorted({*ks, 6, 8, 10, 12})]
    variants.append((f"k={V.LONG_K} verified", (res.distance <= V.LONG_K) & ok, sig & ok))
    for name, sim, extra in variants:
        both = sim | extra
        out[name] = {
            "simhash": Q.counts(sim, ps.duplicate).to_dict(),
            "simhash_or_sentences": Q.counts(both, ps.duplicate).to_dict(),
            "added_tp": int((extra & ~sim & ps.duplicate).sum()),
            "added_fp": int((extra & ~sim & ~ps.duplicate).sum()),
        }
    return out


# --------------------------------------------------------------------------
# rendering


def render(report: dict[str, Any], console: Any, *, detail: bool = True) -> None:
    from rich.table import Table

    c = report["constants"]
    console.print(
        f"[bold]simhash-pg eval[/bold] {report['eval_dir']} via {report['via']}; "
        f"scheme {report['scheme']}; short texts < {c['SHORT_TEXT_CHARS']} chars: "
        f"k={c['SHORT_K']} + char-{c['SHORT_NGRAM']}-gram Jaccard >= {c['SHORT_THRESHOLD']}; "
        f"long guard: k={c['LONG_K']} + char-{c['LONG_NGRAM']}-gram Jaccard >= "
        f"{c['LONG_THRESHOLD']}"
    )
    for set_name, entry in report["sets"].items():
        t = Table(
            title=f"{set_name}: {entry['pairs']} pairs ({entry['duplicates']} duplicate); P R F1",
            title_justify="left",
        )
        t.add_column("system")
        t.add_column("all pairs")
        t.add_column("TP/FP/FN", justify="right")
        if set_name == "documents":
            t.add_column(">=200 chars")
        for name, dims in entry["systems"].items():
            a = dims["all"]["all"]
            row = [name, _prf(a), f"{a['tp']}/{a['fp']}/{a['fn']}"]
            if set_name == "documents":
                row.append(_prf(entry["long_ge_200"][name]))
            t.add_row(*row)
        console.print(t)
        if detail:
            _render_breakdown(report, set_name, entry, console)
        _render_sweep(set_name, entry, console)
        if "sentences" in entry:
            _render_sentences(entry["sentences"], console)
    if report["store"].get("used"):
        s = report["store"]
        parts = [
            f"{n}: {v['disagree_with_fingerprints']} of {v['pairs']} pairs differ"
            for n, v in s.items()
            if isinstance(v, dict)
        ]
        console.print(
            f"store: queried at k={s['k_queried']} in {s['seconds']} s; "
            f"store vs fingerprint distances: {'; '.join(parts)}"
        )
    console.print(f"total {report['seconds']} s")


def _render_sentences(summary: dict[str, Any], console: Any) -> None:
    from rich.table import Table

    t = Table(
        title="documents: n-longest-sentences signature OR-ed with SimHash (P R F1)",
        title_justify="left",
    )
    for col in ("SimHash", "SimHash alone", "OR signature", "added TP", "added FP"):
        t.add_column(col, justify="right" if col.startswith("added") else "left")
    t.add_row("signature alone", "", _prf(summary["alone"]), "", "")
    for name, v in summary.items():
        if name != "alone":
            t.add_row(
                name,
                _prf(v["simhash"]),
                _prf(v["simhash_or_sentences"]),
                str(v["added_tp"]),
                str(v["added_fp"]),
            )
    console.print(t)


def _render_breakdown(
    report: dict[str, Any], set_name: str, entry: dict[str, Any], console: Any
) -> None:
    from rich.table import Table

    from lab.quality import Rule

    main = [Rule(k=k).label() for k in report["ks"]]
    main.append(Rule(long_verify=True, sentences=set_name == "documents").label())
    shown = [n for n in entry["systems"] if n in main or not n.startswith("simhash-pg")]
    for dim in ("lang", "kind", "edit", "band"):
        groups = entry["systems"][shown[0]][dim]
        t = Table(title=f"{set_name} by {dim}: P R F1", title_justify="left")
        t.add_column(dim)
        t.add_column("dup/non", justify="right")
        for n in shown:
            t.add_column(n)
        for g in groups:
            c0 = entry["systems"][shown[0]][dim][g]
            t.add_row(
                g,
                f"{c0['tp'] + c0['fn']}/{c0['fp'] + c0['tn']}",
                *[_prf(entry["systems"][n][dim][g]) for n in shown],
            )
        console.print(t)


def _render_sweep(set_name: str, entry: dict[str, Any], console: Any) -> None:
    from rich.table import Table

    sweeps = entry["sweep"]
    t = Table(
        title=f"{set_name}: Hamming distance histogram and k sweep (P R F1 at <= k)",
        title_justify="left",
    )
    t.add_column("k", justify="right")
    names = list(sweeps)
    first = names[0]
    t.add_column("dup", justify="right")
    t.add_column("non", justify="right")
    for n in names:
        short = "ours" if n == first else n
        t.add_column(f"{short}" if n != first else "ours (fingerprint only)")
        if "verified" in sweeps[n] and n == first:
            t.add_column("ours + verify")
    hist_d = sweeps[first]["histogram"]["duplicate"]
    hist_n = sweeps[first]["histogram"]["non_duplicate"]
    for k in range(17):
        row = [str(k), str(hist_d[k]), str(hist_n[k])]
        for n in names:
            row.append(_prf(sweeps[n]["plain"][str(k)]))
            if "verified" in sweeps[n] and n == first:
                row.append(_prf(sweeps[n]["verified"][str(k)]))
        t.add_row(*row)
    t.add_row("17-64", str(sum(hist_d[17:])), str(sum(hist_n[17:])))
    console.print(t)
    for n in names:
        s = sweeps[n]
        line = (
            f"{n}: AUC {s['auc']}; best F1 at k={s['best_plain']['best_f1_k']} "
            f"({_prf(s['best_plain']['best_f1'])}); largest k with P>=0.97: "
            f"{s['best_plain']['max_k_at_precision']}"
        )
        if "best_verified" in s:
            bv = s["best_verified"]
            line += f"; with verification best F1 at k={bv['best_f1_k']} ({_prf(bv['best_f1'])})"
        if "best_plain_long_ge_200" in s:
            bl = s["best_plain_long_ge_200"]
            line += (
                f"; >=200 chars: best F1 k={bl['best_f1_k']} ({_prf(bl['best_f1'])}), "
                f"P>=0.97 up to k={bl['max_k_at_precision']}"
            )
        console.print(line)


def markdown(report: dict[str, Any]) -> str:
    """The report's tables as GitHub markdown (for docs/quality.md)."""
    from lab.quality import Rule

    out: list[str] = []

    def table(head: list[str], rows: list[list[str]]) -> None:
        out.append("| " + " | ".join(head) + " |")
        out.append("|" + "|".join("---" for _ in head) + "|")
        out.extend("| " + " | ".join(r) + " |" for r in rows)
        out.append("")

    for set_name, entry in report["sets"].items():
        out.append(
            f"**{set_name}**: {entry['pairs']} pairs, {entry['duplicates']} duplicate (P R F1)\n"
        )
        head = ["system", "all pairs", "TP/FP/FN"]
        if set_name == "documents":
            head.append(">= 200 chars")
        rows = []
        for name, dims in entry["systems"].items():
            a = dims["all"]["all"]
            row = [name, _prf(a), f"{a['tp']}/{a['fp']}/{a['fn']}"]
            if set_name == "documents":
                row.append(_prf(entry["long_ge_200"][name]))
            rows.append(row)
        table(head, rows)
        shown = [Rule(k=k).label() for k in report["ks"]]
        shown.append(Rule(long_verify=True, sentences=set_name == "documents").label())
        shown += [n for n in entry["systems"] if not n.startswith("simhash-pg")]
        shown = [n for n in shown if n in entry["systems"]]
        for dim in ("lang", "kind", "edit", "band"):
            out.append(f"{set_name} by {dim} (P R F1)\n")
            groups = entry["systems"][shown[0]][dim]
            rows = []
            for g in groups:
                c0 = groups[g]
                rows.append(
                    [
                        g,
                        f"{c0['tp'] + c0['fn']}/{c0['fp'] + c0['tn']}",
                        *[_prf(entry["systems"][n][dim][g]) for n in shown],
                    ]
                )
            table([dim, "dup/non", *shown], rows)
        sweeps = entry["sweep"]
        first = next(iter(sweeps))
        hd, hn = (
            sweeps[first]["histogram"]["duplicate"],
            sweeps[first]["histogram"]["non_duplicate"],
        )
        out.append(f"{set_name}: distance histogram (ours) and P R F1 at distance <= k\n")
        names = list(sweeps)
        head = ["k", "dup at k", "non at k", "ours", "ours + verify", *names[1:]]
        rows = []
        for k in range(17):
            rows.append(
                [
                    str(k),
                    str(hd[k]),
                    str(hn[k]),
                    _prf(sweeps[first]["plain"][str(k)]),
                    _prf(sweeps[first]["verified"][str(k)]),
                    *[_prf(sweeps[n]["plain"][str(k)]) for n in names[1:]],
                ]
            )
        rows.append(
            ["17-64", str(sum(hd[17:])), str(sum(hn[17:])), "", "", *["" for _ in names[1:]]]
        )
        table(head, rows)
        for n in names:
            b = sweeps[n]["best_plain"]
            out.append(
                f"- {n}: AUC {sweeps[n]['auc']}, best F1 at k={b['best_f1_k']} "
                f"({_prf(b['best_f1'])}), largest k with P >= 0.97: "
                f"{b['max_k_at_precision']}"
            )
        out.append("")
        if "sentences" in entry:
            out.append("documents: n-longest-sentences signature OR-ed with SimHash\n")
            rows = [["signature alone", "", _prf(entry["sentences"]["alone"]), "", ""]]
            for name, v in entry["sentences"].items():
                if name != "alone":
                    rows.append(
                        [
                            name,
                            _prf(v["simhash"]),
                            _prf(v["simhash_or_sentences"]),
                            str(v["added_tp"]),
                            str(v["added_fp"]),
                        ]
                    )
            table(["SimHash", "alone", "OR signature", "added TP", "added FP"], rows)
    return "\n".join(out)


# --------------------------------------------------------------------------
# the command


@click.command("eval")
@click.option(
    "--eval-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder with pairs.jsonl / pairs_short.jsonl and the texts "
    "(default: shared/eval beside the repository, when present).",
)
@click.option(
    "--k",
    "ks",
    type=click.IntRange(0, 64),
    multiple=True,
    help="k under test for the main rows (repeatable; default 3 and 9).",
)
@click.option(
    "--scheme",
    "schemes",
    multiple=True,
    help="Fingerprint scheme(s); the first goes through the store, the others "
    "get a k sweep (default: the default scheme).",
)
@click.option(
    "--peers/--no-peers",
    default=True,
    show_default=True,
    help="Also measure PyPI simhash and datasketch MinHashLSH.",
)
@click.option(
    "--store/--no-store",
    default=True,
    show_default=True,
    help="Decide through a real store (add_many, near_many) or from the fingerprints alone (fast).",
)
@click.option(
    "--dsn",
    envvar="SIMHASH_PG_DSN",
    default=None,
    help="A dedicated, empty database for the eval store (default: a fresh "
    f"{EVAL_DB} database on the embedded server).",
)
@click.option(
    "--json",
    "json_out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the full results as JSON to this file.",
)
@click.option(
    "--sample",
    type=click.IntRange(1, None),
    default=None,
    help="Use a stratified random sample of this many pairs per set.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for --sample.")
@click.option(
    "--workers",
    type=click.IntRange(1, None),
    default=None,
    help="Fingerprinting processes (default: automatic).",
)
@click.option(
    "--markdown",
    "md_out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the tables as markdown to this file.",
)
@click.option(
    "--store-verify",
    "store_verify",
    type=click.Choice(["off", "short", "all"]),
    multiple=True,
    help="Verify modes to measure through SimhashStore.near_many (repeatable; "
    "default: short and all; --store only).",
)
@click.option("--brief", is_flag=True, help="Only the summary and k sweep tables.")
def command(
    eval_dir: Path | None,
    ks: tuple[int, ...],
    schemes: tuple[str, ...],
    peers: bool,
    store: bool,
    dsn: str | None,
    json_out: Path | None,
    sample: int | None,
    seed: int,
    workers: int | None,
    md_out: Path | None,
    store_verify: tuple[str, ...],
    brief: bool,
) -> None:
    """Precision, recall and F1 on labelled pairs, with two peer libraries."""
    from rich.console import Console

    from lab.quality import resolve_eval_dir

    try:
        directory = resolve_eval_dir(eval_dir)
    except FileNotFoundError as exc:
        raise click.UsageError(str(exc)) from exc
    err = Console(stderr=True)

    def progress(msg: str) -> None:
        err.print(f"[dim]{msg}[/dim]")

    report = build_report(
        directory,
        schemes=list(schemes) or [None],
        ks=list(ks) or list(MAIN_KS),
        peers=peers,
        store=store,
        dsn=dsn,
        sample=sample,
        seed=seed,
        workers=workers,
        progress=progress,
        store_verify=store_verify or ("short", "all"),
    )
    render(report, Console(width=max(Console().width, 160)), detail=not brief)
    if json_out is not None:
        json_out.write_text(
            json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
        )
    if md_out is not None:
        md_out.write_text(markdown(report) + "\n", encoding="utf-8")
    sys.stdout.flush()
