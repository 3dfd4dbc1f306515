"""Each row keeps its text as written (body): what the web page shows.

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-28
"""

from __future__ import annotations

from collections.abc import Sequence

from simhash_pg.db.resources import run_sql

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# What downgrade() destroys, for `simhash-pg db downgrade` to ask about
# (simhash_pg.db.migrate.downgrade_losses); None: nothing a re-upgrade does not rebuild.
downgrade_drops: str | None = (
    "simhash_documents.body, every row's text as written: a re-upgrade adds the column "
    "again, empty (the web page then shows those rows' verification text)"
)


def upgrade() -> None:
    run_sql("0021_body.sql")


def downgrade() -> None:
    run_sql("0021_body_drop.sql")
