"""A key held by 17-256 rows finds the 16 nearest the query (the key table keeps fingerprints).

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-26
"""

from __future__ import annotations

from collections.abc import Sequence

from simhash_pg.db.resources import run_sql

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# What downgrade() destroys, for `simhash-pg db downgrade` to ask about
# (simhash_pg.db.migrate.downgrade_losses); None: nothing a re-upgrade does not
# rebuild (the fingerprints stay in simhash_documents).
downgrade_drops: str | None = None


def upgrade() -> None:
    run_sql("0018_key_nearest.sql")


def downgrade() -> None:
    run_sql("0018_key_nearest_drop.sql")
