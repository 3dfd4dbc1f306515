"""The read-only analyst role simhash_reader (SELECT and read functions only).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

from __future__ import annotations

from collections.abc import Sequence

from simhash_pg.db.resources import run_sql

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# What downgrade() destroys, for `simhash-pg db downgrade` to ask about
# (simhash_pg.db.migrate.downgrade_losses); None: nothing a re-upgrade does not rebuild.
downgrade_drops: str | None = (
    "the role simhash_reader, if simhash-pg created it and no other database uses it, "
    "with its members: a re-upgrade creates it again, but each GRANT simhash_reader "
    "TO <login> must be repeated"
)


def upgrade() -> None:
    run_sql("0002_reader_role.sql")


def downgrade() -> None:
    run_sql("0002_reader_role_drop.sql")
