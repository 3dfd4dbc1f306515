"""The database side: the local PostgreSQL server, the schema model, the migrations."""
