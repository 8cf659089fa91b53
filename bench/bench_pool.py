"""Pooling benchmark: golden vs trectools' TrecPoolMaker on the 17 TREC 2003 Robust runs, depth 20.

    /work/venv/bin/python bench/bench_pool.py [--depth 20] [--repeat 3] [RUNS_DIR]

Both sides start from the gzipped run files, so each time includes reading and parsing them
(golden: ``read_runs`` + ``make_pool``; trectools: ``make_pool_from_files``). Each is timed
``--repeat`` times in this process, and the best time of each is compared, wall clock (golden
reads the files in parallel threads) and CPU time (summed over threads, so it is the fairer
figure when other work shares the machine).

The two pools are then compared pair by pair. They can differ only where a run has tied scores
straddling rank ``depth``: golden breaks ties as trec_eval does (docid descending), trectools
sorts docid ascending. So the script also builds both expected pools independently with pandas
(one per tie-break) and checks that each tool matches its own exactly, and that the pools are
identical once the tie-dependent documents are set aside.
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_RUNS = ROOT.parent / "shared" / "data" / "robust03" / "runs"


def golden_pool(files, depth):
    from curation.pool.pooling import make_pool
    from curation.formats.runs import read_runs

    pool = make_pool(read_runs(files, depth=depth), depth=depth, seed=0)
    return {(p.qid, p.docid) for p in pool.pairs}


def trectools_pool(files, depth):
    from trectools import TrecPoolMaker

    pool = TrecPoolMaker().make_pool_from_files(files, strategy="topX", topX=depth)
    return {(str(q), str(d)) for q, docs in pool.pool.items() for d in docs}


def pandas_pools(files, depth):
    """Independent expected pools: top-``depth`` by score, ties by docid descending / ascending."""
    desc, asc = set(), set()
    for f in files:
        df = pd.read_csv(f, sep=r"\s+", header=None, names=["q", "q0", "d", "r", "s", "t"], dtype={"q": str, "d": str})
        for target, doc_ascending in ((desc, False), (asc, True)):
            top = df.sort_values(["q", "s", "d"], ascending=[True, False, doc_ascending]).groupby("q").head(depth)
            target.update(zip(top["q"], top["d"]))
    return desc, asc


def best_time(fn, repeat):
    """Best wall-clock time, all wall times, best CPU time (all threads of the process), result."""
    times, cpu, result = [], [], None
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        result = fn()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return min(times), times, min(cpu), result


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs_dir", nargs="?", default=str(DEFAULT_RUNS))
    ap.add_argument("--depth", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    files = sorted(glob.glob(os.path.join(args.runs_dir, "*.gz")))
    if not files:
        sys.exit(f"no runs in {args.runs_dir}")
    # Import both libraries before timing, so neither pays its import cost inside the timer.
    import curation.pool.pooling  # noqa: F401
    import trectools  # noqa: F401

    g_best, g_times, g_cpu, g_pairs = best_time(lambda: golden_pool(files, args.depth), args.repeat)
    t_best, t_times, t_cpu, t_pairs = best_time(lambda: trectools_pool(files, args.depth), args.repeat)
    import gzip

    lines = sum(gzip.open(f).read().count(b"\n") for f in files)
    print(f"{len(files)} runs, {lines:,} lines, depth {args.depth}, {os.cpu_count()} cores")
    print(f"golden    pool: {g_best:6.3f} s best of {args.repeat} ({', '.join(f'{t:.3f}' for t in g_times)})  {len(g_pairs):,} pairs")
    print(f"trectools pool: {t_best:6.3f} s best of {args.repeat} ({', '.join(f'{t:.3f}' for t in t_times)})  {len(t_pairs):,} pairs")
    print(f"ratio trectools / golden: {t_best / g_best:.1f}x wall clock (target >= 10x); "
          f"CPU time {t_cpu:.3f} s / {g_cpu:.3f} s = {t_cpu / g_cpu:.1f}x")
    print(f"load average while measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")

    expect_desc, expect_asc = pandas_pools(files, args.depth)
    ok_golden = g_pairs == expect_desc
    ok_trectools = t_pairs == expect_asc
    tie_dependent = expect_desc ^ expect_asc
    same_outside_ties = (g_pairs - tie_dependent) == (t_pairs - tie_dependent)
    print(f"golden    == pandas top-{args.depth} (ties by docid descending, trec_eval): {ok_golden}")
    print(f"trectools == pandas top-{args.depth} (ties by docid ascending):            {ok_trectools}")
    print(
        f"pairs that depend on the tie-break at rank {args.depth}: {len(tie_dependent):,}; "
        f"all other pairs identical: {same_outside_ties} "
        f"({len(g_pairs & t_pairs):,} shared, {len(g_pairs - t_pairs):,} only golden, {len(t_pairs - g_pairs):,} only trectools)"
    )
    if not (ok_golden and ok_trectools and same_outside_ties):
        sys.exit("MISMATCH")


if __name__ == "__main__":
    main()
