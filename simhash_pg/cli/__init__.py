"""The ``simhash-pg`` command line: one module per command, loaded when used."""

from simhash_pg.cli.main import LazyGroup, cli, main

__all__ = ["LazyGroup", "cli", "main"]
