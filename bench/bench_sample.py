"""Benchmark: `golden sample queries` on a generated 10-million-row search log.

Generates a CSV log (gzip optional) with a heavy head and a long tail: queries drawn from a
Zipf-like law over ~1M distinct queries (some written in several raw forms that normalise to one),
users from a skewed pool, a `market` column of three values (a property of the query, mostly)
and a `device` column of two (a property of each search, so not a stratum). Then runs
`golden sample queries --stratum market --shape` on it in a fresh process, which reports its own
peak memory (getrusage ru_maxrss); prints wall time, CPU time and peak memory. With --baseline it
also times the obvious pandas version (read_csv, map normalize_text, groupby) on the same log.

Targets: under 60 s and under 3 GB for 10 million rows.

    python bench/bench_sample.py                 # 10M rows, plain CSV
    python bench/bench_sample.py --rows 1000000 --gzip --baseline
    python bench/bench_sample.py --dir /tmp/bs10 --repeat 3   # keep the log; best of 3 alternating runs
    python bench/bench_sample.py --logs few distinct --dir /tmp/bs10 --repeat 2   # the two log shapes
    python bench/bench_sample.py --logs distinct --draw-key v1 --dir /tmp/bs10   # the draw keys of golden before v2

``--logs`` names the shapes of log to measure, one after the other in the same run, each against
its own floor (a bare ``pyarrow.csv.read_csv`` of that log): ``zipf`` is the log above (~1M
possible queries, ~670k distinct in 10M rows); ``few`` the same Zipf law over 10,000 possible
queries (a head-heavy log: few distinct queries, most rows repeat one); ``distinct`` a log whose
queries are mostly distinct (nine rows in ten carry a query seen once: two or three words and a
serial number; the tenth is drawn from a Zipf head of 100,000 queries), as logs of long
natural-language questions are.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

WORDS = (
    "weather news login password reset account order refund shipping price cheap best review near me open "
    "hours phone case laptop battery charger cable usb wifi router printer ink tax form return policy gift "
    "card size chart shoes jacket winter summer sale discount code coupon track delivery status cancel "
    "subscription upgrade plan invoice download app install update error fix how to what is why does "
    "can i where buy rent hotel flight train ticket map restaurant pizza coffee recipe chicken pasta salad"
).split()


def make_vocab(n: int, rng: np.random.Generator) -> list[str]:
    """``n`` distinct query strings of 1 to 5 words."""
    out, seen = [], set()
    words = np.array(WORDS, dtype=object)
    while len(out) < n:
        k = rng.integers(1, 6, size=n)
        picks = rng.integers(0, len(words), size=(n, 5))
        for i in range(n):
            q = " ".join(words[picks[i, : k[i]]]) + ("" if k[i] > 2 else f" {picks[i, 4]}")
            r = rng.random()
            if r < 0.05:
                q += f" {rng.integers(0, 10**6)}"
            elif r < 0.051:  # a little personal data, as real logs have
                q += (f" {rng.choice(['jane.doe', 'j.smith', 'kim'])}@example.com" if r < 0.0505
                      else f" +1 555 {rng.integers(100, 999)} {rng.integers(1000, 9999)}")
            if q not in seen:
                seen.add(q)
                out.append(q)
                if len(out) == n:
                    break
    return out


def generate_distinct(path: Path, rows: int, seed: int, gzip: bool) -> None:
    """A log of mostly distinct queries: 90% of the rows carry a query of their own (words and a
    serial number, built with Arrow kernels: no Python string per row), 10% one of a Zipf head of
    100,000 queries; users and the two other columns as in :func:`generate`."""
    import pyarrow.compute as pc

    rng = np.random.default_rng(seed)
    head = pa.array(make_vocab(100_000, rng))
    ranks = np.arange(1, len(head) + 1)
    p = 1.0 / ranks**1.05
    p /= p.sum()
    words = pa.array(WORDS)
    chunk = 1_000_000
    opts = pacsv.WriteOptions(include_header=True)
    sink = pa.output_stream(str(path), compression="gzip" if gzip else None)
    writer = None
    for start in range(0, rows, chunk):
        n = min(chunk, rows - start)
        serial = pc.cast(pa.array(np.arange(start, start + n)), pa.string())
        parts = [words.take(pa.array(rng.integers(0, len(WORDS), size=n))) for _ in range(2)]
        own = pc.binary_join_element_wise(*parts, serial, " ")
        three = pc.binary_join_element_wise(words.take(pa.array(rng.integers(0, len(WORDS), size=n))), own, " ")
        own = pc.if_else(pa.array(rng.random(n) < 0.5), own, three)
        from_head = head.take(pa.array(rng.choice(len(head), size=n, p=p)))
        query = pc.if_else(pa.array(rng.random(n) < 0.9), own, from_head)
        users = (rng.pareto(1.2, size=n) * 50_000).astype(np.int64) % 2_000_000
        table = pa.table({
            "query": query,
            "user_id": pa.array([f"u{u}" for u in users.tolist()]),
            "market": pa.DictionaryArray.from_arrays(
                pa.array(rng.choice(3, size=n, p=[0.6, 0.3, 0.1]).astype(np.int8)), pa.array(["us", "uk", "de"])
            ).cast(pa.string()),
            "device": pa.DictionaryArray.from_arrays(
                pa.array((rng.random(n) < 0.45).astype(np.int8)), pa.array(["desktop", "mobile"])
            ).cast(pa.string()),
        })
        if writer is None:
            writer = pacsv.CSVWriter(sink, table.schema, write_options=opts)
        writer.write_table(table)
    writer.close()
    sink.close()


def generate(path: Path, rows: int, distinct: int, seed: int, gzip: bool) -> None:
    rng = np.random.default_rng(seed)
    vocab = make_vocab(distinct, rng)
    # Raw variants: a fifth of the queries also appear capitalised or padded with spaces.
    variants = (vocab + [v.title() for v in vocab[: distinct // 10]]
                + [f"  {v}  " for v in vocab[distinct // 10: distinct // 5]])
    ranks = np.arange(1, distinct + 1)
    p = 1.0 / ranks**1.05
    p /= p.sum()
    market_of = rng.choice(3, size=distinct, p=[0.6, 0.3, 0.1])
    chunk = 1_000_000
    opts = pacsv.WriteOptions(include_header=True)
    sink = pa.output_stream(str(path), compression="gzip" if gzip else None)
    writer = None
    for start in range(0, rows, chunk):
        n = min(chunk, rows - start)
        q = rng.choice(distinct, size=n, p=p)
        variant = q.copy()
        alt = rng.random(n) < 0.3
        head = q < distinct // 10
        mid = (q >= distinct // 10) & (q < distinct // 5)
        variant[alt & head] = distinct + q[alt & head]
        variant[alt & mid] = distinct + q[alt & mid]  # index into the padded block
        market = market_of[q].copy()
        stray = rng.random(n) < 0.05
        market[stray] = rng.integers(0, 3, size=int(stray.sum()))
        users = (rng.pareto(1.2, size=n) * 50_000).astype(np.int64) % 2_000_000
        table = pa.table({
            "query": pa.DictionaryArray.from_arrays(
                pa.array(variant, pa.int32()), pa.array(variants)
            ).cast(pa.string()),
            "user_id": pa.array([f"u{u}" for u in users.tolist()]),
            "market": pa.DictionaryArray.from_arrays(
                pa.array(market, pa.int8()), pa.array(["us", "uk", "de"])
            ).cast(pa.string()),
            "device": pa.DictionaryArray.from_arrays(
                pa.array((rng.random(n) < 0.45).astype(np.int8)), pa.array(["desktop", "mobile"])
            ).cast(pa.string()),
        })
        if writer is None:
            writer = pacsv.CSVWriter(sink, table.schema, write_options=opts)
        writer.write_table(table)
    writer.close()
    sink.close()


BASELINE = """
import sys
import pandas as pd
from curation.formats.normalize import normalize_text
df = pd.read_csv(sys.argv[1], dtype=str, keep_default_na=False)
df["text"] = df["query"].map(normalize_text)
g = df.groupby(["text", "market"]).agg(traffic=("user_id", "size"), users=("user_id", "nunique"))
print(len(g))
"""
# The floor: a bare pyarrow.csv.read_csv of the whole log (multi-threaded, as it comes).
FLOOR = """
import sys
import pyarrow.csv as pacsv
print(pacsv.read_csv(sys.argv[1]).num_rows)
"""
# Each child reports its own peak resident memory, so two children are measured apart.
PEAK = ("\nimport resource, sys\n"
        "print('PEAK_KIB', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n")
GOLDEN = """
import sys
from curation.cli import main
try:
    main(sys.argv[1:], standalone_mode=False)
