"""``simhash-pg demo``: the bundled sample through the real dedup job.

Loads the sample corpus (MIT docs and SPDX licence texts with real and
planted near-duplicates) into its own database, ``simhash_demo``, on the
embedded server (or the database --dsn names), then shows duplicate groups
side by side and how many of the sample's known groups were found.
"""

from __future__ import annotations

import shlex
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from simhash_pg import labels
from simhash_pg.bits import DEFAULT_K
from simhash_pg.cli.common import fail, fresh_database
from simhash_pg.cli.dedup import Summary, run_dedup
from simhash_pg.cli.inputs import Record
from simhash_pg.cli.options import SchemeSpec, dsn_option, k_option, scheme_option

if TYPE_CHECKING:
    from simhash_pg.store import AddResult
    from simhash_pg.text.simhash import Fingerprinter
    from simhash_pg.verify import VerifyPolicy
    from simhash_pg.verify.pairtest import PairTest

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


def _show_pairs(summary: Summary, limit: int, k: int, policy: VerifyPolicy,
                shared: dict[int, float | None]) -> None:
    """Print up to ``limit`` pairs side by side, one per kind of edit, each led by the
    rule's share of the two texts (``shared``, by the duplicate's id).

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
            console.print(beyond_k(k, policy))
        share = shared.get(res.id) if res.id is not None else None
        lead = f"{labels.shared(share)} · " if share is not None else ""
        table = Table(title=f"{lead}{labels.distance(res.distance or 0)}"
                            f"{' (beyond k)' if beyond else ''} · "
                            f"{kind} · {rec.fields.get('lang')}",
                      show_lines=True, expand=True)
        table.add_column(f"stored: {orig.key}", ratio=1)
        table.add_column(f"near-duplicate: {rec.key}", ratio=1)
        table.add_row(_clip(orig.text), _clip(rec.text))
        console.print(table)
        if len(kinds) >= limit:
            break


def verified_test(k: int, policy: VerifyPolicy) -> PairTest:
    """The test a long text of the sample meets in this store: its radius and its bar."""
    return policy.test(k, short=False, probed=policy.probe_budget("", k) is not None)


def beyond_k(k: int, policy: VerifyPolicy) -> str:
    """Why the store reports pairs farther apart than k, in the store's own numbers."""
    test = verified_test(k, policy)
    return labels.beyond_k(k, policy, test.radius, test.threshold)


def _resolved(summary: Summary) -> Iterator[tuple[Record, AddResult, Record]]:
    """Each reported pair with the stored record it duplicates.

    The demo links its duplicates, so the one kept may be a linked duplicate itself.
    """
    stored = summary.stored | {res.id: rec for rec, res in summary.pairs if res.id is not None}
    for rec, res in summary.pairs:
        orig = stored.get(res.duplicate_of) if res.duplicate_of is not None else None
        if orig is not None and rec.fields is not None and orig.fields is not None:
            yield rec, res, orig


