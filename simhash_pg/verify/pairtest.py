"""One pair's test: the fingerprint part (distance or signature), then the text part.

What :class:`simhash_pg.verify.rule.VerifyPolicy` decides for a pair is a
:class:`PairTest`; :meth:`PairTest.judge` applies it to one candidate or,
vectorised, to the evaluation's pairs, so the store and the eval run the same test.

:func:`by_distance` is the test of a pair whose texts are not compared: a
fingerprint query, a text the mode does not verify, a row whose text was
lost. It is also what ``simhash_add`` (sql/current/add.sql) decides in SQL
for a fingerprint: the nearest row within k.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

__all__ = ["NEVER", "PairTest", "by_distance"]


class PairTest(NamedTuple):
    """What a pair must meet: the fingerprint part, then the text part."""

    radius: int  # Hamming distance <= radius passes the fingerprint part...
    signature: bool  # ...and so does an equal sentence signature, when True
    threshold: float | None  # similarity must reach it; None: not measured

    def judge(self, distance: Any, signature_match: Any, measure: Callable[[], Any]) -> Any:
        """Whether pairs meet this test: ``(distance <= radius or signature) and similarity``.

        Scalars (one candidate) or NumPy arrays (the evaluation's pairs) alike.
        ``measure()`` gives the similarity; for a scalar pair it is called only
        when the fingerprint part passed, since it is the costly part.
        """
        near = self.reaches(distance, signature_match)
        if self.threshold is None:
            return near
        if near is False:
            return False
        return near & (measure() >= self.threshold)

    def reaches(self, distance: Any, signature_match: Any) -> Any:
        """The fingerprint part alone: ``distance <= radius or signature``. Not a
        verdict when :attr:`threshold` is set (the text part decides after it)."""
        return (distance <= self.radius) | (signature_match & self.signature)


# The test of a pair no similarity can pass: a short query against a row whose
# text was not kept (it is long, and a long text cannot reach the short threshold).
NEVER = PairTest(-1, False, None)


def by_distance(k: int) -> PairTest:
    """The test of a pair whose texts are not compared: ``distance <= k``."""
    return PairTest(k, False, None)
