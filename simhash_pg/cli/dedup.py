"""``simhash-pg dedup``: the main job.

Reads documents, adds them to the store with dedup on (against what is
stored and within the input), and writes the unique documents, a duplicates
report and a summary. The near-duplicates are stored too, linked to the
document each duplicates (``--skip``: not stored), so the store can show
every pair it reported: docs/web.md, "Groups after dedup", says why. Work
is committed batch by batch, so Ctrl-C, SIGTERM, --strict or a lost
connection keep everything done so far, and a rerun resumes by key. A
record the store cannot hold (a bad key) is skipped and reported like a
malformed line.
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
from itertools import islice
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import click
import psycopg

from simhash_pg.cli.common import EXIT_OK, EXIT_SKIPPED, EXIT_STOPPED, fail, open_store
from simhash_pg.cli.inputs import (
    BadRecord,
    InputError,
    ReadProgress,
    Record,
    Skipped,
    check_inputs,
    input_bytes,
    read_inputs,
)
from simhash_pg.cli.options import (
    SchemeSpec,
    input_options,
    keep_text_option,
    output_kind,
    output_option,
    store_options,
    workers_option,
)
from simhash_pg.cli.progress import ProgressLine
from simhash_pg.cli.signals import StopRequested, StopSignals
from simhash_pg.labels import shared_value
from simhash_pg.text.normalize import fix_surrogates
from simhash_pg.textrules import check_key

if TYPE_CHECKING:
    from simhash_pg.store import AddResult, SimhashStore

# A report row is one near-duplicate: key, where and text are its own; kept_id and
# kept_key name the stored document it is a near-duplicate of, shared is the rule's
# similarity of the two (labels.shared_value; empty where the rule measures none) and
# distance the fingerprints' (error: why a record was skipped).
REPORT_FIELDS = ("key", "where", "kept_id", "kept_key", "shared", "distance", "text", "error")
SNIPPET = 200
SHOWN_ERRORS = 20  # skipped records printed on stderr; the report lists them all
FIRST_BATCH = 100  # documents in the first committed batch; each next one twice as many


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
        self.kind = output_kind(path)
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
    from simhash_pg.store.evidence import shares

    summary = Summary()
    # every record handed on, in order; a known key carries its result already
    pending: deque[tuple[Record, AddResult | None]] = deque()
    lookup = ExitStack()
    # the rule's similarity of each duplicate about to be accounted, by id(result)
    shared: dict[int, float | None] = {}

    def in_order(results: Sequence[AddResult]) -> Iterator[tuple[Record, AddResult]]:
        """The records the next accounting takes, with their results (pending is not changed)."""
        it = iter(results)
        for rec, known in pending:
            res = known if known is not None else next(it, None)
            if res is None:
                return
            yield rec, res

    def measure(results: Sequence[AddResult]) -> None:
        """The report's shares of the duplicates about to be accounted: one read of their texts."""
        shared.clear()
        if report is None:
            return
        dups: list[AddResult] = []
        pairs: list[tuple[int | str, int]] = []
        for rec, res in in_order(results):
            if res.duplicate_of is None or res.error:
                continue
            dups.append(res)
            # a linked duplicate or a known key is stored: its kept text is read, not remade
            stored = res.id if res.inserted or res.existing_key else None
            pairs.append((rec.text if stored is None else stored, res.duplicate_of))
        shared.update((id(res), x) for res, x in zip(dups, shares(store, pairs), strict=True))

    def stop(why: str | None) -> bool:
        if why is not None:
            summary.stopped, summary.interrupted = why, True
        return why is not None

    def known_keys(chunk: list[Record]) -> dict[str, AddResult]:
        """The stored rows of the chunk's keys: a rerun skips them before fingerprinting.

        On a connection of its own: the store's may be inside a batch.
        """
        keys = [r.key for r in chunk if r.key is not None]
        if not keys or key_reader is None:
            return {}
        return key_reader.known(keys)

    def hand_on(chunk: list[Record]) -> Iterator[Doc]:
        known = known_keys(chunk)
        for rec in chunk:
            res = known.get(rec.key) if rec.key is not None else None
            pending.append((rec, res))
            if res is None:
                yield Doc(rec.text, key=rec.key)
        chunk.clear()

    def docs() -> Iterator[Doc]:
        it = iter(records)
        chunk: list[Record] = []
        while True:
            if signals is not None and stop(signals.reason):
                break
            try:
                item = next(it) if signals is None else signals.pull(it)
            except StopIteration:
                break
            except StopRequested:  # while waiting for input, e.g. on stdin
                stop(signals.reason if signals is not None else "interrupted")
                break
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
            chunk.append(item)
            if len(chunk) >= batch_size:
                yield from hand_on(chunk)
        yield from hand_on(chunk)  # the documents in hand, also after a stop

    def account(rec: Record, res: AddResult) -> StrictStop | None:
        summary.read += 1
        summary.last_committed = rec.where
        error = getattr(res, "error", None)
        if error:
            summary.errors += 1
            if on_bad is not None:
                on_bad(rec.where, error)
            return StrictStop(rec.where, error) if strict else None
        if res.duplicate_of is None:
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
                share = shared.get(id(res))
                report.write({
                    "key": rec.key, "where": rec.where, "kept_id": res.duplicate_of,
                    "kept_key": getattr(res, "duplicate_key", None),
                    "shared": None if share is None else shared_value(share),
                    "distance": res.distance, "text": rec.text[:SNIPPET],
                })
        return None

    def known_in_front() -> None:
        """Account the known keys at the head of the queue: nothing before them is pending."""
        while pending and pending[0][1] is not None:
            rec, res = pending.popleft()
            assert res is not None
            account(rec, res)

    def on_batch(results: Sequence[AddResult]) -> None:
        measure(results)
        bad: StrictStop | None = None
        for res in results:
            known_in_front()
            rec, _ = pending.popleft()
            bad = bad or account(rec, res)
        known_in_front()
        if on_progress is not None:
            on_progress(summary)
        if bad is not None:
            raise bad

    # None (no second connection allowed): every record goes through add_many
    key_reader = store.key_reader()
    if key_reader is not None:
        lookup.enter_context(key_reader)

    start = time.perf_counter()
    try:
        # Batches grow from FIRST_BATCH to batch_size, so that a run smaller than
        # one batch still shows progress; the boundaries change no decision
        # (a batch decides in input order, as single adds would).
        todo = docs()
        size = min(FIRST_BATCH, batch_size)
        while batch := list(islice(todo, size)):
            if on_progress is not None:  # the batch is read: say so while it is fingerprinted
                on_progress(summary)
            store.add_many(batch, dedup=True, batch_size=size, workers=workers,
                           progress=on_batch, on_duplicate="link" if link else "skip")
            size = min(size * 2, batch_size)
        measure([])
        known_in_front()  # known keys after the last new document
        if on_progress is not None:
            on_progress(summary)
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
        lookup.close()
        summary.seconds = time.perf_counter() - start
        # Records read but not committed are counted as not read: the rerun reads them.
    return summary


