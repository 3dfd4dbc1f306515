"""``simhash-pg eval``, the tables: a report of :mod:`lab.eval.run`, on a console or as markdown."""

from __future__ import annotations

import math
from typing import Any


def _fmt(x: float | None) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


def _prf(c: dict[str, Any]) -> str:
    if c["tp"] + c["fn"] == 0:  # negatives only: precision and recall say nothing
        return f"FP {c['fp']}/{c['fp'] + c['tn']}"
    return f"{_fmt(c['precision'])} {_fmt(c['recall'])} {_fmt(c['f1'])}"


def render(report: dict[str, Any], console: Any, *, detail: bool = True) -> None:
    from rich.table import Table

    c = report["constants"]
    console.print(
        f"[bold]simhash-pg eval[/bold] {report['eval_dir']} via {report['via']}; "
        f"scheme {report['scheme']}; short texts < {c['SHORT_TEXT_CHARS']} chars: "
        f"k={c['SHORT_K']} + char-{c['SHORT_NGRAM']}-gram {c.get('MEASURE', 'Jaccard')} >= "
        f"{c['SHORT_THRESHOLD']}; long guard: k={c['LONG_K']} + char-{c['LONG_NGRAM']}-gram "
        f"{c.get('MEASURE', 'Jaccard')} >= {c['LONG_THRESHOLD']} (rule {c.get('RULE', 1)})"
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
    main.append(Rule(long_verify=True, sentences=True).label())
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
        shown.append(Rule(long_verify=True, sentences=True).label())
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
