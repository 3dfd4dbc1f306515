"""``SimhashStore``: near-duplicate documents in PostgreSQL.

    from simhash_pg import SimhashStore

    with SimhashStore() as store:            # embedded PostgreSQL, per-user
        store.add("some text", key="doc-1")
        store.near("some text!")             # [Match(id=1, key='doc-1', ...)]

Where the database is, first found: the ``dsn`` argument, the ``engine``
argument (an SQLAlchemy engine), ``$SIMHASH_PG_DSN``, else the embedded
PostgreSQL in ``$SIMHASH_PG_HOME`` or the per-user data directory, started on
first use and reused afterwards (``simhash-pg server stop`` stops it).

Schema: the store creates or upgrades its tables on open (``migrate=True``,
the default), under an advisory lock so several processes may open a new
store at once. With ``migrate=False`` an outdated database is an error that
says to run ``simhash-pg db upgrade``; the user then needs no DDL rights.

Inputs: a ``str`` is always a document (fingerprinted with the store's
scheme), an ``int`` is always an unsigned 64-bit fingerprint. Keys and meta
are stored as given, so they must be valid UTF-8 without NUL, and a key at
most ``textrules.MAX_KEY_BYTES`` (1,024) bytes of UTF-8: anything else is a
ValueError naming the problem (an error result in ``add_many``).

A store holds one connection and is not thread-safe: use one per thread.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from itertools import islice
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, TypeVar, cast

import psycopg
from psycopg.types.json import Jsonb

from simhash_pg import migrate, textrules
from simhash_pg.bits import (
    MAX_FINGERPRINT,
    check_fingerprint,
    raw_blocks,
    to_signed,
    to_signed_array,
    to_signed_list,
    to_unsigned,
)
from simhash_pg.store import locking
from simhash_pg.store.locking import LockTimeoutError
from simhash_pg.verify import VERIFY_MODES, VerifyMode, VerifyPolicy, VText
from simhash_pg.verify import candidates as _cands

if TYPE_CHECKING:
    from simhash_pg.store.retention import PurgeResult
    from simhash_pg.text.schemes import Scheme
    from simhash_pg.text.simhash import Fingerprinter

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

OnDuplicate = Literal["skip", "link"]
_T = TypeVar("_T")
MAX_K = 64
# Tries of one add or batch: a lock wait that timed out (lock_timeout each),
# and a race another writer won (deadlock, serialisation failure, a key
# stored outside the lock protocol), each retried with backoff.
LOCK_ATTEMPTS = 3
RACE_ATTEMPTS = 8
DEFAULT_BATCH = 5000
# A new store verifies every text: measured on ../shared/eval through the
# store, "all" is the only mode that meets the long-text targets (P 0.989,
# R 0.957 against R 0.395 at k = 3 unverified; docs/quality.md). Its cost is
# a k = 11 probe per text query and the store-wide lock per text add: at tens
# of millions of rows a stream should open its store with verify="short".
DEFAULT_VERIFY: VerifyMode = "all"


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
class Document:
    """A stored row, as :meth:`SimhashStore.get` returns it."""

    id: int
    key: str | None
    fingerprint: int
    duplicate_of: int | None
    created_at: datetime
    meta: dict[str, Any] | None


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


# -- validation -----------------------------------------------------------------


def _check_k(k: object) -> int:
    if isinstance(k, bool) or not isinstance(k, int):
        raise TypeError(f"k must be an int, got {type(k).__name__}")
    if not 0 <= k <= MAX_K:
        raise ValueError(f"k must be between 0 and {MAX_K} (a 64-bit fingerprint), got {k}")
    return k


# Keys and meta are stored as given: their rules (a key's length limit in UTF-8
# bytes, valid UTF-8, no NUL) live in textrules.py, shared with the CLI.
_check_key = textrules.check_key
_check_meta = textrules.check_meta


def _where(dsn: str) -> str:
    """host:port/dbname of a DSN, for error messages (never the password)."""
    try:
        p = psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "(unparsable DSN)"
    host = p.get("host") or p.get("hostaddr") or os.environ.get("PGHOST") or "localhost"
    port = p.get("port") or os.environ.get("PGPORT") or "5432"
    db = p.get("dbname") or os.environ.get("PGDATABASE") or p.get("user") or ""
    return f"{host}:{port}/{db}"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


# -- SQL ------------------------------------------------------------------------

_ADD = (
    "SELECT id, fingerprint, duplicate_of, distance, inserted, duplicate_key"
    " FROM simhash_add(%s, %s, %s, %s, %s)"
)
_GET = {
    col: "SELECT id, key, fingerprint, duplicate_of, created_at, meta"
    f" FROM simhash_documents WHERE {col} = %s"
    for col in ("id", "key")
}
_DELETE = {col: f"DELETE FROM simhash_documents WHERE {col} = %s" for col in ("id", "key")}
_NEAR = (
    "SELECT n.id, n.key, n.distance, d.meta FROM simhash_near(%s, %s) AS n"
    " JOIN simhash_documents d ON d.id = n.id ORDER BY n.distance, n.id LIMIT %s"
)
_NEAR_MANY = (
    "SELECT n.query, n.id, n.key, n.distance, d.meta FROM simhash_near_many(%s, %s) AS n"
    " JOIN simhash_documents d ON d.id = n.id ORDER BY n.query, n.distance, n.id"
)
# The nearest stored document per query: what add_many needs.
_NEAREST_MANY = (
    "SELECT DISTINCT ON (n.query) n.query, n.id, n.key, n.distance"
    " FROM simhash_near_many(%s, %s) AS n ORDER BY n.query, n.distance, n.id"
)
_KEYS = (
    "SELECT key, id, fingerprint, duplicate_of FROM simhash_documents WHERE key = ANY(%s)"
)
_NEXT_IDS = (
    "SELECT nextval(pg_get_serial_sequence('simhash_documents', 'id'))"
    " FROM generate_series(1, %s)"
)
_COPY = (
    "COPY simhash_documents (id, key, fingerprint, duplicate_of, meta, verify_text, sentence_sig)"
    " FROM STDIN (FORMAT BINARY)"
)
_COPY_TYPES = ["int8", "text", "int8", "int8", "jsonb", "text", "int8"]
_INSERT = (
    "INSERT INTO simhash_documents"
    " (key, fingerprint, duplicate_of, meta, verify_text, sentence_sig)"
    " VALUES (%s, %s, %s, %s, %s, %s) RETURNING id"
)


class SimhashStore:
    """A near-duplicate document store on PostgreSQL.

    Parameters
    ----------
    dsn:
        libpq connection string or URI. None: ``engine``, then
        ``$SIMHASH_PG_DSN``, then the embedded server.
    engine:
        An SQLAlchemy engine whose URL to use (the store opens its own
        psycopg connection with it).
    scheme:
        The fingerprint scheme (name, dict, JSON or Scheme). None: the one the
        database holds, or the default for a new database. A database made
        with another scheme raises :class:`SchemeMismatchError`.
    k:
        Default Hamming distance for near-duplicates (0..64).
    on_duplicate:
        ``"skip"`` (default): a near-duplicate is not stored, the existing
        document is returned. ``"link"``: it is stored with ``duplicate_of``.
    migrate:
        Create or upgrade the schema on open (default). False: raise
        :class:`SchemaVersionError` and ask for ``simhash-pg db upgrade``.
    lock_batches:
        add_many(dedup=True) batches take the pigeonhole advisory locks of
        their fingerprints (or, for k > 3 or huge batches, the store-wide
        one), so batches and adds side by side never store two
        near-duplicates (default; see simhash_pg/store/locking.py).
    lock_timeout:
        Seconds one wait for the writers' advisory locks may last (default
        30; None: no limit but the session's own ``lock_timeout``). A wait
        that times out is retried with backoff, :data:`LOCK_ATTEMPTS` tries
        in all, then :class:`LockTimeoutError` names who holds the locks.
    retention:
        The window :meth:`purge` keeps by default, e.g. ``timedelta(days=2)``.
    verify:
        How text queries are re-checked (:mod:`simhash_pg.verify`):
        ``"off"`` (Hamming distance <= k only), ``"short"`` (texts under 50
        characters are matched within k = 11 and must reach a bigram Jaccard of
        0.72; the store keeps the verification text of documents under 100
        characters) or ``"all"`` (also long texts: within k = 11 or an equal
        sentence signature, and a trigram Jaccard of 0.78; the store keeps
        every document's verification text and signature). None: the mode the
        database was created with (``"all"`` for a new one). Writers keep
        the texts of the stronger of this and the database's mode, so a
        reader that asks for less never starves one that asks for more.
        Fingerprint (int) queries are never verified.
    """

    def __init__(
        self,
        dsn: str | None = None,
        *,
        engine: Any = None,
        scheme: Scheme | Mapping[str, Any] | str | None = None,
        k: int = 3,
        on_duplicate: OnDuplicate = "skip",
        migrate: bool = True,
        connect_timeout: int = 10,
        lock_batches: bool = True,
        lock_timeout: float | None = locking.DEFAULT_LOCK_TIMEOUT,
        retention: timedelta | None = None,
        verify: VerifyMode | None = None,
    ) -> None:
        self.k = _check_k(k)
        if lock_timeout is not None and (isinstance(lock_timeout, bool)
                                         or not isinstance(lock_timeout, (int, float))
                                         or not 0.001 <= lock_timeout <= 86_400):
            raise ValueError(
                "lock_timeout must be None or seconds between 0.001 and 86400, "
                f"got {lock_timeout!r}"
            )
        self.lock_timeout = lock_timeout
        if verify is not None and verify not in VERIFY_MODES:
            raise ValueError(
                f"verify must be one of {', '.join(VERIFY_MODES)} or None, got {verify!r}"
            )
        if retention is not None and (not isinstance(retention, timedelta)
                                      or retention <= timedelta(0)):
            raise ValueError(f"retention must be a positive timedelta or None, got {retention!r}")
        self.retention = retention
        if on_duplicate not in ("skip", "link"):
            raise ValueError(f"on_duplicate must be 'skip' or 'link', got {on_duplicate!r}")
        self.on_duplicate: OnDuplicate = on_duplicate
        # add_many(dedup=True) batches lock out the writers they could race
        # with (simhash_pg/store/locking.py); off only to measure what that costs.
        self.lock_batches = lock_batches
        self._dsn = self._resolve_dsn(dsn, engine)
        self._conn = self._connect(self._dsn, connect_timeout)
        try:
            # simhash_writer_lock reads it (sql/0008_writer_locks.sql); "0": no limit
            self._conn.execute(
                "SELECT set_config('simhash.lock_timeout', %s, false)",
                [f"{round(lock_timeout * 1000)}ms" if lock_timeout is not None else "0"],
            )
            self._ensure_schema(migrate)
            self._scheme = self._ensure_scheme(scheme)
            stored_verify = self._ensure_verify(verify)
        except BaseException:
            self._conn.close()
            raise
        if retention is not None:
            self._ensure_partitions()
        self._fingerprinter: Fingerprinter | None = None
        # every question of the verify mode: verify, widen k, keep texts, signatures
        self.policy = VerifyPolicy(verify or stored_verify, recorded=stored_verify)
        self.verify: VerifyMode = self.policy.mode

    def _ensure_partitions(self) -> None:
        """Make today's and the next days' partitions, if missing (best effort).

        Only the table's owner may: a writer or reader role gets a permission
        error, ignored here (``simhash-pg purge``, run by the owner, makes
        them too; rows of a missing day wait in the default partition).
        """
        with contextlib.suppress(psycopg.Error):
            self._conn.execute("SELECT simhash_ensure_partitions(2)").fetchall()

    # -- opening ------------------------------------------------------------------
    @staticmethod
    def _resolve_dsn(dsn: str | None, engine: Any) -> str:
        if dsn is not None and engine is not None:
            raise ValueError("give either dsn or engine, not both")
        if dsn is not None:
            if not isinstance(dsn, str) or not dsn.strip():
                raise ValueError("dsn must be a non-empty connection string")
            return migrate.libpq_dsn(dsn)
        if engine is not None:
            url = engine.url.render_as_string(hide_password=False)
            return migrate.libpq_dsn(url)
        env = os.environ.get("SIMHASH_PG_DSN")
        if env:
            return migrate.libpq_dsn(env)
        from simhash_pg.server import get_default_server

        return get_default_server().start()

    @staticmethod
    def _connect(dsn: str, timeout: int) -> psycopg.Connection[Any]:
        try:
            return psycopg.connect(dsn, autocommit=True, connect_timeout=timeout)
        except psycopg.OperationalError as exc:
            raise StoreConnectionError(
                f"cannot connect to PostgreSQL at {_where(dsn)}: {_first_line(exc)}"
            ) from None
        except psycopg.ProgrammingError as exc:
            raise ValueError(f"invalid DSN: {_first_line(exc)}") from None

    def _schema_revision(self) -> str | None:
        row = self._conn.execute("SELECT to_regclass('alembic_version') IS NOT NULL").fetchone()
        if not row or not row[0]:
            return None
        rev = self._conn.execute("SELECT version_num FROM alembic_version").fetchone()
        return rev[0] if rev else None

    def _ensure_schema(self, do_migrate: bool) -> None:
        rev = self._schema_revision()
        if rev == migrate.HEAD:
            return
        if not do_migrate:
            raise SchemaVersionError(
                f"the database at {_where(self._dsn)} is at schema revision {rev or 'none'}, "
                f"this simhash-pg needs {migrate.HEAD}: run `simhash-pg db upgrade --dsn ...`"
            )
        try:
            migrate.upgrade(self._dsn)
        except Exception as exc:
            if "Can't locate revision" in str(exc):
                raise SchemaVersionError(
                    f"the database at {_where(self._dsn)} is at schema revision {rev}, "
                    "unknown to this simhash-pg (made by a newer version?)"
                ) from exc
            raise

    def _ensure_scheme(self, scheme: Scheme | Mapping[str, Any] | str | None) -> Scheme:
        from simhash_pg.text.schemes import Scheme, get_scheme

        wanted = get_scheme(scheme)
        row = self._conn.execute("SELECT value FROM simhash_meta WHERE name = 'scheme'").fetchone()
        if row is None:
            self._conn.execute(
                "INSERT INTO simhash_meta (name, value) VALUES ('scheme', %s)"
                " ON CONFLICT (name) DO NOTHING",
                [Jsonb(wanted.to_dict())],
            )
            row = self._conn.execute(
                "SELECT value FROM simhash_meta WHERE name = 'scheme'"
            ).fetchone()
        assert row is not None
        try:
            stored = Scheme.from_dict(row[0])
        except (TypeError, ValueError) as exc:
            raise SchemeMismatchError(
                f"the database at {_where(self._dsn)} was made with fingerprint scheme "
                f"{json.dumps(row[0], sort_keys=True)}, which this simhash-pg cannot "
                f"compute: {exc}"
            ) from exc
        if scheme is not None and stored.to_json() != wanted.to_json():
            raise SchemeMismatchError(
                f"the database at {_where(self._dsn)} was made with fingerprint scheme "
                f"{stored.to_json()}, not {wanted.to_json()}: fingerprints of two schemes "
                "cannot be compared. Open it without a scheme (to use its own) or use "
                "another database."
            )
        return stored

    def _ensure_verify(self, verify: VerifyMode | None) -> VerifyMode:
        """The database's verify mode, recorded on first open (the given one or the default)."""
        get = "SELECT value FROM simhash_meta WHERE name = 'verify'"
        row = self._conn.execute(get).fetchone()
        if row is None:
            try:
                self._conn.execute(
                    "INSERT INTO simhash_meta (name, value) VALUES ('verify', %s)"
                    " ON CONFLICT (name) DO NOTHING",
                    [Jsonb(verify or DEFAULT_VERIFY)],
                )
            except psycopg.errors.InsufficientPrivilege:
                # a read-only role (simhash_reader): the first writer records it
                return verify or DEFAULT_VERIFY
            row = self._conn.execute(get).fetchone()
        value = row[0] if row else None
        if value not in VERIFY_MODES:
            raise SchemaVersionError(
                f"the database at {_where(self._dsn)} records verify mode {value!r}, "
                f"not one of {', '.join(VERIFY_MODES)}"
            )
        return cast(VerifyMode, value)

    # -- properties and life cycle -----------------------------------------------
    @property
    def dsn(self) -> str:
        """The connection string in use (for psql, the CLI, another process)."""
        return self._dsn

    @property
    def scheme(self) -> Scheme:
        return self._scheme

    @property
    def connection(self) -> psycopg.Connection[Any]:
        """The store's psycopg connection (autocommit), for ad-hoc SQL."""
        return self._conn

    def close(self) -> None:
        self._conn.close()

    @property
    def closed(self) -> bool:
        return self._conn.closed

    def __enter__(self) -> SimhashStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"SimhashStore({_where(self._dsn)}, k={self.k}, scheme={self._scheme.name}, "
                f"verify={self.verify})")

    # -- fingerprints -------------------------------------------------------------
    @property
    def fingerprinter(self) -> Fingerprinter:
        if self._fingerprinter is None:
            from simhash_pg.text.simhash import Fingerprinter

            self._fingerprinter = Fingerprinter(self._scheme)
        return self._fingerprinter

    def fingerprint(self, doc: str | int) -> int:
        """A document's fingerprint with the store's scheme; an int is checked and returned."""
        if isinstance(doc, str):
            return self.fingerprinter.fingerprint(doc)
        if isinstance(doc, bool) or not isinstance(doc, int):
            raise TypeError(
                f"a document must be a str (a text) or an int (a fingerprint), "
                f"got {type(doc).__name__}"
            )
        return check_fingerprint(doc)

    def _k(self, k: int | None) -> int:
        return self.k if k is None else _check_k(k)

    def _text(self, text: str) -> tuple[int, VText | None]:
        """A text's fingerprint and, if the policy needs it, its VText: one normalisation."""
        if not self.policy.needs_text:
            return self.fingerprinter.fingerprint(text), None
        fp, norm = self.fingerprinter.fingerprint_with_norm(text)
        return fp, self.policy.prepare(norm)

    def _retrying(self, attempt: Callable[[], _T], *, retry: bool = True) -> _T:
        """``attempt()`` (one transaction), rerun with backoff after a race it lost.

        ``retry=False`` (inside a caller's transaction, which the error
        aborted): one try, but a lock timeout still raises LockTimeoutError.
        """
        lock_waits = races = 0
        while True:
            try:
                return attempt()
            except psycopg.errors.LockNotAvailable as exc:
                lock_waits += 1
                if not retry or lock_waits >= LOCK_ATTEMPTS:
                    raise self._lock_timeout(lock_waits) from exc
            except locking.TRANSIENT:
                races += 1
                if not retry or races >= RACE_ATTEMPTS:
                    raise
            time.sleep(locking.backoff(lock_waits + races))

    def _lock_timeout(self, waits: int) -> LockTimeoutError:
        idle = self._conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        who = locking.holders(self._conn) if idle else ""
        limit = f"{self.lock_timeout:g} s" if self.lock_timeout is not None else "lock_timeout"
        return LockTimeoutError(
            f"gave up after {waits} wait(s) of up to {limit} for the writers' locks: "
            + (f"{who}. " if who else "another session holds them. ")
            + "A transaction left open? Nothing of this add was stored; "
            "SimhashStore(lock_timeout=...) sets the wait."
        )

    # -- single documents ---------------------------------------------------------
    def add(
        self,
        doc: str | int,
        *,
        key: str | None = None,
        meta: Mapping[str, Any] | None = None,
        dedup: bool = True,
        k: int | None = None,
        on_duplicate: OnDuplicate | None = None,
    ) -> AddResult:
        """Add one document, unless it near-duplicates a stored one (see AddResult).

        One round trip: the check and the insert run in the SQL function
        ``simhash_add``, which for k <= 3 takes pigeonhole advisory locks so
        that concurrent adds of two near-duplicates store only one.
        """
        key = _check_key(key)
        meta_d = _check_meta(meta)
        kk = self._k(k)
        policy = on_duplicate or self.on_duplicate
        if policy not in ("skip", "link"):
            raise ValueError(f"on_duplicate must be 'skip' or 'link', got {policy!r}")
        fp, vt = self._text(doc) if isinstance(doc, str) else (self.fingerprint(doc), None)
        if vt is not None:
            return self._add_verified(fp, vt, key, meta_d, kk, policy, dedup)
        mode = policy if dedup else "insert"
        args = [to_signed(fp), key, Jsonb(meta_d) if meta_d is not None else None, kk, mode]
        # one statement, its own transaction (autocommit): a rerun is safe
        # unless the caller has a transaction open on this connection
        idle = self._conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        row = self._retrying(
            lambda: self._conn.execute(_ADD, args, prepare=True).fetchone(), retry=idle
        )
        assert row is not None
        rid, rfp, dup, dist, inserted, dup_key = row
        existing = not inserted and dist is None
        return AddResult(
            id=rid,
            fingerprint=to_unsigned(rfp),
            duplicate_of=dup,
            distance=dist,
            inserted=inserted,
            key=key,
            duplicate_key=dup_key,
            existing_key=existing,
        )

    def _add_verified(
        self, fp: int, vt: VText, key: str | None, meta: dict[str, Any] | None,
        k: int, policy: OnDuplicate, dedup: bool,
    ) -> AddResult:
        """add() of a text when verification is on or its text is kept.

        The candidates are re-checked in Python, so this takes the locks
        itself (the store-wide one when the radius exceeds 3, as for a short
        text), then looks up the key and the candidates, then inserts: three
        round trips where ``simhash_add`` needs one.
        """
        conn = self._conn
        signed = to_signed(fp)
        vtext, sig = self.policy.stored_fields(vt)

        def attempt() -> AddResult:
            with conn.transaction():
                # the fingerprint's locks (and the key's), or the key's alone
                locking.lock_batch(conn, [fp], self.policy.radius(vt.text, k),
                                   [key] if key is not None else (), dedup=dedup)
                if key is not None:
                    row = conn.execute(_KEYS, [[key]], prepare=True).fetchone()
                    if row is not None:
                        return AddResult(row[1], to_unsigned(row[2]), row[3], None, False,
                                         key=key, existing_key=True)
                best = None
                if dedup:
                    found = _cands.lookup(conn, [signed], [vt], k, self.policy)[0]
                    best = found[0] if found else None
                if best is not None and policy == "skip":
                    return AddResult(best.id, fp, best.id, best.distance, False, key=key,
                                     duplicate_key=best.key)
                row = conn.execute(
                    _INSERT,
                    [key, signed, best.id if best else None,
                     Jsonb(meta) if meta is not None else None, vtext, sig],
                    prepare=True,
                ).fetchone()
                assert row is not None
                return AddResult(row[0], fp, best.id if best else None,
                                 best.distance if best else None, True, key=key,
                                 duplicate_key=best.key if best else None)

        return self._retrying(attempt)

    def near(
        self, doc: str | int, *, k: int | None = None, limit: int | None = None
    ) -> list[Match]:
        """Stored documents near ``doc``, nearest first (ties by id). Exact.

        Near means within Hamming distance k; a text query is also verified
        as the store's ``verify`` mode says (see :class:`SimhashStore`).
        """
        kk = self._k(k)
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)
                                  or limit < 1):
            raise ValueError(f"limit must be None or an int >= 1, got {limit!r}")
        fp, vt = (self._text(doc) if isinstance(doc, str) and self.policy.verifies
                  else (self.fingerprint(doc), None))
        if vt is not None:
            found = _cands.lookup(self._conn, [to_signed(fp)], [vt], kk, self.policy)[0]
            return [Match(c.id, c.key, c.distance, c.meta) for c in found[:limit]]
        rows = self._conn.execute(_NEAR, [to_signed(fp), kk, limit], prepare=True).fetchall()
        return [Match(r[0], r[1], r[2], r[3]) for r in rows]

    def near_many(self, docs: Iterable[str | int], *, k: int | None = None) -> list[list[Match]]:
        """One list of matches per query, in query order, as :meth:`near` gives them.

        One round trip for fingerprint queries and unverified texts, one for
        verified texts.
        """
        kk = self._k(k)
        items = list(docs)
        vts: dict[int, VText] = {}
        fps = self._fingerprints_strict(items, vts if self.policy.verifies else None)
        out: list[list[Match]] = [[] for _ in fps]
        if not fps:
            return out
        signed = to_signed_list(fps)
        ver = sorted(vts)
        plain = sorted(set(range(len(items))) - set(ver))
        if plain:
            rows = self._conn.execute(
                _NEAR_MANY, [[signed[i] for i in plain], kk], prepare=True
            ).fetchall()
            for q, id_, key, dist, meta in rows:
                out[plain[q - 1]].append(Match(id_, key, dist, meta))
        if ver:
            hits = _cands.lookup(self._conn, [signed[i] for i in ver],
                                 [vts[i] for i in ver], kk, self.policy)
            for i, cands in zip(ver, hits, strict=True):
                out[i] = [Match(c.id, c.key, c.distance, c.meta) for c in cands]
        return out

    def _fingerprints_strict(
        self, items: list[Any], vtexts: dict[int, VText] | None = None
    ) -> list[int]:
        """Fingerprints of queries, raising at the first bad one; texts' VTexts into ``vtexts``."""
        texts = [(i, d) for i, d in enumerate(items) if isinstance(d, str)]
        fps: list[int] = [0] * len(items)
        for i, d in enumerate(items):
            if not isinstance(d, str):
                fps[i] = self.fingerprint(d)
        if texts and vtexts is not None:
            pairs = self.fingerprinter.fingerprint_many_also(
                [t for _, t in texts], self.policy.prepare)
            for (i, t), (fp, vt) in zip(texts, pairs, strict=True):
                if fp is None or vt is None:
                    self.fingerprinter.fingerprint(t)  # raises why
                    raise AssertionError("unreachable")
                fps[i] = fp
                vtexts[i] = vt
        elif texts:
            got = self.fingerprinter.fingerprint_many([t for _, t in texts])
            for (i, _), fp in zip(texts, got, strict=True):
                fps[i] = fp
        return fps

    def get(self, id_or_key: int | str) -> Document | None:
        """The stored row with this id (int) or key (str), or None."""
        if isinstance(id_or_key, bool) or not isinstance(id_or_key, (int, str)):
            raise TypeError(f"expected an id (int) or a key (str), got {type(id_or_key).__name__}")
        col = "id" if isinstance(id_or_key, int) else "key"
        if isinstance(id_or_key, str):
            _check_key(id_or_key)
        row = self._conn.execute(_GET[col], [id_or_key], prepare=True).fetchone()
        if row is None:
            return None
        return Document(row[0], row[1], to_unsigned(row[2]), row[3], row[4], row[5])

    def remove(self, id_or_key: int | str) -> bool:
        """Delete the row with this id or key; True if one was deleted.

        Rows that recorded it as ``duplicate_of`` keep their place with NULL.
        """
        if isinstance(id_or_key, bool) or not isinstance(id_or_key, (int, str)):
            raise TypeError(f"expected an id (int) or a key (str), got {type(id_or_key).__name__}")
        col = "id" if isinstance(id_or_key, int) else "key"
        if isinstance(id_or_key, str):
            _check_key(id_or_key)
        cur = self._conn.execute(_DELETE[col], [id_or_key])
        return cur.rowcount > 0

    def purge(
        self,
        older_than: timedelta | datetime | str | None = None,
        *,
        batch_size: int = 20_000,
        max_seconds: float | None = None,
    ) -> PurgeResult:
        """Delete documents older than ``older_than`` (default: the store's retention).

        Batched, a commit per batch; see :func:`simhash_pg.store.retention.purge`.
        """
        from simhash_pg.store import retention

        window = older_than if older_than is not None else self.retention
        if window is None:
            raise ValueError("no retention window: pass older_than, or open the store "
                             "with retention=timedelta(...)")
        return retention.purge(self._conn, window, batch_size=batch_size,
                               max_seconds=max_seconds)

    def count(self) -> int:
        row = self._conn.execute("SELECT count(*) FROM simhash_documents").fetchone()
        return int(row[0]) if row else 0

    def stats(self) -> dict[str, Any]:
        """Rows, sizes (bytes) and the scheme: what ``simhash-pg stats`` prints."""
        # summed over the partitions (pg_partition_tree lists nothing for a
        # plain table: the table itself is added); keys_bytes: simhash_keys
        row = self._conn.execute(
            "SELECT (SELECT count(*) FROM simhash_documents), sum(pg_table_size(t.relid)),"
            " sum(pg_indexes_size(t.relid)), current_setting('server_version'),"
            " count(*) FILTER (WHERE t.level > 0),"
            " coalesce(pg_total_relation_size(to_regclass('simhash_keys')), 0)"
            " FROM (SELECT 'simhash_documents'::regclass AS relid, 0 AS level UNION"
            " SELECT relid, level FROM pg_partition_tree('simhash_documents')) AS t"
        ).fetchone()
        assert row is not None
        rows, table_bytes, index_bytes, version, partitions, keys_bytes = row
        table_bytes, index_bytes = int(table_bytes), int(index_bytes)
        return {
            "rows": rows,
            "table_bytes": table_bytes,
            "index_bytes": index_bytes,
            "keys_bytes": keys_bytes,
            "partitions": partitions,
            "bytes_per_row": (round((table_bytes + index_bytes + keys_bytes) / rows, 1)
                              if rows else None),
            "scheme": self._scheme.to_dict(),
            "k": self.k,
            "verify": self.verify,
            "schema_revision": migrate.HEAD,
            "server_version": version,
            "database": _where(self._dsn),
        }

    # -- bulk ---------------------------------------------------------------------
    def add_many(
        self,
        docs: Iterable[str | int | Doc | tuple[Any, ...]],
        *,
        dedup: bool = True,
        batch_size: int = DEFAULT_BATCH,
        workers: int | None = None,
        progress: Callable[[list[AddResult]], None] | None = None,
        k: int | None = None,
        on_duplicate: OnDuplicate | None = None,
    ) -> AddManyResult:
        """Add many documents, a batch per transaction.

        Per batch: fingerprints computed in parallel (``workers`` processes,
        None = auto); one round trip looks up existing keys and the nearest
        stored document of every fingerprint (``simhash_near_many``);
        near-duplicates inside the batch are found in Python; the rows go in
        by binary COPY; then the transaction commits and ``progress`` gets the
        batch's AddResults in input order. An interrupted run keeps the
        committed batches; a rerun skips keys already stored.

        Within a batch, documents are decided in input order exactly as
        sequential :meth:`add` calls would decide them. A batch first takes
        the locks of its keys (and, with dedup, of its fingerprints;
        simhash_pg/store/locking.py), so concurrent writers of the same keys or of
        near-duplicates take turns; a batch that still loses a race (a
        deadlock, a key stored outside the lock protocol) is rerun with
        backoff, and a lock wait over ``lock_timeout`` is retried, then
        raises :class:`LockTimeoutError`.
        """
        kk = self._k(k)
        policy = on_duplicate or self.on_duplicate
        if policy not in ("skip", "link"):
            raise ValueError(f"on_duplicate must be 'skip' or 'link', got {policy!r}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be an int >= 1, got {batch_size!r}")
        total = AddManyResult()
        start = time.perf_counter()
        it = iter(docs)
        while True:
            batch = list(islice(it, batch_size))
            if not batch:
                break
            results = self._add_batch(batch, dedup, kk, policy, workers)
            total.batches += 1
            for r in results:
                total.read += 1
                if r.error is not None:
                    total.errors += 1
                elif r.existing_key:
                    total.existing_keys += 1
                elif r.inserted:
                    total.inserted += 1
                    if r.duplicate_of is not None:
                        total.duplicates += 1
                else:
                    total.duplicates += 1
            total.seconds = time.perf_counter() - start
            if progress is not None:
                progress(results)
        total.seconds = time.perf_counter() - start
        return total

    def _prepare_batch(
        self, batch: Sequence[Any], workers: int | None,
        vtexts: dict[int, VText] | None = None,
    ) -> tuple[list[tuple[int, str | None, dict[str, Any] | None]], list[AddResult | None]]:
        """Validate and fingerprint; returns per-doc (fp, key, meta) and error results.

        ``vtexts``, if given, receives the VText of every fingerprinted text by
        position, computed by the fingerprinting workers from the same
        normalised text.
        """
        parsed: list[tuple[Any, str | None, dict[str, Any] | None] | None] = []
        errors: list[AddResult | None] = [None] * len(batch)
        for i, item in enumerate(batch):
            if type(item) is int and 0 <= item <= MAX_FINGERPRINT:
                parsed.append((item, None, None))  # the bulk fast path
                continue
            try:
                if isinstance(item, (str, int)) and not isinstance(item, bool):
                    text, key, meta = item, None, None
                elif isinstance(item, tuple):
                    d = Doc(*item)
                    text, key, meta = d.text, _check_key(d.key), _check_meta(d.meta)
                else:
                    raise TypeError(
                        f"a document must be a str, an int or a Doc, got {type(item).__name__}"
                    )
                if isinstance(text, bool) or not isinstance(text, (str, int)):
                    raise TypeError(
                        f"a document must be a str (a text) or an int (a fingerprint), "
                        f"got {type(text).__name__}"
                    )
                if isinstance(text, int):
                    text = check_fingerprint(text)
                parsed.append((text, key, meta))
            except (TypeError, ValueError) as exc:
                parsed.append(None)
                key_s = getattr(item, "key", None) if isinstance(item, tuple) else None
                errors[i] = AddResult(None, None, None, None, False,
                                      key=key_s if isinstance(key_s, str) else None,
                                      error=str(exc))
        text_idx = [i for i, p in enumerate(parsed) if p is not None and isinstance(p[0], str)]
        fps: dict[int, int | None] = {}
        if text_idx and vtexts is not None:
            pairs = self.fingerprinter.fingerprint_many_also(
                [parsed[i][0] for i in text_idx], self.policy.prepare, workers  # type: ignore[index]
            )
            for i, (f, v) in zip(text_idx, pairs, strict=True):
                fps[i] = f
                if v is not None:
                    vtexts[i] = v
        elif text_idx:
            got = self.fingerprinter.fingerprint_many(
                [parsed[i][0] for i in text_idx],  # type: ignore[index]
                workers,
                on_error="none",
            )
            fps = dict(zip(text_idx, got, strict=True))
        out: list[tuple[int, str | None, dict[str, Any] | None]] = []
        for i, p in enumerate(parsed):
            if p is None:
                out.append((0, None, None))
                continue
            fp = fps[i] if isinstance(p[0], str) else p[0]
            if fp is None:
                errors[i] = AddResult(None, None, None, None, False, key=p[1],
                                      error=self._why_not(p[0]))
                out.append((0, None, None))
                continue
            out.append((fp, p[1], p[2]))
        return out, errors

    def _why_not(self, text: Any) -> str:
        try:
            self.fingerprinter.fingerprint(text)
        except (TypeError, ValueError) as exc:
            return str(exc) or type(exc).__name__
        return "could not be fingerprinted"

    def _add_batch(
        self, batch: Sequence[Any], dedup: bool, k: int, policy: OnDuplicate,
        workers: int | None,
    ) -> list[AddResult]:
        vts: dict[int, VText] = {}
        prepared, errors = self._prepare_batch(batch, workers,
                                               vts if self.policy.needs_text else None)
        radius = k
        if self.policy.verifies and vts:
            radius = max(self.policy.radius(v.text, k) for v in vts.values())
        ok = [p for p, e in zip(prepared, errors, strict=True) if e is None]
        keys = [p[1] for p in ok if p[1] is not None]
        # lock_batches=False (a benchmark's comparison) leaves out the
        # near-duplicate locks, never the keys'
        locked = dedup and self.lock_batches
        fps = [p[0] for p in ok] if locked else []

        def attempt() -> list[AddResult]:
            with self._conn.transaction():
                # the batch's pigeonhole and key locks, or the store-wide one (locking.py)
                locking.lock_batch(self._conn, fps, max(k, radius), keys, dedup=locked)
                return self._write_batch(prepared, errors, dedup, k, policy, vts)

        return self._retrying(attempt)

    def _write_batch(
        self,
        prepared: list[tuple[int, str | None, dict[str, Any] | None]],
        errors: list[AddResult | None],
        dedup: bool,
        k: int,
        policy: OnDuplicate,
        vts: dict[int, VText],
    ) -> list[AddResult]:
        n = len(prepared)
        valid = [i for i in range(n) if errors[i] is None]
        keys = list({prepared[i][1] for i in valid if prepared[i][1] is not None})
        signed = to_signed_list(prepared[i][0] for i in valid)
        signed_at = dict(zip(valid, signed, strict=True))
        # verified: text documents when verification is on; plain: the others
        verified = [i for i in valid if i in vts] if self.policy.verifies else []
        plain = [i for i in valid if i not in vts] if verified else valid
        conn = self._conn
        # One round trip: existing keys, nearest stored match per fingerprint, ids.
        with conn.pipeline():
            c_keys = conn.execute(_KEYS, [keys], prepare=True) if keys else None
            c_near = (
                conn.execute(_NEAREST_MANY, [[signed_at[i] for i in plain], k], prepare=True)
                if dedup and plain else None
            )
            c_ids = conn.execute(_NEXT_IDS, [len(valid)], prepare=True) if valid else None
        existing: dict[str, tuple[int, int, int | None]] = {}
        if c_keys is not None:
            for key, id_, fp, dup in c_keys.fetchall():
                existing[key] = (id_, to_unsigned(fp), dup)
        nearest: dict[int, tuple[int, str | None, int]] = {}
        if c_near is not None:
            for q, id_, key, dist in c_near.fetchall():
                nearest[plain[q - 1]] = (id_, key, dist)
        ids = [r[0] for r in c_ids.fetchall()] if c_ids is not None else []
        if dedup and verified:
            # one more round trip: every candidate, re-checked (verify/candidates.py)
            hits = _cands.lookup(conn, [signed_at[i] for i in verified],
                                 [vts[i] for i in verified], k, self.policy)
            for i, cands in zip(verified, hits, strict=True):
                if cands:
                    c = cands[0]
                    nearest[i] = (c.id, c.key, c.distance)

        results: list[AddResult | None] = list(errors)
        batch_keys: dict[str, int] = {}  # key -> position of the row stored in this batch
        index = _BatchIndex(k, scan=bool(verified))
        rows: list[tuple[Any, ...]] = []
        next_id = iter(ids)
        for i in valid:
            fp, key, meta = prepared[i]
            if key is not None and key in existing:
                id_, sfp, sdup = existing[key]
                results[i] = AddResult(id_, sfp, sdup, None, False, key=key, existing_key=True)
                continue
            if key is not None and key in batch_keys:
                first = results[batch_keys[key]]
                assert first is not None
                results[i] = AddResult(first.id, first.fingerprint, first.duplicate_of, None,
                                       False, key=key, existing_key=True)
                continue
            best: tuple[int, int, str | None] | None = None  # (distance, id, key)
            if dedup:
                if i in nearest:
                    sid, skey, sdist = nearest[i]
                    best = (sdist, sid, skey)
                mine = (index.nearest(fp) if i not in vts or not verified
                        else self._batch_match(index, fp, vts[i], k))
                if mine is not None and (best is None or mine[:2] < best[:2]):
                    best = mine
            if best is not None and policy == "skip":
                results[i] = AddResult(best[1], fp, best[1], best[0], False, key=key,
                                       duplicate_key=best[2])
                continue
            new_id = next(next_id)
            dup_of = best[1] if best is not None else None
            results[i] = AddResult(new_id, fp, dup_of, best[0] if best else None, True, key=key,
                                   duplicate_key=best[2] if best else None)
            vtext, sig = self.policy.stored_fields(vts.get(i))
            if dedup:
                index.add(fp, new_id, key, vtext, sig)
            if key is not None:
                batch_keys[key] = i
            rows.append((new_id, key, signed_at[i], dup_of,
                         Jsonb(meta) if meta is not None else None, vtext, sig))
        if rows:
            with conn.cursor() as cur, cur.copy(_COPY) as copy:
                copy.set_types(_COPY_TYPES)
                for row in rows:
                    copy.write_row(row)
        final = [r for r in results if r is not None]
        assert len(final) == n
        return final

    def _batch_match(
        self, index: _BatchIndex, fp: int, vt: VText, k: int
    ) -> tuple[int, int, str | None] | None:
        """The nearest accepted row stored earlier in this batch: what add() would find."""
        policy = self.policy
        hits = index.within(fp, policy.radius(vt.text, k))
        if vt.sig is not None and policy.signature:
            seen = {pos for pos, _ in hits}
            hits += [(pos, (index.fps[pos] ^ fp).bit_count())
                     for pos in index.by_sig.get(vt.sig, ()) if pos not in seen]
        kept = _cands.filter_candidates(
            vt.text,
            (_cands.Candidate(index.ids[pos], index.keys[pos], d, None, index.vtexts[pos],
                              vt.sig is not None and index.sigs[pos] == vt.sig)
             for pos, d in hits),
            k, policy,
        )
        if not kept:
            return None
        c = kept[0]
        return (c.distance, c.id, c.key)

    def bulk_load(
        self,
        docs: Iterable[str | int | Doc | tuple[Any, ...]] | Any,
        *,
        batch_size: int = 100_000,
        workers: int | None = None,
        timings: dict[str, float] | None = None,
    ) -> int:
        """Fill an *empty* store fast, without near-duplicate checks; return rows loaded.

        One transaction: TRUNCATE (so COPY can FREEZE the rows and set the
        visibility map: index-only scans from the first query; on the
        partitioned table, COPY goes into the partition of today), drop the
        secondary indexes, COPY everything, rebuild the indexes as they were,
        ANALYZE. Other sessions wait on the table lock meanwhile. Raises
        ValueError if the store is not empty; an error leaves it empty.
        ``docs`` may also be a NumPy uint64 array of fingerprints (fastest).
        ``timings``, if given, receives seconds per phase.
        """
        import numpy as np

        conn = self._conn
        loaded = 0
        with conn.transaction():
            conn.execute("LOCK TABLE simhash_documents IN ACCESS EXCLUSIVE MODE")
            if conn.execute("SELECT EXISTS (SELECT 1 FROM simhash_documents)").fetchone() != (
                False,
            ):
                raise ValueError("bulk_load needs an empty store; use add_many instead")
            conn.execute("TRUNCATE simhash_documents RESTART IDENTITY")
            # COPY ... FREEZE is refused on a partitioned table: copy into the
            # partition the rows land in (created_at = now(), this
            # transaction's start), truncated above, in this transaction.
            target = _copy_target(conn)
            # Constraints too: the primary key is built faster afterwards, and
            # the duplicate_of foreign key would queue a trigger event per row.
            constraints = conn.execute(
                "SELECT conname, contype, pg_get_constraintdef(oid) FROM pg_constraint"
                " WHERE conrelid = 'simhash_documents'::regclass AND contype IN ('f', 'p')"
                " ORDER BY contype"  # f before p: the key depends on the primary key
            ).fetchall()
            for name, _, _ in constraints:
                conn.execute(
                    psycopg.sql.SQL("ALTER TABLE simhash_documents DROP CONSTRAINT {}").format(
                        psycopg.sql.Identifier(name)
                    )
                )
            indexdefs = [
                (r[0], r[1])
                for r in conn.execute(
                    "SELECT i.relname, pg_get_indexdef(x.indexrelid) FROM pg_index x"
                    " JOIN pg_class i ON i.oid = x.indexrelid"
                    " WHERE x.indrelid = 'simhash_documents'::regclass AND NOT x.indisprimary"
                )
            ]
            for name, _ in indexdefs:
                conn.execute(
                    psycopg.sql.SQL("DROP INDEX {}").format(psycopg.sql.Identifier(name))
                )
            # a partitioned table's index is defined ON ONLY the parent; built
            # again without ONLY, it is built on every partition
            indexdefs = [(name, ddl.replace(" ON ONLY ", " ON ", 1)) for name, ddl in indexdefs]
            next_id = 1
            clock = time.perf_counter()
            if isinstance(docs, np.ndarray):
                # fingerprints already as uint64: no per-item checks needed
                fps_all = np.ascontiguousarray(docs, dtype=np.uint64)
                for start in range(0, len(fps_all), 1_000_000):
                    chunk = fps_all[start : start + 1_000_000]
                    _copy_fingerprints(conn, chunk, next_id, target)
                    next_id += len(chunk)
                docs = ()
            it = iter(docs)
            while True:
                batch = list(islice(it, batch_size))
                if not batch:
                    break
                if all(isinstance(d, int) and not isinstance(d, bool) for d in batch):
                    fps = np.array([check_fingerprint(d) for d in batch], dtype=np.uint64)
                    _copy_fingerprints(conn, fps, next_id, target)
                    next_id += len(batch)
                    continue
                vts: dict[int, VText] = {}
                prepared, errors = self._prepare_batch(batch, workers,
                                                       vts if self.policy.needs_text else None)
                bad = [e for e in errors if e is not None]
                if bad:
                    raise ValueError(f"bulk_load: {bad[0].error}")
                with conn.cursor() as cur, cur.copy(_COPY_FREEZE.format(target)) as copy:
                    copy.set_types(_COPY_TYPES)
                    for i, (fp, key, meta) in enumerate(prepared):
                        # what the row keeps for verification, as add() would
                        vtext, sig = self.policy.stored_fields(vts.get(i))
                        copy.write_row((next_id, key, to_signed(fp), None,
                                        Jsonb(meta) if meta is not None else None, vtext, sig))
                        next_id += 1
            loaded = next_id - 1
            if loaded:
                conn.execute(
                    "SELECT setval(pg_get_serial_sequence('simhash_documents', 'id'), %s)",
                    [loaded],
                )
            phase = {"copy": time.perf_counter() - clock}
            clock = time.perf_counter()
            readd = psycopg.sql.SQL("ALTER TABLE simhash_documents ADD CONSTRAINT {} {}")
            for name, _, ddl in reversed(constraints):  # primary key first
                if _ == "p":
                    conn.execute(readd.format(psycopg.sql.Identifier(name), psycopg.sql.SQL(ddl)))
            for _, ddl in indexdefs:
                conn.execute(ddl)
            for name, kind, ddl in constraints:
                if kind == "f":
                    conn.execute(readd.format(psycopg.sql.Identifier(name), psycopg.sql.SQL(ddl)))
            phase["index builds"] = time.perf_counter() - clock
            clock = time.perf_counter()
        # COPY FREEZE set the visibility map already (PG 14+); VACUUM finds
        # little to do but makes sure of it, and ANALYZE gives the planner stats.
        conn.execute("VACUUM (ANALYZE) simhash_documents")
        phase["vacuum analyze"] = time.perf_counter() - clock
        if timings is not None:
            timings.update(phase)
        return loaded


