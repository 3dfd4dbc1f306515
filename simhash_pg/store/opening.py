"""Opening a store: where the database is, the connection, and the handshake.

Where the database is, first found: the ``dsn`` argument, the ``engine``
argument (an SQLAlchemy engine), ``$SIMHASH_PG_DSN``, else the embedded
PostgreSQL in ``$SIMHASH_PG_HOME`` or the per-user data directory, started on
first use and reused afterwards (``simhash-pg server stop`` stops it).

The handshake, in order: the writers' lock timeout for the session; the
schema (created or upgraded under an advisory lock with ``migrate=True``,
else an outdated database is a :class:`SchemaVersionError`); the fingerprint
scheme (recorded on first open, compared afterwards); the verify mode, the
probes and the duplicate rule's version (recorded on first open by the first
role allowed to); the partition interval (recorded on first open, changed
when asked for another; revision 0013).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, TypeGuard, cast

import psycopg
from psycopg.types.json import Jsonb

from simhash_pg.db import layout, migrate
from simhash_pg.store.maintenance import run_ddl
from simhash_pg.store.results import (
    SchemaVersionError,
    SchemeMismatchError,
    StoreConnectionError,
)
from simhash_pg.store.retention import DAYS_AHEAD, PARTITION_INTERVALS, PartitionInterval
from simhash_pg.verify import (
    DEFAULT_VERIFY,
    PROBE_CAP,
    PROBE_LEAD,
    PROBE_PAIRS,
    PROBE_T,
    RULE_VERSION,
    RULES,
    VERIFY_MODES,
    VerifyMode,
)

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from simhash_pg.text.schemes import Scheme

__all__ = ["DEFAULT_VERIFY", "PARTITION_INTERVALS", "SCHEMA_HEAD", "Opened",
           "PartitionInterval", "configure_session", "open_database", "ping", "where"]

# The schema revision this simhash-pg needs.
SCHEMA_HEAD = migrate.HEAD

_GET_META = "SELECT value FROM simhash_meta WHERE name = %s"
_PUT_META = (
    "INSERT INTO simhash_meta (name, value) VALUES (%s, %s) ON CONFLICT (name) DO NOTHING"
)


class Opened(NamedTuple):
    """An open, checked connection and what the handshake found."""

    dsn: str
    conn: psycopg.Connection[Any]
    scheme: Scheme
    recorded_verify: VerifyMode  # the mode the database records
    probe_t: int  # margin-ranked probes of long text queries under "all": values per block
    probe_cap: int  # ... and their Hamming cap
    probe_pairs: int | None  # long texts' values per block by pairs of blocks (None: single)
    probe_lead: int | None  # ... of which the first this many lead a pair (None: all)
    rule: int  # the duplicate rule's version (simhash_pg.verify.rule.RULES)
    partition_interval: PartitionInterval = "day"  # one partition's span (revision 0013)
    schema: str = layout.DEFAULT_SCHEMA  # where the store's objects are (revision 0022)


def open_database(
    dsn: str | None,
    engine: Engine | None,
    *,
    scheme: Scheme | Mapping[str, Any] | str | None,
    verify: VerifyMode | None,
    do_migrate: bool,
    connect_timeout: int,
    lock_timeout: float | None,
    partitions: bool,
    partition_interval: PartitionInterval | None = None,
    schema: str | None = None,
) -> Opened:
    """Find the database, connect (autocommit) and shake hands; the connection is
    closed again if any step fails. ``partitions``: make today's and the next
    days' partitions, if missing (a store with a retention window).
    ``partition_interval``: the store's (None: the recorded one, else 'day').
    ``schema``: the store's PostgreSQL schema (None: ``$SIMHASH_PG_SCHEMA``,
    else ``simhash``; :mod:`simhash_pg.db.layout`).
    """
    schema = layout.schema_name(schema)
    resolved = resolve_dsn(dsn, engine)
    conn = connect(resolved, connect_timeout)
    try:
        configure_session(conn, lock_timeout, schema)
        _ensure_schema(conn, resolved, do_migrate, schema)
        stored_scheme, new_store = _ensure_scheme(conn, resolved, scheme)
        recorded = _ensure_verify(conn, resolved, verify)
        probe_t, probe_cap, probe_pairs, probe_lead = _ensure_probes(conn, resolved)
        rule = _ensure_rule(conn, resolved, new_store)
        interval = _ensure_partition_interval(conn, resolved, partition_interval)
    except BaseException:
        conn.close()
        raise
    if partitions:
        _ensure_partitions(conn)
    return Opened(resolved, conn, stored_scheme, recorded, probe_t, probe_cap, probe_pairs,
                  probe_lead, rule, interval, schema)


def configure_session(conn: psycopg.Connection[Any], lock_timeout: float | None,
                      schema: str) -> None:
    """Set a session up for a store: its search_path and the writers' lock timeout.

    Every connection a store uses needs it, its own (:func:`open_database`)
    or a pool's (``SimhashStore.over_connection``). One round trip.
    """
    # the store's schema first (revision 0022): its tables and functions by
    # their short names. simhash_writer_lock reads simhash.lock_timeout
    # (sql/0008_writer_locks.sql); "0": no limit
    conn.execute(
        "SELECT set_config('search_path', %s, false),"
        " set_config('simhash.lock_timeout', %s, false)",
        [layout.search_path(schema),
         f"{round(lock_timeout * 1000)}ms" if lock_timeout is not None else "0"],
    )


def where(dsn: str) -> str:
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


def resolve_dsn(dsn: str | None, engine: Engine | None) -> str:
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
    from simhash_pg.db.server import get_default_server

    return get_default_server().start()


def connect(dsn: str, timeout: int) -> psycopg.Connection[Any]:
    try:
        return psycopg.connect(dsn, autocommit=True, connect_timeout=timeout)
    except psycopg.OperationalError as exc:
        raise StoreConnectionError(
            f"cannot connect to PostgreSQL at {where(dsn)}: {_first_line(exc)}"
        ) from None
    except psycopg.ProgrammingError as exc:
        raise ValueError(f"invalid DSN: {_first_line(exc)}") from None


def _ensure_schema(conn: psycopg.Connection[Any], dsn: str, do_migrate: bool,
                   schema: str) -> None:
    # an app's own alembic_version is never read (layout.stored_revision)
    rev = layout.stored_revision(conn, schema)
    if rev == migrate.HEAD:
        return
    if not do_migrate:
        raise SchemaVersionError(
            f"the database at {where(dsn)} is at schema revision {rev or 'none'}, "
            f"this simhash-pg needs {migrate.HEAD}: run `simhash-pg db upgrade --dsn ...`"
        )
    try:
        migrate.upgrade(dsn, schema=schema)
    except Exception as exc:
        if "Can't locate revision" in str(exc):
            raise SchemaVersionError(
                f"the database at {where(dsn)} is at schema revision {rev}, "
                "unknown to this simhash-pg (made by a newer version?)"
            ) from exc
        raise


def _ensure_scheme(
    conn: psycopg.Connection[Any], dsn: str, scheme: Scheme | Mapping[str, Any] | str | None
) -> tuple[Scheme, bool]:
    """The stored scheme, and whether the store is new (no scheme was recorded yet)."""
    from simhash_pg.text.schemes import Scheme, get_scheme

    wanted = get_scheme(scheme)
    row = conn.execute(_GET_META, ["scheme"]).fetchone()
    new_store = row is None
    if row is None:
        conn.execute(_PUT_META, ["scheme", Jsonb(wanted.to_dict())])
        row = conn.execute(_GET_META, ["scheme"]).fetchone()
    assert row is not None
    try:
        stored = Scheme.from_dict(row[0])
    except (TypeError, ValueError) as exc:
        raise SchemeMismatchError(
            f"the database at {where(dsn)} was made with fingerprint scheme "
            f"{json.dumps(row[0], sort_keys=True)}, which this simhash-pg cannot "
            f"compute: {exc}"
        ) from exc
    if scheme is not None and stored.to_json() != wanted.to_json():
        raise SchemeMismatchError(
            f"the database at {where(dsn)} was made with fingerprint scheme "
            f"{stored.to_json()}, not {wanted.to_json()}: fingerprints of two schemes "
            "cannot be compared. Open it without a scheme (to use its own) or use "
            "another database."
        )
    return stored, new_store


def _ensure_verify(
    conn: psycopg.Connection[Any], dsn: str, verify: VerifyMode | None
) -> VerifyMode:
    """The database's verify mode, recorded on first open (the given one or the default)."""
    row = conn.execute(_GET_META, ["verify"]).fetchone()
    if row is None:
        try:
            conn.execute(_PUT_META, ["verify", Jsonb(verify or DEFAULT_VERIFY)])
        except psycopg.errors.InsufficientPrivilege:
            # a read-only role (simhash_reader): the first writer records it
            return verify or DEFAULT_VERIFY
        row = conn.execute(_GET_META, ["verify"]).fetchone()
    value = row[0] if row else None
    if value not in VERIFY_MODES:
        raise SchemaVersionError(
            f"the database at {where(dsn)} records verify mode {value!r}, "
            f"not one of {', '.join(VERIFY_MODES)}"
        )
    return cast(VerifyMode, value)


