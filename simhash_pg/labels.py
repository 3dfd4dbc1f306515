"""The words results are described with, in one place.

The CLI (``near``, ``dedup``'s report, ``demo``), the API's field docs and
the web page all describe a result with these, so that they say the same
thing with the same numbers:

- a text result leads with the rule's similarity, "92% shared": the share
  of the text the store's rule measures (rule 2: the n-gram overlap), which
  decides a text query against the rule's bar (80%);
- the Hamming distance of the fingerprints comes second, "distance 7";
- ``k`` is the radius of a fingerprint query: a fingerprint matches within
  distance k. A verified text query is decided by the rule; k only widens
  where its look-up goes.

A percentage is shown rounded down, so a share below the bar never reads as
reaching it (79.6% is "79% shared", under a bar of 80%).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from simhash_pg.verify.evidence import Evidence
    from simhash_pg.verify.rule import VerifyPolicy
    from simhash_pg.verify.versions import TextRule

__all__ = [
    "K_HELP",
    "bar",
    "beyond_k",
    "decided",
    "distance",
    "evidence_rows",
    "found_line",
    "k_unchanged",
    "measure",
    "none_found",
    "percent",
    "shared",
    "shared_value",
]

K_HELP = ("Hamming radius k: a fingerprint query matches within distance k. A text the "
          "store verifies is decided by its rule, the share of the text; for it k only "
          "widens where the look-up goes.")
BLOCK_NAMES = ("b0", "b1", "b2", "b3")


def percent(x: float) -> str:
    """``0.926`` -> ``"92%"``: rounded down (a share never reads as more than it is)."""
    return f"{math.floor(x * 100 + 1e-9):d}%"


def shared_value(x: float) -> float:
    """The similarity as a report gives it: the fraction, to 3 places, rounded down."""
    return math.floor(x * 1000 + 1e-9) / 1000


def shared(x: float) -> str:
    """``"92% shared"``: how a text result leads."""
    return f"{percent(x)} shared"


def distance(d: int) -> str:
    return f"distance {d}"


def measure(rule: int, ngram: int | None) -> str:
    """What the rule measures: ``"5-gram overlap"`` (rule 2), ``"trigram Jaccard"`` (rule 1)."""
    from simhash_pg.verify.versions import TEXT_RULES

    name = {2: "bigram", 3: "trigram"}.get(ngram or 0, f"{ngram}-gram")
    return f"{name} {TEXT_RULES[rule].measure}"


def bar(rule: TextRule) -> str:
    """The share a rule's near-duplicates reach: ``">= 80%"``, or both bars when they differ."""
    if rule.short_threshold == rule.long_threshold:
        return f">= {percent(rule.short_threshold)}"
    return (f">= {percent(rule.short_threshold)} (a pair with a short side) or "
            f"{percent(rule.long_threshold)} (two long texts)")


def found_line(n: int, *, text_query: bool, k: int, threshold: float | None) -> str:
    """The line above a list of results: how many, and what made them results."""
    if text_query and threshold is not None:
        what = "near-duplicate" if n == 1 else "near-duplicates"
        return f"{n} {what} by the store's rule (>= {percent(threshold)} shared)"
    what = "stored document" if n == 1 else "stored documents"
    return f"{n} {what} within distance k = {k} (the radius of a fingerprint query)"


def none_found(*, text_query: bool, k: int, threshold: float | None) -> str:
    """The line for no result."""
    if text_query and threshold is not None:
        return (f"no stored near-duplicate found by the store's rule (>= {percent(threshold)} "
                f"shared); k = {k}, the radius of a fingerprint query, only widens the look-up")
    return f"no stored document within distance {k} (--k)"


def k_unchanged(k: int, store_k: int, policy: VerifyPolicy, radius: int,
                threshold: float) -> str:
    """Why a ``--k`` found what the store's k finds for a verified text query."""
    return (f"--k {k} found what the store's k = {store_k} finds. k is the radius of a "
            f"fingerprint query. A text query under verify = {policy.mode} looks up "
            f"fingerprints within distance {radius} (and, under verify = all, texts sharing "
            f"a sentence or a min-hash key), and a match must reach >= {percent(threshold)} "
            f"shared (rule {policy.rule}): k only widens the look-up, the rule decides. "
            "With --verify off a text match is distance <= k alone; --fingerprint queries "
            "by distance only.")


def beyond_k(k: int, policy: VerifyPolicy, radius: int, threshold: float | None) -> str:
    """Why results lie farther apart than k, in the store's own numbers."""
    if threshold is None:
        return f"Pairs beyond k = {k}: none, with verify = {policy.mode}."
    return (f"Pairs beyond k = {k}: k is the radius of a fingerprint query. With verify = "
            f"{policy.mode} (rule {policy.rule}) a text looks up fingerprints up to distance "
            f"{radius} (and texts sharing a sentence or a min-hash key), and a pair is a "
            f"near-duplicate when the texts reach >= {percent(threshold)} shared: edits too "
            "large for k.")


