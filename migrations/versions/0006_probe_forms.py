"""The pair form for every k <= 15, and probe masks from a table (issue 6).

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-22
"""

from __future__ import annotations

from collections.abc import Sequence

from simhash_pg.db.resources import run_sql

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# What downgrade() destroys, for `simhash-pg db downgrade` to ask about
# (simhash_pg.db.migrate.downgrade_losses); None: nothing a re-upgrade does not rebuild.
downgrade_drops: str | None = None


def upgrade() -> None:
    run_sql("0006_probe_forms.sql")
    run_sql("0006_functions.sql")  # the searches, on the helpers above


def downgrade() -> None:
    run_sql("0001_functions.sql")  # masks and probes of 0001
    run_sql("0004_functions.sql")  # near and near_many of 0004
    run_sql("0006_probe_forms_drop.sql")
