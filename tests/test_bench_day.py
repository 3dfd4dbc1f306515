"""``simhash-pg bench day`` end to end on a small day: the layout it makes and its table."""

from __future__ import annotations

import psycopg
from click.testing import CliRunner

from lab.bench.day import command


def test_bench_day_lays_out_both_days_and_measures_each_writer(pg_dsn: str) -> None:
    res = CliRunner().invoke(command, ["--per-day", "3000", "--at", "0,1", "--seconds", "1",
                                       "--windows", "1", "--clients", "1", "--dsn", pg_dsn])
    assert res.exit_code == 0, res.output
    table = res.output.split("-" * 20)[-1]
    rows = [line.split() for line in table.splitlines() if " dedup=" in line[:30]]
    assert [(r[0], r[1]) for r in rows] == [("0", "dedup=True"), ("0", "dedup=False"),
                                            ("3,000", "dedup=True"), ("3,000", "dedup=False")]
    assert all(float(r[2].replace(",", "")) > 0 for r in rows)
    with psycopg.connect(pg_dsn) as conn:
        counts = dict(conn.execute(
            "SELECT p.partition::text, (SELECT count(*) FROM simhash_documents d"
            " WHERE d.tableoid = p.partition) FROM simhash_partitions() p").fetchall())
        yesterday, today = sorted(n for n in counts if n != "simhash_documents_default")[:2]
        assert counts[yesterday] == 3000  # exactly the day's rows; the adds went to today's
        assert counts[today] > 3000  # the last layout's rows and what the writers added
        assert counts["simhash_documents_default"] == 0
        # ids stayed unique across the attached days and the adds
        assert conn.execute("SELECT count(*) = count(DISTINCT id) FROM simhash_documents"
                            ).fetchone() == (True,)
        # no leaf left recorded as empty for the planner (planner_stats.py)
        assert conn.execute(
            "SELECT count(*) FROM pg_partition_tree('simhash_documents') t JOIN pg_class c"
            " ON c.oid = t.relid WHERE t.isleaf AND c.reltuples = 0").fetchone() == (0,)


def test_bench_day_names_a_bad_point() -> None:
    res = CliRunner().invoke(command, ["--at", "0,2"])
    assert res.exit_code == 2 and "fractions between 0 and 1" in res.output
    res = CliRunner().invoke(command, ["--at", "noon"])
    assert res.exit_code == 2 and "comma-separated fractions" in res.output


def test_bench_day_weekly_puts_both_days_in_one_partition(pg_dsn: str) -> None:
    from datetime import datetime, timezone

    res = CliRunner().invoke(command, ["--per-day", "2000", "--at", "1", "--seconds", "1",
                                       "--windows", "1", "--clients", "1", "--interval", "week",
                                       "--dsn", pg_dsn])
    assert res.exit_code == 0, res.output
    with psycopg.connect(pg_dsn) as conn:
        days = conn.execute(
            "SELECT tableoid::regclass::text, min(created_at)::date, max(created_at)::date,"
            " count(*) FROM simhash_documents WHERE id <= 4000 GROUP BY 1").fetchall()
    if datetime.now(timezone.utc).weekday() == 0:  # Monday: yesterday is last week's
        assert len(days) == 2, days
    else:
        assert len(days) == 1 and days[0][3] == 4000, days
        assert (days[0][2] - days[0][1]).days == 1  # yesterday's rows and today's


