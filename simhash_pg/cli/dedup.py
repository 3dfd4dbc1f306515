"""``simhash-pg dedup``: the main job.

Reads documents, adds them to the store with dedup on (against what is
stored and within the input), and writes the unique documents, a duplicates
report and a summary. Work is committed batch by batch, so Ctrl-C, SIGTERM,
--strict or a lost connection keep everything done so far, and a rerun
resumes by key. A record the store cannot hold (a bad key) is skipped and
reported like a malformed line.
"""

from __future__ import annotations

import csv
import json
import sys
import time
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import BrokenExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import click
import psycopg

from simhash_pg.cli.common import EXIT_OK, EXIT_SKIPPED, EXIT_STOPPED, fail, open_store
from simhash_pg.cli.inputs import BadRecord, InputError, Record, read_inputs
from simhash_pg.cli.options import SchemeSpec, input_options, store_options, workers_option
from simhash_pg.cli.signals import StopRequested, StopSignals
from simhash_pg.text.normalize import fix_surrogates
from simhash_pg.textrules import check_key

if TYPE_CHECKING:
    from simhash_pg.store import AddResult, SimhashStore

REPORT_FIELDS = ("key", "where", "duplicate_of", "duplicate_key", "distance", "text")
SNIPPET = 200


class StrictStop(Exception):
    def __init__(self, where: str, reason: str) -> None:
        super().__init__(f"{where}: {reason}")
        self.where = where


@dataclass
class Summary:
    read: int = 0
    unique: int = 0  # newly stored or already stored under its key
    new: int = 0
    duplicates: int = 0
    errors: int = 0
    seconds: float = 0.0
    last_committed: str | None = None
    stopped: str | None = None  # why the run ended early, if it did
    interrupted: bool = False  # by a signal (or KeyboardInterrupt)
    pairs: list[tuple[Record, AddResult]] = field(default_factory=list)
    stored: dict[int, Record] = field(default_factory=dict)  # id -> record, with keep_pairs

    def line(self) -> str:
        rate = self.read / self.seconds if self.seconds > 0 else 0.0
        return (f"read {self.read:,}, unique {self.unique:,} ({self.new:,} new), "
                f"duplicates {self.duplicates:,}, errors {self.errors:,}; "
                f"{rate:,.0f} docs/s in {self.seconds:.1f} s")


class _Writer:
    """Unique documents or report rows as JSON Lines, CSV or plain lines, by file name.

    Strings are written by the fingerprint's text rule (lone surrogates
    become U+FFFD), so no record can stop a write halfway.
    """

    def __init__(self, fh: IO[str], path: str, fields: Sequence[str]) -> None:
        self.fh = fh
        suffix = Path(path).suffix.lower()
        self.kind = {".csv": "csv", ".tsv": "tsv", ".txt": "txt"}.get(suffix, "jsonl")
        self.fields = list(fields)
        self.csv: Any = None
        if self.kind in ("csv", "tsv"):
            self.csv = csv.DictWriter(fh, self.fields, extrasaction="ignore",
                                      delimiter="\t" if self.kind == "tsv" else ",")
            self.csv.writeheader()

    def write(self, row: dict[str, Any]) -> None:
        if self.csv is not None:
            self.csv.writerow({k: fix_surrogates(v) if isinstance(v, str) else v
                               for k, v in row.items()})
        elif self.kind == "txt":
            self.fh.write(fix_surrogates(" ".join(str(row.get("text", "")).split())) + "\n")
        else:
            # a lone surrogate in a dumped line can only come from a string in the row
            self.fh.write(fix_surrogates(json.dumps(row, ensure_ascii=False)) + "\n")


