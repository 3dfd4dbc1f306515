"""The plans a connection's statements ran, nested ones included, and their sequential scans.

    with capture_plans(store.connection) as plans:
        store.near(text)
    assert seq_scans_of_filled_partitions(store.connection, plans) == []

auto_explain logs every plan the session executes (``log_min_duration =
0``), the statements inside SQL and PL/pgSQL functions too
(``log_nested_statements``), as JSON at level LOG; with ``client_min_messages
= log`` the server sends them to this client as notices, which a notice
handler collects. No server configuration is touched: it is the session's
own (``LOAD`` needs a superuser, as the benchmarks' and tests' servers
have). A plan is what the executor ran, so a generic plan shows as such.

Issue 28's cliff was a plan of that kind: under the candidate functions'
forced generic plans a key look-up turned into a sequential scan of a
50M-row partition once the store was big. A sequential scan of an empty or
small partition costs little and is the planner's right choice; one of a
partition that holds many rows is what these look for.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg

__all__ = [
    "BIG_TABLES",
    "capture_plans",
    "log_plans",
    "logged_plans",
    "scan_nodes",
    "seq_scans_of_filled_partitions",
]

_SETTINGS = {
    "auto_explain.log_min_duration": "0",
    "auto_explain.log_nested_statements": "on",
    "auto_explain.log_format": "json",
    "client_min_messages": "log",
}


@contextlib.contextmanager
def capture_plans(conn: psycopg.Connection[Any], *,
                  analyze: bool = False) -> Iterator[list[dict[str, Any]]]:
    """Collect the plan (auto_explain's JSON ``Plan``) of every statement run on ``conn``.

    ``analyze``: with each node's actual rows and loops (no timing).
    """
    plans: list[dict[str, Any]] = []

    def on_notice(diag: psycopg.errors.Diagnostic) -> None:
        text = diag.message_primary or ""
        if "plan:" not in text:
            return
        body = text.split("plan:", 1)[1]
        with contextlib.suppress(ValueError):
            doc = json.loads(body)
            plans.append(doc.get("Plan", doc))

    before = {name: conn.execute("SELECT current_setting(%s, true)", [name]).fetchone()
              for name in ("client_min_messages",)}
    conn.execute("LOAD 'auto_explain'")
    settings = _SETTINGS | {"auto_explain.log_analyze": "on" if analyze else "off",
                            "auto_explain.log_timing": "off"}
    for name, value in settings.items():
        conn.execute("SELECT set_config(%s, %s, false)", [name, value])
    conn.add_notice_handler(on_notice)
    try:
        yield plans
    finally:
        conn.remove_notice_handler(on_notice)
        conn.execute("SELECT set_config('auto_explain.log_min_duration', '-1', false)")
        conn.execute("SELECT set_config('auto_explain.log_analyze', 'off', false)")
        old = before["client_min_messages"]
        conn.execute("SELECT set_config('client_min_messages', %s, false)",
                     [old[0] if old and old[0] else "notice"])


@contextlib.contextmanager
def log_plans(conn: psycopg.Connection[Any], *, analyze: bool = False) -> Iterator[None]:
    """Make every new session of ``conn``'s database log its plans to the server's log.

    For the paths that run in other processes (the CLI, ``serve``): their
    sessions load auto_explain (``session_preload_libraries``, a database
    setting: a superuser's) and log every plan, nested ones included, as
    :func:`capture_plans` would send them. Read them back with
    :func:`logged_plans`. Undone on exit.
    """
    db = conn.info.dbname
    settings = _SETTINGS | {"auto_explain.log_analyze": "on" if analyze else "off",
                            "auto_explain.log_timing": "off",
                            "session_preload_libraries": "auto_explain"}
    settings.pop("client_min_messages")
    for name, value in settings.items():
        conn.execute(f'ALTER DATABASE "{db}" SET {name} = {value}')
    try:
        yield
    finally:
        for name in settings:
            conn.execute(f'ALTER DATABASE "{db}" RESET {name}')


# A log line's start, in the embedded server's format ('%m [%p] ').
_ENTRY = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}")


def logged_plans(logfile: Path, offset: int = 0) -> list[dict[str, Any]]:
    """The plans auto_explain wrote (as JSON) to ``logfile`` past byte ``offset``."""
    with logfile.open("rb") as fh:
        fh.seek(offset)
        lines = fh.read().decode(errors="replace").splitlines()
    plans: list[dict[str, Any]] = []
    body: list[str] | None = None
    for line in [*lines, "0000-00-00 00:00:00 end"]:
        if _ENTRY.match(line) or line.startswith("0000-"):
            if body is not None:
                with contextlib.suppress(ValueError):
                    doc = json.loads("\n".join(body))
                    plans.append(doc.get("Plan", doc))
            body = [line.split("plan:", 1)[1]] if "  plan:" in line else None
        elif body is not None:
            body.append(line)
    return plans


def scan_nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every node of ``plan`` that reads a relation (it names one)."""
    if "Relation Name" in plan:
        yield plan
    for child in plan.get("Plans", ()):
        yield from scan_nodes(child)


# The tables that grow with the store, and their partitions.
BIG_TABLES = ("simhash_documents", "simhash_text_keys", "simhash_keys")


def seq_scans_of_filled_partitions(conn: psycopg.Connection[Any],
                                   plans: list[dict[str, Any]],
                                   tables: tuple[str, ...] = BIG_TABLES,
                                   min_rows: int = 10_000) -> list[str]:
    """The partitions (or tables) of ``tables`` that hold more than ``min_rows``
    rows and that some plan scanned sequentially, by name. (Reading a few
    pages whole is the planner's right choice for a small partition.)
    Checked on ``conn`` now: run it before the rows change."""
    leaves = {r[0]: r[1] for r in conn.execute(
        "SELECT c.relname, c.oid::regclass::text FROM unnest(%s::text[]) AS t (name)"
        " CROSS JOIN LATERAL pg_partition_tree(to_regclass(t.name)) AS p"
        " JOIN pg_class c ON c.oid = p.relid WHERE p.isleaf", [list(tables)])}
    out: set[str] = set()
    for plan in plans:
        for node in scan_nodes(plan):
            name = node["Relation Name"]
            if node["Node Type"] != "Seq Scan" or name not in leaves or name in out:
                continue
            held = conn.execute(f"SELECT count(*) FROM (SELECT FROM {leaves[name]}"
                                f" LIMIT {int(min_rows) + 1}) AS r").fetchone()
            if held and held[0] > min_rows:
                out.add(name)
    return sorted(out)
