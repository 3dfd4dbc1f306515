"""``serve`` never logs in as the superuser (issue 29, item 2).

On the embedded server it logs in as its own login, a member of
simhash_writer (simhash_reader with ``--read-only``), let in by peer; a
``--dsn`` of a superuser is refused unless ``--allow-superuser``. Roles are
the whole server's: logins made here are dropped at the end (conftest's
``login_dsn``), and the embedded test runs a server of its own.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import httpx
import psycopg
import pytest
from _serving import make_client, serve_cli
from _throwaway import needs_own_server
from psycopg import sql

from lab.bench._server import served
from simhash_pg.db.roles import Login, check_login, dsn_as, ensure_serve_login
from simhash_pg.serve.deps import APPLICATION_NAME

TEXT = "The harbour master counted forty ships at anchor before the storm came in."
COPY = "The harbour master counted forty ships at anchor before the storm came in!"
WHO = "SELECT current_user::text, rolsuper FROM pg_roles WHERE rolname = current_user"


_serve = serve_cli


def _serve_sessions(admin: psycopg.Connection) -> list[tuple[str, bool]]:
    """(role, superuser) of each connection serve holds, as the superuser sees them."""
    return [(r[0], r[1]) for r in admin.execute(
        "SELECT a.usename::text, r.rolsuper FROM pg_stat_activity a"
        " JOIN pg_roles r ON r.oid = a.usesysid WHERE a.application_name = %s",
        [APPLICATION_NAME])]


# -- the embedded server: serve's own logins ---------------------------------------


@needs_own_server
def test_serve_on_the_embedded_server_logs_in_as_its_own_writer_and_reader() -> None:
    from simhash_pg.db.server import LocalServer, temporary_home

    home = temporary_home("shpg-serve-")
    env = {"SIMHASH_PG_HOME": str(home)}
    try:
        with served(None, env=env) as server:  # no --dsn: the embedded server
            add = httpx.post(server.url + "/v1/documents", json={"text": TEXT, "key": "a"})
            assert add.status_code == 200 and add.json()["status"] == "inserted", add.text
            dup = httpx.post(server.url + "/v1/documents", json={"text": COPY, "key": "b"})
            assert dup.json()["duplicate_of"] == add.json()["id"], dup.text
            near = httpx.post(server.url + "/v1/near", json={"text": COPY})
            assert [m["key"] for m in near.json()["matches"]] == ["a"], near.text
            with psycopg.connect(LocalServer(home).dsn(), autocommit=True) as admin:
                # before: [("postgres", True), ...]
                assert set(_serve_sessions(admin)) == {("simhash_serve", False)}
                row = admin.execute(
                    "SELECT rolcanlogin, rolsuper, rolcreaterole, rolcreatedb,"
                    " pg_has_role(oid, 'simhash_writer', 'MEMBER')"
                    " FROM pg_roles WHERE rolname = 'simhash_serve'").fetchone()
                assert row == (True, False, False, False, True)
            gone = httpx.delete(server.url + f"/v1/documents/{add.json()['id']}")
            assert gone.status_code == 200, gone.text
        with served(None, "--read-only", env=env) as server:
            r = httpx.post(server.url + "/v1/documents", json={"text": TEXT + " Again."})
            assert r.status_code == 403 and "read-only" in r.json()["detail"], r.text
            r = httpx.post(server.url + "/v1/near", json={"text": TEXT})
            assert r.status_code == 200, r.text
            with psycopg.connect(LocalServer(home).dsn(), autocommit=True) as admin:
                assert set(_serve_sessions(admin)) == {("simhash_serve_reader", False)}
        # the reader login itself cannot write, whatever serve lets through
        reader = dsn_as(LocalServer(home).dsn(), "simhash_serve_reader")
        with psycopg.connect(reader, autocommit=True) as conn:
            assert conn.execute(WHO).fetchone() == ("simhash_serve_reader", False)
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute("SELECT * FROM simhash_add(1, 'by-the-reader')")
    finally:
        LocalServer(home).destroy()


@pytest.mark.skipif(bool(os.environ.get("SIMHASH_PG_TEST_DSN")),
                    reason="peer logins are the embedded server's pg_hba.conf")
def test_serve_logins_are_made_by_the_owner_and_let_in_by_peer(pg: psycopg.Connection,
                                                                 pg_dsn: str) -> None:
    rules = {tuple(r[0]): r[1] for r in pg.execute(
        "SELECT user_name, auth_method FROM pg_hba_file_rules WHERE type = 'local'")}
    assert rules[("simhash_serve", "simhash_serve_reader")] == "peer"
    made = []
    try:
        for read_only, group in ((False, "simhash_writer"), (True, "simhash_reader")):
            name = ensure_serve_login(pg, read_only=read_only)
            made.append(name)
            assert ensure_serve_login(pg, read_only=read_only) == name  # again: as it is
            with psycopg.connect(dsn_as(pg_dsn, name), autocommit=True) as conn:  # no password
                assert conn.execute(WHO).fetchone() == (name, False)
                assert conn.execute("SELECT pg_has_role(current_user, %s, 'MEMBER')",
                                    [group]).fetchone() == (True,)
        # a login of that name with more rights than serve needs is refused, not changed
        pg.execute("ALTER ROLE simhash_serve CREATEDB")
        with pytest.raises(ValueError, match="CREATEDB"):
            ensure_serve_login(pg, read_only=False)
        pg.execute("ALTER ROLE simhash_serve NOCREATEDB")
        pg.execute("GRANT simhash_writer TO simhash_serve_reader")  # a reader that may write
        with pytest.raises(ValueError, match="REVOKE simhash_writer"):
            ensure_serve_login(pg, read_only=True)
    finally:
        for name in made:
            pg.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(name)))
            pg.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))


# -- a DSN of the user's ---------------------------------------------------------------


def test_a_superuser_dsn_is_refused_unless_allowed(pg_dsn: str, tmp_path: Path) -> None:
    done = _serve(pg_dsn)  # before: it started, as the superuser
    assert done.returncode == 2, done.stderr
    assert "a superuser" in done.stderr and "--allow-superuser" in done.stderr, done.stderr
    assert "GRANT simhash_writer TO" in done.stderr
    log = tmp_path / "serve.log"
    with log.open("wb") as out, served(pg_dsn, "--allow-superuser", log=out) as server:
        assert httpx.post(server.url + "/v1/near", json={"fingerprint": 1}).status_code == 200
    assert "warning: serving as the superuser" in log.read_text()


def test_a_dsn_that_cannot_write_serves_only_read_only(
        login_dsn: Callable[[str], str], pg: psycopg.Connection, pg_dsn: str) -> None:
    from simhash_pg import SimhashStore

    SimhashStore(pg_dsn).close()  # the owner opens it once: a reader records nothing
    reader = login_dsn("simhash_reader")
    done = _serve(reader)
    assert done.returncode == 2, done.stderr
    assert "may not add documents" in done.stderr and "--read-only" in done.stderr
    with served(reader, "--read-only") as server:
        r = httpx.post(server.url + "/v1/documents", json={"text": TEXT})
        assert r.status_code == 403, r.text
        assert httpx.post(server.url + "/v1/near", json={"text": TEXT}).status_code == 200
        assert httpx.delete(server.url + "/v1/documents/1").status_code == 403
    assert pg.execute("SELECT count(*) FROM simhash_documents").fetchone() == (0,)


def test_the_capacity_check_counts_the_logins_connection_limit(
        login_dsn: Callable[[str], str], pg: psycopg.Connection) -> None:
    dsn = login_dsn("simhash_writer")
    role = psycopg.conninfo.conninfo_to_dict(dsn)["user"]
    pg.execute(sql.SQL("ALTER ROLE {} CONNECTION LIMIT 6").format(sql.Identifier(str(role))))
    done = _serve(dsn, "--pool-size", "8")  # 8 + 1 at start > 6
    assert done.returncode == 2, done.stderr
    assert f"role {role} has CONNECTION LIMIT 6" in done.stderr, done.stderr


def test_who_may_serve() -> None:
    def login(**kw: bool) -> Login:
        base = {"superuser": False, "powers": False, "owner": False, "can_write": True}
        return Login("r", **(base | kw), connection_limit=-1)  # type: ignore[arg-type]

    assert check_login(login(), read_only=False, allow_superuser=False) == []
    with pytest.raises(ValueError, match="a superuser"):
        check_login(login(superuser=True), read_only=True, allow_superuser=False)
    assert check_login(login(superuser=True), read_only=False, allow_superuser=True)
    assert "owner" in check_login(login(owner=True), read_only=False,
                                  allow_superuser=False)[0]
    with pytest.raises(ValueError, match="--read-only"):
        check_login(login(can_write=False), read_only=False, allow_superuser=False)
    assert check_login(login(can_write=False), read_only=True, allow_superuser=False) == []
    assert "may write" in check_login(login(), read_only=True, allow_superuser=False)[0]


# -- the app, as a writer and as a reader --------------------------------------------


def test_the_app_runs_every_route_as_a_writer(writer_dsn: str) -> None:
    with make_client(writer_dsn) as client:
        with client.app.state.serve.pool.connection() as conn:  # type: ignore[attr-defined]
            row = conn.execute(WHO).fetchone()
            assert row is not None and row[1] is False  # a writer, not a superuser
            assert conn.execute("SELECT pg_has_role(current_user, 'simhash_writer',"
                                " 'MEMBER')").fetchone() == (True,)
        a = client.post("/v1/documents", json={"text": TEXT, "key": "a"}).json()
        assert a["status"] == "inserted", a
        batch = client.post("/v1/documents/batch",
                            json={"docs": [{"text": COPY, "key": "b"},
                                           {"text": "Something else entirely, at length.",
                                            "key": "c"}]})
        assert [d["status"] for d in batch.json()] == ["duplicate", "inserted"], batch.text
        assert client.post("/v1/near", json={"text": COPY}).json()["matches"][0]["key"] == "a"
        many = client.post("/v1/near/batch", json={"docs": [{"text": COPY}, {"fingerprint": 1}]})
        assert many.status_code == 200, many.text
        assert client.get("/v1/documents/a").status_code == 200
        for path in ("/v1/stats", "/v1/groups", "/", "/recent", "/groups", "/stats",
                     f"/compare?a={a['id']}&bkey=c", "/healthz", "/metrics"):
            r = client.get(path)
            assert r.status_code == 200, (path, r.text[:300])
        assert client.delete(f"/v1/documents/{a['id']}").status_code == 200
        assert client.get("/v1/documents/a").status_code == 404


def test_a_write_the_database_role_may_not_do_is_403_not_503(
        login_dsn: Callable[[str], str], pg_dsn: str) -> None:
    from simhash_pg import SimhashStore

    SimhashStore(pg_dsn).close()
    reader = login_dsn("simhash_reader")
    with make_client(reader) as client:  # not told it is read-only: the database refuses
        for r in (client.post("/v1/documents", json={"text": TEXT}),
                  client.post("/v1/documents", json={"fingerprint": 5})):
            assert r.status_code == 403, r.text  # before: 503, Retry-After: 1
            assert r.json()["error"] == "forbidden" and "Retry-After" not in r.headers
    with make_client(reader, read_only=True) as client:  # told: refused before the database
        for r in (client.post("/v1/documents", json={"text": TEXT}),
                  client.post("/v1/documents/batch", json={"docs": [{"text": TEXT}]}),
                  client.delete("/v1/documents/1")):
            assert r.status_code == 403 and "read-only" in r.json()["detail"], r.text
        assert client.post("/v1/near", json={"text": TEXT}).status_code == 200
