"""``simhash-pg eval``: the run (:mod:`.run`), its tables (:mod:`.render`), the command."""
