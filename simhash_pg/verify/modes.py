"""The verify modes, as a table of what each one does.

A mode says which text queries the rule re-checks and which texts a writer
keeps for it. :class:`~simhash_pg.verify.rule.VerifyPolicy` reads these facts
and nothing else of the mode's name, so a new mode is one more row here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, Literal, get_args

from simhash_pg.verify.limits import KEEP_TEXT_CHARS

__all__ = ["DEFAULT_VERIFY", "MODES", "VERIFY_MODES", "ModeFacts", "VerifyMode",
           "check_mode", "stronger"]

VerifyMode = Literal["off", "short", "all"]


@dataclass(frozen=True)
class ModeFacts:
    """What one verify mode does."""

    # pairs with a short side are re-checked by the rule (else distance <= k alone)
    verifies_short: bool
    # two long texts are re-checked too; then (and only then) a long text query
    # uses the sentence keys, the margin-ranked probes and the probe cap, and a
    # title's keys make candidates (an unverified signature cost more precision
    # than it gained recall: docs/quality.md)
    verifies_long: bool
    # a writer keeps the verification texts shorter than this (0: none);
    # None: every text, with its sentence signature and hashes
    keep_below: int | None


# In order of how much text a writer keeps (stronger() relies on it).
MODES: Final[Mapping[VerifyMode, ModeFacts]] = MappingProxyType({
    "off": ModeFacts(verifies_short=False, verifies_long=False, keep_below=0),
    "short": ModeFacts(verifies_short=True, verifies_long=False, keep_below=KEEP_TEXT_CHARS),
    "all": ModeFacts(verifies_short=True, verifies_long=True, keep_below=None),
})
VERIFY_MODES: tuple[VerifyMode, ...] = get_args(VerifyMode)  # the same order (a test checks)

# The mode of a new store made without one (store/opening.py), and of a policy
# made without one. Measured on ../shared/eval through the store, "all" is the
# only mode that meets the long-text targets (P 1.000, R 0.982 against R 0.395
# at k = 3 unverified; docs/quality.md). A long text query (a title too)
# probes PROBE_T margin-ranked values per block with a cap of PROBE_CAP plus
# its sentence keys (LOOKUP_BUDGET look-ups), and its add takes only shared
# and per-value locks (store/locking.py).
DEFAULT_VERIFY: VerifyMode = "all"


def check_mode(mode: object) -> VerifyMode:
    """``mode`` if it names a verify mode, else ValueError."""
    if mode not in MODES:
        raise ValueError(f"verify mode must be one of {', '.join(VERIFY_MODES)}, got {mode!r}")
    return mode  # type: ignore[return-value]


def stronger(a: VerifyMode, b: VerifyMode) -> VerifyMode:
    """The mode that keeps more text: what a writer keeps when two modes meet."""
    return a if VERIFY_MODES.index(a) >= VERIFY_MODES.index(b) else b
