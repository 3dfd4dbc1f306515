"""Verification text and sentence signature columns (issue 7).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22
"""

from __future__ import annotations

from collections.abc import Sequence

from simhash_pg.resources import run_sql

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    run_sql("0003_verification.sql")


def downgrade() -> None:
    run_sql("0003_verification_drop.sql")