def _clip(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= SIDE else flat[:SIDE] + " …"


def score(summary: Summary, rows: list[dict[str, object]],
          fingerprinter: Fingerprinter, policy: VerifyPolicy) -> Score:
    """The store's decisions against labels, as ``simhash-pg eval`` counts them.

    A document is a true near-duplicate when its text reaches the bar of the
    store's rule (``policy.text_rule``; rule 2 is the labelling rule of the
    eval set) against an earlier one of its group; a reported pair is right
    when its texts reach it. The sample's groups are wider: they hold
    revisions and planted edits far below the bar.
    """
    from simhash_pg.verify.jaccard import from_norm

    vtext = {str(r["id"]): from_norm(fingerprinter.normalize(str(r["text"]))).text
             for r in rows}

    def near(a: str, b: str) -> bool:
        return policy.text_rule.is_duplicate(vtext[a], vtext[b])

    reported = {str(rec.fields["id"]): str(orig.fields["id"])
                for rec, _, orig in _resolved(summary)
                if rec.fields is not None and orig.fields is not None}
    group_of = {str(r["id"]): str(r["group"]) for r in rows}
    out = Score(reported=len(reported))
    seen: dict[str, list[str]] = {}
    for row in rows:
        doc, group = str(row["id"]), str(row["group"])
        earlier = seen.setdefault(group, [])
        if earlier:
            out.in_groups += 1
            kept = reported.get(doc)
            out.in_group_found += kept is not None and group_of[kept] == group
            out.elsewhere += kept is not None and group_of[kept] != group
        if any(near(doc, e) for e in earlier):
            out.labelled += 1
            out.found += doc in reported
        earlier.append(doc)
    out.right = sum(near(dup, kept) for dup, kept in reported.items())
    return out


@dataclass
class Score:
    reported: int = 0  # pairs the store reported (a duplicate and the kept document)
    right: int = 0  # of them, pairs whose texts reach the rule's bar
    in_groups: int = 0  # documents with an earlier one in their sample group
    in_group_found: int = 0  # of them, reported as a duplicate of one in their group
    elsewhere: int = 0  # of them, reported as a duplicate of one in another group
    labelled: int = 0  # documents that reach the bar against an earlier one of their group
    found: int = 0  # of them, reported as a duplicate

    def lines(self, policy: VerifyPolicy) -> list[str]:
        bar = labels.bar(policy.text_rule)
        precision = self.right / self.reported if self.reported else 1.0
        recall = self.found / self.labelled if self.labelled else 1.0
        return [
            f"  by the README's definition (a near-duplicate shares {bar} of its text "
            f"with another, by rule {policy.rule}, the rule that labelled the eval set): "
            f"precision {precision:.3f} ({self.right} of {self.reported} reported pairs), "
            f"recall {recall:.3f} ({self.found} of the sample's {self.labelled} such "
            "documents reported)",
            f"  the sample's groups are wider: {self.in_groups} documents revise or edit an "
            f"earlier one of their group, {self.labelled} of them sharing {bar} with it "
            "(the others are not near-duplicates by that definition); "
            f"{self.in_group_found} were reported as a duplicate of one in their group, "
            f"{self.elsewhere} of one in another group (such as a licence of the same family)",
        ]


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

    from simhash_pg.db.admin import ForeignDataError, replace_database

    try:
        return replace_database(dsn, DEMO_DB, own_keys="sample:")
    except ForeignDataError:
        fail(f"database {DEMO_DB} on that server holds documents that are not "
             "the demo's; not replacing it")
    except psycopg.Error as exc:
        fail(f"the demo needs a database of its own, {DEMO_DB}, on that server, and could "
             f"not make it: {str(exc).strip().splitlines()[0]}")


@click.command("demo")
@dsn_option(f"Run on this server, in a database of its own ({DEMO_DB}, replaced on each "
            "run), instead of on the embedded server. The database --dsn names is not "
            "touched.", from_env=False)
@k_option(default=DEFAULT_K)
@scheme_option("Fingerprint scheme (default: auto).")
@click.option("--groups", type=click.IntRange(0, 20), default=3, show_default=True,
              help="How many duplicate pairs to show side by side.")
def command(dsn: str | None, k: int, scheme: SchemeSpec, groups: int) -> None:
    """Dedupe the bundled sample corpus and show what was found."""
    from simhash_pg.data import iter_sample
    from simhash_pg.store import SimhashStore
    from simhash_pg.store.evidence import shares

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
        found = [(res.id, res.duplicate_of) for _, res in summary.pairs
                 if res.id is not None and res.duplicate_of is not None]
        shared = dict(zip([i for i, _ in found], shares(store, found), strict=True))
        db = store.dsn
        policy, fingerprinter = store.policy, store.fingerprinter
    langs = Counter(str(r["lang"]) for r in rows)
    click.echo(f"simhash-pg demo: {len(rows)} sample documents "
               f"({langs['en']} English, {langs['zh']} Chinese; MIT docs and SPDX licences)")
    test = verified_test(k, policy)
    click.echo(f"  {summary.line()}")
    click.echo(f"  k = {k}, the radius of a fingerprint query; verify = {policy.mode}, rule "
               f"{policy.rule}: a text looks up fingerprints within radius {test.radius}"
               + (f" and is a near-duplicate at {labels.bar(policy.text_rule)} shared"
                  if test.threshold is not None else ", decided by distance alone"))
    for line in score(summary, rows, fingerprinter, policy).lines(policy):
        click.echo(line)
    click.echo()
    if groups:
        _show_pairs(summary, groups, k, policy, shared)
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