def run_dedup(
    store: SimhashStore,
    records: Iterator[Record | BadRecord],
    *,
    out: _Writer | None = None,
    report: _Writer | None = None,
    strict: bool = False,
    batch_size: int = 2000,
    workers: int | None = None,
    keep_pairs: bool = False,
    on_progress: Any = None,
    on_bad: Any = None,
    link: bool = False,
    signals: StopSignals | None = None,
) -> Summary:
    """Feed ``records`` through ``store.add_many`` and account for every one.

    After the first of ``signals`` the run reads no further record: the
    documents in hand are committed as the last batch and their results
    written. A second signal stops at once (the batch in flight is rolled back).
    """
    from simhash_pg.store import Doc

    summary = Summary()
    pending: deque[Record] = deque()

    def stop(why: str | None) -> bool:
        if why is not None:
            summary.stopped, summary.interrupted = why, True
        return why is not None

    def docs() -> Iterator[Doc]:
        it = iter(records)
        while True:
            if signals is not None and stop(signals.reason):
                return
            try:
                item = next(it) if signals is None else signals.pull(it)
            except StopIteration:
                return
            except StopRequested:  # while waiting for input, e.g. on stdin
                stop(signals.reason if signals is not None else "interrupted")
                return
            if isinstance(item, Record):
                try:
                    check_key(item.key)  # the store's rule, checked before the batch
                except ValueError as exc:
                    item = BadRecord(item.where, str(exc))
            if isinstance(item, BadRecord):
                summary.read += 1
                summary.errors += 1
                if on_bad is not None:
                    on_bad(item.where, item.reason)
                if strict:
                    raise StrictStop(item.where, item.reason)
                continue
            pending.append(item)
            yield Doc(item.text, key=item.key)

    def on_batch(results: Sequence[AddResult]) -> None:
        bad: StrictStop | None = None
        for res in results:
            rec = pending.popleft()
            summary.read += 1
            error = getattr(res, "error", None)
            if error:
                summary.errors += 1
                if on_bad is not None:
                    on_bad(rec.where, error)
                if strict and bad is None:
                    bad = StrictStop(rec.where, error)
            elif res.duplicate_of is None:
                summary.unique += 1
                summary.new += bool(res.inserted)
                if keep_pairs and res.id is not None:
                    summary.stored[res.id] = rec
                if out is not None:
                    out.write(rec.fields if rec.fields is not None
                              else {"key": rec.key, "text": rec.text})
            else:
                summary.duplicates += 1
                if keep_pairs:
                    summary.pairs.append((rec, res))
                if report is not None:
                    report.write({
                        "key": rec.key, "where": rec.where, "duplicate_of": res.duplicate_of,
                        "duplicate_key": getattr(res, "duplicate_key", None),
                        "distance": res.distance, "text": rec.text[:SNIPPET],
                    })
            summary.last_committed = rec.where
        if on_progress is not None:
            on_progress(summary)
        if bad is not None:
            raise bad

    start = time.perf_counter()
    try:
        store.add_many(docs(), dedup=True, batch_size=batch_size, workers=workers,
                       progress=on_batch, on_duplicate="link" if link else "skip")
    except KeyboardInterrupt:
        stop((signals.reason if signals is not None else None) or "interrupted")
    except StrictStop as exc:
        summary.stopped = f"--strict: {exc}"
    except BrokenExecutor as exc:
        # a fingerprinting process was killed (SIGTERM to the process group,
        # the OOM killer): this batch is not committed, the earlier ones are
        if not stop(signals.reason if signals is not None else None):
            summary.stopped = f"a fingerprinting process died: {exc}"
    except psycopg.Error as exc:
        # A lost connection, a server error or a lock wait past its limit
        # (LockTimeoutError is one): what was committed stays, and the caller
        # reports where the run stopped instead of a traceback.
        summary.stopped = f"database error: {str(exc).strip().splitlines()[0]}"
    finally:
        summary.seconds = time.perf_counter() - start
        # Records read but not committed are counted as not read: the rerun reads them.
    return summary


@click.command("dedup")
@click.argument("inputs", nargs=-1, required=True)
@store_options
@input_options
@click.option("--key-field", default=None,
              help="JSONL/CSV field holding the key (default: key, id or url, else file:line).")
@click.option("--out", "out_path", type=click.Path(dir_okay=False, writable=True),
              help="Write the unique documents here (.jsonl, .csv, .tsv or .txt).")