finally:
""" + "\n".join("    " + line for line in PEAK.strip().splitlines())


def run_child(cmd: list[str]) -> tuple[float, float, float, str]:
    """Run ``cmd`` in a fresh process: (wall s, CPU s, peak MiB, stdout)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode:
        sys.exit(f"benchmark child failed:\n{proc.stderr}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    peak = next(int(line.split()[1]) for line in proc.stderr.splitlines() if line.startswith("PEAK_KIB"))
    return wall, cpu, peak / 1024, proc.stdout  # Linux: ru_maxrss is in KiB


SHAPES = ("zipf", "few", "distinct")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--distinct", type=int, default=None,
                    help="possible queries of a Zipf log (default 1,000,000 for zipf, 10,000 for few)")
    ap.add_argument("--logs", nargs="+", choices=SHAPES, default=["zipf"],
                    help="the shapes of log to measure, one after the other in this run (default: zipf)")
    ap.add_argument("--size", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--gzip", action="store_true", help="write the log gzip-compressed")
    ap.add_argument("--draw-key", choices=["v1", "v2"], default=None,
                    help="golden's --draw-key (default: golden's own default, v2); v1 is the rule before v2")
    ap.add_argument("--repeat", type=int, default=1,
                    help="run the read_csv floor and golden alternately this many times; report the best of each")
    ap.add_argument("--baseline", action="store_true", help="also time the obvious pandas version on the same log")
    ap.add_argument("--dir", default=None, help="keep the generated files here (default: a temporary folder)")
    args = ap.parse_args()

    tmp = tempfile.TemporaryDirectory(prefix="golden-bench-") if args.dir is None else None
    folder = Path(args.dir or tmp.name)
    folder.mkdir(parents=True, exist_ok=True)
    summary = []
    for shape in args.logs:
        summary.append(measure(shape, folder, args))
    if len(summary) > 1:
        print("summary (golden / bare read_csv, best of each, same run):")
        for line in summary:
            print("  " + line)
    if tmp is not None:
        tmp.cleanup()


def measure(shape: str, folder: Path, args) -> str:
    """Generate (or reuse) the log of ``shape``, time the floor and golden on it alternately, print
    the figures; return a one-line summary."""
    distinct = args.distinct or {"zipf": 1_000_000, "few": 10_000, "distinct": 0}[shape]
    stem = "log" if shape == "zipf" and args.distinct is None else f"log-{shape}-{args.rows}-{distinct}"
    log = folder / (f"{stem}.csv.gz" if args.gzip else f"{stem}.csv")
    t0 = time.perf_counter()
    reused = log.exists()
    if not reused:
        if shape == "distinct":
            generate_distinct(log, args.rows, args.seed, args.gzip)
        else:
            generate(log, args.rows, distinct, args.seed, args.gzip)
    made = "reused from an earlier run" if reused else f"generated in {time.perf_counter() - t0:.1f} s"
    what = "mostly distinct queries" if shape == "distinct" else f"Zipf over {distinct:,} possible queries"
    print(f"log {shape!r}: {args.rows:,} rows, {what}, {log.stat().st_size / 2**20:,.0f} MiB "
          f"({log.name}); {made}")

    out = folder / f"queries-{shape}.jsonl"
    cmd = [sys.executable, "-c", GOLDEN, "sample", "queries", str(log),
           "--query-col", "query", "--user-col", "user_id", "--stratum", "market",
           "--shape", "--size", str(args.size), "--floor", "20", "--seed", "7", "--out", str(out)]
    if args.draw_key:
        cmd += ["--draw-key", args.draw_key]
    load = os.getloadavg()
    floors, goldens = [], []
    for _ in range(args.repeat):  # alternately, so both see the same load
        floors.append(run_child([sys.executable, "-c", FLOOR + PEAK, str(log)]))
        goldens.append(run_child(cmd))
    stdout = goldens[0][3]
    print(stdout.rstrip())
    if args.repeat > 1:
        for i, (f, g) in enumerate(zip(floors, goldens), 1):
            print(f"  run {i}: golden {g[0]:.1f} s wall, {g[1]:.2f} s CPU, {g[2]:,.0f} MiB; "
                  f"read_csv {f[0]:.1f} s wall, {f[1]:.2f} s CPU; "
                  f"ratios {g[0] / f[0]:.2f}x wall, {g[1] / f[1]:.2f}x CPU")
    # The best of the runs of each (the least disturbed by other work on the machine); the largest peak.
    f_wall, f_cpu, f_peak = min(f[0] for f in floors), min(f[1] for f in floors), max(f[2] for f in floors)
    wall, cpu, peak_mib = min(g[0] for g in goldens), min(g[1] for g in goldens), max(g[2] for g in goldens)
    after = os.getloadavg()
    best = f"best of {args.repeat} runs each: " if args.repeat > 1 else ""
    print(f"golden sample queries: {best}{wall:.1f} s wall ({cpu:.1f} s CPU), peak memory {peak_mib:,.0f} MiB "
          f"({args.rows / wall / 1e6:.2f} M rows/s); targets for 10M rows: < 60 s, < 3072 MiB")
    print(f"bare pyarrow.csv.read_csv of the log: {best}{f_wall:.1f} s wall ({f_cpu:.1f} s CPU), "
          f"peak {f_peak:,.0f} MiB; "
          f"golden / it: {wall / f_wall:.2f}x wall, {cpu / f_cpu:.2f}x CPU (target: <= 1.5x, < 1 GB); "
          f"load average (1, 5, 15 min) {'/'.join(f'{x:.1f}' for x in load)} before, "
          f"{'/'.join(f'{x:.1f}' for x in after)} after, on {os.cpu_count()} cores")
    if args.baseline:
        # The obvious pandas version (whole file in memory, normalise row by row, group by), which
        # only collapses and counts (no sampling).
        b_wall, b_cpu, b_peak, _ = run_child([sys.executable, "-c", BASELINE + PEAK, str(log)])
        print(f"pandas read_csv + map + groupby: {b_wall:.1f} s wall ({b_cpu:.1f} s CPU), peak memory "
              f"{b_peak:,.0f} MiB; golden: {b_wall / wall:.1f}x less wall time, {b_cpu / cpu:.1f}x less CPU, "
              f"{b_peak / peak_mib:.1f}x less memory")
    return (f"{shape:8} golden {wall:.1f} s wall, {cpu:.2f} s CPU, {peak_mib:,.0f} MiB; read_csv {f_wall:.1f} s "
            f"wall, {f_cpu:.2f} s CPU: {wall / f_wall:.2f}x wall, {cpu / f_cpu:.2f}x CPU; "
            f"load {load[0]:.1f} -> {after[0]:.1f}")


if __name__ == "__main__":
    main()
