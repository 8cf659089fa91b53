"""Benchmark: per-query metrics for the 17 TREC 2003 Robust runs (golden vs ranx vs ir_measures in the
same process), and a 10,000-resample paired bootstrap over 5,000 queries (golden vs scipy).

    /work/venv/bin/python bench/bench_stats.py [--repeat 5]

Targets: golden's metrics at least as fast as ranx's (ranx's numba JIT warm-up is timed apart and
excluded from its figure); the bootstrap under 0.5 s. Times are the best of ``--repeat`` runs
(wall clock); the machine is shared, so expect noise.
"""

from __future__ import annotations

import argparse
import glob
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's curation package, imported below

from curation.evaluate.bootstrap import bootstrap_replicates, interval  # noqa: E402 - after the sys.path line
from curation.evaluate.metrics import QrelsIndex, evaluate, parse_metric  # noqa: E402 - after the sys.path line
from curation.formats.qrels import read_qrels  # noqa: E402 - after the sys.path line
from curation.formats.runs import read_runs  # noqa: E402 - after the sys.path line

SHARED = Path(os.environ.get("GOLDEN_SHARED_DATA", ROOT.parent / "shared" / "data"))
METRICS = ["ndcg@10", "ndcg@100", "p@10", "recall@100", "ap", "mrr"]


def best(fn, repeat, cpu=None):
    """Best and median wall-clock time of ``repeat`` calls (and the best CPU time, into ``cpu``)."""
    times, cpus = [], []
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        out = fn()
        times.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    if cpu is not None:
        cpu.append(min(cpus))
    return min(times), statistics.median(times), out


def bench_metrics(repeat: int) -> None:
    import ir_measures
    import ranx

    robust = SHARED / "robust03"
    if not robust.exists():
        print(f"skipped metrics: {robust} not found")
        return
    t = time.perf_counter()
    runs = read_runs(sorted(glob.glob(str(robust / "runs" / "input.*.gz"))))
    qrels = read_qrels(robust / "qrels" / "robust03_qrels.txt")
    print(f"read 17 runs + qrels with golden: {time.perf_counter() - t:.2f} s "
          f"({sum(sum(len(v) for v in r.rankings.values()) for r in runs):,} lines)")
    specs = [parse_metric(m) for m in METRICS]
    dicts = [{q: dict(zip(r.rankings[q], r.scores[q])) for q in r.rankings} for r in runs]

    def golden():
        index = QrelsIndex.build(qrels)
        return [evaluate(r, index, specs) for r in runs]

    rx_names = [s.peer_name("ranx") for s in specs]
    t = time.perf_counter()
    warm_q = ranx.Qrels.from_dict(qrels)
    ranx.evaluate(warm_q, ranx.Run.from_dict(dicts[0]), rx_names)
    warm = time.perf_counter() - t

    def ranx_all():
        rq = ranx.Qrels.from_dict(qrels)
        out = []
        for d in dicts:
            rr = ranx.Run.from_dict(d)
            out.append(ranx.evaluate(rq, rr, rx_names, return_mean=False))
        return out

    rq = ranx.Qrels.from_dict(qrels)
    ranx_runs = [ranx.Run.from_dict(d) for d in dicts]

    def ranx_eval_only():
        return [ranx.evaluate(rq, rr, rx_names, return_mean=False) for rr in ranx_runs]

    irm = [ir_measures.parse_measure(s.peer_name("ir_measures")) for s in specs]

    def irm_all():
        ev = ir_measures.evaluator(irm, qrels)
        return [list(ev.iter_calc(d)) for d in dicts]

    g_min, g_med, _ = best(golden, repeat)
    r_min, r_med, _ = best(ranx_all, repeat)
    re_min, re_med, _ = best(ranx_eval_only, repeat)
    i_min, i_med, _ = best(irm_all, repeat)
    print(f"\nmetrics {', '.join(METRICS)} per query, 17 runs x 100 queries x 1000 documents "
          f"(best / median of {repeat}):")
    print(f"  golden (qrels index + evaluate)        {g_min:7.3f} s  / {g_med:.3f} s")
    print(f"  ranx   (Qrels/Run from dict + evaluate) {r_min:7.3f} s  / {r_med:.3f} s   "
          f"golden is {r_min / g_min:.1f}x faster")
    print(f"  ranx   (evaluate only, objects built)   {re_min:7.3f} s  / {re_med:.3f} s   "
          f"golden is {re_min / g_min:.1f}x faster")
    print(f"  ranx   numba JIT warm-up (excluded)     {warm:7.3f} s")
    print(f"  ir_measures (pytrec_eval)              {i_min:7.3f} s  / {i_med:.3f} s   "
          f"golden is {i_min / g_min:.1f}x faster")


def bench_bootstrap(repeat: int) -> None:
    from scipy import stats as sps

    d = np.random.default_rng(0).normal(0.01, 0.2, 5000)
    cpu: list[float] = []
    g_min, g_med, reps = best(lambda: interval(bootstrap_replicates(d, resamples=10_000, seed=0)), repeat, cpu)
    s_min, s_med, _ = best(
        lambda: sps.bootstrap((d,), np.mean, n_resamples=10_000, method="percentile",
                              random_state=np.random.default_rng(0)).confidence_interval, max(1, repeat // 2))
    print("\npaired bootstrap, 10,000 resamples over 5,000 queries (percentile interval):")
    print(f"  golden  {g_min:6.3f} s / {g_med:.3f} s  (target < 0.5 s: {'met' if g_min < 0.5 else 'MISSED'})"
          f"  interval [{reps[0]:+.4f}, {reps[1]:+.4f}]")
    print(f"          CPU time {cpu[0]:.3f} s (all threads; wall clock grows when other processes hold the cores)")
    print(f"  scipy.stats.bootstrap  {s_min:6.3f} s / {s_med:.3f} s   golden is {s_min / g_min:.1f}x faster")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--only", choices=["metrics", "bootstrap"], default=None)
    args = ap.parse_args()
    print(f"cpus: {os.cpu_count()}, load average: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    if args.only != "bootstrap":
        bench_metrics(args.repeat)
    if args.only != "metrics":
        bench_bootstrap(args.repeat)


if __name__ == "__main__":
    main()
