"""Initial schema: simhash_documents, simhash_meta and the SQL functions.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from __future__ import annotations

from collections.abc import Sequence

from simhash_pg.db.resources import run_sql

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# What downgrade() destroys, for `simhash-pg db downgrade` to ask about
# (simhash_pg.db.migrate.downgrade_losses); None: nothing a re-upgrade does not rebuild.
downgrade_drops: str | None = (
    "the tables simhash_documents and simhash_meta: every stored row, key and link, "
    "the recorded fingerprint scheme and verify mode"
)


def upgrade() -> None:
    run_sql("0001_schema.sql")
    run_sql("0001_functions.sql")
    run_sql("0001_add.sql")


def downgrade() -> None:
    run_sql("0001_drop.sql")
