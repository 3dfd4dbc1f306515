"""simhash-pg: a PostgreSQL-backed near-duplicate text store.

    from simhash_pg import fingerprint, Fingerprinter, hamming, SimhashStore
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from simhash_pg.bits import blocks, hamming, to_signed, to_unsigned
from simhash_pg.text.schemes import Scheme

# Eager: fingerprinting is what most users import the package for (NumPy and
# xxhash only; jieba and OpenCC still load on first use).
from simhash_pg.text.simhash import Fingerprinter, NoFeaturesError, fingerprint

__version__ = "0.1.0"

# The store (psycopg) loads on first use so fingerprint-only users never pay for it.
_LAZY = {
    "SimhashStore": "simhash_pg.store",
    "AsyncSimhashStore": "simhash_pg.store",
    "AddResult": "simhash_pg.store",
    "AddManyResult": "simhash_pg.store",
    "Doc": "simhash_pg.store",
    "Document": "simhash_pg.store",
    "LockTimeoutError": "simhash_pg.store",
    "Match": "simhash_pg.store",
    "SchemeMismatchError": "simhash_pg.store",
    "SchemaVersionError": "simhash_pg.store",
    "StoreConnectionError": "simhash_pg.store",
}

__all__ = [
    *_LAZY,
    "Fingerprinter",
    "NoFeaturesError",
    "Scheme",
    "__version__",
    "blocks",
    "fingerprint",
    "hamming",
    "to_signed",
    "to_unsigned",
]

if TYPE_CHECKING:
    from simhash_pg.store import *  # noqa: F403  (_LAZY's names)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'simhash_pg' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
