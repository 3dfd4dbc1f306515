"""Subcommands of the ``simhash-pg`` command line, one module each."""
