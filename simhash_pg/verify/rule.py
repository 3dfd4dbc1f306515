"""The duplicate rule as a store applies it: :class:`VerifyPolicy`, one per verify mode.

A 64-bit SimHash of a 20-character title has too few features to be reliable:
one changed character moves it by 5-15 bits, and unrelated titles can land
close. So for short texts the store widens k (to
:data:`~simhash_pg.verify.limits.SHORT_K`) and keeps only candidates whose
*exact* similarity reaches the rule's bar. The same check can guard long
texts too (:data:`~simhash_pg.verify.limits.LONG_K`, or the probes' cap).

The parts, one module each:

- :mod:`~simhash_pg.verify.versions`: the rule's versions, one
  :class:`~simhash_pg.verify.versions.TextRule` each (what two texts must
  share), reached as :attr:`VerifyPolicy.text_rule`;
- :mod:`~simhash_pg.verify.modes`: the verify modes, a table of what each does;
- :mod:`~simhash_pg.verify.limits`: the radii, probe and budget numbers;
- :mod:`~simhash_pg.verify.pairtest`: what one pair must meet, and its verdict.

Everything that asks "is this a duplicate?" asks a policy: :meth:`VerifyPolicy.accept`
for the single add, ``near`` and the batch (:mod:`simhash_pg.verify.candidates`,
``simhash_pg/store/batch.py``), :meth:`VerifyPolicy.fingerprint_test` for the
batch's fingerprint-only rows (``simhash_pg/store/batch_index.py``), and the
evaluation's vectorised model (``lab/quality.py``'s ``decide``) applies its
:meth:`VerifyPolicy.test`, as do the demo and the evidence of a pair.

    >>> from simhash_pg.verify.jaccard import verification_text
    >>> a = verification_text("Stocks rally as oil falls")
    >>> VerifyPolicy("all").accept(a, [(a, 11, False), (None, 0, False)], 3)
    [True, False]
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal, cast

from simhash_pg.bits import PIGEONHOLE_K
from simhash_pg.verify.jaccard import (
    TITLE_KEY_TEXT_CHARS,
    VText,
    from_norm,
    from_norm_sig,
    is_short,
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
from simhash_pg.verify.modes import (
    DEFAULT_VERIFY,
    MODES,
    VERIFY_MODES,
    ModeFacts,
    VerifyMode,
    check_mode,
    stronger,
)
from simhash_pg.verify.pairtest import NEVER, PairTest, by_distance
from simhash_pg.verify.versions import RULE_VERSION, RULES, TEXT_RULES, TextRule

__all__ = ["TEXT_LOST", "Seen", "StoredText", "VerifyPolicy", "policy_for"]


class _Lost(enum.Enum):
    TEXT_LOST = "text lost"


# A stored row whose verification data is gone: stored before revision 0003
# made the columns, or before a downgrade past 0003 dropped them (the texts
# are not kept, so they cannot be recomputed). Unlike None ("not kept: too
# long for the mode, or a bare fingerprint"), it says nothing about length.
TEXT_LOST: Final = _Lost.TEXT_LOST
# What a stored row offers verification: its text, None or TEXT_LOST.
StoredText = str | None | Literal[_Lost.TEXT_LOST]
# A candidate as :meth:`VerifyPolicy.accept` reads it: (text, distance, signature_match).
Seen = tuple[StoredText, int, bool]


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
    ``rule`` is the rule's version (:data:`~simhash_pg.verify.versions.RULES`):
    :attr:`text_rule` is what two texts must share.

    ``facts`` is what the mode does (:data:`~simhash_pg.verify.modes.MODES`):
    the mode's name is read once, for them. ``text_rule`` is the rule's
    version (:data:`~simhash_pg.verify.versions.TEXT_RULES`).
    """

    mode: VerifyMode = DEFAULT_VERIFY
    recorded: VerifyMode | None = None
    short_k: int = SHORT_K
    long_k: int = LONG_K
    signature: bool | None = None
    probe_t: int | None = PROBE_T
    probe_cap: int = PROBE_CAP
    probe_pairs: int | None = PROBE_PAIRS
    # how many of block i's pair values lead a pair (None: all; revision 0024)
    probe_lead: int | None = PROBE_LEAD
    rule: int = RULE_VERSION
    keep: VerifyMode = field(init=False)
    # what the mode does, and the rule's version: looked up once (per candidate
    # in accept, a property's look-up would show)
    facts: ModeFacts = field(init=False, repr=False, compare=False)
    text_rule: TextRule = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for m in (self.mode, self.recorded):
            if m is not None:
                check_mode(m)
        object.__setattr__(self, "keep", stronger(self.mode, self.recorded or self.mode))
        object.__setattr__(self, "facts", MODES[self.mode])
        if self.signature is None:
            object.__setattr__(self, "signature", self.facts.verifies_long)
        t, cap = self.probe_t, self.probe_cap
        if t is not None and (isinstance(t, bool) or not isinstance(t, int) or t < 1):
            raise ValueError(f"the probe budget must be None or an int >= 1, got {t!r}")
        if isinstance(cap, bool) or not isinstance(cap, int) or not 0 <= cap <= 64:
            raise ValueError(f"the probe cap must be an int in 0..64, got {cap!r}")
        pp = self.probe_pairs
        if pp is not None and (isinstance(pp, bool) or not isinstance(pp, int) or pp < 1):
            raise ValueError(f"the pair probes must be None or an int >= 1, got {pp!r}")
        lead = self.probe_lead
        if lead is not None and (isinstance(lead, bool) or not isinstance(lead, int) or lead < 0):
            raise ValueError(f"the pairs' leading values must be None or an int >= 0, got {lead!r}")
        if isinstance(self.rule, bool) or self.rule not in RULES:
            raise ValueError(f"the rule version must be one of {RULES}, got {self.rule!r}")
        object.__setattr__(self, "text_rule", TEXT_RULES[self.rule])

    # -- which look-up a text query uses --------------------------------------
    @property
    def probes_texts(self) -> bool:
        """Whether some text queries use margin-ranked probes (so texts need probe values)."""
        return self.facts.verifies_long and self.probe_t is not None

    def probe_budget(self, query_norm: str, k: int) -> int | None:
        """Probe values per block for this text query, or None: search it by radius.

        Probes under ``"all"`` for every text at k <= :data:`PIGEONHOLE_K`, where every row
        within k shares a block value with the query (pigeonhole), which is
        always probed; a wider k keeps its exact radius. Titles too: on the
        eval's short pairs the long texts' T and cap match radius
        :data:`SHORT_K` (F1 0.924 against 0.926; lab/experiments/margin_probes.md)
        at 44 look-ups instead of 548, and their adds need no store-wide lock.
        ``query_norm`` is kept for callers that ask per text.
        """
        del query_norm  # every text alike (it decided before titles were probed)
        if not self.probes_texts or k > PIGEONHOLE_K:
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

    def adds_in_two_steps(self, vtext: str, k: int) -> bool:
        """Whether an add of this text looks up in two steps: first its keys and its
        own block values (every row within 3 bits: the pair lemma), then, only if
        the rule accepts none of those rows, its probe values as well.

        An add asks one question, "is there a duplicate?", and a row the first
        step finds is one the whole look-up finds: the answer is the same. Which
        row it names may differ (the nearest the first step accepts, where a
        probe might have found a nearer one). A pair-probed text only: its
        probes are the look-up's cost (docs/scaling.md); near() always takes
        both steps, as it returns every row.
        """
        return self.probe_budget(vtext, k) is not None and self.probes_pairs(vtext)

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


    def lock_probes(self, vt: VText) -> tuple[list[int], ...]:
        """The probe values an add of this text locks (simhash_pg.store.locking): a
        pair-probed text's leading values, the first :attr:`probe_lead` of each
        block (its own value first), since a row its pairs reach has block i among
        them; else all its probes."""
        assert vt.probes is not None
        if self.probe_lead is None or not self.probes_pairs(vt.text):
            return tuple(vt.probes)
        n = max(1, self.probe_lead)  # the own value leads even at 0
        return tuple(p[:n] for p in vt.probes)

    # -- what a mode needs of a text ------------------------------------------
    @property
    def verifies(self) -> bool:
        """Whether text queries are re-checked by the rule (else distance <= k alone)."""
        return self.facts.verifies_short

    @property
    def needs_text(self) -> bool:
        """Whether a text document's :class:`VText` is needed (to verify or to keep)."""
        return self.verifies or MODES[self.keep].keep_below != 0

    @property
    def needs_signature(self) -> bool:
        """Whether a text's sentence signature is needed (to look up or to keep)."""
        return bool(self.signature) or MODES[self.keep].keep_below is None

    @property
    def prepare(self) -> Callable[[str], VText]:
        """Normalised text -> VText, as this policy needs it (module-level, for workers)."""
        return from_norm_sig if self.needs_signature else from_norm

    def keeps_text(self, norm: str) -> bool:
        """Whether a writer keeps this verification text."""
        below = MODES[self.keep].keep_below
        return below is None or len(norm) < below

    def stored_fields(
        self, v: VText | None
    ) -> tuple[str | None, int | None, list[int] | None]:
        """The (verify_text, sentence_sig, sentence_hashes) a row stores."""
        below = MODES[self.keep].keep_below
        if v is None or below == 0:
            return None, None, None
        if below is not None:
            return (v.text if len(v.text) < below else None), None, None
        return v.text, v.sig, (list(v.hashes) or None)

    # -- the rule -------------------------------------------------------------
    def test(self, k: int, short: bool, probed: bool = False) -> PairTest:
        """The test of a pair with a short side (``short``) or of two long texts.

        ``probed``: the query was searched by probes (:meth:`probe_budget`),
        so a pair's distance limit is the probe cap, not ``long_k`` or ``short_k``.
        """
        f = self.facts
        if short:
            if f.verifies_short:
                limit = self.probe_cap if probed and f.verifies_long else self.short_k
                # under "all" a title's key (digits removed) is a sentence key
                # too (revision 0015): it makes a candidate, the rule decides
                return PairTest(max(k, limit), f.verifies_long and bool(self.signature),
                                self.text_rule.threshold(True))
            return self.fingerprint_test(k)
        if f.verifies_long:
            limit = self.probe_cap if probed else self.long_k
            return PairTest(max(k, limit), bool(self.signature), self.text_rule.threshold(False))
        return PairTest(k, bool(self.signature), None)

    def fingerprint_test(self, k: int) -> PairTest:
        """The test of a pair whose texts are not compared (a fingerprint query, a
        text the mode does not verify, a row whose text was lost): ``distance <= k``,
        as ``simhash_add`` decides in SQL."""
        return by_distance(k)

    def radius(self, query_norm: str, k: int) -> int:
        """The Hamming radius to ask the index for, so that :meth:`accept` sees every candidate.

        The widest test the query can meet: a query below
        :data:`KEEP_TEXT_CHARS` may pair with a short text; a longer one
        cannot reach the short threshold against one. Never less than ``k``;
        above :data:`PIGEONHOLE_K`, a writer takes the store-wide lock (store/locking.py). A
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
        candidates: Sequence[Seen],
        k: int,
        *,
        probed: bool = False,
    ) -> list[bool]:
        """Whether each candidate the index returned is a near-duplicate of the query.

        The one decision of the store: each candidate is ``(text, distance,
        signature_match)``, the answers come in order. Per pair
        (:meth:`pair_test`):

        - ``"off"``: ``distance <= k``, as a plain SimHash store.
        - a pair with a short side: ``distance <= max(k, SHORT_K)`` and the
          rule's similarity reaches its bar (short);
        - two long texts under ``"short"``: ``distance <= k``;
        - two long texts under ``"all"``: (``distance <= max(k, LONG_K)`` or
          the sentence keys meet) and the similarity reaches the bar (long);
          ``probed`` (the query was searched by probes): ``distance <=
          max(k, probe_cap)`` instead of ``LONG_K``.

        A text None means the store kept no text for the candidate (under
        ``"short"``: it is at least :data:`~simhash_pg.verify.limits.KEEP_TEXT_CHARS`
        long). A short query cannot reach the bar against it, and two long
        texts fall back to ``distance <= k``. The signature only counts under
        ``"all"``: unverified, it cost more precision than it gained recall
        (docs/quality.md).

        A text :data:`TEXT_LOST` means the row's text is unknown (its
        verification data was never stored or was dropped by a downgrade):
        the fingerprint alone decides, ``distance <= k``, as under ``"off"``,
        so that an identical text is still found.

        The similarities of the pairs whose fingerprint part passes are
        measured together (:meth:`TextRule.similarities`): a text query's
        candidates share one pass.
        """
        tests = [self.pair_test(query_norm, c, k, probed) for c, _, _ in candidates]
        todo = [j for j, (t, (_, dist, sig)) in enumerate(zip(tests, candidates, strict=True))
                if t.threshold is not None and t.reaches(dist, sig)]
        measured = dict(zip(todo, self.text_rule.similarities(
            query_norm, [cast(str, candidates[j][0]) for j in todo]), strict=True))
        return [bool(t.judge(dist, sig, lambda j=j: measured[j]))  # type: ignore[misc]
                for j, (t, (_, dist, sig)) in enumerate(zip(tests, candidates, strict=True))]

    def pair_test(self, query_norm: str, candidate: StoredText, k: int,
                  probed: bool = False) -> PairTest:
        """The test a query and one candidate must meet (:meth:`accept` explains the
        cases): :meth:`test` of the pair's kind, or :meth:`fingerprint_test`."""
        if candidate is None and self.verifies and is_short(query_norm):
            return NEVER  # a short query cannot reach the threshold against a long text
        if candidate is None or candidate is TEXT_LOST or not self.verifies:
            return self.fingerprint_test(k)
        return self.test(k, is_short(query_norm) or is_short(candidate), probed)



_POLICIES = {m: VerifyPolicy(m) for m in VERIFY_MODES}


def policy_for(mode: VerifyMode | VerifyPolicy) -> VerifyPolicy:
    """The store's policy of a mode (a policy is returned as it is)."""
    if isinstance(mode, VerifyPolicy):
        return mode
    return _POLICIES[check_mode(mode)]
