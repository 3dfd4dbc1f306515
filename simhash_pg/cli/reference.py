"""The CLI reference, docs/cli.md, generated from the click commands themselves.

    uv run python -m simhash_pg.cli.reference > docs/cli.md

Every command's ``--help``, as click formats it, in the order ``simhash-pg
--help`` lists them, a group's subcommands after it. The width is fixed, so
the page does not depend on the terminal it was made in.
tests/test_cli_reference.py fails when the checked-in page differs from
this output: an option changed without regenerating the page.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import click

__all__ = ["WIDTH", "reference"]

WIDTH = 80  # columns of the help text, as in an 80-column terminal

HEADER = """\
# Command-line reference

Generated from the commands' own `--help` by
`uv run python -m simhash_pg.cli.reference > docs/cli.md`; do not edit by
hand (tests/test_cli_reference.py checks it is current). The rules the
commands follow (input formats, reruns, exit codes, `serve`'s options in
use) are in [cli-guide.md](cli-guide.md). `bench` and `eval` run from a
checkout of the repository (their code is in `lab/`, outside the wheel).
"""


def _context(cmd: click.Command, name: str, parent: click.Context | None) -> click.Context:
    """The context ``--help`` would run in: the command's own settings (``-h``), no
    arguments parsed; a child inherits the fixed width from its parent."""
    width = {} if parent is not None else {"terminal_width": WIDTH, "max_content_width": WIDTH}
    return cmd.make_context(name, [], parent=parent, resilient_parsing=True, **width)


def _helps(cmd: click.Command, ctx: click.Context) -> Iterator[tuple[str, str]]:
    """(command path, help text) of ``cmd`` and, for a group, of each subcommand."""
    yield ctx.command_path, cmd.get_help(ctx)
    if isinstance(cmd, click.Group):
        for name in cmd.list_commands(ctx):
            sub = cmd.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from _helps(sub, _context(sub, name, ctx))


def reference() -> str:
    """The text of docs/cli.md."""
    from simhash_pg.cli.main import cli

    ctx = _context(cli, "simhash-pg", None)
    sections = [f"## `{path}`\n\n```text\n{text}\n```\n" for path, text in _helps(cli, ctx)]
    return "\n".join([HEADER, *sections])


def main() -> None:
    sys.stdout.write(reference())


if __name__ == "__main__":
    main()
