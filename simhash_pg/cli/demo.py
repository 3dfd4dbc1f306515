"""``simhash-pg demo``: the bundled sample through the real dedup job.

Loads the sample corpus (MIT docs and SPDX licence texts with real and
planted near-duplicates) into its own database, ``simhash_demo``, on the
embedded server (or the database --dsn names), then shows duplicate groups
side by side and how many of the sample's known groups were found.
"""

from __future__ import annotations

import shlex
import sys
import unicodedata
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import click

from simhash_pg.cli.common import fail, fresh_database
from simhash_pg.cli.dedup import Summary, run_dedup
from simhash_pg.cli.inputs import Record
from simhash_pg.cli.options import SchemeSpec, dsn_option, k_option, scheme_option

if TYPE_CHECKING:
    from simhash_pg.store import AddResult

DEMO_DB = "simhash_demo"
SIDE = 420  # characters of each text shown


def _records(rows: list[dict[str, object]]) -> Iterator[Record]:
    for row in rows:
        yield Record(text=str(row["text"]), key=f"sample:{row['id']}",
                     where=f"sample:{row['id']}", fields=row)


def _kind(row: dict[str, object]) -> str:
    group = str(row.get("group", ""))
    if group.startswith("planted:"):
        return f"planted edit: {row.get('edit', 'original')}"
    if "lic-" in group:
        return "real licence variant"
    return "real revision"


def _show_pairs(summary: Summary, limit: int, k: int, verify: str) -> None:
    """Print up to ``limit`` pairs side by side, one per kind of edit.

    Pairs within k come first (most distant first); pairs beyond k, which only
    the text check of the verified radius finds, after a line that says so.
    """
    from rich.console import Console
    from rich.table import Table

    console = Console()
    kinds: set[str] = set()
    told = False
    ordered = sorted(_resolved(summary),
                     key=lambda p: ((p[1].distance or 0) > k, -(p[1].distance or 0)))
    for rec, res, orig in ordered:
        assert rec.fields is not None and orig.fields is not None
        kind = _kind(rec.fields) if rec.fields.get("edit") else _kind(orig.fields)
        if kind in kinds:
            continue
        kinds.add(kind)
        beyond = (res.distance or 0) > k
        if beyond and not told:
            told = True
            console.print(_beyond_k(k, verify))
        table = Table(title=f"distance {res.distance}{' (beyond k)' if beyond else ''} · "
                            f"{kind} · {rec.fields.get('lang')}",
                      show_lines=True, expand=True)
        table.add_column(f"stored: {orig.key}", ratio=1)
        table.add_column(f"near-duplicate: {rec.key}", ratio=1)
        table.add_row(_clip(orig.text), _clip(rec.text))
        console.print(table)
        if len(kinds) >= limit:
            break


def _beyond_k(k: int, verify: str) -> str:
    """Why the store reports pairs farther apart than k (the verified radius)."""
    from simhash_pg.verify import LONG_K, LONG_THRESHOLD, SHORT_K, SHORT_THRESHOLD

    radius = LONG_K if verify == "all" else SHORT_K
    share = LONG_THRESHOLD if verify == "all" else SHORT_THRESHOLD
    return (f"Pairs beyond k = {k}: with verify = {verify} the store also matches "
            f"fingerprints up to distance {radius} whose texts then share >= {share:.0%} of "
            f"their n-grams (the verified radius), which catches edits too large for k.")


def _resolved(summary: Summary) -> Iterator[tuple[Record, AddResult, Record]]:
    """Each reported pair with the stored record it duplicates."""
    for rec, res in summary.pairs:
        orig = summary.stored.get(res.duplicate_of) if res.duplicate_of is not None else None
        if orig is not None and rec.fields is not None and orig.fields is not None:
            yield rec, res, orig


