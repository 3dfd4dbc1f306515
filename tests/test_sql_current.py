"""sql/current/ is today's SQL: every function of the database at head, defined exactly so.

The migrations run the numbered files in sql/ (frozen history, downgrades
included); sql/current/ is where a reader finds each function's one current
definition. These tests keep the two equal: on a database at head, running
the current files changes nothing, and dropping every simhash function then
running them restores exactly what was there: each function's full
definition (pg_get_functiondef: body, arguments, volatility, settings,
security), its privileges, and the triggers that call them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from simhash_pg.db.resources import current_sql_files, migrations_dir, sql_dir

# Every function whose name starts with simhash_ in the store's schema:
# signature -> (definition, privileges, comment).
_FUNCTIONS = r"""
SELECT p.oid::regprocedure::text, pg_get_functiondef(p.oid),
       array(SELECT CASE a.grantee WHEN 0 THEN 'PUBLIC' ELSE a.grantee::regrole::text END
                    || ' ' || a.privilege_type || ' from ' || a.grantor::regrole::text
             FROM aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) AS a
             ORDER BY 1),
       obj_description(p.oid, 'pg_proc')
FROM pg_proc p
WHERE p.proname LIKE 'simhash\_%' AND p.pronamespace = current_schema()::regnamespace
"""
# The triggers on simhash_documents and its partitions (clones included).
_TRIGGERS = """
SELECT t.tgrelid::regclass::text || ' ' || t.tgname, pg_get_triggerdef(t.oid)
FROM pg_trigger t
WHERE t.tgrelid IN (SELECT relid FROM pg_partition_tree('simhash_documents'))
  AND NOT t.tgisinternal
"""

Snapshot = dict[str, tuple[object, ...]]


def snapshot(pg: psycopg.Connection) -> Snapshot:
    out: Snapshot = {f"function {r[0]}": tuple(r[1:]) for r in pg.execute(_FUNCTIONS)}
    out |= {f"trigger {r[0]}": (r[1],) for r in pg.execute(_TRIGGERS)}
    return out


def differences(before: Snapshot, after: Snapshot) -> list[str]:
    """What the files left different, one line per object (empty: the same)."""
    out = [f"{name}: in the database at head, not in sql/current"
           for name in sorted(before.keys() - after.keys())]
    out += [f"{name}: in sql/current, not in the database at head"
            for name in sorted(after.keys() - before.keys())]
    out += [f"{name}: sql/current differs from the database at head:\n"
            f"  head:    {before[name]!r}\n  current: {after[name]!r}"
            for name in sorted(before.keys() & after.keys()) if before[name] != after[name]]
    return out


def drop_all_functions(pg: psycopg.Connection) -> None:
    """Every simhash function, and (CASCADE) the triggers that call them."""
    for (sig,) in pg.execute(
        r"SELECT oid::regprocedure::text FROM pg_proc WHERE proname LIKE 'simhash\_%'"
        " AND pronamespace = current_schema()::regnamespace"
    ).fetchall():
        pg.execute(f"DROP FUNCTION IF EXISTS {sig} CASCADE")


def rebuilt(pg: psycopg.Connection, texts: list[str]) -> Snapshot:
    """The snapshot after dropping every function and running ``texts`` in order."""
    drop_all_functions(pg)
    assert not [k for k in snapshot(pg) if k.startswith("function ")]
    for text in texts:
        pg.execute(text)
    return snapshot(pg)


def current_texts() -> list[str]:
    return [p.read_text(encoding="utf-8") for p in current_sql_files()]


def test_current_files_exist_one_per_family() -> None:
    names = [p.name for p in current_sql_files()]
    assert {"hamming.sql", "near.sql", "pairs.sql", "add.sql", "keys.sql",
            "partitions.sql"} <= set(names), names


@pytest.mark.parametrize("path", current_sql_files(), ids=lambda p: p.name)
def test_each_current_file_changes_nothing_at_head(pg: psycopg.Connection, path: Path) -> None:
    before = snapshot(pg)
    with pg.transaction(force_rollback=True):
        pg.execute(path.read_text(encoding="utf-8"))
        assert differences(before, snapshot(pg)) == []


def test_current_files_define_every_function_exactly(pg: psycopg.Connection) -> None:
    # both directions at once: a function at head that no file defines is
    # missing afterwards, one a file adds is extra, a changed one differs
    before = snapshot(pg)
    assert len([k for k in before if k.startswith("function ")]) >= 20
    with pg.transaction(force_rollback=True):
        assert differences(before, rebuilt(pg, current_texts())) == []
    assert snapshot(pg) == before


def _edit(name: str, change: Callable[[str], str]) -> Callable[[list[Path], list[str]], None]:
    def apply(paths: list[Path], texts: list[str]) -> None:
        i = [p.name for p in paths].index(name)
        new = change(texts[i])
        assert new != texts[i]
        texts[i] = new
    return apply


def _without_function(text: str, name: str) -> str:
    return re.sub(rf"CREATE OR REPLACE FUNCTION {name}\(.*?\n\$\$;\n", "", text, flags=re.S)


# Drifts the comparison must catch: a body, a setting, a privilege, a missing
# function, an extra one, a trigger.
DRIFTS = {
    "body": _edit("near.sql", lambda t: t.replace("ORDER BY 3, 1;", "ORDER BY 3;", 1)),
    "setting": _edit("near.sql", lambda t: t.replace("ROWS 10\n", "ROWS 20\n", 1)),
    "privilege": _edit("pairs.sql", lambda t: t.replace(
        "GRANT EXECUTE ON FUNCTION simhash_pairs(integer) TO simhash_reader;", "")),
    "missing": _edit("pairs.sql", lambda t: _without_function(t, "simhash_pairs").replace(
        "GRANT EXECUTE ON FUNCTION simhash_pairs(integer) TO simhash_reader;", "")),
    "extra": _edit("pairs.sql", lambda t: t + "\nCREATE FUNCTION simhash_extra() RETURNS int"
                   " LANGUAGE sql AS 'SELECT 1';\n"),
    "trigger": _edit("links.sql", lambda t: t.replace(
        "WHEN (NEW.duplicate_of IS NOT NULL) ", "", 1)),
}


@pytest.mark.parametrize("drift", list(DRIFTS))
def test_the_comparison_catches_drift(pg: psycopg.Connection, drift: str) -> None:
    paths = current_sql_files()
    texts = current_texts()
    DRIFTS[drift](paths, texts)
    before = snapshot(pg)
    with pg.transaction(force_rollback=True):
        found = differences(before, rebuilt(pg, texts))
    assert len(found) >= 1, drift


# -- the numbered files: run by the revisions, none left over ------------------


def _files_the_revisions_run() -> set[str]:
    names: set[str] = set()
    for rev in (migrations_dir() / "versions").glob("*.py"):
        names |= set(re.findall(r"""run_sql\(["']([^"']+)["']\)""", rev.read_text()))
    return names


def test_every_numbered_sql_file_is_run_by_a_revision_and_exists() -> None:
    run = _files_the_revisions_run()
    numbered = {p.name for p in sql_dir().glob("*.sql")}
    assert run, "no run_sql calls found in migrations/versions"
    assert run - numbered == set(), "revisions run files that do not exist"
    assert numbered - run == set(), "numbered sql files no revision runs"
    assert not any(name.startswith("current/") for name in run)
