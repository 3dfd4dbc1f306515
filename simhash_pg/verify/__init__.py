"""Verification: which index candidates are near-duplicates, decided by one rule.

- :mod:`~simhash_pg.verify.rule`: the duplicate rule and :class:`VerifyPolicy`,
  which answers every question a verify mode raises (keep the text? widen k?
  use the sentence signature?);
- :mod:`~simhash_pg.verify.jaccard`: verification texts and their n-gram
  Jaccard;
- :mod:`~simhash_pg.verify.candidates`: the filtering of looked-up candidates
  by the rule, for single and batch paths alike (the look-up itself is
  :mod:`simhash_pg.store.lookup`: nothing here reads the database);
- :mod:`~simhash_pg.verify.overlap`: the labelling rule's overlap measure,
  the similarity of rule version 2 (new stores).
"""

from simhash_pg.verify.candidates import Candidate, filter_candidates
from simhash_pg.verify.jaccard import (
    LONG_NGRAM,
    SHORT_NGRAM,
    SHORT_TEXT_CHARS,
    VText,
    alnum_only,
    is_short,
    ngram_for,
    sentence_keys,
    shingles,
    similarity,
    verification_text,
)
from simhash_pg.verify.pairtest import PairTest, judge
from simhash_pg.verify.rule import (
    KEEP_TEXT_CHARS,
    LONG_K,
    LONG_THRESHOLD,
    LOOKUP_BUDGET,
    PROBE_CAP,
    PROBE_PAIRS,
    PROBE_T,
    RULE_VERSION,
    RULES,
    SHORT_K,
    SHORT_THRESHOLD,
    TEXT_LOST,
    VERIFY_MODES,
    StoredText,
    VerifyMode,
    VerifyPolicy,
    accept,
    is_near_duplicate,
    keep_text,
    policy_for,
    query_k,
    stronger,
    threshold_for,
)

__all__ = [
    "KEEP_TEXT_CHARS",
    "LONG_K",
    "LONG_NGRAM",
    "LONG_THRESHOLD",
    "LOOKUP_BUDGET",
    "PROBE_CAP",
    "PROBE_PAIRS",
    "PROBE_T",
    "RULES",
    "RULE_VERSION",
    "SHORT_K",
    "SHORT_NGRAM",
    "SHORT_TEXT_CHARS",
    "SHORT_THRESHOLD",
    "TEXT_LOST",
    "VERIFY_MODES",
    "Candidate",
    "PairTest",
    "StoredText",
    "VText",
    "VerifyMode",
    "VerifyPolicy",
    "accept",
    "alnum_only",
    "filter_candidates",
    "is_near_duplicate",
    "is_short",
    "judge",
    "keep_text",
    "ngram_for",
    "policy_for",
    "query_k",
    "sentence_keys",
    "shingles",
    "similarity",
    "stronger",
    "threshold_for",
    "verification_text",
]