def test_bench_day_texts_grows_one_store_of_text_rows_and_adds_at_each_point(
        pg_dsn: str) -> None:
    res = CliRunner().invoke(command, ["--texts", "--per-day", "2000", "--at", "0,0.5,1",
                                       "--seconds", "1", "--windows", "1", "--clients", "1",
                                       "--stored", "30", "--dsn", pg_dsn])
    assert res.exit_code == 0, res.output
    table = res.output.split("-" * 20)[-1]
    rows = [line.split() for line in table.splitlines() if line[:11].strip()[:1].isdigit()]
    assert [r[0] for r in rows] == ["0", "1,000", "2,000"]
    assert all(float(r[2].replace(",", "")) > 0 for r in rows)  # adds/s
    assert "the target of 1M an hour" in res.output
    with psycopg.connect(pg_dsn) as conn:
        counts = dict(conn.execute(
            "SELECT p.partition::text, (SELECT count(*) FROM simhash_documents d"
            " WHERE d.tableoid = p.partition) FROM simhash_partitions() p").fetchall())
        yesterday, today = sorted(n for n in counts if n != "simhash_documents_default")[:2]
        assert counts[yesterday] == 2000  # the day's rows, and nothing the adds stored
        # today's synthetic rows, the 30 real texts and what the adds stored
        assert counts[today] > 2030
        # text rows: verification texts and keys, in the key table as its trigger keeps it
        assert conn.execute(
            "SELECT count(*) FILTER (WHERE verify_text IS NULL), count(*) FILTER (WHERE"
            " cardinality(sentence_hashes) > 0) > 0 FROM simhash_documents").fetchone() == (
                0, True)
        assert conn.execute(
            "SELECT count(*) = count(DISTINCT id) FROM simhash_documents").fetchone() == (True,)
        assert conn.execute(
            "SELECT count(*) FROM simhash_documents d WHERE cardinality(d.sentence_hashes) > 0"
            " AND NOT EXISTS (SELECT FROM simhash_text_keys k WHERE k.id = d.id)"
        ).fetchone() == (0,)


def test_bench_day_texts_again_adds_to_the_store_a_run_left(pg_dsn: str) -> None:
    first = CliRunner().invoke(command, ["--texts", "--per-day", "1000", "--at", "1",
                                         "--seconds", "1", "--windows", "1", "--clients", "1",
                                         "--stored", "20", "--dsn", pg_dsn])
    assert first.exit_code == 0, first.output
    with psycopg.connect(pg_dsn) as conn:
        before = conn.execute("SELECT count(*), max(id) FROM simhash_documents").fetchone()
    res = CliRunner().invoke(command, ["--texts", "--again", "--seconds", "1", "--windows", "1",
                                       "--clients", "1", "--stored", "20", "--duplicates", "1",
                                       "--dsn", pg_dsn])
    assert res.exit_code == 0, res.output
    assert "--again:" in res.output and "shared_buffers" in res.output
    table = res.output.split("-" * 20)[-1]
    (row,) = [line.split() for line in table.splitlines() if line[:11].strip()[:1].isdigit()]
    assert int(row[1].replace(",", "")) == before[0]  # the store's rows when it began
    # every text an edited copy of a stored synthetic one: nearly all found it
    assert float(row[-3].rstrip("%")) >= 90, res.output
    with psycopg.connect(pg_dsn) as conn:
        after = conn.execute("SELECT count(*), min(id) FROM simhash_documents WHERE id > %s",
                             [before[1]]).fetchone()
    # no fill (that would be 1,000 rows a day): at most the few adds that found nothing
    assert after is not None and after[0] < 100


def test_bench_day_texts_names_what_does_not_go_with_it() -> None:
    res = CliRunner().invoke(command, ["--stored", "50"])
    assert res.exit_code == 2 and "--stored goes with --texts" in res.output
    res = CliRunner().invoke(command, ["--texts", "--interval", "week"])
    assert res.exit_code == 2 and "no --wal-compression or --interval" in res.output
    res = CliRunner().invoke(command, ["--texts", "--at", "1,0.5"])
    assert res.exit_code == 2 and "rising fractions" in res.output
    res = CliRunner().invoke(command, ["--texts", "--again"])
    assert res.exit_code == 2 and "give its --dsn" in res.output
    res = CliRunner().invoke(command, ["--again"])
    assert res.exit_code == 2 and "--again goes with --texts" in res.output
