"""Issue 32, point 6: what `dedup` and `fingerprint` read, and what they say about it.

Driven through the CLI entry point against a real database.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import psycopg
from click.testing import CliRunner, Result

from simhash_pg.cli.main import cli

WORDS = ("river stone market winter signal harbor copper garden lantern meadow orbit "
         "pepper quarry ribbon saddle timber velvet walnut yonder zephyr anchor").split()


def doc(seed: int, n: int = 60) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) + str(rng.randrange(50)) for _ in range(n))


def licence(seed: int) -> str:
    """A text of several lines, like a licence file."""
    return "\n".join(doc(seed * 10 + i, 12) for i in range(6)) + "\n"


def invoke(*args: str, dsn: str | None = None) -> Result:
    env = {"SIMHASH_PG_DSN": dsn} if dsn is not None else {}
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def keys(dsn: str) -> list[str]:
    with psycopg.connect(dsn) as conn:
        return sorted(k for (k,) in conn.execute("SELECT key FROM simhash_documents"))


def test_a_directory_of_licences_without_extensions_is_read(pg_dsn: str,
                                                              tmp_path: Path) -> None:
    (tmp_path / "GPL-2").write_text(licence(1))
    (tmp_path / "Apache-2.0").write_text(licence(2))  # a version, not an extension
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "copyright").write_text(licence(3))
    (tmp_path / "notes.py").write_text("print('not a document')\n")
    (tmp_path / "blob").write_bytes(b"\x00\x01binary")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    res = invoke("dedup", str(tmp_path), dsn=pg_dsn)
    assert res.exit_code == 0, res.stderr
    assert keys(pg_dsn) == sorted(str(tmp_path / p) for p in ("GPL-2", "Apache-2.0",
                                                                "pkg/copyright"))
    # what was left out, why, examples, and how to include it
    note = res.stderr
    assert "skipped 2 files" in note, note
    assert "1 with another extension (e.g. " in note and "notes.py" in note
    assert "1 not UTF-8 text" in note and "blob" in note
    assert "--all-files" in note and ".txt" in note


def test_a_directory_with_nothing_read_says_why_and_fails(pg_dsn: str, tmp_path: Path) -> None:
    for seed, name in enumerate(("a.py", "b.json", "c.conf")):
        (tmp_path / name).write_text(licence(seed))
    res = invoke("dedup", str(tmp_path), dsn=pg_dsn)
    assert res.exit_code == 1, (res.exit_code, res.stderr)
    assert "the input holds no documents" in res.stderr
    assert "skipped 3 files" in res.stderr and "--all-files" in res.stderr
    assert keys(pg_dsn) == []
    res = invoke("dedup", "--all-files", str(tmp_path), dsn=pg_dsn)
    assert res.exit_code == 0, res.stderr
    assert len(keys(pg_dsn)) == 3


def test_one_file_named_is_one_document(pg_dsn: str, tmp_path: Path) -> None:
    lic = tmp_path / "LICENSE"
    lic.write_text(licence(4))
    page = tmp_path / "page.md"
    page.write_text(licence(5))
    res = invoke("dedup", str(lic), str(page), dsn=pg_dsn)
    assert res.exit_code == 0, res.stderr
    assert keys(pg_dsn) == [str(lic), str(page)]  # not a document per line
    # JSON Lines by content, whatever the name; .txt stays one document a line
    records = tmp_path / "export"
    records.write_text("".join(json.dumps({"id": f"r{i}", "text": doc(i)}) + "\n"
                               for i in range(3)))
    lines = tmp_path / "titles.txt"
    lines.write_text(doc(7) + "\n" + doc(8) + "\n")
    res = invoke("dedup", str(records), str(lines), dsn=pg_dsn)
    assert res.exit_code == 0, res.stderr
    assert len(keys(pg_dsn)) == 2 + 3 + 2
    # and --help says so
    help_text = " ".join(invoke("dedup", "--help").stdout.split())
    assert "any other file named here is one document" in help_text
    assert ".txt file one per line" in help_text


def test_progress_moves_within_the_first_batch(pg_dsn: str) -> None:
    from simhash_pg.cli.dedup import Summary, run_dedup
    from simhash_pg.cli.inputs import Record
    from simhash_pg.store import SimhashStore

    records = (Record(text=doc(i, 20), key=f"d{i}", where=f"in:{i}") for i in range(350))
    seen: list[int] = []

    def progress(summary: Summary) -> None:
        seen.append(summary.read)

    with SimhashStore(pg_dsn) as store:
        summary = run_dedup(store, records, on_progress=progress)  # default batch: 2000
    assert summary.read == 350
    # each batch once read (nothing done yet before the first), and once committed
    assert [n for n in dict.fromkeys(seen) if n < 350] == [0, 100, 300], seen


def _licences(root: Path, n: int) -> None:
    """``n`` licence-like files without an extension, a hidden one, a skipped one and
    broken links (skipped too, size 0: no reason to stop a run)."""
    for i in range(n):
        (root / f"LICENCE-{i:03d}").write_text(doc(i, 12 + i % 7))
    (root / ".hidden").write_text("not counted\n")
    (root / "notes.py").write_text("print('skipped, but passed by the reading')\n")
    (root / "gone.conf").symlink_to(root / "nowhere")
    (root / "gone").symlink_to(root / "nowhere")  # no extension: opened, not readable


def test_the_progress_line_counts_what_is_read_and_done(pg_dsn: str, tmp_path: Path) -> None:
    """A directory has a size to show a bar against, and the bar is the bytes done,
    not the bytes read: the reading runs a key look-up's chunk ahead of the commits."""
    import io
    import os

    from rich.console import Console

    from simhash_pg.cli.dedup import run_dedup
    from simhash_pg.cli.inputs import ReadProgress, input_bytes, read_inputs
    from simhash_pg.cli.progress import ProgressLine
    from simhash_pg.store import SimhashStore

    _licences(tmp_path, 350)
    total = sum(os.path.getsize(f) for f in tmp_path.iterdir()
                if f.name != ".hidden" and f.exists())
    reading = ReadProgress(total=input_bytes([str(tmp_path)]))
    assert reading.total == total

    frames: list[tuple[str, float]] = []

    class Recorded(ProgressLine):  # what each redraw showed
        def update(self, *, refresh: bool = False) -> None:
            super().update(refresh=refresh)
            task = self.bar.tasks[0]
            frames.append((task.description, task.completed))

    screen = io.StringIO()
    with SimhashStore(pg_dsn) as store, \
            Recorded(True, reading, Console(file=screen, force_terminal=True, width=150)) as line:
        run_dedup(store, read_inputs([str(tmp_path)], progress=reading), on_progress=line)
    # the reading shows before any batch is committed, with nothing done yet
    assert frames[0][0].endswith("read; fingerprinting and storing the first batch"), frames
    first = next(f for f in frames if f[0].startswith("350 read; fingerprinting"))
    assert first[1] == 0, frames
    # then the batches of 100, 200 and 50 move the bar by the bytes they hold
    done = [c for d, c in frames if "done:" in d]
    assert done == sorted(done) and 0 < done[0] < total and done[-1] == total, frames
    assert "350 read, 100 done: 0 duplicates" in " ".join(d for d, _ in frames)


