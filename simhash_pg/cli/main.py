"""The ``simhash-pg`` command line.

Subcommands live in their own modules and load only when used, so
``simhash-pg --help`` stays fast and one command's imports never slow another.
Exit codes: 0 done, 1 done with skipped records, 2 usage error.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

# command name -> "module:attribute" of a click.Command. bench and eval live
# in the repository's lab/ package, which a wheel does not ship.
_COMMANDS: dict[str, str] = {
    "bench": "lab.bench:bench",
    "fingerprint": "simhash_pg.cli.fingerprint:command",
    "dedup": "simhash_pg.cli.dedup:command",
    "eval": "lab.eval.command:command",
    "demo": "simhash_pg.cli.demo:command",
    "add": "simhash_pg.cli.add:command",
    "near": "simhash_pg.cli.near:command",
    "stats": "simhash_pg.cli.stats:command",
    "db": "simhash_pg.cli.db:command",
    "server": "simhash_pg.cli.server:command",
    "serve": "simhash_pg.cli.serve:command",
    "purge": "simhash_pg.cli.purge:command",
    "psql": "simhash_pg.cli.psql:command",
    "warm": "simhash_pg.cli.warm:command",
}


class LazyGroup(click.Group):
    def __init__(self, *args: Any, lazy: dict[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy:
            module_name, attr = self.lazy[cmd_name].split(":")
            try:
                module = importlib.import_module(module_name)
            except ModuleNotFoundError as exc:
                if exc.name is None or exc.name.split(".")[0] != "lab":
                    raise
                return _needs_checkout(cmd_name)
            cmd = getattr(module, attr)
            if not isinstance(cmd, click.Command):
                raise TypeError(f"{self.lazy[cmd_name]} is not a click command")
            return cmd
        return super().get_command(ctx, cmd_name)


def _needs_checkout(name: str) -> click.Command:
    """A stand-in for a lab command where lab/ is not importable (an installed wheel)."""

    @click.command(name, add_help_option=False,
                   context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
                   help="(lab/: run from a checkout of the repository)")
    def missing() -> None:
        click.echo(f"simhash-pg: error: 'simhash-pg {name}' needs the lab/ package, which "
                   f"is not installed with simhash-pg; run from a checkout: "
                   f"uv run simhash-pg {name} ...", err=True)
        sys.exit(2)  # a usage error, as documented

    return missing


@click.group(cls=LazyGroup, lazy=_COMMANDS,
             context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="simhash-pg")
def cli() -> None:
    """simhash-pg: find near-duplicate texts with SimHash fingerprints in PostgreSQL."""


def main() -> None:
    cli()

