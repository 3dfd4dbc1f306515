"""The SQL files and the alembic environment are found from a checkout and from a wheel."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from simhash_pg.db import migrate, resources

ROOT = Path(__file__).resolve().parents[1]

_PRINT_DIRS = """
from simhash_pg.db import migrate, resources
print(resources.sql_dir())
print(resources.migrations_dir())
print(migrate.script_head())
"""


def test_a_checkout_finds_the_top_level_folders() -> None:
    assert resources.sql_dir() == ROOT / "sql"
    assert resources.migrations_dir() == ROOT / "migrations"


def test_a_wheel_finds_the_folders_inside_the_package(tmp_path: Path) -> None:
    """The wheel's layout, as pyproject.toml's force-include builds it, without building one."""
    tomllib = pytest.importorskip("tomllib")
    wheel = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    force = wheel["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    site = tmp_path / "site"
    shutil.copytree(ROOT / "simhash_pg", site / "simhash_pg",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for source, target in force.items():
        shutil.copytree(ROOT / source, site / target, ignore=shutil.ignore_patterns("__pycache__"))
    # PYTHONPATH comes before the editable install's path entry: the copy is imported
    proc = subprocess.run([sys.executable, "-c", _PRINT_DIRS], capture_output=True, text=True,
                          cwd=tmp_path, env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    sql, migrations, head = proc.stdout.split()
    assert Path(sql) == site / "simhash_pg" / "_sql"
    assert Path(migrations) == site / "simhash_pg" / "_migrations"
    assert head == migrate.HEAD  # every revision file imports from the copy