def _clip(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= SIDE else flat[:SIDE] + " …"


def _grams(text: str, n: int = 5) -> set[str]:
    """Character n-grams of the letters and digits, after NFKC and case folding."""
    flat = "".join(ch for ch in unicodedata.normalize("NFKC", text).casefold() if ch.isalnum())
    return {flat[i:i + n] for i in range(max(len(flat) - n + 1, 1))}


def _score(summary: Summary) -> tuple[int, int]:
    """(pairs within one known group, pairs whose texts share >= 80% of their 5-grams).

    The second is the labelling rule of the eval set the defaults were measured
    on: a reported pair across the sample's groups (two licences of one family,
    two revisions of a section) can still be a true near-duplicate.
    """
    same = confirmed = 0
    for rec, _, orig in _resolved(summary):
        assert rec.fields is not None and orig.fields is not None
        same += rec.fields["group"] == orig.fields["group"]
        a, b = _grams(rec.text), _grams(orig.text)
        confirmed += len(a & b) / max(len(a), len(b)) >= 0.8
    return same, confirmed


def command_prefix() -> str:
    """How the user runs simhash-pg: ``uv run simhash-pg`` from a checkout's .venv."""
    prefix = Path(sys.prefix)
    if prefix.name == ".venv" and (prefix.parent / "pyproject.toml").exists():
        return "uv run simhash-pg"
    return "simhash-pg"


def _plain(dsn: str) -> str:
    """A connection string without percent-encoding (key=value), for a reader to copy."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    return make_conninfo("", **{k: v for k, v in conninfo_to_dict(dsn).items()
                            if k != "password"})


def _demo_database_on(dsn: str) -> str:
    """The DSN of a fresh ``simhash_demo`` on the server ``dsn`` names; never ``dsn`` itself.

    The sample must not land in the user's store. An existing ``simhash_demo``
    is replaced only if it holds nothing but the sample.
    """
    import psycopg
    from psycopg import sql
    from psycopg.conninfo import make_conninfo

    from simhash_pg.db.migrate import libpq_dsn

    target = make_conninfo(libpq_dsn(dsn), dbname=DEMO_DB)
    try:
        with psycopg.connect(libpq_dsn(dsn), autocommit=True, connect_timeout=10) as admin:
            if admin.execute("SELECT 1 FROM pg_database WHERE datname = %s",
                             [DEMO_DB]).fetchone():
                with psycopg.connect(target, autocommit=True) as conn:
                    foreign = conn.execute(
                        "SELECT to_regclass('simhash_documents') IS NOT NULL AND EXISTS "
                        "(SELECT 1 FROM simhash_documents WHERE key NOT LIKE 'sample:%%')"
                    ).fetchone()
                if foreign and foreign[0]:
                    fail(f"database {DEMO_DB} on that server holds documents that are not "
                         "the demo's; not replacing it")
                admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)")
                              .format(sql.Identifier(DEMO_DB)))
            admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DEMO_DB)))
    except psycopg.Error as exc:
        fail(f"the demo needs a database of its own, {DEMO_DB}, on that server, and could "
             f"not make it: {str(exc).strip().splitlines()[0]}")
    return target


@click.command("demo")
@dsn_option(f"Run on this server, in a database of its own ({DEMO_DB}, replaced on each "
            "run), instead of on the embedded server. The database --dsn names is not "
            "touched.", from_env=False)
@k_option(default=3)
@scheme_option("Fingerprint scheme (default: auto).")
@click.option("--groups", type=click.IntRange(0, 20), default=3, show_default=True,
              help="How many duplicate pairs to show side by side.")
def command(dsn: str | None, k: int, scheme: SchemeSpec, groups: int) -> None:
    """Dedupe the bundled sample corpus and show what was found."""
    from simhash_pg.data import iter_sample
    from simhash_pg.store import SimhashStore

    rows = list(iter_sample())
    try:
        if dsn:
            target = _demo_database_on(dsn)
            click.echo(f"simhash-pg demo: loading the sample into a database of its own, "
                       f"{DEMO_DB}, on the server --dsn names (your database is not "
                       "touched)", err=True)
        else:
            target = fresh_database(DEMO_DB)
        store = SimhashStore(target, scheme=scheme, k=k)
    except Exception as exc:
        fail(f"cannot open the demo database: {exc}")
    with store:
        # link: near-duplicates are stored with duplicate_of set, so the
        # groups are there to query in SQL afterwards.
        summary = run_dedup(store, _records(rows), keep_pairs=True, batch_size=500, link=True)
        db = store.dsn
    langs = Counter(str(r["lang"]) for r in rows)
    click.echo(f"simhash-pg demo: {len(rows)} sample documents "
               f"({langs['en']} English, {langs['zh']} Chinese; MIT docs and SPDX licences)")
    click.echo(f"  {summary.line()}; k = {k}, verify = {store.verify}")
    known = Counter(str(r["group"]) for r in rows)
    expected = sum(n - 1 for n in known.values())
    same, confirmed = _score(summary)
    click.echo(f"  {same} of the sample's {expected} known near-duplicates found: the sample "
               f"has {expected} documents that are an edit or revision of an earlier one in "
               f"their group, and {same} were reported as a duplicate of one in their group "
               "(README, Detection quality, for how k and verify trade this off)")
    click.echo(f"  {confirmed} of the {len(summary.pairs)} reported pairs share >= 80% of "
               "their character 5-grams, the rule that labelled the eval set the defaults "
               "were tuned on: a pair across groups can still be a true near-duplicate\n")
    if groups:
        _show_pairs(summary, groups, k, store.verify)
    click.echo("\nThe store is a PostgreSQL database; query it with SQL:")
    exe = command_prefix()
    where = f"--dsn {shlex.quote(_plain(db))}" if dsn else f"--dbname {DEMO_DB}"
    click.echo(f"  {exe} psql {where} -c 'SELECT * FROM simhash_pairs({k}) LIMIT 10'")
    click.echo(f"  {exe} psql {where} -c 'SELECT duplicate_of, count(*) FROM "
               "simhash_documents WHERE duplicate_of IS NOT NULL GROUP BY 1 ORDER BY 2 DESC'")
    if not dsn:
        from simhash_pg.db.server import get_default_server

        home = get_default_server().home
        click.echo(f"\nThe embedded PostgreSQL server keeps running for the next command "
                   f"(its data: {home}). Stop it with `{exe} server stop`; to delete "
                   f"everything, stop it and remove {home}.")
