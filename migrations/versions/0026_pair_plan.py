"""A small store's batch probes use block i's index; the single form sets up one form.

Revision ID: 0026
Revises: 0025
Create Date: 2026-11-29
"""

from __future__ import annotations

from collections.abc import Sequence

from simhash_pg.db.resources import run_sql

revision: str = "0026"
down_revision: str | None = "0025"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# What downgrade() destroys, for `simhash-pg db downgrade` to ask about
# (simhash_pg.db.migrate.downgrade_losses); None: two search functions' bodies only.
downgrade_drops: str | None = None


def upgrade() -> None:
    run_sql("0026_pair_plan.sql")


def downgrade() -> None:
    run_sql("0026_pair_plan_drop.sql")
