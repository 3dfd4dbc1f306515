"""The numbers of the duplicate rule that do not depend on its version: radii, probes, budgets.

Each carries the measurement behind it (docs/quality.md, lab/experiments/).
A store records the ones that shape what it holds (simhash_meta 'probes');
:class:`~simhash_pg.verify.rule.VerifyPolicy` takes them as its defaults.

The two numbers of the block layout that the SQL repeats, ``DEFAULT_K`` and
``PIGEONHOLE_K``, are :mod:`simhash_pg.bits`'s.
"""

from __future__ import annotations

from typing import Final

from simhash_pg.verify.jaccard import SHORT_TEXT_CHARS

__all__ = [
    "KEEP_TEXT_CHARS",
    "LONG_K",
    "LOOKUP_BUDGET",
    "PROBE_CAP",
    "PROBE_LEAD",
    "PROBE_PAIRS",
    "PROBE_T",
    "SHORT_K",
]

# Measured on pairs_short.jsonl (docs/quality.md): F1 of "Hamming <= k and
# Jaccard >= threshold" is 0.927 at k = 11 (0.918 on a second draw of the set)
# and creeps up only slowly beyond; k <= 11 still needs only 2-bit probes per
# 16-bit block in the store, like k = 8.
SHORT_K: Final = 11
# Long texts, when verification guards them. k = 11 is the largest k that
# still needs only 2-bit probes per block (k = 12 needs 3-bit probes: about 4x
# slower per query, measured). With the sentence signature OR-ed in (and
# verified too), texts of 200+ characters reach P 0.989, R 0.957 on two draws
# of the eval set (docs/quality.md); without it R is 0.949-0.950.
LONG_K: Final = 11
# Margin-ranked probes (simhash_pg/text/probes.py, lab/experiments/margin_probes.md):
# under "all", a long text query probes, per 16-bit block, its PROBE_T
# cheapest values by squared vote margins (its own value first) with a Hamming
# cap of PROBE_CAP, plus the sentence signature and each of its three longest
# sentences (revision 0015): 48 look-ups instead of radius 11's 548, recall
# through the store 0.982 on the eval's long pairs (0.964 without the three). A cap of
# 11 loses recall (0.934 at T = 10): the probes reach farther than radius 11
# in the bits that matter. The store records both in simhash_meta ('probes').
# T = 8 since revision 0018 (11 before; lab/experiments/probe_budget.py).
PROBE_T: Final = 8
PROBE_CAP: Final = 13
# Since revision 0019 a long text (no title keys) probes pairs of blocks, this
# many values per block (simhash_pg.text.probes.probe_meets; docs/design.md,
# "Probe forms"): 32 until revision 0024, 64 since. Since 0024 only the first
# PROBE_LEAD of block i's values lead a pair (the btree reads the pages under
# each leading value; block i+1's values cost little): 12 leading of 64 kept
# recall where 8 or 16 of 32 did not, at 0.56-0.58x the probes' cost at 10M
# rows (docs/scaling.md, "Pairs led by fewer values").
PROBE_PAIRS: Final = 64
PROBE_LEAD: Final = 12
# What one probed text query may look up: its key look-ups first (signature,
# sentence hashes, a title's keys: exact and specific), and the probes get the
# rest, 4 per value of T (one per block), at least the own block values. A
# long text has at most 4 keys, so T stays PROBE_T; a title with many gap keys
# probes fewer values (VerifyPolicy.probe_count).
LOOKUP_BUDGET: Final = 48
# With verification only for short texts, a store needs the verification text
# of documents below this length: a pair with a short side and a side at least
# twice as long cannot reach SHORT_THRESHOLD, so longer texts need no copy.
KEEP_TEXT_CHARS: Final = 2 * SHORT_TEXT_CHARS
