"""Each of a text's longest sentences as a key: sentence_hashes, simhash_sentence_matches.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-25
"""

from __future__ import annotations

from collections.abc import Sequence

from simhash_pg.db.resources import run_sql

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# What downgrade() destroys, for `simhash-pg db downgrade` to ask about
# (simhash_pg.db.migrate.downgrade_losses); None: nothing a re-upgrade does not rebuild.
downgrade_drops: str | None = (
    "the sentence_hashes column: rows stored since revision 0015 are found by their"
    " fingerprint and signature alone, also after a re-upgrade"
)


def upgrade() -> None:
    run_sql("0015_sentence_hashes.sql")


def downgrade() -> None:
    run_sql("0015_sentence_hashes_drop.sql")
    # the single form without hashes searches on its own again: 0014's definition
    run_sql("0014_probes_one.sql")
