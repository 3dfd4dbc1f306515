"""Searches by explicit probe values per block and a Hamming cap (issue 14, item 2).

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-23
"""

from __future__ import annotations

from collections.abc import Sequence

from simhash_pg.db.resources import run_sql

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# What downgrade() destroys, for `simhash-pg db downgrade` to ask about
# (simhash_pg.db.migrate.downgrade_losses); None: nothing a re-upgrade does not rebuild.
downgrade_drops: str | None = None


def upgrade() -> None:
    run_sql("0009_near_probes.sql")


def downgrade() -> None:
    run_sql("0009_near_probes_drop.sql")
