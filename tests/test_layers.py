"""The package's layers, read from its source with ``ast`` (nothing is imported or run).

- SQL is sent from :mod:`simhash_pg.store` and :mod:`simhash_pg.db` only;
- the modules of ``simhash_pg`` import one another without a cycle;
- no module reaches into another's private names;
- the parameters at the seams (connection, engine, store, ...) are not ``Any``;
- no module is past 500 lines.

``lab/`` is not part of the package (it stays out of the wheel) and is not
read. ``simhash_pg/sqlalchemy.py`` needs no exemption: it builds SQLAlchemy
expressions and column definitions for an application's own session, and
holds no statement string and no connection.
"""

from __future__ import annotations

import ast
import re
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "simhash_pg"
# The layers that may talk to PostgreSQL: the store and the server/schema tools.
SQL_LAYERS = ("simhash_pg.store", "simhash_pg.db")

# A statement: a string that starts (after white space) with one of these
# keywords, in capitals, as the package writes SQL, followed by white space,
# "(" or the end. Docstrings are prose and are not counted.
SQL_KEYWORDS = ("SELECT", "INSERT", "UPDATE", "DELETE", "WITH", "CREATE", "ALTER", "DROP",
                "COPY", "SET", "SHOW", "EXPLAIN", "ANALYZE", "VACUUM", "GRANT", "REVOKE",
                "TRUNCATE", "LOCK")
_STATEMENT = re.compile(rf"\s*({'|'.join(SQL_KEYWORDS)})(\s|\(|$)")
# Calls that send SQL or open a connection to send it: conn.execute(...),
# conn.cursor(), cursor.copy(...) (numpy's and dict's .copy() take no
# argument, and are not counted), psycopg.connect(...) and psycopg.sql.SQL(...).
_SENDING = ("execute", "executemany", "cursor", "copy", "connect", "SQL")
# NamedTuple's public methods start with "_".
_NAMEDTUPLE = {"_replace", "_asdict", "_fields", "_make", "_field_defaults"}
# Known reach-ins: none left.
_KNOWN_REACH_INS: set[str] = {
    # alembic keeps a running environment in module-level proxies and a
    # nested run deletes them; migrate.upgrade_within (our revisions from an
    # app's env.py) puts the app's back. alembic has no public way to nest.
    "simhash_pg/db/migrate.py: reads ._install_proxy",
}


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()
TREES = {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in MODULES.items()}


def _docstrings(tree: ast.Module) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def sql_sites(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, what) of each SQL statement string and each SQL-sending call in ``tree``."""
    # docstrings, and the parts of f-strings (the f-string is read whole)
    skip = _docstrings(tree) | {id(v) for node in ast.walk(tree)
                                if isinstance(node, ast.JoinedStr) for v in node.values}
    sites = []
    for node in ast.walk(tree):
        text = None
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            text = node.value
        elif isinstance(node, ast.JoinedStr) and node.values:  # an f-string: its first part
            first = node.values[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                text = first.value
        if text is not None and _STATEMENT.match(text):
            assert isinstance(node, ast.expr)
            sites.append((node.lineno, f"statement {text.strip()[:50]!r}"))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            attr = node.func.attr
            if attr not in _SENDING or (attr == "copy" and not node.args):
                continue
            owner = node.func.value
            if attr in ("connect", "SQL") and not (
                    isinstance(owner, ast.Name) and owner.id in ("psycopg", "sql")):
                continue
            sites.append((node.lineno, f"call .{attr}(...)"))
    return sorted(sites)


def test_sql_is_sent_from_the_store_and_db_layers_only() -> None:
    outside = [f"{MODULES[name].relative_to(PACKAGE.parent)}:{line}: {what}"
               for name, tree in TREES.items() if not name.startswith(SQL_LAYERS)
               for line, what in sql_sites(tree)]
    assert outside == [], "SQL outside store/ and db/:\n" + "\n".join(outside)


def test_the_sql_scan_sees_the_layers_statements() -> None:
    # the scan finds what it is for: without this, a scan that found nothing
    # anywhere would pass the test above
    inside = sum(len(sql_sites(tree)) for name, tree in TREES.items()
                 if name.startswith(SQL_LAYERS))
    assert inside > 50
    sample = ast.parse('"""SELECT in a docstring is prose."""\n'
                       'Q = "SELECT 1"\nR = f"DROP TABLE {t}"\nS = "Select a file"\n'
                       'conn.execute(Q)\nconn.cursor()\nxs.copy()\ncur.copy(Q)\n'
                       'psycopg.connect(dsn)\nsock.connect(addr)\n')
    assert [line for line, _ in sql_sites(sample)] == [2, 3, 5, 6, 8, 9]


def _target(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module name an ``ImportFrom`` reads from."""
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports: at module level, inside functions
    and under ``if TYPE_CHECKING`` alike (an import made lazy to dodge a cycle
    is still a cycle). ``from pkg import sub`` is an edge to ``pkg.sub`` when
    ``sub`` is a module; importing ``pkg.sub`` is not counted as importing
    ``pkg`` (Python runs ``pkg/__init__`` first, but so does every import of a
    module below it)."""
    graph: dict[str, set[str]] = {name: set() for name in MODULES}
    for name, tree in TREES.items():
        is_package = MODULES[name].name == "__init__.py"
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _target(name, is_package, node)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base
                           for a in node.names]
            else:
                continue
            for t in targets:
                while t and t not in MODULES:  # a name inside a module: the module
                    t = t.rpartition(".")[0]
                if t and t != name:
                    graph[name].add(t)
    return graph


def test_the_package_has_no_import_cycle() -> None:
    graph = import_graph()
    assert sum(map(len, graph.values())) > 100  # the graph was read
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as exc:
        pytest.fail("import cycle: " + " -> ".join(exc.args[1]))


def test_the_cycle_check_sees_a_lazy_cycle() -> None:
    # a cycle closed by an import inside a function, as text/simhash.py and
    # probes.py had one, is found
    a = ast.parse("from simhash_pg.text import visible\n")
    b = ast.parse("def f():\n    from simhash_pg.text.normalize import normalize\n")
    saved = TREES["simhash_pg.text.normalize"], TREES["simhash_pg.text.visible"]
    TREES["simhash_pg.text.normalize"], TREES["simhash_pg.text.visible"] = a, b
    try:
        with pytest.raises(CycleError):
            TopologicalSorter(import_graph()).prepare()
    finally:
        TREES["simhash_pg.text.normalize"], TREES["simhash_pg.text.visible"] = saved


def _private_names(tree: ast.Module) -> set[str]:
    """The private names a module defines: functions, classes, assignments, attributes."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            out.add(node.attr)
        elif isinstance(node, (ast.AnnAssign)) and isinstance(node.target, ast.Name):
            out.add(node.target.id)
    return {n for n in out if n.startswith("_") and not n.startswith("__")}