def _ensure_probes(
    conn: psycopg.Connection[Any], dsn: str
) -> tuple[int, int, int | None, int | None]:
    """The database's probe budget, cap, pair probes and pairs' leading values
    ('probes': {"t": T, "cap": cap, "pairs": P, "lead": L}; no "pairs": long
    texts probe single blocks, as before revision 0019; no "lead": every pair
    value leads, as before revision 0024).

    Recorded like the verify mode: on first open by a role allowed to write
    (a store made before probes gets today's defaults then); a reader of a
    store without the record uses the defaults, as the first writer will
    record them. Recorded, so that every client of a store probes alike.
    """
    default = {"t": PROBE_T, "cap": PROBE_CAP, "pairs": PROBE_PAIRS, "lead": PROBE_LEAD}
    row = conn.execute(_GET_META, ["probes"]).fetchone()
    if row is None:
        try:
            conn.execute(_PUT_META, ["probes", Jsonb(default)])
        except psycopg.errors.InsufficientPrivilege:
            return PROBE_T, PROBE_CAP, PROBE_PAIRS, PROBE_LEAD
        row = conn.execute(_GET_META, ["probes"]).fetchone()
    value = row[0] if row else default
    got = value if isinstance(value, dict) else {}
    t, cap, pairs, lead = (got.get(n) for n in ("t", "cap", "pairs", "lead"))
    if not (_int_from(t, 1) and _int_from(cap, 0) and cap <= 64
            and (pairs is None or _int_from(pairs, 1))
            and (lead is None or _int_from(lead, 0))):
        raise SchemaVersionError(
            f"the database at {where(dsn)} records probes {value!r}, not "
            '{"t": an int >= 1, "cap": an int in 0..64, "pairs" (optional): an int >= 1, '
            '"lead" (optional): an int >= 0}'
        )
    return t, cap, pairs, lead


