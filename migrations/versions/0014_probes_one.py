"""One text query's candidates in a lean call: simhash_near_probes_candidates(fp, p0..p3, cap, sig).

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-25
"""

from __future__ import annotations

from collections.abc import Sequence

from simhash_pg.db.resources import run_sql

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# What downgrade() destroys, for `simhash-pg db downgrade` to ask about
# (simhash_pg.db.migrate.downgrade_losses); None: nothing a re-upgrade does not rebuild.
downgrade_drops: str | None = None


def upgrade() -> None:
    run_sql("0014_probes_one.sql")


def downgrade() -> None:
    run_sql("0014_probes_one_drop.sql")