@click.option("--report", "report_path", type=click.Path(dir_okay=False, writable=True),
              help="Write the duplicates report here (.jsonl, .csv or .tsv).")
@workers_option("Fingerprinting processes (default: all cores).")
@click.option("--batch-size", type=click.IntRange(1, 1_000_000), default=2000,
              show_default=True, help="Documents per committed batch.")
@click.option("--link", is_flag=True,
              help="Store near-duplicates too, with duplicate_of set (default: report them "
                   "and store only the first).")
@click.option("--strict", is_flag=True, help="Stop at the first bad record instead of skipping.")
@click.option("--quiet", "-q", is_flag=True, help="Print only the summary.")
def command(inputs: tuple[str, ...], dsn: str | None, scheme: SchemeSpec, k: int | None,
            verify: str | None, fmt: str | None, text_field: str, key_field: str | None,
            out_path: str | None, report_path: str | None, workers: int | None,
            batch_size: int, link: bool, strict: bool, quiet: bool) -> None:
    """Deduplicate INPUTS (files, directories, or - for stdin) into the store.

    Each document is added with dedup on: a near-duplicate of a stored document,
    or of an earlier one in the input, is reported instead of stored. Reruns are
    idempotent by key. Exit codes: 0 done, 1 done with skipped records, 2 usage
    error, 3 stopped early by --strict or an error, 130 interrupted (Ctrl-C),
    143 terminated (SIGTERM); in every case the batches committed so far stay
    stored. Ctrl-C or SIGTERM stops after the batch in hand; a second one at once.
    """
    for path in inputs:
        if path != "-" and not Path(path).exists():
            fail(f"{path}: no such file or directory")
    records = read_inputs(inputs, fmt=fmt, text_field=text_field, key_field=key_field)

    def on_bad(where: str, reason: str) -> None:
        if not quiet:
            click.echo(f"{where}: {reason} (skipped)", err=True)

    # Around the outputs and the summary too: a signal while they are flushed,
    # closed or printed only asks for a stop that is under way.
    with StopSignals() as signals:
        with ExitStack() as stack:
            store = stack.enter_context(open_store(dsn, scheme, k, verify))
            out = report = None
            if out_path:
                fh = stack.enter_context(open(out_path, "w", encoding="utf-8", newline=""))
                out = _Writer(fh, out_path, ("key", "text"))
            if report_path:
                fh = stack.enter_context(open(report_path, "w", encoding="utf-8", newline=""))
                report = _Writer(fh, report_path, REPORT_FIELDS)
            progress = stack.enter_context(_progress(enabled=not quiet and sys.stderr.isatty()))
            try:
                summary = run_dedup(store, records, out=out, report=report, strict=strict,
                                    batch_size=batch_size, workers=workers, link=link,
                                    on_progress=progress, on_bad=on_bad,
                                    signals=signals)
            except InputError as exc:
                fail(str(exc))

        click.echo(summary.line())
        if summary.stopped:
            where = summary.last_committed or "before the first batch"
            click.echo(f"stopped ({summary.stopped}); committed through {where}. "
                       f"Run the same command again to resume.", err=True)
            sys.exit(signals.exit_code if summary.interrupted else EXIT_STOPPED)
        sys.exit(EXIT_SKIPPED if summary.errors else EXIT_OK)


class _progress:
    """A rich progress line on a terminal; nothing otherwise."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.bar: Any = None
        self.task: Any = None
        self.start = time.perf_counter()

    def __enter__(self) -> _progress:
        if self.enabled:
            from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

            self.bar = Progress(SpinnerColumn(), TextColumn("{task.description}"),
                                TimeElapsedColumn(), transient=True)
            self.bar.__enter__()
            self.task = self.bar.add_task("starting")
        return self

    def __call__(self, summary: Summary) -> None:
        if self.bar is not None:
            rate = summary.read / max(time.perf_counter() - self.start, 1e-9)
            self.bar.update(self.task, description=(
                f"{summary.read:,} read, {summary.duplicates:,} duplicates, "
                f"{summary.errors:,} errors, {rate:,.0f} docs/s"))

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
