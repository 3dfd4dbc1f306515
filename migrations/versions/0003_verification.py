"""Verification text and sentence signature columns (issue 7).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22
"""

from __future__ import annotations

from collections.abc import Sequence

from simhash_pg.db.resources import run_sql

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# What downgrade() destroys, for `simhash-pg db downgrade` to ask about
# (simhash_pg.db.migrate.downgrade_losses); None: nothing a re-upgrade does not rebuild.
downgrade_drops: str | None = (
    "the verification text and sentence signature of every row (columns verify_text "
    "and sentence_sig): they cannot be recomputed without the texts, so after a "
    "re-upgrade those rows are matched by fingerprint alone (distance <= k, as under "
    "verify=off): a short text is found again only if it is identical or nearly so. "
    "The recorded verify mode is kept"
)


def upgrade() -> None:
    run_sql("0003_verification.sql")


def downgrade() -> None:
    run_sql("0003_verification_drop.sql")
