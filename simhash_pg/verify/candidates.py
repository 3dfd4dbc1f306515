"""Candidates re-checked by the duplicate rule, and the texts a look-up sends.

The index answers "which fingerprints lie within r bits"; the rule then
decides which of those are near-duplicates (:meth:`VerifyPolicy.accept
<simhash_pg.verify.rule.VerifyPolicy.accept>`). :func:`filter_candidates`
keeps what the rule accepts, nearest first, ties by id: the order
``near()`` has without verification. :func:`text_and_vtext` gives a text's
fingerprint and what verification compares of it, from one vote.

Single adds, ``near`` and ``near_many`` look up stored rows with
:func:`simhash_pg.store.lookup.lookup`, which asks :func:`filter_candidates`;
a batch looks up its stored rows with it too, and its own earlier rows
through :func:`filter_candidates` (``simhash_pg/store/batch.py``). Nothing
here reads the database.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, NamedTuple, Protocol, TypeVar

from simhash_pg.text.probes import Probes
from simhash_pg.text.simhash import TextPrint
from simhash_pg.verify.jaccard import VText
from simhash_pg.verify.modes import VerifyMode
from simhash_pg.verify.rule import StoredText, VerifyPolicy, policy_for

__all__ = ["Candidate", "TextAnalyser", "filter_candidates", "text_and_vtext", "texts_and_vtexts"]

_T = TypeVar("_T")


class Candidate(NamedTuple):
    """A row the index returned for a query, and what the rule reads of it.

    A NamedTuple: a look-up builds many, and a frozen dataclass costs several
    times as much to build.
    """

    id: int
    key: str | None
    distance: int
    meta: dict[str, Any] | None = None
    text: StoredText = None  # its verification text; None: not kept; TEXT_LOST
    # its sentence signature equals the query's, or it holds one of the
    # query's sentence hashes (simhash_pg.text.signatures.sentences_meet)
    signature_match: bool = False


class TextAnalyser(Protocol):
    """What verification asks of a fingerprinter (a
    :class:`simhash_pg.text.simhash.Fingerprinter`)."""

    def normalize(self, text: str) -> str: ...

    def analyse(self, text: str, t: int | None = None) -> TextPrint: ...

    def fingerprint_many_also(
        self, texts: Iterable[Any], also: Callable[[str], _T], workers: int | None = None
    ) -> list[tuple[int | None, _T | None]]: ...

    def fingerprint_many_probes(
        self, texts: Iterable[Any], also: Callable[[str], _T], t: int, workers: int | None = None,
    ) -> list[tuple[int | None, _T | None, Probes | None]]: ...


def text_and_vtext(fingerprinter: TextAnalyser, text: str, policy: VerifyPolicy
                   ) -> tuple[int, VText]:
    """One text's fingerprint and VText (with probe values when the policy probes texts).

    One normalisation and one vote; raises as ``Fingerprinter.fingerprint``.
    """
    p = fingerprinter.analyse(text, policy.probe_depth if policy.probes_texts else None)
    vt = policy.prepare(p.norm)
    return p.fingerprint, vt if p.probes is None else policy.with_probes(vt, p.probes)


def texts_and_vtexts(
    fingerprinter: TextAnalyser, texts: list[Any], policy: VerifyPolicy, workers: int | None = None,
    *, probes: bool = True,
) -> list[tuple[int | None, VText | None]]:
    """:func:`text_and_vtext` of many texts (in worker processes if worth it); None, None
    for a text without a fingerprint. ``probes=False``: no probe values even when
    the policy probes texts (a writer that looks nothing up: bulk_load)."""
    if not (probes and policy.probes_texts):
        return fingerprinter.fingerprint_many_also(texts, policy.prepare, workers)
    got = fingerprinter.fingerprint_many_probes(texts, policy.prepare, policy.probe_depth,
                                                  workers)
    # a text with a VText has its probe values (all three are None, or none is)
    return [(fp, None if vt is None or probes is None else policy.with_probes(vt, probes))
            for fp, vt, probes in got]


def filter_candidates(
    query_norm: str,
    candidates: Iterable[Candidate],
    k: int,
    policy: VerifyPolicy | VerifyMode,
    *,
    probed: bool = False,
) -> list[Candidate]:
    """The candidates the rule accepts, nearest first, ties by id.

    ``probed``: the candidates came from the query's probes (and signature).
    For ``add(dedup=True)``: the first one, if any, is the document it duplicates.
    """
    cands = list(candidates)
    verdicts = policy_for(policy).accept(
        query_norm, [(c.text, c.distance, c.signature_match) for c in cands], k, probed=probed)
    kept = [c for c, ok in zip(cands, verdicts, strict=True) if ok]
    kept.sort(key=lambda c: (c.distance, c.id))
    return kept
