"""The duplicate rule, written once, and the policy of a verify mode.

A 64-bit SimHash of a 20-character title has too few features to be reliable:
one changed character moves it by 5-15 bits, and unrelated titles can land
close. So for short texts the store widens k (to :data:`SHORT_K`) and keeps
only candidates whose *exact* similarity passes a threshold. The same check
can guard long texts too (:data:`LONG_K`, or the probes' cap).

Which similarity is the rule's version (:data:`RULES`), recorded per store
in ``simhash_meta`` ('rule'):

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

The rule is :meth:`VerifyPolicy.test` (which distance, signature and
similarity a pair must meet) applied by :func:`judge`. Everything decides
through it: the single add and ``near`` (:mod:`simhash_pg.verify.candidates`),
the batch's in-batch matches (``simhash_pg/store/batch.py``) and the
evaluation's vectorised :meth:`VerifyPolicy.decide` (``lab/quality.py``).

    >>> from simhash_pg.verify.jaccard import verification_text
    >>> a = verification_text("Stocks rally as oil falls")
    >>> is_near_duplicate(a, a)
    True
    >>> VerifyPolicy("all").accept(a, a, 11, 3)
    True
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal, cast

import numpy as np
import numpy.typing as npt

from simhash_pg.verify.jaccard import (
    SHORT_TEXT_CHARS,
    TITLE_KEY_TEXT_CHARS,
    VText,
    from_norm,
    from_norm_sig,
    is_short,
    similarity,
)
from simhash_pg.verify.overlap import OVERLAP_THRESHOLD, overlap, overlap_many
from simhash_pg.verify.pairtest import (
    _NEVER,
    PairTest,
    by_distance,
    judge,
    passes_fingerprint,
)

__all__ = [
    "KEEP_TEXT_CHARS",
    "LONG_K",
    "LONG_THRESHOLD",
    "LOOKUP_BUDGET",
    "PROBE_CAP",
    "PROBE_PAIRS",
    "PROBE_T",
    "RULES",
    "RULE_VERSION",
    "SHORT_K",
    "SHORT_THRESHOLD",
    "TEXT_LOST",
    "VERIFY_MODES",
    "StoredText",
    "VerifyMode",
    "VerifyPolicy",
    "accept",
    "is_near_duplicate",
    "keep_text",
    "policy_for",
    "query_k",
    "stronger",
    "threshold_for",
]

# Measured on pairs_short.jsonl (docs/quality.md): F1 of "Hamming <= k and
# Jaccard >= threshold" is 0.927 at k = 11 (0.918 on a second draw of the set)
# and creeps up only slowly beyond; k <= 11 still needs only 2-bit probes per
# 16-bit block in the store, like k = 8.
SHORT_K = 11
SHORT_THRESHOLD = 0.72
# Long texts, when verification guards them. k = 11 is the largest k that
# still needs only 2-bit probes per block (k = 12 needs 3-bit probes: about 4x
# slower per query, measured). With the sentence signature OR-ed in (and
# verified too), texts of 200+ characters reach P 0.989, R 0.957 on two draws
# of the eval set (docs/quality.md); without it R is 0.949-0.950.
LONG_K = 11
LONG_THRESHOLD = 0.78
# Margin-ranked probes (simhash_pg/text/probes.py, lab/experiments/margin_probes.md):
# under "all", a long text query probes, per 16-bit block, its PROBE_T
# cheapest values by squared vote margins (its own value first) with a Hamming
# cap of PROBE_CAP, plus the sentence signature and each of its three longest
# sentences (revision 0015): 48 look-ups instead of radius 11's 548, recall
# through the store 0.982 on the eval's long pairs (0.964 without the three). A cap of
# 11 loses recall (0.934 at T = 10): the probes reach farther than radius 11
# in the bits that matter. The store records both in simhash_meta ('probes').
# T = 8 since revision 0018 (11 before; lab/experiments/probe_budget.py).
PROBE_T = 8
PROBE_CAP = 13
# Since revision 0019 a long text (no title keys) probes pairs of blocks, this
# many values per block (simhash_pg.text.probes.probe_meets; why 32, and what 16
# loses: docs/design.md, "Probe forms").
PROBE_PAIRS = 32
# What one probed text query may look up: its key look-ups first (signature,
# sentence hashes, a title's keys: exact and specific), and the probes get the
# rest, 4 per value of T (one per block), at least the own block values. A
# long text has at most 4 keys, so T stays PROBE_T; a title with many gap keys
# probes fewer values (VerifyPolicy.probe_count).
LOOKUP_BUDGET = 48
# With verification only for short texts, a store needs the verification text
# of documents below this length: a pair with a short side and a side at least
# twice as long cannot reach SHORT_THRESHOLD, so longer texts need no copy.
KEEP_TEXT_CHARS = 2 * SHORT_TEXT_CHARS

# The rule's versions (module docstring); a new store records RULE_VERSION,
# a store made before the record existed keeps 1 (store/opening.py).
RULES: tuple[int, ...] = (1, 2)
RULE_VERSION = 2

VerifyMode = Literal["off", "short", "all"]
VERIFY_MODES: tuple[VerifyMode, ...] = ("off", "short", "all")


class _Lost(enum.Enum):
    TEXT_LOST = "text lost"


# A stored row whose verification data is gone: stored before revision 0003
# made the columns, or before a downgrade past 0003 dropped them (the texts
# are not kept, so they cannot be recomputed). Unlike None ("not kept: too
# long for the mode, or a bare fingerprint"), it says nothing about length.
TEXT_LOST: Final = _Lost.TEXT_LOST
# What a stored row offers verification: its text, None or TEXT_LOST.
StoredText = str | None | Literal[_Lost.TEXT_LOST]


def threshold_for(a_norm: str, b_norm: str) -> float:
    """Rule 1's Jaccard threshold for a pair (short if either side is short)."""
    return SHORT_THRESHOLD if is_short(a_norm) or is_short(b_norm) else LONG_THRESHOLD


