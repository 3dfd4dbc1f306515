"""Input checks of the store's API: each rule once, each error naming the problem.

Keys and meta are stored as given: their rules (a key's length limit in
UTF-8 bytes, valid UTF-8, no NUL) live in :mod:`simhash_pg.textrules`, shared
with the CLI, and are re-exported here.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from simhash_pg.bits import MAX_FINGERPRINT, check_fingerprint
from simhash_pg.store.results import Doc, OnDuplicate
from simhash_pg.store.retention import PARTITION_INTERVALS, PartitionInterval
from simhash_pg.textrules import check_key, check_meta
from simhash_pg.verify import VERIFY_MODES, VerifyMode

__all__ = [
    "MAX_BIGINT",
    "MAX_K",
    "check_batch_size",
    "check_document",
    "check_id_or_key",
    "check_k",
    "check_key",
    "check_limit",
    "check_lock_timeout",
    "check_meta",
    "check_on_duplicate",
    "check_partition_interval",
    "check_retention",
    "check_verify",
    "parse_item",
]

MAX_K = 64
# ids and limits go to PostgreSQL as bigint: a larger number is bad input,
# to be refused here, not a "bigint out of range" from the server
MAX_BIGINT = 2**63 - 1


def check_k(k: object) -> int:
    if isinstance(k, bool) or not isinstance(k, int):
        raise TypeError(f"k must be an int, got {type(k).__name__}")
    if not 0 <= k <= MAX_K:
        raise ValueError(f"k must be between 0 and {MAX_K} (a 64-bit fingerprint), got {k}")
    return k


def check_on_duplicate(on_duplicate: object) -> OnDuplicate:
    if on_duplicate not in ("skip", "link"):
        raise ValueError(f"on_duplicate must be 'skip' or 'link', got {on_duplicate!r}")
    return on_duplicate


def check_lock_timeout(lock_timeout: object) -> float | None:
    if lock_timeout is not None and (isinstance(lock_timeout, bool)
                                     or not isinstance(lock_timeout, (int, float))
                                     or not 0.001 <= lock_timeout <= 86_400):
        raise ValueError(
            "lock_timeout must be None or seconds between 0.001 and 86400, "
            f"got {lock_timeout!r}"
        )
    return lock_timeout


def check_verify(verify: object) -> VerifyMode | None:
    if verify is not None and verify not in VERIFY_MODES:
        raise ValueError(
            f"verify must be one of {', '.join(VERIFY_MODES)} or None, got {verify!r}"
        )
    return verify


def check_retention(retention: object) -> timedelta | None:
    if retention is not None and (not isinstance(retention, timedelta)
                                  or retention <= timedelta(0)):
        raise ValueError(f"retention must be a positive timedelta or None, got {retention!r}")
    return retention


def check_partition_interval(interval: object) -> PartitionInterval | None:
    if interval is not None and interval not in PARTITION_INTERVALS:
        raise ValueError(f"partition_interval must be one of {', '.join(PARTITION_INTERVALS)}"
                         f" or None, got {interval!r}")
    return interval


def check_batch_size(batch_size: object) -> int:
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be an int >= 1, got {batch_size!r}")
    return batch_size


def check_limit(limit: object) -> int | None:
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)
                              or not 1 <= limit <= MAX_BIGINT):
        raise ValueError(f"limit must be None or an int from 1 to 2**63-1, got {limit!r}")
    return limit


def check_document(doc: object) -> str | int:
    """A text (str) as it is, or a fingerprint (int) range-checked; else TypeError."""
    if isinstance(doc, str):
        return doc
    if isinstance(doc, bool) or not isinstance(doc, int):
        raise TypeError(
            f"a document must be a str (a text) or an int (a fingerprint), "
            f"got {type(doc).__name__}"
        )
    return check_fingerprint(doc)


def check_id_or_key(id_or_key: object) -> tuple[str, int | str]:
    """("id", an id) or ("key", a checked key): what get() and remove() look up by."""
    if isinstance(id_or_key, bool) or not isinstance(id_or_key, (int, str)):
        raise TypeError(f"expected an id (int) or a key (str), got {type(id_or_key).__name__}")
    if isinstance(id_or_key, str):
        check_key(id_or_key)
        return "key", id_or_key
    return "id", id_or_key


def parse_item(item: Any) -> tuple[str | int, str | None, dict[str, Any] | None]:
    """One add_many input as (text or fingerprint, key, meta); TypeError or ValueError if bad."""
    if type(item) is int and 0 <= item <= MAX_FINGERPRINT:
        return item, None, None  # the bulk fast path
    if isinstance(item, (str, int)) and not isinstance(item, bool):
        return check_document(item), None, None
    if isinstance(item, tuple):
        d = Doc(*item)
        key, meta = check_key(d.key), check_meta(d.meta)
        return check_document(d.text), key, meta
    raise TypeError(f"a document must be a str, an int or a Doc, got {type(item).__name__}")
