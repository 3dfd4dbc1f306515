"""An application's own alembic environment that also keeps a simhash-pg store.

The app's history is its own (its revisions in versions/, its alembic_version
in public); the store's revisions run after the app's, on the same
connection and in the same transaction, with their own version table in the
store's schema. The one line for the store is marked below.
"""

from __future__ import annotations

import os

from alembic import context
from sqlalchemy import create_engine, pool

from simhash_pg.db.migrate import upgrade_within

url = context.get_x_argument(as_dictionary=True).get("url") or os.environ["APP_DATABASE_URL"]
engine = create_engine(url, poolclass=pool.NullPool)
with engine.connect() as connection:
    context.configure(connection=connection, target_metadata=None)
    with context.begin_transaction():
        context.run_migrations()
        upgrade_within(connection)  # simhash-pg: the store's schema, at our head
engine.dispose()