# -- a pair's evidence -----------------------------------------------------------------


def _blocks(ids: list[int]) -> str:
    return ", ".join(BLOCK_NAMES[i] for i in ids)


def _pairs(ids: list[int]) -> str:
    """Pairs of blocks by their first block: 'b0+b1, b3+b0'."""
    return ", ".join(f"{BLOCK_NAMES[i]}+{BLOCK_NAMES[(i + 1) % 4]}" for i in ids)


def _bar(ev: Evidence) -> str:
    assert ev.threshold is not None
    return f"the bar of {percent(ev.threshold)} (rule {ev.rule}, {measure(ev.rule, ev.ngram)})"


def _why_no_texts(ev: Evidence) -> str:
    if not ev.query_text_kept:
        return "the store keeps no text for the querying document"
    if not ev.text_query:
        from simhash_pg.verify.modes import MODES, check_mode

        return ("a fingerprint query" if MODES[check_mode(ev.mode)].verifies_short
                else f"verify = {ev.mode}: fingerprints only")
    if not ev.text_kept:
        return "the store keeps no text for this document"
    return f"two long texts under verify = {ev.mode}"


def decided(ev: Evidence) -> str:
    """The verdict and what decided it."""
    if ev.verdict == "not found":
        keys = ("" if not ev.text_query
                else ", and no key finds it" if ev.keys else ", and no key met")
        how = (f"no probe met within {ev.reach} bits" if ev.lookup == "probes"
               else f"distance {ev.distance} is beyond its {ev.reach}")
        seen = (f"; the texts are {shared(ev.similarity)}, {_bar(ev)}"
                if ev.similarity is not None and ev.threshold is not None else "")
        return f"not found by the look-up: {how}{keys}{seen}"
    if ev.threshold is None:
        word = "near-duplicate" if ev.verdict == "duplicate" else "not a near-duplicate"
        cmp = "<=" if ev.verdict == "duplicate" else ">"
        return (f"{word}: {distance(ev.distance)} {cmp} k = {ev.k} "
                f"(distance alone: {_why_no_texts(ev)})")
    assert ev.similarity is not None
    if ev.verdict == "duplicate":
        return f"near-duplicate: {shared(ev.similarity)}, >= {_bar(ev)}"
    if ev.similarity >= ev.threshold:  # the fingerprint part failed
        return (f"not a near-duplicate: {shared(ev.similarity)}, but {distance(ev.distance)} "
                "is beyond the rule's reach and no key met")
    return f"not a near-duplicate: {shared(ev.similarity)}, below {_bar(ev)}"


def _found_by(ev: Evidence) -> str:
    out = []
    for how in ev.found_by:
        if how == "probe":
            where = (f"probe values at {_pairs(ev.probe_blocks)}"
                     if ev.probe_blocks and ev.probe_pairs
                     else f"probe values at {_blocks(ev.probe_blocks)}" if ev.probe_blocks
                     else f"its own block values at {_blocks(ev.equal_blocks)}")
            out.append(f"{where} ({distance(ev.distance)}, within the cap of {ev.reach})")
        elif how == "radius":
            out.append(f"the radius: {distance(ev.distance)} <= {ev.reach}")
        elif how == "signature":
            out.append("the sentence signature")
        else:
            out.append(f"a {how} key")
    return "; ".join(out) or "nothing"


def _keys(ev: Evidence) -> str:
    parts = ["equal sentence signatures"] if ev.signature else []
    kinds = Counter(m.kind for m in ev.keys)
    for kind, n in kinds.items():
        misses = [m for m in ev.keys if m.kind == kind and m.finds is False]
        part = f"{n} {kind} key{'s' if n != 1 else ''}"
        if misses:
            held = max(m.holders or 0 for m in misses)
            why = ("beyond the min-hash cap, or " if kind == "min-hash" else "") + \
                f"past the holder cap (held by up to {held} rows)"
            part += f" ({len(misses)} of them {why}: not a way in)"
        parts.append(part)
    return "; ".join(parts) or "none"


def _fingerprints(ev: Evidence) -> str:
    look = (f"probes within {ev.reach} bits" if ev.lookup == "probes"
            else f"radius {ev.reach}")
    equal = _blocks(ev.equal_blocks) or "none"
    return f"{distance(ev.distance)} of 64 bits; equal blocks: {equal}; k = {ev.k}; " \
           f"look-up: {look}"


def evidence_rows(ev: Evidence) -> list[tuple[str, str]]:
    """A pair's evidence as (label, words) rows: the CLI prints them, the web page lists them."""
    rows = [("decided", decided(ev)), ("found by", _found_by(ev))]
    if ev.text_query:
        rows.append(("keys met", _keys(ev)))
    rows.append(("fingerprints", _fingerprints(ev)))
    return rows
