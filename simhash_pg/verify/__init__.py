"""Verification: which index candidates are near-duplicates, decided by one rule.

- :mod:`~simhash_pg.verify.rule`: :class:`VerifyPolicy`, the rule as a store
  applies it; every question a verify mode raises (keep the text? widen k?
  use the sentence signature?) and the one decision, :meth:`VerifyPolicy.accept`;
- :mod:`~simhash_pg.verify.versions`: the rule's versions, one
  :class:`TextRule` each (what two texts must share), :attr:`VerifyPolicy.text_rule`;
- :mod:`~simhash_pg.verify.modes`: the verify modes as a table of facts;
- :mod:`~simhash_pg.verify.limits`: radii, probes, budgets;
- :mod:`~simhash_pg.verify.pairtest`: one pair's test and its verdict;
- :mod:`~simhash_pg.verify.jaccard`: verification texts and their n-gram
  Jaccard (rule 1's similarity);
- :mod:`~simhash_pg.verify.overlap`: the labelling rule's overlap measure
  (rule 2's, new stores);
- :mod:`~simhash_pg.verify.candidates`: the filtering of looked-up candidates
  by the policy, for single and batch paths alike (the look-up itself is
  :mod:`simhash_pg.store.lookup`: nothing here reads the database).
"""

from simhash_pg.verify.candidates import Candidate, filter_candidates
from simhash_pg.verify.jaccard import (
    LONG_NGRAM,
    SHORT_NGRAM,
    SHORT_TEXT_CHARS,
    VText,
    alnum_only,
    is_short,
    sentence_keys,
    shingles,
    similarity,
    verification_text,
)
from simhash_pg.verify.limits import (
    KEEP_TEXT_CHARS,
    LONG_K,
    LOOKUP_BUDGET,
    PROBE_CAP,
    PROBE_LEAD,
    PROBE_PAIRS,
    PROBE_T,
    SHORT_K,
)
from simhash_pg.verify.modes import DEFAULT_VERIFY, MODES, VERIFY_MODES, VerifyMode, stronger
from simhash_pg.verify.pairtest import PairTest
from simhash_pg.verify.rule import TEXT_LOST, StoredText, VerifyPolicy, policy_for
from simhash_pg.verify.versions import (
    LONG_THRESHOLD,
    RULE_VERSION,
    RULES,
    SHORT_THRESHOLD,
    TEXT_RULES,
    TextRule,
)

__all__ = [
    "DEFAULT_VERIFY",
    "KEEP_TEXT_CHARS",
    "LONG_K",
    "LONG_NGRAM",
    "LONG_THRESHOLD",
    "LOOKUP_BUDGET",
    "MODES",
    "PROBE_CAP",
    "PROBE_LEAD",
    "PROBE_PAIRS",
    "PROBE_T",
    "RULES",
    "RULE_VERSION",
    "SHORT_K",
    "SHORT_NGRAM",
    "SHORT_TEXT_CHARS",
    "SHORT_THRESHOLD",
    "TEXT_LOST",
    "TEXT_RULES",
    "VERIFY_MODES",
    "Candidate",
    "PairTest",
    "StoredText",
    "TextRule",
    "VText",
    "VerifyMode",
    "VerifyPolicy",
    "alnum_only",
    "filter_candidates",
    "is_short",
    "policy_for",
    "sentence_keys",
    "shingles",
    "similarity",
    "stronger",
    "verification_text",
]