_COPY_FREEZE = psycopg.sql.SQL(
    "COPY {} (id, key, fingerprint, duplicate_of, meta, verify_text, sentence_sig)"
    " FROM STDIN (FORMAT BINARY, FREEZE)"
)


def _copy_target(conn: psycopg.Connection[Any]) -> psycopg.sql.Composable:
    """Where bulk_load's rows go: the table, or the partition of now() (else the default)."""
    row = conn.execute(
        "SELECT relkind = 'p' FROM pg_class WHERE oid = 'simhash_documents'::regclass"
    ).fetchone()
    if not row or not row[0]:
        return psycopg.sql.Identifier("simhash_documents")
    part = conn.execute(
        "SELECT p.partition::text FROM simhash_partitions() AS p"
        " WHERE p.is_default OR (now() >= p.lower_bound AND now() < p.upper_bound)"
        " ORDER BY p.is_default LIMIT 1"
    ).fetchone()
    assert part is not None  # the default partition at least
    return psycopg.sql.SQL(part[0])  # a regclass, quoted by the server

_PGCOPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + b"\x00\x00\x00\x00" + b"\x00\x00\x00\x00"
_PGCOPY_TRAILER = b"\xff\xff"


def _copy_fingerprints(
    conn: psycopg.Connection[Any], fps: Any, first_id: int, table: psycopg.sql.Composable
) -> None:
    """COPY (id, fingerprint) rows built with NumPy in the binary COPY format."""
    import numpy as np

    dt = np.dtype(
        [("nf", ">i2"), ("l1", ">i4"), ("id", ">i8"), ("l2", ">i4"), ("fp", ">i8")]
    )
    rows = np.empty(len(fps), dtype=dt)
    rows["nf"] = 2
    rows["l1"] = 8
    rows["id"] = np.arange(first_id, first_id + len(fps), dtype=np.int64)
    rows["l2"] = 8
    rows["fp"] = to_signed_array(fps)
    with conn.cursor() as cur, cur.copy(
        psycopg.sql.SQL("COPY {} (id, fingerprint) FROM STDIN (FORMAT BINARY, FREEZE)").format(
            table
        )
    ) as copy:
        copy.write(_PGCOPY_HEADER)
        copy.write(rows.tobytes())
        copy.write(_PGCOPY_TRAILER)


