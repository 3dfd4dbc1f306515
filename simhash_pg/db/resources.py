"""Locate the SQL files and the alembic environment, installed or in a checkout."""

from __future__ import annotations

from pathlib import Path

# the simhash_pg package: the wheel puts _sql/ and _migrations/ there (pyproject.toml)
_PKG = Path(__file__).resolve().parent.parent


def _find(installed: str, checkout: str) -> Path:
    # A wheel carries them inside the package; a source checkout (and an
    # editable install) has them at the top of the repository.
    for candidate in (_PKG / installed, _PKG.parent / checkout):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(
        f"cannot find the {checkout}/ folder of simhash-pg (looked in {_PKG / installed} "
        f"and {_PKG.parent / checkout}); the installation is incomplete"
    )


def sql_dir() -> Path:
    return _find("_sql", "sql")


def migrations_dir() -> Path:
    return _find("_migrations", "migrations")


def current_sql_files() -> list[Path]:
    """``sql/current/*.sql``, today's SQL functions, in the order they run: by name.

    Each file calls only functions of its own or of files before it, so on a
    database at head they can be run in this order (tests/test_sql_current.py).
    The migrations never run them: they run the numbered files, frozen history.
    """
    return sorted((sql_dir() / "current").glob("*.sql"))


def read_sql(name: str) -> str:
    return (sql_dir() / name).read_text(encoding="utf-8")


def run_sql(name: str) -> None:
    """Run one ``sql/`` file inside the current alembic migration.

    Straight to psycopg, without parameters: the files hold several statements
    and plpgsql '%' placeholders, which must reach the server untouched. Same
    connection as alembic's, so the same transaction.
    """
    from alembic import op

    conn = op.get_bind().connection.driver_connection
    assert conn is not None  # alembic runs migrations on an open connection
    conn.execute(read_sql(name))
