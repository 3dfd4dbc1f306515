"""The writer role simhash_writer, and a writer may make the partitions ahead.

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-27
"""

from __future__ import annotations

from collections.abc import Sequence

from simhash_pg.db.resources import run_sql

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# What downgrade() destroys, for `simhash-pg db downgrade` to ask about
# (simhash_pg.db.migrate.downgrade_losses); None: nothing a re-upgrade does not rebuild.
downgrade_drops: str | None = (
    "the role simhash_writer, if simhash-pg created it and no other database uses it, "
    "with its members: a re-upgrade creates it again, but each GRANT simhash_writer "
    "TO <login> must be repeated (`simhash-pg serve` repeats its own)"
)


def upgrade() -> None:
    run_sql("0020_writer_role.sql")


def downgrade() -> None:
    run_sql("0020_writer_role_drop.sql")
