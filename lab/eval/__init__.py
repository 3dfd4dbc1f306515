"""``simhash-pg eval``."""
