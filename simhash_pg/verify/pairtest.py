"""One pair's test: the fingerprint part (distance or signature), then the text part.

What :class:`simhash_pg.verify.rule.VerifyPolicy` decides for a pair is a
:class:`PairTest`; :func:`judge` applies it to one candidate or, vectorised, to
the evaluation's pairs, so the store and the eval run the same test.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

__all__ = ["PairTest", "by_distance", "judge", "passes_fingerprint"]


class PairTest(NamedTuple):
    """What a pair must meet: the fingerprint part, then the text part."""

    radius: int  # Hamming distance <= radius passes the fingerprint part...
    signature: bool  # ...and so does an equal sentence signature, when True
    threshold: float | None  # similarity must reach it; None: not measured


def judge(test: PairTest, distance: Any, signature_match: Any, measure: Callable[[], Any]) -> Any:
    """Whether pairs meet ``test``: ``(distance <= radius or signature) and similarity``.

    Scalars (one candidate) or NumPy arrays (the evaluation's pairs) alike.
    ``measure()`` gives the similarity; for a scalar pair it is called only
    when the fingerprint part passed, since it is the costly part.
    """
    near = passes_fingerprint(test, distance, signature_match)
    if test.threshold is None:
        return near
    if near is False:
        return False
    return near & (measure() >= test.threshold)


def passes_fingerprint(test: PairTest, distance: Any, signature_match: Any) -> Any:
    """The fingerprint part of ``test``: ``distance <= radius or signature``."""
    return (distance <= test.radius) | (signature_match & test.signature)


# The test of a pair no similarity can pass: a short query against a row whose
# text was not kept (it is long, and a long text cannot reach the short threshold).
_NEVER = PairTest(-1, False, None)


def by_distance(k: int) -> PairTest:
    """The test of a pair whose texts are not compared: ``distance <= k``."""
    return PairTest(k, False, None)
