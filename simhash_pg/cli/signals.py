"""SIGINT and SIGTERM, handled alike by every command that works in batches."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any, TypeVar

T = TypeVar("T")


class StopRequested(BaseException):
    """A signal came while :meth:`StopSignals.pull` waited for input."""


class StopSignals:
    """SIGINT (Ctrl-C) and SIGTERM, handled alike by every command that works in batches.

    Installed as a context manager. ``graceful=True``: the first signal only
    asks the command to stop after the batch in hand (``reason`` then says
    why, and the command's loop checks it), except that input read through
    :meth:`pull` stops at once, since it may wait forever for a line; a
    second signal stops at once, as KeyboardInterrupt. ``graceful=False``:
    KeyboardInterrupt at the first, as Python does for SIGINT. Either way
    ``exit_code`` is 128 + the signal (130 for SIGINT, 143 for SIGTERM). A
    signal the process was started with ignored (``nohup``, ``&``) stays
    ignored.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self, graceful: bool = True) -> None:
        self.graceful = graceful
        self.signum: int | None = None
        self._reading = False
        self._saved: dict[int, Any] = {}

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is None:
            self.signum = signum
            if self._reading and self.graceful:
                raise StopRequested
            if self.graceful:
                # os.write, not click.echo: the handler may run inside a write to stderr
                os.write(2, f"simhash-pg: {signal.Signals(signum).name}: stopping after this "
                            "batch (send it again to stop at once)\n".encode())
                return
        raise KeyboardInterrupt

    def pull(self, it: Iterator[T]) -> T:
        """``next(it)``, or StopRequested if the first signal comes meanwhile."""
        self._reading = True
        try:
            return next(it)
        finally:
            self._reading = False

    @property
    def reason(self) -> str | None:
        """Why to stop, once a signal came; else None."""
        if self.signum is None:
            return None
        return f"interrupted by {signal.Signals(self.signum).name}"

    @property
    def exit_code(self) -> int:
        return 128 + (self.signum or signal.SIGINT)

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                old = signal.getsignal(sig)
                if old is not signal.SIG_IGN:
                    self._saved[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, old in self._saved.items():
            signal.signal(sig, old if old is not None else signal.SIG_DFL)
        self._saved.clear()
