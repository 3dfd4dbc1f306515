"""Security: the read-only analyst role, injection strings, no superuser needed.

Roles are cluster-wide, so every role a test makes has a unique name and is
dropped at the end; the grants it holds live in the per-test database, which
pytest-postgresql drops.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Callable, Iterator

import psycopg
import pytest
from _throwaway import needs_own_server, throwaway_server
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from simhash_pg import LockTimeoutError, SimhashStore
from simhash_pg.bits import to_signed
from simhash_pg.store import Doc

EVIL = [
    "'); DROP TABLE simhash_documents; --",
    "'; DELETE FROM simhash_documents WHERE '1'='1",
    "$$; DROP TABLE simhash_meta; $$",
    "$tag$ $$ $body$",
    "\"double\" 'single' `back`",
    "back\\slash \\' \\\\ \\x00-not-a-nul \\N",
    "%s %(name)s %% {0} {}",
    "-- comment /* block */ ;",
    "E'\\n' U&'\\0041'",
    "ключ ключей 鍵 キー 🔑 \u202eevil\u202c e\u0301",
    "tab\there\nnewline\r\nend",
    " ",
]


def _role_dsn(pg_dsn: str, role: str, password: str) -> str:
    params = conninfo_to_dict(pg_dsn)
    params.update(user=role, password=password)
    return make_conninfo(**{k: v for k, v in params.items() if v is not None})


@pytest.fixture
def make_role(pg: psycopg.Connection, pg_dsn: str) -> Iterator[Callable[..., str]]:
    """make_role(*grant_statements) -> the DSN of a new LOGIN role holding them."""
    made: list[str] = []

    def make(*grants: str) -> str:
        role = f"shpg_test_{secrets.token_hex(4)}"
        password = secrets.token_hex(12)
        pg.execute(
            sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                sql.Identifier(role), sql.Literal(password)
            )
        )
        made.append(role)
        for grant in grants:
            # grants are this file's own constants; {role} is the new role
            pg.execute(sql.SQL(grant).format(role=sql.Identifier(role)))  # type: ignore[arg-type]
        return _role_dsn(pg_dsn, role, password)

    yield make
    for role in made:
        pg.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
        pg.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


def _fill(pg_dsn: str) -> None:
    with SimhashStore(pg_dsn) as store:
        base = 0x0123_4567_89AB_CDEF
        store.add(base, key="a", meta={"n": 1})
        store.add(base ^ 0b101, key="b", dedup=False)
        store.add(0xFFFF_0000_FFFF_0000, key="c")


# -- the read-only analyst role ----------------------------------------------


def test_reader_role_exists_as_a_group_role(pg: psycopg.Connection) -> None:
    row = pg.execute(
        "SELECT rolcanlogin, rolsuper, rolcreaterole, rolcreatedb FROM pg_roles"
        " WHERE rolname = 'simhash_reader'"
    ).fetchone()
    assert row == (False, False, False, False)


def test_reader_can_read_and_search(make_role: Callable[..., str], pg_dsn: str) -> None:
    _fill(pg_dsn)
    dsn = make_role("GRANT simhash_reader TO {role}")
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM simhash_documents").fetchone() == (3,)
        assert conn.execute("SELECT count(*) FROM simhash_meta").fetchone()[0] >= 1  # type: ignore[index]
        fp = to_signed(0x0123_4567_89AB_CDEF)
        near = conn.execute("SELECT key, distance FROM simhash_near(%s, 3)", [fp]).fetchall()
        assert near == [("a", 0), ("b", 2)]
        # both probe forms, which read simhash_mask_sets (revision 0006)
        for threshold in ("0", "1e30"):
            conn.execute(f"SET simhash.pair_probe_min_rows = '{threshold}'")
            near = conn.execute("SELECT key FROM simhash_near(%s, 6)", [fp]).fetchall()
            assert [r[0] for r in near][:2] == ["a", "b"]
        conn.execute("RESET simhash.pair_probe_min_rows")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("UPDATE simhash_mask_sets SET masks = '{}'")
        pairs = conn.execute("SELECT a, b, distance FROM simhash_pairs(3)").fetchall()
        assert [p[2] for p in pairs] == [2]
        assert conn.execute(
            "SELECT count(*) FROM simhash_near_many(ARRAY[%s]::bigint[], 3)", [fp]
        ).fetchone() == (2,)
        assert conn.execute(
            "SELECT simhash_hamming(%s, %s)", [fp, to_signed(0xFFFF_0000_FFFF_0000)]
        ).fetchone() is not None


WRITES = [
    "INSERT INTO simhash_documents (fingerprint) VALUES (1)",
    "UPDATE simhash_documents SET meta = '{}'",
    "DELETE FROM simhash_documents",
    "TRUNCATE simhash_documents",
    "INSERT INTO simhash_meta (name, value) VALUES ('x', '1')",
    "UPDATE simhash_meta SET value = '2' WHERE name = 'schema_version'",
    "DELETE FROM simhash_meta",
    "DELETE FROM alembic_version",
    "SELECT * FROM simhash_add(12345)",
    "SELECT * FROM simhash_add(12345, 'k', NULL, 3, 'insert')",
    "DROP TABLE simhash_documents",
    "ALTER TABLE simhash_documents ADD COLUMN x int",
    "CREATE INDEX ON simhash_documents (meta)",
    "SELECT nextval(pg_get_serial_sequence('simhash_documents', 'id'))",
]


def test_reader_cannot_write(
    make_role: Callable[..., str], pg: psycopg.Connection, pg_dsn: str
) -> None:
    _fill(pg_dsn)
    before = pg.execute("SELECT * FROM simhash_documents ORDER BY id").fetchall()
    dsn = make_role("GRANT simhash_reader TO {role}")
    with psycopg.connect(dsn, autocommit=True) as conn:
        for statement in WRITES:
            with pytest.raises(psycopg.errors.InsufficientPrivilege) as err:
                conn.execute(statement)
            msg = str(err.value)
            assert "permission denied" in msg or "must be owner" in msg, (statement, msg)
    assert pg.execute("SELECT * FROM simhash_documents ORDER BY id").fetchall() == before
    assert pg.execute("SELECT count(*) FROM simhash_meta").fetchone()[0] >= 1  # type: ignore[index]


def test_reader_cannot_use_the_store_to_write(
    make_role: Callable[..., str], pg_dsn: str
) -> None:
    _fill(pg_dsn)
    dsn = make_role("GRANT simhash_reader TO {role}")
    with SimhashStore(dsn, migrate=False) as store:
        assert [m.key for m in store.near(0x0123_4567_89AB_CDEF)] == ["a", "b"]
        assert store.get("a") is not None
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            store.add(42, key="new")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            store.add_many([Doc(43, "new2")])
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            store.remove("a")
        assert store.count() == 3


# -- the writers' advisory locks (issue 18, item 7) ------------------------------

# Every function that takes an advisory lock on two int4 keys (the writers'
# key space).
LOCK_CALLS = [
    f"SELECT {f}(1397246980, 0)"
    for f in ("pg_advisory_lock", "pg_advisory_lock_shared", "pg_advisory_xact_lock",
              "pg_advisory_xact_lock_shared", "pg_try_advisory_lock",
              "pg_try_advisory_lock_shared", "pg_try_advisory_xact_lock",
              "pg_try_advisory_xact_lock_shared")
]
TEXT = "An analyst's open transaction must not stop this text from being stored at all."


def _with_options(dsn: str, options: str) -> str:
    params = conninfo_to_dict(dsn)
    params["options"] = options
    return make_conninfo(**{k: v for k, v in params.items() if v is not None})


def test_a_reader_cannot_freeze_the_writers(make_role: Callable[..., str], pg_dsn: str) -> None:
    """A reader login tries to hold the store-wide lock; every kind of add goes on."""
    SimhashStore(pg_dsn).close()
    dsn = make_role("GRANT simhash_reader TO {role}")
    # before revision 0008 the adds waited for the reader until this timeout
    writer_dsn = _with_options(pg_dsn, "-c statement_timeout=10s")
    with psycopg.connect(dsn, autocommit=True) as reader:
        reader.execute("BEGIN")  # holds the xact locks too, if it gets them
        held = []
        for call in LOCK_CALLS:
            reader.execute("SAVEPOINT s")
            try:
                reader.execute(call)
                held.append(call)
            except psycopg.errors.InsufficientPrivilege:
                reader.execute("ROLLBACK TO SAVEPOINT s")
        start = time.monotonic()
        with SimhashStore(writer_dsn, lock_timeout=0.5) as store:
            outcomes = []
            for add in (lambda: store.add(0x0F0F_1234_5678_9ABC, key="fp"),
                        lambda: store.add(TEXT, key="text"),
                        lambda: store.add(0x1111_2222_3333_4444, key="plain", dedup=False),
                        lambda: store.add_many([Doc(0xDEAD_BEEF_0000_0001, "many")])):
                try:
                    add()
                    outcomes.append("stored")
                except LockTimeoutError:
                    outcomes.append("timed out")  # fails fast, with the typed error
            count = store.count()
        seconds = time.monotonic() - start
        reader.execute("ROLLBACK")
        # nor through the writers' lock function (revision 0008)
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="simhash_writer_lock"):
            reader.execute("SELECT simhash_writer_lock('exclusive')")
    assert held == [], f"the reader took the writers' locks: {held}"
    assert outcomes == ["stored"] * 4 and count == 4
    assert seconds < 8


@pytest.mark.slow
def test_writers_give_up_on_a_held_lock_with_a_typed_error(
    pg: psycopg.Connection, pg_dsn: str
) -> None:
    """A session holding the store-wide lock (a writer left in a transaction)."""
    SimhashStore(pg_dsn).close()
    writer_dsn = _with_options(pg_dsn, "-c statement_timeout=20s")
    with psycopg.connect(pg_dsn) as holder:
        holder.execute("SELECT pg_advisory_xact_lock(1397246980, 0)")
        holder_pid = holder.info.backend_pid
        with SimhashStore(writer_dsn, lock_timeout=0.3) as store:
            for add in (lambda: store.add(0x0F0F_1234_5678_9ABC, key="fp"),
                        lambda: store.add(TEXT, key="text"),
                        lambda: store.add(0x1111_2222_3333_4444, key="plain", dedup=False),
                        lambda: store.add_many([Doc(0xDEAD_BEEF_0000_0001, "many")])):
                start = time.monotonic()
                with pytest.raises(LockTimeoutError, match=f"pid {holder_pid} ") as err:
                    add()
                assert time.monotonic() - start < 6
                assert isinstance(err.value.__cause__, psycopg.errors.LockNotAvailable)
            assert store.count() == 0
            holder.commit()  # released: the same store goes on
            assert store.add(0x0F0F_1234_5678_9ABC, key="fp").inserted
            assert store.add_many([Doc(0xDEAD_BEEF_0000_0001, "many")]).inserted == 1


# -- injection strings ---------------------------------------------------------


def test_injection_strings_come_back_verbatim(pg: psycopg.Connection, pg_dsn: str) -> None:
    with SimhashStore(pg_dsn) as store:
        singles = {}
        for i, s in enumerate(EVIL):
            meta = {"text": s, s: [s, {"nested": s}], "i": i}
            r = store.add(s + f" single {i} " * 3, key=s, meta=meta, dedup=False)
            assert r.inserted and r.key == s
            singles[s] = r.id
            doc = store.get(s)
            assert doc is not None and doc.key == s and doc.meta == meta
            assert store.get(r.id) == doc
            # the same key again: idempotent, no second row
            assert store.add(s + " other text entirely", key=s).existing_key
            # near() with the evil string as the document finds its own row
            assert r.id in {m.id for m in store.near(s + f" single {i} " * 3)}

        batch = [Doc(f"{s} batch {i} " * 3, "many:" + s, {"v": s}) for i, s in enumerate(EVIL)]
        res = store.add_many(batch, dedup=False)
        assert res.inserted == len(EVIL) and res.errors == 0
        for s in EVIL:
            doc = store.get("many:" + s)
            assert doc is not None and doc.meta == {"v": s}
        got = {
            r[0]
            for r in pg.execute(
                "SELECT key FROM simhash_documents WHERE key = ANY(%s)", [EVIL]
            ).fetchall()
        }
        assert got == set(EVIL)

        for s in EVIL:
            assert store.remove(s) is True
            assert store.remove(s) is False
            assert store.get(s) is None
        assert store.count() == len(EVIL)

    # the tables and functions are all still there
    assert pg.execute("SELECT to_regclass('simhash_documents') IS NOT NULL").fetchone() == (True,)
    assert pg.execute("SELECT to_regclass('simhash_meta') IS NOT NULL").fetchone() == (True,)
    assert pg.execute("SELECT count(*) FROM simhash_near(0, 3)").fetchone() is not None


def test_nul_is_refused_with_nothing_written(pg_dsn: str) -> None:
    with SimhashStore(pg_dsn) as store:
        with pytest.raises(ValueError, match="NUL"):
            store.add(1, key="a\x00b")
        with pytest.raises(ValueError, match="NUL"):
            store.add(1, meta={"x": "a\x00b"})
        assert store.count() == 0


# -- no superuser needed ---------------------------------------------------------

WRITER_GRANTS = (
    "GRANT USAGE ON SCHEMA simhash TO {role}",
    "GRANT SELECT, INSERT, DELETE ON simhash_documents TO {role}",
    "GRANT SELECT ON simhash_meta, alembic_version TO {role}",
    "GRANT USAGE ON SEQUENCE simhash_documents_id_seq TO {role}",
)


def test_store_runs_as_a_plain_role_with_grants(
    make_role: Callable[..., str], pg: psycopg.Connection, pg_dsn: str
) -> None:
    # the owner opens the store once: the scheme is recorded
    SimhashStore(pg_dsn).close()
    dsn = make_role(*WRITER_GRANTS)
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT rolsuper, rolcreatedb, rolcreaterole FROM pg_roles WHERE rolname = current_user"
        ).fetchone()
        assert row == (False, False, False)
        owned = conn.execute(
            "SELECT count(*) FROM pg_class WHERE relowner = (SELECT oid FROM pg_roles"
            " WHERE rolname = current_user)"
        ).fetchone()
        assert owned == (0,)
    base = 0x0F0F_1234_5678_9ABC
    with SimhashStore(dsn) as store:
        a = store.add(base, key="x")
        assert a.inserted
        dup = store.add(base ^ 0b11, key="y")
        assert not dup.inserted and dup.duplicate_of == a.id
        res = store.add_many([Doc(base ^ (1 << 40), "z"), Doc(0xDEAD_BEEF_0000_0001, "w")])
        assert res.inserted == 1 and res.duplicates == 1
        assert [m.key for m in store.near(base)] == ["x"]
        assert store.near_many([base, 0xDEAD_BEEF_0000_0001]) != [[], []]
        assert store.remove("w")
        assert store.count() == 1
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            store.connection.execute("TRUNCATE simhash_documents")


def test_a_writer_by_set_role_takes_the_writers_locks(
    make_role: Callable[..., str], pg_dsn: str
) -> None:
    """A NOINHERIT login that SETs ROLE to a writer role: the lock function serves it."""
    SimhashStore(pg_dsn).close()
    writer = conninfo_to_dict(make_role(*WRITER_GRANTS))["user"]
    dsn = make_role("ALTER ROLE {role} NOINHERIT", f"GRANT {writer} TO {{role}}")
    with psycopg.connect(dsn, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT pg_advisory_lock(1397246980, 0)")
        conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(writer)))
        row = conn.execute("SELECT inserted FROM simhash_add(42, 'by-set-role')").fetchone()
        assert row == (True,)
        with conn.transaction():
            assert conn.execute("SELECT simhash_writer_lock('exclusive')").fetchone() == (1,)


# -- the embedded server -----------------------------------------------------------


@pytest.mark.skipif(
    bool(os.environ.get("SIMHASH_PG_TEST_DSN")),
    reason="an external server's listen_addresses are its operator's choice",
)
def test_embedded_server_listens_on_a_unix_socket_only(pg: psycopg.Connection) -> None:
    assert pg.execute("SHOW listen_addresses").fetchone() == ("",)
    # this very connection came over the socket: no server address
    assert pg.execute("SELECT inet_server_addr()").fetchone() == (None,)


@pytest.mark.slow  # its own server: initdb and four migrations
@needs_own_server
def test_reader_role_shared_by_two_databases() -> None:
    """The last store downgraded drops the role; an operator's own role is kept."""
    from simhash_pg.db import migrate

    def role_exists(admin: psycopg.Connection) -> bool:
        row = admin.execute("SELECT count(*) FROM pg_roles WHERE rolname = 'simhash_reader'")
        return row.fetchone() == (1,)

    with throwaway_server() as server:
        server.start(dbname="a")
        server.start(dbname="b")
        with psycopg.connect(server.dsn("postgres"), autocommit=True) as admin:
            migrate.upgrade(server.dsn("a"))
            migrate.upgrade(server.dsn("b"))
            assert role_exists(admin)
            migrate.downgrade(server.dsn("a"), "base")
            assert role_exists(admin)  # b still grants it its tables
            migrate.downgrade(server.dsn("b"), "base")
            assert not role_exists(admin)  # the last one out dropped it

            admin.execute("CREATE ROLE simhash_reader NOLOGIN")  # the operator's own
            migrate.upgrade(server.dsn("a"))
            migrate.downgrade(server.dsn("a"), "base")
            assert role_exists(admin)  # not ours: kept
            admin.execute("DROP ROLE simhash_reader")