def is_near_duplicate(
    query_norm: str, candidate_norm: str, *, threshold: float | None = None
) -> bool:
    """Whether two verification texts pass rule 1's Jaccard test alone (no distance)."""
    t = threshold_for(query_norm, candidate_norm) if threshold is None else threshold
    return similarity(query_norm, candidate_norm) >= t


@dataclass(frozen=True)
class VerifyPolicy:
    """Everything a verify mode decides, asked in one place.

    ``mode`` is how text queries are verified: ``"off"`` (Hamming distance
    <= k only), ``"short"`` (pairs with a side under
    :data:`~simhash_pg.verify.jaccard.SHORT_TEXT_CHARS` characters) or
    ``"all"`` (long pairs too). ``recorded`` is the mode the database
    records: writers keep the texts of the stronger of the two (``keep``), so
    a reader that asks for less never starves one that asks for more.

    ``short_k``, ``long_k`` and ``signature`` are the store's unless an
    experiment varies them: ``signature`` (default: mode ``"all"``) says
    whether an equal sentence signature makes a long pair a candidate.
    ``probe_t`` and ``probe_cap`` are the margin-ranked probes of long text
    queries under ``"all"`` (:meth:`probe_budget`); ``probe_t`` None
    searches them at radius ``long_k`` instead (the rule before probes).
    ``rule`` is the rule's version (:data:`RULES`): which similarity
    (:meth:`similarity`) a pair must reach, and how much (:meth:`threshold`).
    """

    mode: VerifyMode = "short"
    recorded: VerifyMode | None = None
    short_k: int = SHORT_K
    long_k: int = LONG_K
    signature: bool | None = None
    probe_t: int | None = PROBE_T
    probe_cap: int = PROBE_CAP
    probe_pairs: int | None = PROBE_PAIRS
    rule: int = RULE_VERSION
    keep: VerifyMode = field(init=False)

    def __post_init__(self) -> None:
        for m in (self.mode, self.recorded):
            if m is not None and m not in VERIFY_MODES:
                raise ValueError(
                    f"verify mode must be one of {', '.join(VERIFY_MODES)}, got {m!r}"
                )
        object.__setattr__(self, "keep", stronger(self.mode, self.recorded or self.mode))
        if self.signature is None:
            object.__setattr__(self, "signature", self.mode == "all")
        t, cap = self.probe_t, self.probe_cap
        if t is not None and (isinstance(t, bool) or not isinstance(t, int) or t < 1):
            raise ValueError(f"the probe budget must be None or an int >= 1, got {t!r}")
        if isinstance(cap, bool) or not isinstance(cap, int) or not 0 <= cap <= 64:
            raise ValueError(f"the probe cap must be an int in 0..64, got {cap!r}")
        pp = self.probe_pairs
        if pp is not None and (isinstance(pp, bool) or not isinstance(pp, int) or pp < 1):
            raise ValueError(f"the pair probes must be None or an int >= 1, got {pp!r}")
        if isinstance(self.rule, bool) or self.rule not in RULES:
            raise ValueError(f"the rule version must be one of {RULES}, got {self.rule!r}")

    # -- which look-up a text query uses --------------------------------------
    @property
    def probes_texts(self) -> bool:
        """Whether some text queries use margin-ranked probes (so texts need probe values)."""
        return self.mode == "all" and self.probe_t is not None

    def probe_budget(self, query_norm: str, k: int) -> int | None:
        """Probe values per block for this text query, or None: search it by radius.

        Probes under ``"all"`` for every text at k <= 3, where every row
        within k shares a block value with the query (pigeonhole), which is
        always probed; a wider k keeps its exact radius. Titles too: on the
        eval's short pairs the long texts' T and cap match radius
        :data:`SHORT_K` (F1 0.924 against 0.926; lab/experiments/margin_probes.md)
        at 44 look-ups instead of 548, and their adds need no store-wide lock.
        ``query_norm`` is kept for callers that ask per text.
        """
        del query_norm  # every text alike (it decided before titles were probed)
        if not self.probes_texts or k > 3:
            return None
        return self.probe_t

    @property
    def probe_depth(self) -> int:
        """How many ranked values per block a probed text needs computed."""
        if self.probe_t is None:
            raise ValueError("this policy does not probe texts")
        return max(self.probe_t, self.probe_pairs or 0)

    def probes_pairs(self, vtext: str) -> bool:
        """Whether a probed text with this verification text probes pairs of blocks
        (a long text, in a store that records pair probes: :data:`PROBE_PAIRS`)."""
        return self.probe_pairs is not None and len(vtext) >= TITLE_KEY_TEXT_CHARS

    def probe_count(self, sig: int | None, hashes: Sequence[int]) -> int:
        """Probe values per block of a probed text with these sentence keys.

        :data:`LOOKUP_BUDGET` look-ups in all: the keys the query looks up
        (under ``signature``), then 4 per probe value per block, at most
        ``probe_t`` and at least 1 (the own block values: pigeonhole at k <= 3).
        """
        if self.probe_t is None:
            raise ValueError("this policy does not probe texts")
        keys = ((sig is not None) + len(hashes)) if self.signature else 0
        return max(1, min(self.probe_t, (LOOKUP_BUDGET - keys) // 4))

    def with_probes(
        self, vt: VText, probes: tuple[list[int], list[int], list[int], list[int]]
    ) -> VText:
        """``vt`` with the first :meth:`probe_count` of each block's ranked ``probes``
        (:attr:`probe_pairs` of them when it :meth:`probes_pairs`: a pair costs a
        few index pages, not a share of the store, so the look-up budget does
        not trim them)."""
        t = (self.probe_pairs if self.probe_pairs is not None and self.probes_pairs(vt.text)
             else self.probe_count(vt.sig, vt.hashes))
        return vt._replace(probes=(probes[0][:t], probes[1][:t], probes[2][:t], probes[3][:t]))

    # -- what a mode needs of a text ------------------------------------------
    @property
    def verifies(self) -> bool:
        """Whether text queries are re-checked by the rule (else distance <= k alone)."""
        return self.mode != "off"

    @property
    def needs_text(self) -> bool:
        """Whether a text document's :class:`VText` is needed (to verify or to keep)."""
        return self.mode != "off" or self.keep != "off"

    @property
    def needs_signature(self) -> bool:
        """Whether a text's sentence signature is needed (to look up or to keep)."""
        return bool(self.signature) or self.keep == "all"

    @property
    def prepare(self) -> Callable[[str], VText]:
        """Normalised text -> VText, as this policy needs it (module-level, for workers)."""
        return from_norm_sig if self.needs_signature else from_norm

    def keeps_text(self, norm: str) -> bool:
        """Whether a writer keeps this verification text."""
        return self.keep == "all" or (self.keep == "short" and len(norm) < KEEP_TEXT_CHARS)

    def stored_fields(
        self, v: VText | None
    ) -> tuple[str | None, int | None, list[int] | None]:
        """The (verify_text, sentence_sig, sentence_hashes) a row stores."""
        if v is None or self.keep == "off":
            return None, None, None
        if self.keep != "all":
            return (v.text if self.keeps_text(v.text) else None), None, None
        return v.text, v.sig, (list(v.hashes) or None)

    # -- the rule -------------------------------------------------------------
    def similarity(self, a_norm: str, b_norm: str) -> float:
        """The rule's similarity of two verification texts (n from their lengths)."""
        return similarity(a_norm, b_norm) if self.rule == 1 else overlap(a_norm, b_norm)

    def similarities(self, a_norm: str, b_norms: Sequence[str]) -> list[float]:
        """``[similarity(a_norm, b) for b in b_norms]``, measured in one pass where it can."""
        if self.rule == 1:
            return [similarity(a_norm, b) for b in b_norms]
        return overlap_many(a_norm, b_norms)

    def threshold(self, short: bool) -> float:
        """What :meth:`similarity` must reach, for a pair with a short side or two long texts."""
        if self.rule == 1:
            return SHORT_THRESHOLD if short else LONG_THRESHOLD
        return OVERLAP_THRESHOLD

    def test(self, k: int, short: bool, probed: bool = False) -> PairTest:
        """The test of a pair with a short side (``short``) or of two long texts.

        ``probed``: the query was searched by probes (:meth:`probe_budget`),
        so a pair's distance limit is the probe cap, not ``long_k`` or ``short_k``.
        """
        if short:
            if self.verifies:
                limit = self.probe_cap if probed and self.mode == "all" else self.short_k
                # under "all" a title's key (digits removed) is a sentence key
                # too (revision 0015): it makes a candidate, the rule decides
                return PairTest(max(k, limit), self.mode == "all" and bool(self.signature),
                                self.threshold(True))
            return by_distance(k)
        if self.mode == "all":
            limit = self.probe_cap if probed else self.long_k
            return PairTest(max(k, limit), bool(self.signature), self.threshold(False))
        return PairTest(k, bool(self.signature), None)

    def radius(self, query_norm: str, k: int) -> int:
        """The Hamming radius to ask the index for, so that :meth:`accept` sees every candidate.

        The widest test the query can meet: a query below
        :data:`KEEP_TEXT_CHARS` may pair with a short text; a longer one
        cannot reach the short threshold against one. Never less than ``k``;
        above 3, a writer takes the store-wide lock (store/locking.py). A
        probed query (:meth:`probe_budget`) reaches up to the cap.
        """
        probed = self.probe_budget(query_norm, k) is not None
        r = self.test(k, short=False, probed=probed).radius
        if len(query_norm) < KEEP_TEXT_CHARS:
            r = max(r, self.test(k, short=True, probed=probed).radius)
        return r

    def accept(
        self,
        query_norm: str,
        candidate: StoredText,
        distance: int,
        k: int,
        *,
        signature_match: bool = False,
        probed: bool = False,
    ) -> bool:
        """Whether a candidate the index returned is a near-duplicate of the query.

        - ``"off"``: ``distance <= k``, as a plain SimHash store.
        - a pair with a short side: ``distance <= max(k, SHORT_K)`` and
          :meth:`similarity` >= :meth:`threshold` (short);
        - two long texts under ``"short"``: ``distance <= k``;
        - two long texts under ``"all"``: (``distance <= max(k, LONG_K)`` or
          the sentence signatures match) and :meth:`similarity` >=
          :meth:`threshold` (long);
          ``probed`` (the query was searched by probes): ``distance <=
          max(k, probe_cap)`` instead of ``LONG_K``.

        ``candidate`` None means the store kept no text for the candidate
        (under ``"short"``: it is at least :data:`KEEP_TEXT_CHARS` long). A
        short query cannot reach the threshold against it, and two long texts
        fall back to ``distance <= k``. The signature only counts under
        ``"all"``: unverified, it cost more precision than it gained recall
        (docs/quality.md).

        ``candidate`` :data:`TEXT_LOST` means the row's text is unknown (its
        verification data was never stored or was dropped by a downgrade):
        the fingerprint alone decides, ``distance <= k``, as under ``"off"``,
        so that an identical text is still found.
        """
        return self.accept_many(query_norm, [(candidate, distance, signature_match)], k,
                                probed=probed)[0]

    def pair_test(self, query_norm: str, candidate: StoredText, k: int,
                  probed: bool = False) -> PairTest:
        """The test a query and one candidate must meet (:meth:`accept` explains the cases)."""
        if candidate is None and self.verifies and is_short(query_norm):
            return _NEVER  # a short query cannot reach the threshold against a long text
        if candidate is None or candidate is TEXT_LOST or not self.verifies:
            return by_distance(k)
        return self.test(k, is_short(query_norm) or is_short(candidate), probed)

    def accept_many(
        self,
        query_norm: str,
        candidates: Sequence[tuple[StoredText, int, bool]],
        k: int,
        *,
        probed: bool = False,
    ) -> list[bool]:
        """:meth:`accept` of each ``(candidate, distance, signature_match)``, in order.

        The similarities of the pairs whose fingerprint part passes are measured
        together (:meth:`similarities`): a text query's candidates share one pass.
        """
        tests = [self.pair_test(query_norm, c, k, probed) for c, _, _ in candidates]
        todo = [j for j, (t, (_, dist, sig)) in enumerate(zip(tests, candidates, strict=True))
                if t.threshold is not None and passes_fingerprint(t, dist, sig)]
        measured = dict(zip(todo, self.similarities(
            query_norm, [cast(str, candidates[j][0]) for j in todo]), strict=True))
        return [bool(judge(t, dist, sig, lambda j=j: measured[j]))  # type: ignore[misc]
                for j, (t, (_, dist, sig)) in enumerate(zip(tests, candidates, strict=True))]

    def decide(
        self,
        k: int,
        distance: npt.NDArray[np.int64],
        similarities: npt.NDArray[np.float64],
        short: npt.NDArray[np.bool_],
        signature_match: npt.NDArray[np.bool_] | None = None,
        probed: npt.NDArray[np.bool_] | None = None,
        probe_hit: npt.NDArray[np.bool_] | None = None,
    ) -> npt.NDArray[np.bool_]:
        """What a look-up and :meth:`accept` decide for many pairs, vectorised (the eval).

        ``similarities`` are this policy's :meth:`similarity` of each pair.
        ``probed``: the pair's query is searched by probes (:meth:`probe_budget`);
        ``probe_hit``: one of the candidate's block values is among the
        query's probe values. A probed query finds a candidate only by a probe
        hit within the cap, or by its signature; then :meth:`accept` decides,
        with ``probed`` set. Without them, every query is searched by radius.
        """
        sig = (np.zeros(distance.shape, dtype=bool) if signature_match is None
               else signature_match)
        pr = np.zeros(distance.shape, dtype=bool) if probed is None else probed
        if pr.any() and probe_hit is None:
            raise ValueError("probed pairs need probe_hit (is the candidate among the probes?)")
        out = np.zeros(distance.shape, dtype=bool)
        for side in (True, False):
            for by_probes in (False, True):
                passed = judge(self.test(k, side, by_probes), distance, sig, lambda: similarities)
                out = np.where((short == side) & (pr == by_probes), passed, out)
        if probe_hit is not None:
            within = probe_hit & (distance <= max(k, self.probe_cap))
            out &= ~pr | within | (sig & bool(self.signature))
        return out


def stronger(a: VerifyMode, b: VerifyMode) -> VerifyMode:
    """The mode that keeps more text: what a writer keeps when two modes meet."""
    return a if VERIFY_MODES.index(a) >= VERIFY_MODES.index(b) else b


_POLICIES = {m: VerifyPolicy(m) for m in VERIFY_MODES}


def policy_for(mode: VerifyMode | VerifyPolicy) -> VerifyPolicy:
    """The store's policy of a mode (a policy is returned as it is)."""
    if isinstance(mode, VerifyPolicy):
        return mode
    policy = _POLICIES.get(mode)
    if policy is None:
        raise ValueError(f"verify mode must be one of {', '.join(VERIFY_MODES)}, got {mode!r}")
    return policy


def keep_text(norm: str, mode: VerifyMode = "short") -> bool:
    """Whether a store in ``mode`` keeps this document's verification text."""
    return policy_for(mode).keeps_text(norm)


def query_k(query_norm: str, k: int, mode: VerifyMode = "short") -> int:
    """:meth:`VerifyPolicy.radius` of the store's policy of ``mode``."""
    return policy_for(mode).radius(query_norm, k)


def accept(
    query_norm: str,
    candidate_norm: StoredText,
    distance: int,
    k: int,
    mode: VerifyMode = "short",
    *,
    signature_match: bool = False,
    probed: bool = False,
) -> bool:
    """:meth:`VerifyPolicy.accept` of the store's policy of ``mode``."""
    return policy_for(mode).accept(query_norm, candidate_norm, distance, k,
                                   signature_match=signature_match, probed=probed)