@click.command("dedup")
@click.argument("inputs", nargs=-1, required=True)
@store_options
@input_options
@click.option("--key-field", default=None,
              help="JSONL/CSV field holding the key (default: key, id or url, else file:line).")
@output_option("--out", "out_path",
               "Write the unique documents here (.jsonl, .csv, .tsv or .txt).")
@output_option("--report", "report_path",
               "Write the duplicates report here (.jsonl, .csv or .tsv).")
@workers_option("Fingerprinting processes (default: all cores).")
@click.option("--batch-size", type=click.IntRange(1, 1_000_000), default=2000,
              show_default=True,
              help="Documents per committed batch (the first ones are smaller: 100, 200, "
                   "... so that progress shows early).")
@click.option("--link/--skip", default=True, show_default=True,
              help="--link: store near-duplicates too, with duplicate_of set, so the store "
                   "(its web page's groups, near, SQL) holds every document and each pair; "
                   "--skip: store only the documents kept (a smaller store).")
@keep_text_option()
@click.option("--strict", is_flag=True, help="Stop at the first bad record instead of skipping.")
@click.option("--quiet", "-q", is_flag=True, help="Print only the summary.")
def command(inputs: tuple[str, ...], dsn: str | None, scheme: SchemeSpec, k: int | None,
            verify: str | None, fmt: str | None, text_field: str, all_files: bool,
            key_field: str | None, out_path: str | None, report_path: str | None,
            workers: int | None, batch_size: int, link: bool, keep_text: bool, strict: bool,
            quiet: bool) -> None:
    """Deduplicate INPUTS (files, directories, or - for stdin) into the store.

    A .jsonl/.csv/.tsv file holds a document per record and a .txt file one per
    line; any other file named here is one document (or JSON Lines, if its first
    line is a JSON object). In a directory each .txt, .md, .html file and each
    text file without an extension is one document (--all-files: every text file).
    Each document is added with dedup on: a near-duplicate of a stored document,
    or of an earlier one in the input, is reported, and stored linked to it
    (duplicate_of; --skip: not stored). --out gets the others. Reruns are
    idempotent by key. Exit codes: 0 done, 1 done with skipped records (or
    nothing read because every file of the input directories was skipped), 2 usage
    error, 3 stopped early by --strict or an error, 130 interrupted (Ctrl-C),
    143 terminated (SIGTERM); in every case the batches committed so far stay
    stored. Ctrl-C or SIGTERM stops after the batch in hand; a second one at once.
    """
    for path in inputs:
        if path != "-" and not Path(path).exists():
            fail(f"{path}: no such file or directory")
    try:
        # a whole file that cannot be read stops the run before anything is stored
        check_inputs(inputs, fmt=fmt, text_field=text_field)
    except InputError as exc:
        fail(str(exc))
    reading = ReadProgress(total=input_bytes(inputs))
    skipped = Skipped()
    records = read_inputs(inputs, fmt=fmt, text_field=text_field, key_field=key_field,
                          progress=reading, all_files=all_files, skipped=skipped)
    shown_errors = 0
    report: _Writer | None = None

    def on_bad(where: str, reason: str) -> None:
        nonlocal shown_errors
        if report is not None:
            report.write({"where": where, "error": reason})
        if not quiet and shown_errors < SHOWN_ERRORS:
            shown_errors += 1
            click.echo(f"{where}: {reason} (skipped)", err=True)

    # Around the outputs and the summary too: a signal while they are flushed,
    # closed or printed only asks for a stop that is under way.
    with StopSignals() as signals:
        with ExitStack() as stack:
            store = stack.enter_context(open_store(dsn, scheme, k, verify,
                                                   keep_text=keep_text))
            out = None
            if out_path:
                fh = stack.enter_context(open(out_path, "w", encoding="utf-8", newline=""))
                out = _Writer(fh, out_path, ("key", "text"))
            if report_path:
                fh = stack.enter_context(open(report_path, "w", encoding="utf-8", newline=""))
                report = _Writer(fh, report_path, REPORT_FIELDS)
            progress = stack.enter_context(ProgressLine(not quiet and sys.stderr.isatty(),
                                                        reading))
            try:
                summary = run_dedup(store, records, out=out, report=report, strict=strict,
                                    batch_size=batch_size, workers=workers, link=link,
                                    on_progress=progress, on_bad=on_bad,
                                    signals=signals)
            except InputError as exc:
                fail(str(exc))

        click.echo(summary.line())
        if summary.errors > shown_errors and not quiet:
            where = f"all listed in {report_path}" if report_path else \
                "--report FILE lists them all"
            click.echo(f"... and {summary.errors - shown_errors:,} more skipped records "
                       f"({where})", err=True)
        if skipped:
            click.echo(f"simhash-pg: note: {skipped.note()}", err=True)
        if summary.read == 0 and not summary.stopped:
            click.echo("simhash-pg: warning: the input holds no documents", err=True)
            if skipped:  # nothing read because of what was left out: not a success
                sys.exit(EXIT_SKIPPED)
        if summary.stopped:
            where = (f"committed through {summary.last_committed}" if summary.last_committed
                     else "nothing committed")
            click.echo(f"stopped ({summary.stopped}); {where}. "
                       f"Run the same command again to resume.", err=True)
            sys.exit(signals.exit_code if summary.interrupted else EXIT_STOPPED)
        sys.exit(EXIT_SKIPPED if summary.errors else EXIT_OK)

