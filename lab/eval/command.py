"""``simhash-pg eval``: precision, recall and F1 on a labelled near-duplicate set."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from lab.eval.render import markdown, render
from lab.eval.run import EVAL_DB, MAIN_KS, build_report
from simhash_pg.cli.options import dsn_option, k_option, workers_option
from simhash_pg.verify import VERIFY_MODES


@click.command("eval")
@click.option(
    "--eval-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder with pairs.jsonl / pairs_short.jsonl and the texts "
    "(default: shared/eval beside the repository, when present).",
)
@k_option("k under test for the main rows (repeatable; default 3 and 9).", name="ks",
          multiple=True)
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
@dsn_option(
    "A dedicated, empty database for the eval store (default: a fresh "
    f"{EVAL_DB} database on the embedded server)."
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
@workers_option("Fingerprinting processes (default: automatic).")
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
    type=click.Choice(VERIFY_MODES),
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