class _BatchIndex:
    """Near-duplicate look-up among the rows stored so far in one batch.

    k <= 3: pigeonhole on the four blocks (dict per block). Above: a NumPy
    scan over the batch's fingerprints, which is small.
    """

    def __init__(self, k: int, *, scan: bool = False) -> None:
        self.k = k
        self.scan = scan or k > 3  # keep the NumPy array (any radius) rather than block dicts
        self.arr: Any = None  # uint64 fingerprints for the k > 3 scan, grown by doubling
        self.fps: list[int] = []
        self.ids: list[int] = []
        self.keys: list[str | None] = []
        self.by_block: list[dict[int, list[int]]] = [{}, {}, {}, {}]
        # what each row keeps for verification, and the rows by sentence signature
        self.vtexts: list[str | None] = []
        self.sigs: list[int | None] = []
        self.by_sig: dict[int, list[int]] = {}

    def add(self, fp: int, id_: int, key: str | None,
            vtext: str | None = None, sig: int | None = None) -> None:
        pos = len(self.fps)
        self.fps.append(fp)
        self.ids.append(id_)
        self.keys.append(key)
        self.vtexts.append(vtext)
        self.sigs.append(sig)
        if sig is not None:
            self.by_sig.setdefault(sig, []).append(pos)
        if not self.scan:
            # fp was range-checked already: the unchecked blocks, hot loop
            for i, b in enumerate(raw_blocks(fp)):
                self.by_block[i].setdefault(b, []).append(pos)
        else:
            import numpy as np

            if self.arr is None or pos >= len(self.arr):
                grown = np.zeros(max(1024, 2 * pos), dtype=np.uint64)
                if self.arr is not None:
                    grown[:pos] = self.arr[:pos]
                self.arr = grown
            self.arr[pos] = fp

    def nearest(self, fp: int) -> tuple[int, int, str | None] | None:
        if not self.fps:
            return None
        if not self.scan:
            cands: set[int] = set()
            for i, b in enumerate(raw_blocks(fp)):
                cands.update(self.by_block[i].get(b, ()))
            best: tuple[int, int, str | None] | None = None
            for pos in cands:
                d = (self.fps[pos] ^ fp).bit_count()
                if d <= self.k and (best is None or (d, self.ids[pos]) < best[:2]):
                    best = (d, self.ids[pos], self.keys[pos])
            return best
        return self._scan(fp)

    def _distances(self, fp: int) -> Any:
        import numpy as np

        x = self.arr[: len(self.fps)] ^ np.uint64(fp)
        if hasattr(np, "bitwise_count"):
            return np.bitwise_count(x).astype(np.int64)
        return np.array([int(v).bit_count() for v in x.tolist()], dtype=np.int64)  # NumPy < 2

    def within(self, fp: int, radius: int) -> list[tuple[int, int]]:
        """(position, distance) of every row within ``radius`` (needs ``scan``)."""
        import numpy as np

        if not self.fps:
            return []
        d = self._distances(fp)
        ok = np.nonzero(d <= radius)[0]
        return [(int(p), int(d[p])) for p in ok]

    def _scan(self, fp: int) -> tuple[int, int, str | None] | None:
        import numpy as np

        d = self._distances(fp)
        ok = np.nonzero(d <= self.k)[0]
        if len(ok) == 0:
            return None
        # nearest, ties by id (ids grow with position)
        pos = int(ok[np.argmin(d[ok])])
        return (int(d[pos]), self.ids[pos], self.keys[pos])


def iter_results(results: Iterable[AddResult]) -> Iterator[dict[str, Any]]:
    """AddResults as plain dicts with their status (for reports)."""
    for r in results:
        out = asdict(r)
        out["status"] = r.status
        yield out

