"""Long texts probe pairs of blocks: a probe whose cost does not grow with the store.

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-26
"""

from __future__ import annotations

from collections.abc import Sequence

from simhash_pg.db.resources import run_sql

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# What downgrade() destroys, for `simhash-pg db downgrade` to ask about
# (simhash_pg.db.migrate.downgrade_losses); None: nothing a re-upgrade does not
# rebuild (only search functions change).
downgrade_drops: str | None = None


def upgrade() -> None:
    run_sql("0019_pair_probes.sql")


def downgrade() -> None:
    run_sql("0019_pair_probes_drop.sql")
