"""The old path of :mod:`simhash_pg.db.resources`, for the revision files only.

``migrations/versions/*.py`` are frozen history and import ``run_sql`` from
here; everything else imports :mod:`simhash_pg.db.resources`.
"""

from simhash_pg.db.resources import migrations_dir, read_sql, run_sql, sql_dir

__all__ = ["migrations_dir", "read_sql", "run_sql", "sql_dir"]
