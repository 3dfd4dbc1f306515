"""A text's keys in a table of their own, looked up by btree (simhash_text_keys).

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-26
"""

from __future__ import annotations

from collections.abc import Sequence

from simhash_pg.db.resources import run_sql

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# What downgrade() destroys, for `simhash-pg db downgrade` to ask about
# (simhash_pg.db.migrate.downgrade_losses); None: nothing a re-upgrade does not
# rebuild (the keys stay in simhash_documents.sentence_hashes).
downgrade_drops: str | None = None


def upgrade() -> None:
    run_sql("0017_text_keys.sql")


def downgrade() -> None:
    run_sql("0017_text_keys_drop.sql")
