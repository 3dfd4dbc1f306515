"""The experiment of issue 6: (b_i, fingerprint) vs (b_i, b_{i+1}, fingerprint).

Figures in docs/scaling.md. Not part of the package; run from the repository:

    uv run python -m lab.experiments.pair_indexes N [--skew] [--copy] [--home DIR]
        [--queries Q] [--no-highk] [--reuse]

Written against revision 0003 (loads made (b_i, fingerprint) indexes); at
revision 0004 the load already makes the pair layout and the script keeps it.

Loads N fingerprints (bench store's make_data) into simhash_documents with the
0001..0003 indexes (old), then:
  --copy: a second table docs_new with the same rows and only the new indexes
          (old query on old indexes vs both forms on new indexes);
  default: replace the old block indexes by the new ones in place (old query
          form measured on the new indexes as a proxy, checked at 10M with --copy).
Measures interleaved (same run, alternating order) the latency of scratch plpgsql
functions with a forced generic plan.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time

import numpy as np

from lab.bench._scratch import scratch_dsn
from lab.bench.store import make_data, queries_for
from lab.bench.timing import pct
from lab.connect import connect as store_connect
from simhash_pg.bits import to_signed
from simhash_pg.db import migrate
from simhash_pg.store import SimhashStore

NEW_IDX = ("CREATE INDEX {t}_b{i}_pidx ON {t} (b{i}, b{j}, fingerprint)"
           " WITH (deduplicate_items = off)")

PROBES1 = """
CREATE OR REPLACE FUNCTION x_probes1(b smallint) RETURNS smallint[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT ARRAY[b,
        (((b::integer + 32768) # 1) - 32768)::smallint,
        (((b::integer + 32768) # 2) - 32768)::smallint,
        (((b::integer + 32768) # 4) - 32768)::smallint,
        (((b::integer + 32768) # 8) - 32768)::smallint,
        (((b::integer + 32768) # 16) - 32768)::smallint,
        (((b::integer + 32768) # 32) - 32768)::smallint,
        (((b::integer + 32768) # 64) - 32768)::smallint,
        (((b::integer + 32768) # 128) - 32768)::smallint,
        (((b::integer + 32768) # 256) - 32768)::smallint,
        (((b::integer + 32768) # 512) - 32768)::smallint,
        (((b::integer + 32768) # 1024) - 32768)::smallint,
        (((b::integer + 32768) # 2048) - 32768)::smallint,
        (((b::integer + 32768) # 4096) - 32768)::smallint,
        (((b::integer + 32768) # 8192) - 32768)::smallint,
        (((b::integer + 32768) # 16384) - 32768)::smallint,
        (((b::integer + 32768) # 32768) - 32768)::smallint]
$$;
"""


def old_fn(name: str, t: str) -> str:
    br = "\n UNION ".join(
        f"SELECT c.fingerprint FROM {t} c WHERE c.b{i} = simhash_block(fp, {i})"
        f" AND simhash_hamming(c.fingerprint, fp) <= k" for i in range(4))
    return f"""
CREATE OR REPLACE FUNCTION {name}(fp bigint, k integer)
RETURNS TABLE (id bigint, key text, distance integer)
LANGUAGE plpgsql STABLE ROWS 10 SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY SELECT d.id, d.key, simhash_hamming(d.fingerprint, fp)
  FROM ({br}) AS f JOIN {t} d
    ON d.b0 = simhash_block(f.fingerprint, 0) AND d.b1 = simhash_block(f.fingerprint, 1)
   AND d.fingerprint = f.fingerprint
  ORDER BY 3, 1;
END $$;"""


def new_fn(name: str, t: str, probes: str) -> str:
    # probes: 'sp' = simhash_probes(.., 1) in the query; 'inl' = x_probes1 (inlinable)
    def arr(j: int) -> str:
        if probes == "sp":
            return f"simhash_probes(simhash_block(fp, {j}), 1)"
        if probes == "r":
            return f"simhash_probes(simhash_block(fp, {j}), (k + 2) / 4)"
        return f"x_probes1(simhash_block(fp, {j}))"

    br = "\n UNION ".join(
        f"SELECT c.fingerprint FROM {t} c WHERE c.b{i} = simhash_block(fp, {i})"
        f" AND c.b{(i + 1) % 4} = ANY ({arr((i + 1) % 4)})"
        f" AND simhash_hamming(c.fingerprint, fp) <= k" for i in range(4))
    return f"""
CREATE OR REPLACE FUNCTION {name}(fp bigint, k integer)
RETURNS TABLE (id bigint, key text, distance integer)
LANGUAGE plpgsql STABLE ROWS 10 SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY SELECT d.id, d.key, simhash_hamming(d.fingerprint, fp)
  FROM ({br}) AS f JOIN {t} d
    ON d.b0 = simhash_block(f.fingerprint, 0) AND d.b1 = simhash_block(f.fingerprint, 1)
   AND d.fingerprint = f.fingerprint
  ORDER BY 3, 1;
END $$;"""


def probe_fn(name: str, t: str) -> str:
    """The 0001 k <= 15 probe query, with b1 in the join back (as in 0004)."""
    br = "\n UNION ".join(
        f"SELECT c.fingerprint FROM {t} c WHERE c.b{i} ="
        f" ANY (simhash_probes(simhash_block(fp, {i}), k / 4))"
        f" AND simhash_hamming(c.fingerprint, fp) <= k" for i in range(4))
    return f"""
CREATE OR REPLACE FUNCTION {name}(fp bigint, k integer)
RETURNS TABLE (id bigint, key text, distance integer)
LANGUAGE plpgsql STABLE SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY SELECT d.id, d.key, simhash_hamming(d.fingerprint, fp)
  FROM ({br}) AS f JOIN {t} d
    ON d.b0 = simhash_block(f.fingerprint, 0) AND d.b1 = simhash_block(f.fingerprint, 1)
   AND d.fingerprint = f.fingerprint
  ORDER BY 3, 1;
END $$;"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("n", type=int)
    ap.add_argument("--skew", action="store_true")
    ap.add_argument("--copy", action="store_true")
    ap.add_argument("--home", default=None)
    ap.add_argument("--dsn", default=None)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--reuse", action="store_true", help="data already loaded")
    ap.add_argument("--no-highk", action="store_true")
    a = ap.parse_args()
    print("cmd:", " ".join(sys.argv), flush=True)
    with scratch_dsn(a.dsn, home=a.home, keep=True) as dsn:
        run(dsn, a)


def run(dsn: str, a: argparse.Namespace) -> None:
    fps = make_data(a.n, a.seed, a.skew)
    conn = store_connect(dsn)
    if not a.reuse:
        for i in range(4):
            conn.execute(f"ALTER INDEX IF EXISTS simhash_documents_b{i}_pidx"
                         f" RENAME TO simhash_documents_b{i}_idx")
        migrate.downgrade(dsn, "base")
        migrate.upgrade(dsn)
        conn.execute("DROP TABLE IF EXISTS docs_new")
        store = SimhashStore(dsn, k=3)
        t = time.perf_counter()
        store.bulk_load(fps)
        store.close()
        print(f"bulk_load {a.n:,}: {time.perf_counter() - t:.0f} s", flush=True)
        if a.copy:
            conn.execute("CREATE TABLE docs_new (LIKE simhash_documents INCLUDING GENERATED"
                         " INCLUDING DEFAULTS INCLUDING IDENTITY INCLUDING STORAGE)")
            conn.execute("INSERT INTO docs_new (id, key, fingerprint, duplicate_of,"
                         " created_at, meta) OVERRIDING SYSTEM VALUE SELECT id, key,"
                         " fingerprint, duplicate_of, created_at, meta FROM simhash_documents")
            conn.execute("ALTER TABLE docs_new ADD PRIMARY KEY (id)")
            for i in range(4):
                conn.execute(NEW_IDX.format(t="docs_new", i=i, j=(i + 1) % 4))
            conn.execute("VACUUM (FREEZE, ANALYZE) docs_new")
        elif ", b1, fingerprint" in conn.execute(  # type: ignore[index]
                "SELECT pg_get_indexdef('simhash_documents_b0_idx'::regclass)").fetchone()[0]:
            print("revision 0004: block indexes already (b_i, b_i+1, fingerprint)", flush=True)
        else:
            t = time.perf_counter()
            for i in range(4):
                conn.execute(f"DROP INDEX simhash_documents_b{i}_idx")
                conn.execute(NEW_IDX.format(t="simhash_documents", i=i, j=(i + 1) % 4))
            conn.execute("VACUUM (ANALYZE) simhash_documents")
            print(f"replaced block indexes in {time.perf_counter() - t:.0f} s", flush=True)
    tnew = "docs_new" if a.copy else "simhash_documents"
    conn.execute(PROBES1)
    fns = {"old": old_fn("x_old", "simhash_documents")}
    if a.copy:
        fns["old@new"] = old_fn("x_oldnew", tnew)
    fns["new_sp"] = new_fn("x_new_sp", tnew, "sp")
    fns["new_inl"] = new_fn("x_new_inl", tnew, "inl")
    fns["new_r"] = new_fn("x_new_r", tnew, "r")
    names = {"old": "x_old", "old@new": "x_oldnew", "new_sp": "x_new_sp", "new_inl": "x_new_inl",
             "new_r": "x_new_r"}
    for sql in fns.values():
        conn.execute(sql)

    # sizes
    for r in conn.execute(
        "SELECT c.relname, pg_relation_size(c.oid), t.reltuples FROM pg_class c"
        " JOIN pg_index x ON x.indexrelid = c.oid JOIN pg_class t ON t.oid = x.indrelid"
        " WHERE c.relname ~ '_b[0-3]_p?idx$' ORDER BY 1"
    ).fetchall():
        print(f"  index {r[0]}: {r[1] / 2**20:,.1f} MiB = {r[1] / max(r[2], 1):.2f} B/row",
              flush=True)
    conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
    t = time.perf_counter()
    conn.execute("SELECT sum(pg_prewarm(c.oid)) FROM pg_class c WHERE c.relname ~ '_b[0-3]_p?idx$'"
                 " OR c.relname IN ('simhash_documents', 'docs_new')")
    print(f"prewarm {time.perf_counter() - t:.0f} s; load avg {os.getloadavg()}", flush=True)

    qs = [to_signed(q) for q in queries_for(fps, a.queries, 3, a.seed)]
    # exactness: all variants agree
    for q in qs[:200]:
        res = {v: conn.execute(f"SELECT * FROM {names[v]}(%s, 3)", [q]).fetchall() for v in fns}
        base = res["old"]
        for v, rows in res.items():
            if [x[0] for x in rows] != [x[0] for x in base] and v != "old@new":
                raise SystemExit(f"MISMATCH {v} q={q}: {rows} vs {base}")
    print("exactness: all variants agree on 200 queries", flush=True)

    def latency(ks: int, qlist: list[int]) -> None:
        times: dict[str, list[float]] = {v: [] for v in fns}
        order = list(fns)
        for v in fns:  # warm up
            for q in qlist[:50]:
                conn.execute(f"SELECT * FROM {names[v]}(%s, %s)", [q, ks], prepare=True).fetchall()
        for q in qlist:
            random.shuffle(order)
            for v in order:
                t0 = time.perf_counter()
                conn.execute(f"SELECT * FROM {names[v]}(%s, %s)", [q, ks], prepare=True).fetchall()
                times[v].append((time.perf_counter() - t0) * 1000)
        base = pct(times["old"], 50)
        for v, ts in times.items():
            print(f"  k={ks} {v:8s} p50 {pct(ts, 50):.3f} ms  p95 {pct(ts, 95):.3f}  p99 "
                  f"{pct(ts, 99):.3f}  mean {statistics.fmean(ts):.3f}  (p50 ratio vs old "
                  f"{pct(ts, 50) / base:.2f})", flush=True)

    print(f"latency, {len(qs)} queries, interleaved, load avg {os.getloadavg()}", flush=True)
    latency(3, qs)
    latency(0, qs[:500])

    # buffers: inner statements through auto_explain
    notices: list[str] = []
    conn.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
    conn.execute("LOAD 'auto_explain'")
    for s in ("log_min_duration = 0", "log_nested_statements = on", "log_analyze = on",
              "log_buffers = on", "log_level = notice"):
        conn.execute(f"SET auto_explain.{s}")
    bufs: dict[str, list[int]] = {v: [] for v in fns}
    import re
    for i, q in enumerate(qs[:50]):
        for v in fns:
            notices.clear()
            conn.execute(f"SELECT * FROM {names[v]}(%s, 3)", [q]).fetchall()
            inner = [n for n in notices if "RETURN QUERY" not in n and "Function Scan" not in n]
            txt = "\n".join(inner)
            m = re.search(r"Buffers: shared hit=(\d+)(?: read=(\d+))?", txt)
            bufs[v].append(int(m.group(1)) + int(m.group(2) or 0) if m else -1)
            if i == 0:
                print(f"--- plan {v} ---\n{txt}", flush=True)
    conn.execute("SET auto_explain.log_min_duration = -1")
    for v, b in bufs.items():
        print(f"  buffers/query k=3 {v}: mean {statistics.fmean(b):.1f}, max {max(b)}", flush=True)

    # higher k on the new indexes with the store's own function (unchanged probes)
    # vs on the old: only where both are available
    for kx in (() if a.no_highk else (6, 10)):
        qx = [to_signed(q) for q in queries_for(fps, 300, kx, a.seed + kx)]
        sn = {"store_fn": "simhash_near"} if a.copy else {}
        if True:
            conn.execute(probe_fn("x_near_newtab", tnew))
            sn["newtab"] = "x_near_newtab"
        times: dict[str, list[float]] = {v: [] for v in sn}
        for q in qx[:30]:
            for f in sn.values():
                conn.execute(f"SELECT * FROM {f}(%s, %s)", [q, kx], prepare=True).fetchall()
        for q in qx:
            for v, f in sn.items():
                t0 = time.perf_counter()
                conn.execute(f"SELECT * FROM {f}(%s, %s)", [q, kx], prepare=True).fetchall()
                times[v].append((time.perf_counter() - t0) * 1000)
        for v, ts in times.items():
            print(f"  k={kx} {v} ({'old idx' if v == 'store_fn' else 'new idx, b1 in join'}):"
                  f" p50 {pct(ts, 50):.3f} p99 {pct(ts, 99):.3f} mean {statistics.fmean(ts):.3f}",
                  flush=True)
    conn.close()


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
