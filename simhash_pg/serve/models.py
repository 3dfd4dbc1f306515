"""The request and response bodies of the ``/v1`` API (pydantic; they make the OpenAPI schema).

Fingerprints are unsigned 64-bit integers, as in the Python API. A JSON
number above 2**53 loses precision in JavaScript, so every response that
carries one also gives it as hex (``fingerprint_hex``), and a request may
give a fingerprint as an integer or as a string: ``"0x1f..."`` or decimal.
Requests are strict: a wrong type is not coerced and an unknown field is an
error, so a typo (``"txt"``) is a 422 that names it, not a silent default.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from simhash_pg.bits import check_fingerprint, parse_fingerprint
from simhash_pg.store.checks import MAX_BIGINT, MAX_K
from simhash_pg.verify.evidence import Evidence

__all__ = [
    "MAX_BATCH",
    "AddIn",
    "AddOut",
    "BatchAddIn",
    "DocumentIn",
    "DocumentOut",
    "Error",
    "FingerprintIn",
    "FingerprintOut",
    "Group",
    "GroupsOut",
    "MatchOut",
    "NearBatchIn",
    "NearBatchOut",
    "NearIn",
    "NearOut",
    "QueryIn",
    "hex64",
]


# the most documents or queries of one batch request (a bigger one is a 422)
MAX_BATCH = 1000


def hex64(fp: int) -> str:
    return f"0x{fp:016x}"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


def _fingerprint(value: int | str | None) -> int | None:
    """An unsigned 64-bit fingerprint from an int or a string (0x-hex or decimal)."""
    if value is None:
        return None
    if isinstance(value, str):
        return parse_fingerprint(value)
    return check_fingerprint(value)


class QueryIn(_Strict):
    """A document: exactly one of ``text`` (fingerprinted by the server) or ``fingerprint``."""

    text: str | None = Field(None, description="The document's text.")
    fingerprint: int | str | None = Field(
        None, description="An unsigned 64-bit fingerprint: an integer, or a string "
        "(0x-hex or decimal) for clients whose numbers are doubles.",
        examples=[1234567890123456789, "0x112210f47de98115"])

    @field_validator("fingerprint")
    @classmethod
    def _fp(cls, value: int | str | None) -> int | None:
        return _fingerprint(value)

    @model_validator(mode="after")
    def _one_of(self) -> QueryIn:
        if (self.text is None) == (self.fingerprint is None):
            raise ValueError("give exactly one of 'text' and 'fingerprint'")
        return self

    def document(self) -> str | int:
        """What the Python API takes: a str is a text, an int a fingerprint."""
        if self.text is not None:
            return self.text
        assert isinstance(self.fingerprint, int)
        return self.fingerprint


class DocumentIn(QueryIn):
    key: str | None = Field(None, description="Your id for it, unique in the store.")
    meta: dict[str, Any] | None = Field(None, description="Any JSON object, stored as jsonb.")


class AddIn(DocumentIn):
    dedup: bool = Field(True, description="False: store it even if it near-duplicates one.")


class BatchAddIn(_Strict):
    docs: list[DocumentIn] = Field(max_length=MAX_BATCH,
                                   description="Added in order, in one transaction.")
    dedup: bool = True


class NearIn(QueryIn):
    k: int | None = Field(None, ge=0, le=MAX_K, description="The Hamming radius of a "
                          "fingerprint query (default: the server's). A text query is decided "
                          "by the store's rule, the share of the text; k only widens where "
                          "its look-up goes.")
    limit: int | None = Field(None, ge=1, le=MAX_BIGINT, description="At most this many "
                              "matches.")
    explain: bool = Field(False, description="Give each match its evidence: what found it "
                          "and what decided it (also ?explain=true).")


class NearBatchIn(_Strict):
    docs: list[QueryIn] = Field(max_length=MAX_BATCH)
    k: int | None = Field(None, ge=0, le=MAX_K)
    limit: int | None = Field(None, ge=1, le=MAX_BIGINT,
                              description="At most this many matches per query.")


class FingerprintIn(_Strict):
    text: str


class AddOut(BaseModel):
    """``AddResult``: what happened to one added document, and its ``status``."""

    status: Literal["inserted", "linked", "duplicate", "existing_key", "error"]
    id: int | None
    fingerprint: int | None
    fingerprint_hex: str | None
    duplicate_of: int | None
    distance: int | None
    inserted: bool
    key: str | None = None
    duplicate_key: str | None = None
    existing_key: bool = False
    error: str | None = None


class MatchOut(BaseModel):
    id: int
    key: str | None
    distance: int = Field(description="Hamming distance of the fingerprints, of 64 bits.")
    meta: dict[str, Any] | None = None
    evidence: Evidence | None = Field(
        None, exclude_if=lambda v: v is None,
        description="With explain: what found the match (the radius, a probe, a key both "
        "texts hold) and what decided it (the rule's similarity, the share of the text, "
        "against its threshold; or the distance alone).")


class NearOut(BaseModel):
    matches: list[MatchOut] = Field(description="Nearest first, ties by id.")


class NearBatchOut(BaseModel):
    results: list[NearOut] = Field(description="One per query, in query order.")


class DocumentOut(BaseModel):
    id: int
    key: str | None
    fingerprint: int
    fingerprint_hex: str
    duplicate_of: int | None
    created_at: datetime
    meta: dict[str, Any] | None
    body: str | None = Field(None, description="The text as written (markup stripped); "
                             "null for a fingerprint or when the store does not keep it.")


class FingerprintOut(BaseModel):
    """A fingerprint in every form SQL and other languages need."""

    fingerprint: int = Field(description="Unsigned 64-bit.")
    hex: str
    signed: int = Field(description="As PostgreSQL stores it (bigint).")
    blocks: list[int] = Field(description="The smallint columns b0..b3.")


class GroupMember(BaseModel):
    id: int
    key: str | None
    distance: int


class Group(BaseModel):
    id: int = Field(description="The stored document the others duplicate.")
    key: str | None
    size: int = Field(description="Documents in the group, itself included.")
    members: list[GroupMember] = Field(description="Its linked duplicates, by id (at most 100).")


class GroupsOut(BaseModel):
    groups: list[Group]
    next_after: int | None = Field(description="Pass as 'after' for the next page.")


class Error(BaseModel):
    """Every error: a short code and a message that names the problem."""

    error: str
    detail: str | list[dict[str, Any]]
