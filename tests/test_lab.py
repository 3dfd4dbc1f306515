"""The lab (lab/) stays out of the runtime package; its commands work from a checkout only."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "simhash_pg"

# What an installed wheel looks like to the CLI: no lab package to import.
_WITHOUT_LAB = """
import sys
sys.modules["lab"] = None  # import lab -> ModuleNotFoundError, as without a checkout
from simhash_pg.cli import cli
cli(sys.argv[1:], prog_name="simhash-pg")
"""


def _cli(*args: str, without_lab: bool = False) -> subprocess.CompletedProcess[str]:
    code = _WITHOUT_LAB if without_lab else _WITHOUT_LAB.replace('sys.modules["lab"] = None', "")
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=120)


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return found


def test_the_runtime_package_never_imports_the_lab() -> None:
    offenders = {
        str(path.relative_to(PACKAGE)): sorted(m for m in _imports(path)
                                               if m == "lab" or m.startswith("lab."))
        for path in PACKAGE.rglob("*.py")
    }
    assert {p: m for p, m in offenders.items() if m} == {}


@pytest.mark.parametrize("args", [["eval", "--help"], ["bench", "--help"],
                                  ["bench", "hnsw", "--help"], ["bench", "text", "--help"]])
def test_lab_commands_run_from_the_checkout(args: list[str]) -> None:
    proc = _cli(*args)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"Usage: simhash-pg {' '.join(args[:-1])}")


@pytest.mark.parametrize("args", [["eval"], ["eval", "--help"], ["bench", "store", "--n", "5"]])
def test_lab_commands_without_the_lab_say_so(args: list[str]) -> None:
    proc = _cli(*args, without_lab=True)
    assert proc.returncode == 2, proc.stderr
    assert f"'simhash-pg {args[0]}' needs the lab/ package" in proc.stderr
    assert "run from a checkout" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_command_list_survives_a_missing_lab() -> None:
    proc = _cli("--help", without_lab=True)
    assert proc.returncode == 0, proc.stderr
    assert "eval" in proc.stdout and "bench" in proc.stdout and "dedup" in proc.stdout
