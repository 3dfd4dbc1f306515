"""Min-hash keys looked up apart, within a Hamming cap (simhash_near_probes_candidates).

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-26
"""

from __future__ import annotations

from collections.abc import Sequence

from simhash_pg.db.resources import run_sql

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# What downgrade() destroys, for `simhash-pg db downgrade` to ask about
# (simhash_pg.db.migrate.downgrade_losses); None: nothing a re-upgrade does not rebuild.
downgrade_drops: str | None = None


def upgrade() -> None:
    run_sql("0016_minhash_keys.sql")


def downgrade() -> None:
    run_sql("0016_minhash_keys_drop.sql")
