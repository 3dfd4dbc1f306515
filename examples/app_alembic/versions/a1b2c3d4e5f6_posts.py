"""The app's first revision: its posts.

Revision ID: a1b2c3d4e5f6
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "a1b2c3d4e5f6"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table("posts", sa.Column("id", sa.Integer, primary_key=True),
                    sa.Column("body", sa.Text, nullable=False))


def downgrade() -> None:
    op.drop_table("posts")
