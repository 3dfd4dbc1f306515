"""The store: ``SimhashStore`` and what it returns (see :mod:`simhash_pg.store.core`)."""

from simhash_pg.store.core import (
    AddManyResult,
    AddResult,
    Doc,
    Document,
    LockTimeoutError,
    Match,
    SchemaVersionError,
    SchemeMismatchError,
    SimhashStore,
    StoreConnectionError,
)

__all__ = [
    "AddManyResult",
    "AddResult",
    "Doc",
    "Document",
    "LockTimeoutError",
    "Match",
    "SchemaVersionError",
    "SchemeMismatchError",
    "SimhashStore",
    "StoreConnectionError",
]
