"""``dedup``'s progress line: a rich line on a terminal, nothing otherwise.

It moves as the input is read, not only when a batch is committed: the
reading calls it after each record (:class:`ReadProgress.on_advance`), so a
run smaller than one batch shows its documents being read, then the
first batch fingerprinted and stored. With the input's size known (files and
directories, not stdin) it shows a bar and the time left. The bar is the
bytes of the input *done* (its records committed), not the bytes read: the
reading runs up to a key look-up's chunk (``--batch-size`` records) ahead, so a
bar of bytes read would jump to 100% at the start of a small run and sit there.
"""

from __future__ import annotations

import time
from collections import deque
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from simhash_pg.cli.inputs import ReadProgress


class Summary(Protocol):
    """What the line reads of dedup's Summary (a Protocol: dedup imports this module)."""

    read: int
    duplicates: int
    errors: int

# The reading redraws at most this often (seconds): rich draws 10 times a second anyway,
# and a record costs microseconds.
READ_REDRAW = 0.1


class ProgressLine:
    """A context manager; call it with the run's :class:`Summary` when a batch has been
    read and when it is committed."""

    def __init__(self, enabled: bool, reading: ReadProgress | None = None,
                 console: Any = None) -> None:
        self.enabled = enabled
        self.reading = reading
        self.console = console
        self.bar: Any = None
        self.task: Any = None
        self.summary: Summary | None = None  # the run's, once it has read a batch
        self.start = time.perf_counter()
        self.drawn = 0.0
        # (records read, bytes passed) as the reading went: the bytes of the records done
        self.marks: deque[tuple[int, int]] = deque([(0, 0)])

    def __enter__(self) -> ProgressLine:
        if self.enabled:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                Progress,
                SpinnerColumn,
                TaskProgressColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            sized = self.reading is not None and self.reading.total
            columns: list[Any] = [SpinnerColumn(), TextColumn("{task.description}")]
            if sized:
                columns += [BarColumn(), TaskProgressColumn(), TimeRemainingColumn()]
            # on stderr, where the run's messages go: the summary on stdout stays clean
            self.bar = Progress(*columns, TimeElapsedColumn(), transient=True,
                                console=self.console or Console(stderr=True))
            self.bar.__enter__()
            self.task = self.bar.add_task(
                self.describe(), total=self.reading.total if sized and self.reading else None)
            if self.reading is not None:
                self.reading.on_advance = self.read
        return self

    def describe(self) -> str:
        """What the line says: records read, then what the committed batches decided."""
        s = self.summary
        read = max(self.reading.records if self.reading is not None else 0,
                   s.read if s is not None else 0)
        if s is None or not s.read:
            return f"{read:,} read; fingerprinting and storing the first batch"
        rate = s.read / max(time.perf_counter() - self.start, 1e-9)
        return (f"{read:,} read, {s.read:,} done: {s.duplicates:,} duplicates, "
                f"{s.errors:,} errors, {rate:,.0f} docs/s")

    def read(self) -> None:
        """After a record is read: redraw now and then (the reading calls this)."""
        if self.bar is None or self.reading is None:
            return
        if self.reading.records > self.marks[-1][0]:  # not a skipped file's bytes alone
            self.marks.append((self.reading.records, self.reading.done))
        now = time.perf_counter()
        if now - self.drawn >= READ_REDRAW:
            self.drawn = now
            self.update()

    def done_bytes(self) -> int:
        """The bytes of the input up to the last record done (committed or skipped)."""
        assert self.reading is not None
        done = self.summary.read if self.summary is not None else 0
        if done >= self.reading.records:  # all read is done: the skipped files passed too
            return self.reading.done
        while len(self.marks) > 1 and self.marks[1][0] <= done:
            self.marks.popleft()
        return self.marks[0][1]

    def update(self, *, refresh: bool = False) -> None:
        completed = self.done_bytes() if self.reading is not None else None
        self.bar.update(self.task, completed=completed, description=self.describe(),
                        refresh=refresh)

    def __call__(self, summary: Summary) -> None:
        self.summary = summary
        if self.bar is not None:
            self.update(refresh=True)  # a batch read or committed: drawn at once

    def __exit__(self, *exc: object) -> None:
        if self.reading is not None:
            self.reading.on_advance = None
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
