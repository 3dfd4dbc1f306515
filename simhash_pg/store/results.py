"""What the store takes and returns: inputs, results, and the errors it raises."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, Literal, NamedTuple

from simhash_pg.store.locking import LockTimeoutError

__all__ = [
    "AddManyResult",
    "AddResult",
    "Doc",
    "Document",
    "LockTimeoutError",
    "Match",
    "OnDuplicate",
    "Pair",
    "SchemaVersionError",
    "SchemeMismatchError",
    "StoreConnectionError",
]

OnDuplicate = Literal["skip", "link"]


class StoreConnectionError(ConnectionError):
    """The database could not be reached; the message names where it was looked for."""


class SchemeMismatchError(ValueError):
    """The database was made with another fingerprint scheme than the one asked for."""


class SchemaVersionError(RuntimeError):
    """The database's schema is not the one this simhash-pg version expects."""


class Doc(NamedTuple):
    """One input document for :meth:`SimhashStore.add_many`.

    ``text`` is a str (fingerprinted) or an int (a fingerprint given directly).
    """

    text: str | int
    key: str | None = None
    meta: dict[str, Any] | None = None


@dataclass(slots=True)
class AddResult:
    """What happened to one added document (treat as read-only).

    Not frozen: a frozen dataclass costs ~2.4 us to build against 0.3 us,
    which showed in add_many's per-document profile.

    - stored: ``inserted`` is True, ``id`` the new row (``duplicate_of`` set
      when stored as a linked near-duplicate, ``on_duplicate="link"``);
    - near-duplicate not stored (the default policy): ``inserted`` False,
      ``id`` and ``duplicate_of`` the stored document it duplicates,
      ``distance`` and ``duplicate_key`` describe that document;
    - key already stored: ``inserted`` False, ``existing_key`` True, ``id`` the
      stored row (``duplicate_of`` is that row's own);
    - not fingerprintable or invalid (add_many only): ``error`` says why, and
      ``id`` is None.
    """

    id: int | None
    fingerprint: int | None
    duplicate_of: int | None
    distance: int | None
    inserted: bool
    key: str | None = None
    duplicate_key: str | None = None
    existing_key: bool = False
    error: str | None = None

    @property
    def status(self) -> str:
        if self.error is not None:
            return "error"
        if self.existing_key:
            return "existing_key"
        if self.inserted:
            return "linked" if self.duplicate_of is not None else "inserted"
        return "duplicate"


@dataclass(frozen=True)
class Match:
    """A stored document within distance k of a query."""

    id: int
    key: str | None
    distance: int
    meta: dict[str, Any] | None = None


@dataclass(frozen=True)
class Pair:
    """Two stored documents within distance k of each other, ``a < b``."""

    a: int
    b: int
    distance: int


@dataclass(frozen=True)
class Document:
    """A stored row, as :meth:`SimhashStore.get` returns it.

    ``body``: the text as written (its visible text: markup stripped, spaces,
    punctuation and case kept); None for a fingerprint, a row stored before
    revision 0021, or a store opened with ``keep_text=False``.
    """

    id: int
    key: str | None
    fingerprint: int
    duplicate_of: int | None
    created_at: datetime
    meta: dict[str, Any] | None
    body: str | None = None


@dataclass
class AddManyResult:
    """Counts of an :meth:`SimhashStore.add_many` run (committed batches only)."""

    read: int = 0
    inserted: int = 0
    duplicates: int = 0
    existing_keys: int = 0
    errors: int = 0
    batches: int = 0
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def count(self, results: Iterable[AddResult]) -> None:
        """Add one committed batch's results to the counts."""
        self.batches += 1
        for r in results:
            self.read += 1
            if r.error is not None:
                self.errors += 1
            elif r.existing_key:
                self.existing_keys += 1
            elif r.inserted:
                self.inserted += 1
                if r.duplicate_of is not None:
                    self.duplicates += 1
            else:
                self.duplicates += 1
