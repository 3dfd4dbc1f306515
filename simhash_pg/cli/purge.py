"""``simhash-pg purge --older-than 2d``: the retention window, enforced.

Meant to be scheduled (cron, a systemd timer; or pg_cron calling
simhash_ensure_partitions and simhash_drop_partitions): see
docs/operations.md. It makes the next days' partitions, drops the partitions
wholly older than the window, then deletes what is left in batches (daily
partitions; weekly and monthly ones are dropped whole only). Safe to
run while the store is in use, and to interrupt: every step commits on its
own, and the next run goes on (exit code 130 after Ctrl-C, 143 after SIGTERM).
"""

from __future__ import annotations

import json
import re
from datetime import timedelta

import click

from simhash_pg.cli.common import fail, open_store
from simhash_pg.cli.options import dsn_option, json_flag
from simhash_pg.cli.signals import StopSignals
from simhash_pg.store.maintenance import DEFAULT_LOCK_WAIT, MaintenanceBlockedError
from simhash_pg.store.retention import DEFAULT_PURGE_BATCH


def _age(ctx: click.Context, param: click.Parameter, value: str) -> timedelta:
    from simhash_pg.store.retention import parse_age

    # a zero age (0d, 0h, 0): everything created before now; parse_age wants > 0
    if re.fullmatch(r"0+(\.0*)?\s*([smhdw]|[a-z]+s?)?", value.strip().lower()):
        return timedelta(0)
    try:
        return parse_age(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from exc


@click.command("purge")
@click.option("--older-than", "older_than", required=True, callback=_age,
              help="Remove documents created longer ago than this: 2d, 36h, 90m, 1w; "
                   "0d removes everything created before now.")
@click.option("--batch-size", type=click.IntRange(min=1), default=DEFAULT_PURGE_BATCH,
              show_default=True,
              help="Rows deleted per transaction.")
@click.option("--max-seconds", type=click.FloatRange(min=0), default=None,
              help="Stop after the batch that crosses this time; the next run goes on.")
@click.option("--dry-run", is_flag=True, help="Only count what would be deleted.")
@click.option("--partition-interval", type=click.Choice(["day", "week", "month"]),
              default=None,
              help="Make this store's partitions by day, week or month from now on "
                   "(recorded; default: as recorded, daily for a new store).")
@click.option("--whole-partitions/--exact", "whole_partitions", default=None,
              help="Only drop whole partitions, or also delete the old rows of a partly old "
                   "one in batches [default: whole for weekly and monthly partitions].")
@click.option("--lock-wait", type=click.FloatRange(min=0), default=DEFAULT_LOCK_WAIT,
              show_default=True,
              help="Seconds a partition drop keeps trying for its lock (in short waits that "
                   "never hold writers up) before naming the session in its way.")
@json_flag()
@dsn_option()
def command(older_than: timedelta, batch_size: int, max_seconds: float | None, dry_run: bool,
            partition_interval: str | None, whole_partitions: bool | None, lock_wait: float,
            as_json: bool, dsn: str | None) -> None:
    """Delete documents older than the retention window (e.g. --older-than 2d)."""
    from simhash_pg.store import retention

    # SIGTERM stops it as Ctrl-C does: at once, since each batch is committed on its own
    with StopSignals(graceful=False) as signals, open_store(
            # a dry run changes nothing: it counts as the interval asked for would purge
            dsn, None, None, partition_interval=None if dry_run else partition_interval,
    ) as store:
        try:
            if dry_run:
                if whole_partitions is None and partition_interval is not None:
                    whole_partitions = retention.whole_partitions_for(partition_interval)
                cutoff, rows = retention.purge_candidates(
                    store.connection, older_than, whole_partitions=whole_partitions)
                out = {"cutoff": cutoff.isoformat(), "would_delete": rows}
            else:
                res = retention.purge(store.connection, older_than,
                                      batch_size=batch_size, max_seconds=max_seconds,
                                      whole_partitions=whole_partitions, lock_wait=lock_wait)
                out = {"cutoff": res.cutoff.isoformat(), "deleted": res.deleted,
                       "dropped_partitions": list(res.dropped),
                       "batches": res.batches, "seconds": round(res.seconds, 3)}
        except KeyboardInterrupt:
            click.echo("simhash-pg: interrupted; the batches deleted so far stay deleted",
                       err=True)
            raise SystemExit(signals.exit_code) from None
        except MaintenanceBlockedError as exc:
            fail(f"purge stopped: {exc}", 3)
        except Exception as exc:
            if type(exc).__module__.startswith("psycopg"):
                fail(f"purge stopped: {str(exc).strip()}", 3)
            raise
    if as_json:
        click.echo(json.dumps(out))
    elif dry_run:
        click.echo(f"would delete {out['would_delete']} documents created before {out['cutoff']}")
    else:
        n_dropped = len(out["dropped_partitions"])  # type: ignore[arg-type]
        dropped = f"{n_dropped} partitions dropped, " if n_dropped else ""
        click.echo(f"deleted {out['deleted']} documents created before {out['cutoff']} "
                   f"({dropped}{out['batches']} batches, {out['seconds']} s)")
