"""docs/cli.md is the commands' own help: generated, and checked here to be current."""

from __future__ import annotations

from pathlib import Path

import click

from simhash_pg.cli.reference import WIDTH, reference

PAGE = Path(__file__).resolve().parents[1] / "docs" / "cli.md"


def test_the_checked_in_reference_is_the_generated_one() -> None:
    """Fails when an option changed without `python -m simhash_pg.cli.reference > docs/cli.md`.

    Generated in a fresh interpreter, as that command makes it: click keeps a
    command's help option once made, so a command another test invoked on its
    own (without the group's ``-h``) would show ``--help`` alone here.
    """
    import subprocess
    import sys

    made = subprocess.run([sys.executable, "-m", "simhash_pg.cli.reference"],
                          capture_output=True, text=True, encoding="utf-8", check=True,
                          cwd=PAGE.parents[1])
    assert PAGE.read_text("utf-8") == made.stdout, (
        "docs/cli.md is stale: uv run python -m simhash_pg.cli.reference > docs/cli.md")


def test_the_reference_has_every_command_and_option() -> None:
    from simhash_pg.cli.main import cli

    text = reference()
    ctx = cli.make_context("simhash-pg", [], resilient_parsing=True)

    def walk(cmd: click.Command, ctx: click.Context) -> None:
        assert f"## `{ctx.command_path}`" in text
        for param in cmd.params:
            for opt in getattr(param, "opts", []):
                if opt.startswith("-") and not getattr(param, "hidden", False):
                    assert opt in text, (ctx.command_path, opt)
        if isinstance(cmd, click.Group):
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                assert sub is not None
                walk(sub, sub.make_context(name, [], parent=ctx, resilient_parsing=True))

    walk(cli, ctx)
    # click wrapped it at the fixed width, whatever the terminal it is made in
    helps = [block.split("```", 1)[0] for block in text.split("```text\n")[1:]]
    assert len(helps) > 20
    assert all(len(line) <= WIDTH for h in helps for line in h.splitlines())
