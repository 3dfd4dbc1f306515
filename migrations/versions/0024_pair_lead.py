"""A long text's pairs of blocks are led by fewer values: a pair scan reads fewer pages.

Revision ID: 0024
Revises: 0023
Create Date: 2026-11-29
"""

from __future__ import annotations

from collections.abc import Sequence

from simhash_pg.db.resources import run_sql

revision: str = "0024"
down_revision: str | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# What downgrade() destroys, for `simhash-pg db downgrade` to ask about
# (simhash_pg.db.migrate.downgrade_losses); None: nothing a re-upgrade does not
# rebuild (search functions and the default 'probes' record only).
downgrade_drops: str | None = None


def upgrade() -> None:
    run_sql("0024_pair_lead.sql")


def downgrade() -> None:
    run_sql("0024_pair_lead_drop.sql")
