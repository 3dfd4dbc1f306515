"""The duplicate rule's versions: one :class:`TextRule` each, which the policy holds.

A version is what two verification texts must share to be near-duplicates:
a similarity, the n-grams it counts and the bar it must reach. A store
records its version in ``simhash_meta`` ('rule'); a store made before the
record existed keeps 1 (store/opening.py). The distances, probes and keys
that bring a pair before the rule are the verify mode's
(:class:`~simhash_pg.verify.rule.VerifyPolicy`), the same for every version.

1. n-gram Jaccard (:mod:`simhash_pg.verify.jaccard`): bigrams >=
   :data:`SHORT_THRESHOLD` for a pair with a short side, trigrams >=
   :data:`LONG_THRESHOLD` for two long texts; thresholds fitted to the eval
   set. The rule of every store made before version 2 existed, which keeps it.
2. (new stores) the labelling rule's own measure
   (:mod:`simhash_pg.verify.overlap`): overlap over the larger n-gram set
   >= 0.8, bigrams for a pair with a short side, 5-grams otherwise. It is the
   definition of a near-duplicate, so it has nothing to fit; where the two
   disagree, Jaccard was wrong by the definition (English 70% cuts accepted,
   a title with and without a long site prefix accepted).

    >>> from simhash_pg.verify.jaccard import verification_text
    >>> a = verification_text("Stocks rally as oil falls")
    >>> b = verification_text("Stocks rally as oil falls - BBC News")
    >>> TEXT_RULES[1].is_duplicate(a, b), TEXT_RULES[2].is_duplicate(a, b)
    (True, False)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from simhash_pg.verify import jaccard, overlap
from simhash_pg.verify.jaccard import is_short

__all__ = ["LONG_THRESHOLD", "RULES", "RULE_VERSION", "SHORT_THRESHOLD", "TEXT_RULES",
           "TextRule"]

# Rule 1's thresholds, fitted on the eval set (docs/quality.md): bigram Jaccard
# for a pair with a short side, trigram Jaccard for two long texts.
SHORT_THRESHOLD: Final = 0.72
LONG_THRESHOLD: Final = 0.78


@dataclass(frozen=True)
class TextRule:
    """One version of the rule: what two verification texts must share."""

    version: int
    measure: str  # what similarity measures: "Jaccard", "overlap"
    short_ngram: int  # the n-grams and the bar of a pair with a short side...
    short_threshold: float
    long_ngram: int  # ...and of two long texts
    long_threshold: float
    _similarity: Callable[[str, str], float]
    _similarities: Callable[[str, Sequence[str]], list[float]]

    def similarity(self, a_norm: str, b_norm: str) -> float:
        """The similarity of two verification texts (n from their lengths)."""
        return self._similarity(a_norm, b_norm)

    def similarities(self, a_norm: str, b_norms: Sequence[str]) -> list[float]:
        """``[similarity(a_norm, b) for b in b_norms]``, measured in one pass where it can."""
        return self._similarities(a_norm, b_norms)

    def ngram(self, a_norm: str, b_norm: str) -> int:
        """The n of the character n-grams :meth:`similarity` counts for this pair."""
        return self.short_ngram if is_short(a_norm) or is_short(b_norm) else self.long_ngram

    def threshold(self, short: bool) -> float:
        """What :meth:`similarity` must reach, for a pair with a short side or two long texts."""
        return self.short_threshold if short else self.long_threshold

    def is_duplicate(self, a_norm: str, b_norm: str) -> bool:
        """Whether two verification texts are near-duplicates by this rule's text part
        alone (no distance, no look-up: what the texts share, against the bar)."""
        short = is_short(a_norm) or is_short(b_norm)
        return self.similarity(a_norm, b_norm) >= self.threshold(short)


def _jaccard_many(a_norm: str, b_norms: Sequence[str]) -> list[float]:
    return [jaccard.similarity(a_norm, b) for b in b_norms]


TEXT_RULES: Final = MappingProxyType({
    1: TextRule(1, "Jaccard", jaccard.SHORT_NGRAM, SHORT_THRESHOLD,
                jaccard.LONG_NGRAM, LONG_THRESHOLD, jaccard.similarity, _jaccard_many),
    2: TextRule(2, "overlap", overlap.SHORT_NGRAM, overlap.OVERLAP_THRESHOLD,
                overlap.DOC_NGRAM, overlap.OVERLAP_THRESHOLD, overlap.overlap,
                overlap.overlap_many),
})
RULES: tuple[int, ...] = tuple(TEXT_RULES)
# The version a new store records.
RULE_VERSION: Final = 2