def test_dedup_on_a_terminal_shows_the_reading_then_each_batch(pg_dsn: str,
                                                               tmp_path: Path) -> None:
    """Through the entry point on a terminal (a pty on stderr): a run smaller than one
    batch draws its reading, then each committed batch; stdout keeps only the summary."""
    import os
    import pty
    import re
    import subprocess
    import sys

    _licences(tmp_path, 350)
    master, slave = pty.openpty()
    env = {**os.environ, "SIMHASH_PG_DSN": pg_dsn, "COLUMNS": "160", "TERM": "xterm"}
    env.pop("NO_COLOR", None)
    with subprocess.Popen([sys.executable, "-c", "from simhash_pg.cli import main; main()",
                           "dedup", str(tmp_path)],
                          stdout=subprocess.PIPE, stderr=slave, env=env) as proc:
        os.close(slave)
        screen = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            screen += chunk
        out = proc.stdout.read().decode() if proc.stdout else ""
        assert proc.wait(timeout=300) == 0
    os.close(master)
    shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen.decode("utf-8", "replace"))
    assert "350 read; fingerprinting and storing the first batch" in shown, shown
    assert "350 read, 100 done" in shown and "350 read, 300 done" in shown, shown
    assert re.search(r"\b\d{1,2}%", shown), shown  # a bar: a directory has a size
    assert out.startswith("read 350, unique 350"), out
    assert "1 not readable (e.g. " in shown and "2 with another extension" in shown, shown


def test_fingerprint_reads_a_file_as_near_and_add_do(tmp_path: Path) -> None:
    from simhash_pg.text.simhash import fingerprint

    text = licence(6)
    src = tmp_path / "copyright"
    src.write_text(text)
    res = invoke("fingerprint", "--file", str(src))
    assert res.exit_code == 0, res.output
    first = res.stdout.splitlines()[0]
    assert first == f"{fingerprint(text):016x}  {src}"
    # -i reads as dedup does: this file is one document there too, and --help says so
    assert invoke("fingerprint", "-i", str(src)).stdout.splitlines() == res.stdout.splitlines()
    help_text = " ".join(invoke("fingerprint", "--help").stdout.split())
    assert "else one document per line" not in help_text
    assert "a .txt file one per line, any other file is one document" in help_text


def test_fingerprint_explain_orders_equal_weights_by_the_text_and_says_why() -> None:
    title = "Stocks rally as oil prices fall sharply on Monday"
    res = invoke("fingerprint", "--explain", "--top", "5", title)
    assert res.exit_code == 0, res.output
    shown = [line.split()[1] for line in res.stdout.splitlines() if line.startswith("    ")]
    assert shown == ["st", "to", "oc", "ck", "ks"]  # where they occur, not a, b, c
    assert "equal weights" in res.stdout and "counts each distinct feature once" in res.stdout
    # weights first: "the" occurs twice
    res = invoke("fingerprint", "--scheme", "words", "--explain", "--top", "3",
                 "the quick brown fox and the lazy dog")
    shown = [line.split()[1] for line in res.stdout.splitlines() if line.startswith("    ")]
    assert shown == ["the", "quick", "brown"]
    assert "equal weights" not in res.stdout
