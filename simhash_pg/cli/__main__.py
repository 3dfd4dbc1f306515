"""``python -m simhash_pg.cli``."""

from simhash_pg.cli.main import main

main()