def _int_from(x: object, low: int) -> TypeGuard[int]:
    """Whether ``x`` is an int (not a bool) of at least ``low``."""
    return isinstance(x, int) and not isinstance(x, bool) and x >= low


def _ensure_rule(conn: psycopg.Connection[Any], dsn: str, new_store: bool) -> int:
    """The database's duplicate rule version ('rule'), recorded on first open.

    A new store records today's :data:`~simhash_pg.verify.RULE_VERSION`. A
    store made before the record existed (it has a scheme but no 'rule')
    records 1, the rule it was made with, so that it decides exactly as
    before; its owner can move it on (docs/operations.md). A reader of a
    store without the record uses what the first writer will record.
    """
    row = conn.execute(_GET_META, ["rule"]).fetchone()
    if row is None:
        value = RULE_VERSION if new_store else 1
        try:
            conn.execute(_PUT_META, ["rule", Jsonb(value)])
        except psycopg.errors.InsufficientPrivilege:
            return value
        row = conn.execute(_GET_META, ["rule"]).fetchone()
    got = row[0] if row else None
    if isinstance(got, bool) or got not in RULES:
        raise SchemaVersionError(
            f"the database at {where(dsn)} records duplicate rule {got!r}, not one of "
            f"{', '.join(map(str, RULES))} (made by a newer simhash-pg?)"
        )
    return cast(int, got)


def _ensure_partitions(conn: psycopg.Connection[Any]) -> None:
    """Make today's and the next days' partitions, if missing (best effort).

    The table's owner may, and since revision 0020 a member of
    simhash_writer (within the store's layout); anyone else gets a
    permission error, ignored here (``simhash-pg purge``, run by the owner,
    makes them too; rows of a missing day wait in the default partition).
    """
    # one short try: an open must not queue writers behind a session holding the table
    with contextlib.suppress(psycopg.Error):
        run_ddl(conn, lambda: conn.execute("SELECT simhash_ensure_partitions(%s)",
                                           [DAYS_AHEAD]).fetchall(),
                what="make the next partitions", lock_wait=0)


def _ensure_partition_interval(conn: psycopg.Connection[Any], dsn: str,
                               wanted: PartitionInterval | None) -> PartitionInterval:
    """The store's partition interval ('partition_interval'), recorded on first open.

    None keeps the recorded one; a store without the record (made before
    revision 0013, or new) records 'day' unless another is asked for. Asking
    for another than the recorded one changes it, which only the owner may:
    simhash_set_partition_interval drops the empty partitions made ahead and
    makes them again by the new interval (partitions holding rows stay, the
    new ones fill the gaps beside them).
    """
    row = conn.execute(_GET_META, ["partition_interval"]).fetchone()
    recorded = row[0] if row else None
    if recorded is not None and recorded not in PARTITION_INTERVALS:
        raise SchemaVersionError(
            f"the database at {where(dsn)} records partition interval {recorded!r}, not one "
            f"of {', '.join(PARTITION_INTERVALS)} (made by a newer simhash-pg?)")
    target = wanted or recorded or "day"
    if target == recorded:
        return cast(PartitionInterval, target)
    try:
        if recorded is None and target == "day":  # the default: the partitions are daily
            conn.execute(_PUT_META, ["partition_interval", Jsonb(target)])
            row = conn.execute(_GET_META, ["partition_interval"]).fetchone()
            return cast(PartitionInterval, row[0] if row else target)  # a racing first open's
        else:
            conn.execute("SELECT simhash_set_partition_interval(%s, %s)",
                         [target, DAYS_AHEAD]).fetchall()
    except psycopg.errors.InsufficientPrivilege:
        if wanted is None:  # a reader or writer role: the owner records it
            return cast(PartitionInterval, recorded or "day")
        raise SchemaVersionError(
            f"the database at {where(dsn)} makes {recorded or 'day'} partitions; only its "
            f"owner may change that to {wanted!r}") from None
    return cast(PartitionInterval, target)


def ping(conn: psycopg.Connection[Any]) -> None:
    """One round trip: raises if the database does not answer (serve's /healthz)."""
    conn.execute("SELECT 1")
