"""The store: ``SimhashStore`` (a facade, :mod:`simhash_pg.store.core`) and its parts.

- core: the facade, one method per operation;
- results: what it takes and returns, and its errors;
- checks: input checks; opening: DSN, connection and handshake;
- sql: the statements; single: one add; query: near and near_many;
- batch and batch_index: add_many's batches; bulk: bulk_load;
- pgcopy: the binary COPY writer; stats: catalog sizes;
- locking: the writers' lock protocol and retries; retention: purge.
"""

from simhash_pg.store.core import SimhashStore
from simhash_pg.store.results import (
    AddManyResult,
    AddResult,
    Doc,
    Document,
    LockTimeoutError,
    Match,
    SchemaVersionError,
    SchemeMismatchError,
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
