"""``SimhashStore``: near-duplicate documents in PostgreSQL.

    from simhash_pg import SimhashStore

    with SimhashStore() as store:            # embedded PostgreSQL, per-user
        store.add("some text", key="doc-1")
        store.near("some text!")             # [Match(id=1, key='doc-1', ...)]

Where the database is and how a store opens it: :mod:`simhash_pg.store.opening`.
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

The facade: each job is a module of this package (single, batch, bulk,
opening, stats, locking, retention; the listings in browse), verification
is :mod:`simhash_pg.verify`, asked through the store's :class:`VerifyPolicy`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterable, Mapping
from datetime import datetime, timedelta
from itertools import islice
from typing import TYPE_CHECKING, Any, ClassVar

import psycopg

from simhash_pg.bits import DEFAULT_K
from simhash_pg.store import batch as _batch
from simhash_pg.store import bulk, locking, opening, query, single, sql
from simhash_pg.store.browse import Browse
from simhash_pg.store.checks import (
    check_batch_size,
    check_document,
    check_id_or_key,
    check_k,
    check_key,
    check_limit,
    check_meta,
    check_on_duplicate,
)
from simhash_pg.store.options import StoreOptions, WriterHooks
from simhash_pg.store.results import AddManyResult, AddResult, Doc, Match, OnDuplicate, Pair
from simhash_pg.store.retention import DEFAULT_PURGE_BATCH, PartitionInterval
from simhash_pg.store.stats import table_stats
from simhash_pg.store.warm import Warmed, warm
from simhash_pg.verify import VerifyMode, VerifyPolicy, VText
from simhash_pg.verify.candidates import text_and_vtext

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from simhash_pg.store.retention import PurgeResult
    from simhash_pg.text.schemes import Scheme
    from simhash_pg.text.simhash import Fingerprinter

__all__ = ["DEFAULT_BATCH", "SimhashStore"]

DEFAULT_BATCH = 5000


class SimhashStore(Browse):
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
        that times out is retried with backoff, ``locking.LOCK_ATTEMPTS``
        tries in all, then :class:`LockTimeoutError` names who holds the locks.
    retention:
        The window :meth:`purge` keeps by default, e.g. ``timedelta(days=2)``.
    partition_interval:
        How long one partition spans: ``"day"``, ``"week"`` or ``"month"``
        (revision 0013). None: the one the database records (``"day"`` for a
        new store and for one made before 0013). Every search descends every
        partition's indexes, so a store keeping a month is faster with weekly
        partitions (docs/scaling.md, "0e. Writes"); a purge then drops whole
        weeks. Recorded on first open; asking for another changes it (the
        owner only) for the partitions made from then on.
    verify:
        How text queries are re-checked (:mod:`simhash_pg.verify`):
        ``"off"`` (Hamming distance <= k only), ``"short"`` (short texts
        are re-checked by the store's text rule; the store keeps the
        verification text of short documents only) or ``"all"`` (every text
        is re-checked; the store keeps every document's verification text and
        sentence signature). The rule's radius, n-grams and bars belong to the
        store's rule version (simhash_pg/verify/versions.py; the figures
        behind them in docs/quality.md). None: the mode the database was
        created with (``"all"`` for a new one). Writers keep
        the texts of the stronger of this and the database's mode, so a
        reader that asks for less never starves one that asks for more.
        Fingerprint (int) queries are never verified.
    keep_text:
        Keep each text as written (default): its visible text, markup
        stripped as the fingerprint strips it, with spaces, punctuation and
        case, in the row's ``body`` (revision 0021), which :meth:`document`
        returns and the web page shows. False: ``body`` stays NULL (the rows
        take ~27% less room: 2,821 against 3,842 bytes per row on the eval
        corpus). Fingerprints (ints) never have one.
    schema:
        The PostgreSQL schema of the store (revision 0022). None:
        ``$SIMHASH_PG_SCHEMA``, else ``simhash`` (docs/app.md).
    """

    def __init__(
        self,
        dsn: str | None = None,
        *,
        engine: Engine | None = None,
        scheme: Scheme | Mapping[str, Any] | str | None = None,
        k: int = DEFAULT_K,
        on_duplicate: OnDuplicate = "skip",
        migrate: bool = True,
        connect_timeout: int = 10,
        lock_batches: bool = True,
        lock_timeout: float | None = locking.DEFAULT_LOCK_TIMEOUT,
        retention: timedelta | None = None,
        partition_interval: PartitionInterval | None = None,
        verify: VerifyMode | None = None,
        keep_text: bool = True,
        schema: str | None = None,
    ) -> None:
        """Open the store (see the class docstring for the parameters)."""
        self._configure(StoreOptions(
            k=k, on_duplicate=on_duplicate, lock_batches=lock_batches,
            lock_timeout=lock_timeout, retention=retention,
            partition_interval=partition_interval, verify=verify, keep_text=keep_text))
        opened = opening.open_database(
            dsn, engine, scheme=scheme, verify=verify, do_migrate=migrate,
            connect_timeout=connect_timeout, lock_timeout=lock_timeout,
            partitions=retention is not None, partition_interval=partition_interval,
            schema=schema,
        )
        self._attach(opened, verify, owns_conn=True)

    @classmethod
    def over_connection(
        cls,
        conn: psycopg.Connection[Any],
        handshake: opening.Opened,
        options: StoreOptions | None = None,
    ) -> SimhashStore:
        """A store over a connection it does not own, e.g. one borrowed from a pool.

        ``handshake`` is what :func:`opening.open_database` found on another
        connection to the same database (the schema checked, the scheme and
        verify mode read), and ``options`` were checked when they were built
        (their retention and partition interval are not used here), so
        building this store costs no round trip and no check. The
        connection must be in autocommit mode with the session's lock timeout
        set (:func:`opening.configure_session`); :meth:`close` leaves it open
        for its owner. For servers: one handshake per process, one store per
        request.
        """
        store = cls.__new__(cls)
        store._configure(options or StoreOptions())
        store._attach(handshake._replace(conn=conn), store.options.verify, owns_conn=False)
        return store

    # Parts of the write path a measurement may switch off: lab/bench/hooks.py
    # makes a subclass with other ones (users never do).
    writer_hooks: ClassVar[WriterHooks] = WriterHooks()

    def _configure(self, options: StoreOptions) -> None:
        """The options, already checked: everything but the database."""
        self.options = options
        self.k = options.k
        self.lock_timeout = options.lock_timeout
        self.retention = options.retention
        self.on_duplicate: OnDuplicate = options.on_duplicate
        # add_many(dedup=True) batches lock out the writers they could race
        # with (store/locking.py); off only to measure what that costs.
        self.lock_batches = options.lock_batches
        # texts keep their body (the text as written) unless the caller opted out
        self.keep_text = options.keep_text
        self._add_sql = sql.add_statement(self.writer_hooks.add_function)

    def _attach(self, opened: opening.Opened, verify: VerifyMode | None, *,
                owns_conn: bool) -> None:
        """The connection and what the handshake found."""
        self._dsn, self._conn, self._scheme = opened.dsn, opened.conn, opened.scheme
        self._owns_conn = owns_conn
        self._fingerprinter: Fingerprinter | None = None
        # every question of the verify mode: verify? widen k? keep texts? signatures?
        self.policy = VerifyPolicy(verify or opened.recorded_verify,
                                   recorded=opened.recorded_verify,
                                   probe_t=opened.probe_t, probe_cap=opened.probe_cap,
                                   probe_pairs=opened.probe_pairs,
                                   probe_lead=opened.probe_lead, rule=opened.rule)
        self.verify: VerifyMode = self.policy.mode
        self.partition_interval: PartitionInterval = opened.partition_interval
        self.schema = opened.schema  # the PostgreSQL schema its sessions search first

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
        """Close the connection, unless it is borrowed (:meth:`over_connection`)."""
        if self._owns_conn:
            self._conn.close()

    @property
    def closed(self) -> bool:
        return self._conn.closed

    def __enter__(self) -> SimhashStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"SimhashStore({opening.where(self._dsn)}, k={self.k}, "
                f"scheme={self._scheme.name}, verify={self.verify})")

    # -- fingerprints -------------------------------------------------------------
    @property
    def fingerprinter(self) -> Fingerprinter:
        if self._fingerprinter is None:
            from simhash_pg.text.simhash import Fingerprinter

            self._fingerprinter = Fingerprinter(self._scheme)
        return self._fingerprinter

    def fingerprint(self, doc: str | int) -> int:
        """A document's fingerprint with the store's scheme; an int is checked and returned."""
        doc = check_document(doc)
        return self.fingerprinter.fingerprint(doc) if isinstance(doc, str) else doc

    def _k(self, k: int | None) -> int:
        return self.k if k is None else check_k(k)

    def _text(self, text: str) -> tuple[int, VText | None]:
        """A text's fingerprint and, if the policy needs it, its VText: one normalisation."""
        if not self.policy.needs_text:
            return self.fingerprinter.fingerprint(text), None
        return text_and_vtext(self.fingerprinter, text, self.policy)

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
        that concurrent adds of two near-duplicates store only one. A text
        the store verifies or keeps takes three (store/single.py). A text
        whose store neither verifies nor keeps its verification text
        (``verify="off"``) takes one, its body (``keep_text``) with it.
        """
        key = check_key(key)
        meta_d = check_meta(meta)
        kk = self._k(k)
        on_dup = check_on_duplicate(on_duplicate or self.on_duplicate)
        fp, vt = self._text(doc) if isinstance(doc, str) else (self.fingerprint(doc), None)
        body = self.fingerprinter.written(doc) if isinstance(doc, str) and self.keep_text else None
        if vt is not None:
            return single.add_verified(
                self._conn, fp, vt, key, meta_d, kk, on_dup, dedup,
                self.policy, self.lock_timeout, self.writer_hooks.probe_locks, body=body)
        return single.add_plain(self._conn, self._add_sql, fp, key, meta_d, kk,
                                on_dup if dedup else "insert", self.lock_timeout, body=body)

    def near(
        self, doc: str | int, *, k: int | None = None, limit: int | None = None
    ) -> list[Match]:
        """Stored documents near ``doc``, nearest first (ties by id). Exact.

        Near means within Hamming distance k; a text query is also verified
        as the store's ``verify`` mode says (see :class:`SimhashStore`).
        """
        kk = self._k(k)
        limit = check_limit(limit)
        fp, vt = (self._text(doc) if isinstance(doc, str) and self.policy.verifies
                  else (self.fingerprint(doc), None))
        return query.near(self._conn, fp, vt, kk, limit, self.policy)

    def near_many(self, docs: Iterable[str | int], *, k: int | None = None) -> list[list[Match]]:
        """One list of matches per query, in query order, as :meth:`near` gives them.

        One round trip for fingerprint queries and unverified texts, one for
        verified texts.
        """
        return query.near_many(self._conn, list(docs), self._k(k), self.fingerprinter,
                               self.policy)

    def pairs(self, *, k: int | None = None) -> Generator[Pair, None, None]:
        """Every pair of stored documents within Hamming distance k, each once, ``a < b``.

        In no particular order, streamed from a server-side cursor (exact;
        fingerprints only, never verified): the store's connection is busy
        in that cursor's transaction until the iterator is exhausted or
        closed. At 10M rows k <= 3 takes minutes (docs/scaling.md, 0d).
        """
        return query.pairs(self._conn, self._k(k))

    def remove(self, id_or_key: int | str) -> bool:
        """Delete the row with this id or key; True if one was deleted.

        Rows that recorded it as ``duplicate_of`` keep their place with NULL.
        """
        col, value = check_id_or_key(id_or_key)
        return self._conn.execute(sql.DELETE[col], [value]).rowcount > 0

    def purge(
        self,
        older_than: timedelta | datetime | str | None = None,
        *,
        batch_size: int = DEFAULT_PURGE_BATCH,
        max_seconds: float | None = None,
        whole_partitions: bool | None = None,
        lock_wait: float | None = None,
    ) -> PurgeResult:
        """Delete documents older than ``older_than`` (default: the store's retention).

        Batched, a commit per batch; see :func:`simhash_pg.store.retention.purge`
        (weekly and monthly partitions are dropped whole, by default;
        ``lock_wait``: seconds a partition step waits for sessions in its way).
        """
        from simhash_pg.store import retention
        from simhash_pg.store.maintenance import DEFAULT_LOCK_WAIT

        window = older_than if older_than is not None else self.retention
        if window is None:
            raise ValueError("no retention window: pass older_than, or open the store "
                             "with retention=timedelta(...)")
        return retention.purge(self._conn, window, batch_size=batch_size,
                               max_seconds=max_seconds, whole_partitions=whole_partitions,
                               lock_wait=DEFAULT_LOCK_WAIT if lock_wait is None else lock_wait)

    def backfill_keys(self, *, batch_size: int = 5000) -> int:
        """Give rows stored before revision 0016 their min-hash keys; the rows changed.

        For a store that keeps sentence keys (``verify="all"``); see
        :func:`simhash_pg.store.backfill.backfill_minhash_keys`.
        """
        from simhash_pg.store.backfill import backfill_minhash_keys

        if not self.policy.signature:
            raise ValueError(f"this store (verify={self.verify!r}) keeps no sentence keys; "
                             "min-hash keys are looked up under verify='all'")
        return backfill_minhash_keys(self._conn, batch_size=batch_size)

    def count(self) -> int:
        row = self._conn.execute(sql.COUNT).fetchone()
        return int(row[0]) if row else 0

    def stats(self) -> dict[str, Any]:
        """Rows, sizes (bytes) and the scheme: what ``simhash-pg stats`` prints."""
        out = table_stats(self._conn)
        version = out.pop("server_version")
        out.update(scheme=self._scheme.to_dict(), k=self.k, verify=self.verify,
                   schema_revision=opening.SCHEMA_HEAD, server_version=version,
                   database=opening.where(self._dsn))
        return out

    def warm(self, *, everything: bool = False) -> Warmed:
        """Read the store into PostgreSQL's cache (after a restart or a bulk load): what
        fits in shared_buffers, the block indexes first (:mod:`simhash_pg.store.warm`)."""
        return warm(self._conn, everything=everything)

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
        """Add many documents, a batch per transaction (store/batch.py).

        Per batch: every input checked (a bad one becomes an error result)
        and the texts fingerprinted in parallel (``workers`` processes, None
        = auto). Then, in one transaction: the batch's locks (below); one
        round trip for the stored keys and the nearest stored document of
        every fingerprint (``simhash_near_many``), one more for the
        candidates of the texts the store verifies; near-duplicates inside
        the batch found in Python; the new rows in by binary COPY. The
        transaction commits and ``progress`` gets the batch's AddResults in
        input order. An interrupted run keeps the committed batches; a
        rerun skips keys already stored.

        Within a batch, documents are decided in input order exactly as
        sequential :meth:`add` calls would decide them. A batch first takes
        the locks of its keys and, with dedup (and ``lock_batches``), of its
        fingerprints: the pigeonhole block locks, or the store-wide lock when
        its radius exceeds 3 (k > 3, or verified texts, whose radius is
        wider) or its locks would crowd the server's lock table
        (store/locking.py). So concurrent writers of the same keys or of
        near-duplicates take turns. A batch that still loses a race (a
        deadlock, a key stored outside the lock protocol) is rerun with
        backoff, up to ``locking.RACE_ATTEMPTS`` (8) tries; a lock wait
        over ``lock_timeout`` is retried up to ``locking.LOCK_ATTEMPTS`` (3)
        tries in all, then raises :class:`LockTimeoutError`, nothing of the
        batch stored.
        """
        options = _batch.BatchOptions(
            self.policy, dedup, self._k(k), check_on_duplicate(on_duplicate or self.on_duplicate),
            lock=self.lock_batches, pigeonhole=self.writer_hooks.pigeonhole_batches,
            lock_timeout=self.lock_timeout, probe_locks=self.writer_hooks.probe_locks,
        )
        batch_size = check_batch_size(batch_size)
        total = AddManyResult()
        start = time.perf_counter()
        it = iter(docs)
        while batch := list(islice(it, batch_size)):
            prepared = _batch.prepare(batch, self.fingerprinter, self.policy, workers,
                                      keep_text=self.keep_text)
            results = _batch.add_batch(self._conn, prepared, options)
            total.count(results)
            total.seconds = time.perf_counter() - start
            if progress is not None:
                progress(results)
        total.seconds = time.perf_counter() - start
        return total

    def bulk_load(
        self,
        docs: Iterable[str | int | Doc | tuple[Any, ...]] | Any,
        *,
        batch_size: int = 100_000,
        workers: int | None = None,
        timings: dict[str, float] | None = None,
    ) -> int:
        """Fill an *empty* store fast, without near-duplicate checks; return rows loaded.

        One transaction (store/bulk.py): TRUNCATE, drop the keys and
        secondary indexes, COPY everything frozen, rebuild them as they
        were, then VACUUM (ANALYZE). Other sessions wait on the table lock
        meanwhile. Raises ValueError if the store is not empty; an error
        leaves it empty. ``docs`` may also be a NumPy uint64 array of
        fingerprints (fastest). ``timings``, if given, receives seconds per
        phase ("copy", "index builds", "vacuum analyze") and per index
        build ("build b0_idx", ...). Rows keep for verification what :meth:`add` would keep,
        and their text as written unless the store was opened with ``keep_text=False``.
        """
        return bulk.bulk_load(self._conn, docs, self.fingerprinter, self.policy,
                              batch_size=batch_size, workers=workers, timings=timings,
                              keep_text=self.keep_text)