def private_reach_ins(name: str, tree: ast.Module) -> list[str]:
    """Another module's private names that ``tree`` imports or reads as an attribute."""
    own = _private_names(tree)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and _target(name, False, node).startswith(
                "simhash_pg"):
            out += [f"{node.lineno}: imports {a.name}" for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__")]
        elif (isinstance(node, ast.Attribute) and node.attr.startswith("_")
              and not node.attr.startswith("__") and node.attr not in own
              and node.attr not in _NAMEDTUPLE):
            out.append(f"{node.lineno}: reads .{node.attr}")
    return out


def test_no_module_reaches_into_another_modules_private_names() -> None:
    found = [(f"{MODULES[name].relative_to(PACKAGE.parent)}", hit)
             for name, tree in TREES.items() for hit in private_reach_ins(name, tree)]
    left = [f"{path}:{hit}" for path, hit in found
            if f"{path}: {hit.partition(': ')[2]}" not in _KNOWN_REACH_INS]
    assert left == [], "\n".join(left)
    # what the store's text preparation did before Fingerprinter.analyse
    sample = ast.parse("def f(fingerprinter):\n    return fingerprinter._vote('x')\n")
    assert private_reach_ins("simhash_pg.verify.candidates", sample) == ["2: reads ._vote"]


# The parameters at the layers' seams: a connection, an engine, a store, a
# fingerprinter, a policy. Each has a real type (psycopg.Connection[...],
# sqlalchemy's Engine, the classes or a Protocol); ``Any`` there would let a
# wrong object through to the first SQL statement.
_SEAMS = {"conn", "connection", "engine", "store", "fingerprinter", "policy", "analyser"}


def untyped_seams(tree: ast.Module) -> list[str]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
                if (arg.arg in _SEAMS and arg.annotation is not None
                        and ast.unparse(arg.annotation) == "Any"):
                    out.append(f"{node.lineno}: {node.name}({arg.arg}: Any)")
    return out


def test_the_seams_are_typed() -> None:
    found = [f"{MODULES[name].relative_to(PACKAGE.parent)}:{hit}"
             for name, tree in TREES.items() for hit in untyped_seams(tree)]
    assert found == [], "\n".join(found)
    sample = ast.parse("def f(conn: Any, n: Any) -> None: ...\n")
    assert untyped_seams(sample) == ["1: f(conn: Any)"]


def test_no_runtime_module_is_past_500_lines() -> None:
    # one job per file: a module past ~500 lines is asking to be split
    long = {f"{path.relative_to(PACKAGE.parent)}": n for path in MODULES.values()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > 500}
    assert long == {}
