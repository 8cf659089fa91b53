"""Benchmark: `golden sample queries` on a partitioned Parquet log, one process against a local Dask cluster.

    python bench/bench_sample_dask.py --rows 100000000 --dir /data/bench     # the issue's size
    python bench/bench_sample_dask.py --rows 20000000                          # what fits a busy machine

Generates (once, kept with --dir) a log as a folder of Parquet files of uneven sizes (Zipf-like
queries over ``--distinct`` queries, some in several raw forms, a `market` stratum, skewed users;
the generator of ``bench_sample.py``), then runs, each in a fresh process:

1. ``golden sample queries FOLDER ...`` in one process;
2. the same with ``--dask local:2`` (a local cluster of 2 worker processes).

Prints wall time, CPU time (the process and its children, so the Dask workers are counted), the
peak memory of the driver process alone (its ``VmHWM``), the load average, and whether the two
output files are identical byte for byte (they must be).
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
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from bench_sample import make_vocab  # noqa: E402 - after the sys.path line

# The child's own peak memory is VmHWM (Linux): the high-water mark of this process's memory since
# it was started, which, unlike ru_maxrss, does not carry over the RSS of the (big) benchmark
# process it was forked from; nor does it count the Dask workers, which are other processes.
GOLDEN = """
import sys
from curation.cli import main
try:
    main(sys.argv[1:], standalone_mode=False)
finally:
    with open('/proc/self/status') as fh:
        print('PEAK_KIB', next(l.split()[1] for l in fh if l.startswith('VmHWM:')), file=sys.stderr)
"""


def generate(folder: Path, rows: int, distinct: int, seed: int) -> None:
    """Parquet files of 1/40 to 1/8 of the rows each (uneven sizes), written into ``folder``."""
    rng = np.random.default_rng(seed)
    vocab = make_vocab(distinct, rng)
    variants = vocab + [v.title() for v in vocab[: distinct // 10]] + [f"  {v}  " for v in vocab[distinct // 10:
                                                                                             distinct // 5]]
    p = 1.0 / np.arange(1, distinct + 1) ** 1.05
    p /= p.sum()
    market_of = rng.choice(3, size=distinct, p=[0.6, 0.3, 0.1])
    tmp = folder.with_name(folder.name + ".tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    start, part = 0, 0
    while start < rows:
        n = min(int(rng.integers(max(1, rows // 40), max(2, rows // 8))), rows - start)
        q = rng.choice(distinct, size=n, p=p)
        variant = q.copy()
        alt = rng.random(n) < 0.3
        head, mid = q < distinct // 10, (q >= distinct // 10) & (q < distinct // 5)
        variant[alt & head] = distinct + q[alt & head]
        variant[alt & mid] = distinct + q[alt & mid]
        market = market_of[q].copy()
        stray = rng.random(n) < 0.05
        market[stray] = rng.integers(0, 3, size=int(stray.sum()))
        users = (rng.pareto(1.2, size=n) * 50_000).astype(np.int64) % 2_000_000
        table = pa.table({
            "query": pa.DictionaryArray.from_arrays(pa.array(variant, pa.int32()),
                                                    pa.array(variants)).cast(pa.string()),
            "user_id": pa.compute.binary_join_element_wise("u", pa.array(users).cast(pa.string()), ""),
            "market": pa.DictionaryArray.from_arrays(pa.array(market, pa.int8()),
                                                     pa.array(["us", "uk", "de"])).cast(pa.string()),
        })
        pq.write_table(table, tmp / f"part-{part:05d}.parquet", row_group_size=1 << 20)
        start += n
        part += 1
    os.replace(tmp, folder)


def run_child(cmd: list[str]) -> tuple[float, float, float, str]:
    """(wall s, CPU s of the child and its children, the child's own peak MiB, stdout)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    wall = time.perf_counter() - t0
    if proc.returncode:
        sys.exit(f"benchmark child failed:\n{proc.stderr[-3000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    peak = next(int(line.split()[1]) for line in proc.stderr.splitlines() if line.startswith("PEAK_KIB"))
    return wall, cpu, peak / 1024, proc.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000_000)
    ap.add_argument("--distinct", type=int, default=2_000_000)
    ap.add_argument("--size", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--dir", default=None, help="keep the generated log here (default: a temporary folder)")
    ap.add_argument("--no-users", action="store_true",
                    help="sample without --user-col (no distinct users nor user weights: no shuffle of the "
                         "(query, user) pairs)")
    args = ap.parse_args()
    tmp = tempfile.TemporaryDirectory(prefix="golden-bench-") if args.dir is None else None
    base = Path(args.dir or tmp.name)
    folder = base / f"log-{args.rows}-{args.distinct}-{args.seed}"
    t0 = time.perf_counter()
    made = "reused"
    if not folder.exists():
        generate(folder, args.rows, args.distinct, args.seed)
        made = f"generated in {time.perf_counter() - t0:.0f} s"
    files = sorted(folder.glob("*.parquet"))
    size = sum(f.stat().st_size for f in files)
    print(f"log: {args.rows:,} rows in {len(files)} Parquet files ({size / 2**20:,.0f} MiB), ~{args.distinct:,} "
          f"distinct queries; {made}; {os.cpu_count()} cores")
    common = [sys.executable, "-c", GOLDEN, "sample", "queries", str(folder), "--query-col", "query",
              *([] if args.no_users else ["--user-col", "user_id"]),
              "--stratum", "market", "--shape", "--size", str(args.size), "--floor", "20", "--seed", "7"]
    one, many = base / "one.jsonl", base / "dask.jsonl"
    load = os.getloadavg()[0]
    w1, c1, p1, out1 = run_child([*common, "--out", str(one)])
    w2, c2, p2, _ = run_child([*common, "--out", str(many), "--dask", f"local:{args.workers}"])
    print(out1.splitlines()[0])
    print(f"one process:          {w1:7.1f} s wall, {c1:7.1f} s CPU, peak {p1:,.0f} MiB")
    print(f"Dask local:{args.workers} driver:  {w2:7.1f} s wall, {c2:7.1f} s CPU (driver + workers), "
          f"driver peak {p2:,.0f} MiB")
    print(f"wall ratio one / Dask: {w1 / w2:.2f}x; load average {load:.1f} before, {os.getloadavg()[0]:.1f} after")
    same = one.read_bytes() == many.read_bytes()
    print(f"outputs identical byte for byte: {same}")
    if tmp is not None:
        tmp.cleanup()
    if not same:
        sys.exit("MISMATCH")


if __name__ == "__main__":
    main()
