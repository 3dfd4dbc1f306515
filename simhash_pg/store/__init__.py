"""The store: ``SimhashStore`` (a facade, :mod:`simhash_pg.store.core`) and its parts.

- core: the facade, one method per operation; asyncstore: the same as coroutines;
- results: what it takes and returns, and its errors;
- checks: input checks; opening: DSN, connection and handshake;
- sql: the statements; single: one add; query: near and near_many;
- batch and batch_index: add_many's batches; bulk: bulk_load;
- pgcopy: the binary COPY writer; stats: catalog sizes;
- locking: the writers' lock protocol and retries; retention: purge;
- lookup: the verified look-up; evidence: a pair's evidence from stored rows;
- browse: read-only listings (documents, recent, groups) for serve and the CLI.

Every SQL statement of the package is sent from here or from :mod:`simhash_pg.db`
(tests/test_layers.py).
"""

from simhash_pg.store import results
from simhash_pg.store.asyncstore import AsyncSimhashStore
from simhash_pg.store.core import SimhashStore
from simhash_pg.store.results import *  # noqa: F403  (its __all__: the inputs, results, errors)

__all__ = ["AsyncSimhashStore", "SimhashStore", *results.__all__]
