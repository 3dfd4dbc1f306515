"""lab.experiments.quality_at_scale end to end on a tiny store: a sample of the eval's pairs
in the test's database, empty and then beside 2,000 background rows."""

from __future__ import annotations

import psycopg
import pytest

from lab import quality as Q


def test_quality_at_scale_measures_the_eval_empty_and_in_a_filled_store(
        pg_dsn: str, capsys: pytest.CaptureFixture[str]) -> None:
    try:
        Q.resolve_eval_dir(None)
    except FileNotFoundError:
        pytest.skip("no ../shared/eval beside the repository")
    from lab.experiments import quality_at_scale

    # half the background rows hold a planted eval key: some pass the holder cap
    quality_at_scale.main(["--background", "2000", "--limit", "60", "--plant-share", "0.5",
                           "--planted-keys", "40", "--dsn", pg_dsn])
    out = capsys.readouterr().out
    assert "planted: 40 eval keys on 1,000 background rows" in out
    for line in ("| (a) ", "| (b) ", "| cap 16 (today) |", "| nearest 16 of any holders |",
                 "target (issue 28, item 5)"):
        assert line in out, line
    # the store's answers are the model's under today's rule, in both stores
    rows = [r.split("|") for r in out.splitlines() if r.startswith(("| (a) ", "| (b) "))]
    assert len(rows) == 4 and all(r[-2].strip() == "0" for r in rows), rows
    with psycopg.connect(pg_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM simhash_documents").fetchone()[0] > 2000  # type: ignore[index]
        # every index serves every partition (copy_rows' rebuild is repaired)
        assert conn.execute(
            "SELECT count(*) FILTER (WHERE NOT indisvalid), count(*) FROM pg_index WHERE indrelid"
            " IN ('simhash_text_keys'::regclass, 'simhash_documents'::regclass)"
        ).fetchone() in ((0, n) for n in range(5, 20))
        assert conn.execute("SELECT count(*) FROM pg_indexes WHERE tablename LIKE"
                            " 'simhash_text_keys_p%'").fetchone() >= (2,)
