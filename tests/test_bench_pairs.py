"""``simhash-pg bench pairs`` end to end on a small store: both forms, the sample check."""

from __future__ import annotations

from click.testing import CliRunner

from lab.bench.pairs import command


def test_bench_pairs_runs_both_forms_and_checks_a_sample(pg_dsn: str) -> None:
    res = CliRunner().invoke(command, ["--n", "3000", "--sample", "40", "--old-timeout", "120",
                                       "--dsn", pg_dsn])
    assert res.exit_code == 0, res.output
    new = next(x for x in res.output.splitlines() if "revision 0012" in x)
    old = next(x for x in res.output.splitlines() if "revision 0009" in x)
    # the same pairs from both forms
    count = new.split(": ")[1].split(" pairs")[0]
    assert old.split(": ")[1].startswith(f"{count} pairs"), res.output
    assert "40 sampled rows" in res.output and ", 0 rows differ" in res.output
