"""Benchmark: decisive judging on the 17 TREC 2003 Robust runs, with the qrels as the judges.

    /work/venv/bin/python bench/bench_decisive.py [--metric ndcg@10] [--mode each|all|both] [--step 0.02]
        [--plans decisive,decisive-pair,shuffled,depth,oracle] [--no-estimate] [--json FILE]
        [--lower-bound [--limit 10000]]

For every pair of runs (136 comparisons, "is B higher than A?", 95% paired percentile bootstrap,
10,000 resamples), judging is replayed in the decisive order (whole blocks of a query's 10 most
decisive pairs, as `golden judging assign --order decisive` queues them; and single pairs, the bound of any
order), the shuffled order and the depth order, and the share of the pool judged when the
guarantee settles the comparison is recorded (``curation.evaluate.simulate``):

* ``--mode each``: each comparison judges its own pool (the two runs' top 20);
* ``--mode all``: one pool of all 17 runs and one order serving all 136 comparisons.

Figures: for the comparisons whose fully judged verdict is significant, the median share judged at
settlement per order and its ratio to the shuffled order; wrong calls (settled verdicts that the
fully judged pool contradicts: must be 0); the share at which the estimate is 95% sure (decisive
block order) and its wrong calls; and the CPU time of one recomputation of the bounds, the
settlement and the priorities for all 136 comparisons (target < 1 s). ``--lower-bound`` adds, for
each significant comparison on its own pool, the proven least share any order must judge and the
least settling set found by a search that knows the labels (``curation.evaluate.clairvoyant``);
``oracle`` replays an order that judges that set first. The load average is printed: the machine
has 2 cores shared by other work.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's curation package, imported below

from curation.evaluate.decisive import pair_priorities  # noqa: E402 - after the sys.path line
from curation.evaluate.settle import query_bounds, resample_counts, settle  # noqa: E402 - after the sys.path line
from curation.evaluate.simulate import (  # noqa: E402 - after the sys.path line
    all_pairs,
    pool_from_runs,
    settlement_lower_bound,
    simulate,
)
from curation.formats.qrels import read_qrels  # noqa: E402 - after the sys.path line
from curation.formats.runs import read_runs  # noqa: E402 - after the sys.path line

SHARED = Path(os.environ.get("GOLDEN_SHARED_DATA", ROOT.parent / "shared" / "data"))


def load():
    robust = SHARED / "robust03"
    runs = read_runs(sorted(glob.glob(str(robust / "runs" / "input.*.gz"))), depth=20)
    qrels = read_qrels(robust / "qrels" / "robust03_qrels.txt")
    return pool_from_runs({r.name: r.rankings for r in runs}, qrels, 20)


def fmt(x):
    return "-" if x is None else f"{100 * x:.1f}%"


PLANS = {"decisive": ("decisive", "block", True), "decisive-pair": ("decisive", "pair", False),
         "shuffled": ("shuffled", "block", False), "depth": ("depth", "block", False),
         "oracle": ("oracle", "pair", False)}


def run_mode(pm, truth, comps, metric, mode, step, out, plans=tuple(PLANS), estimate=True, estimate_until=0.5):
    print(f"\n== {metric}, mode {mode}: {len(comps)} comparisons, "
          f"{'each on its own pool (two runs, depth 20)' if mode == 'each' else f'one pool of {pm.n_pairs:,} pairs'}")
    rows = {}
    for order, gran, est in (PLANS[p] for p in plans):
        est = est and estimate
        t, c = time.perf_counter(), time.process_time()
        res = simulate(pm, truth, comps, metric, order=order, mode=mode, granularity=gran, step=step,
                       estimate=est, estimate_until=estimate_until, seed=0)
        wall, cpu = time.perf_counter() - t, time.process_time() - c
        summ = res.summary()
        label = order if order != "decisive" else f"decisive ({gran})"
        rows[label] = (res, summ)
        print(f"{label:<18} significant {summ['significant']:>3}  settled {summ['settled_of_significant']:>3}  "
              f"median share at settlement {fmt(summ['median_share_significant']):>6}  "
              f"wrong calls {summ['wrong_calls']}  (replay {wall:.1f} s wall, {cpu:.1f} s CPU, "
              f"{res.checks} checks, {res.seconds_per_check * 1000:.0f} ms CPU each; load {os.getloadavg()[0]:.1f})")
        if est:
            n = summ["comparisons"]
            print(f"{'  estimate @95%':<18} median share {fmt(summ['median_estimate_share_significant'])}, "
                  f"stopped {summ['estimate_stopped']}, wrong calls {summ['estimate_wrong_calls']} "
                  f"({100 * summ['estimate_wrong_calls'] / n:.1f}% of {n})")
        out.setdefault(metric, {}).setdefault(mode, {})[label] = res.as_dict()
    base = rows["shuffled"][1]["median_share_significant"] if "shuffled" in rows else None
    for label, (_, summ) in rows.items():
        m = summ["median_share_significant"]
        if m and base:
            print(f"  ratio shuffled / {label}: {base / m:.2f}x")
    return rows


def lower_bounds(pm, truth, comps, metric, limit=None):
    """Per significant comparison on its own pool (nDCG only): the proven lower bound of the pairs
    any order (even one knowing the labels) must judge before the guarantee settles, and the
    smallest settling set found by a search that knows the labels (``curation.evaluate.clairvoyant``;
    checked with the real settlement), both as shares of the pool, settled after every pair."""
    from curation.evaluate.clairvoyant import LIMIT, clairvoyant_settling_set, oriented, query_curves
    from curation.evaluate.settle import percentile_ends, query_bounds
    from curation.evaluate.simulate import HIGHER, LOWER

    t = time.process_time()
    counts = resample_counts(len(pm.qids), seed=0)
    member = np.stack([pm.members(c) for c in comps])
    full = query_bounds(pm, np.where(member, truth[None, :], 0.0), comps, metric, max_grade=2)
    low, high = percentile_ends(counts, full.lo)
    shares, found, exact = [], [], []
    for i, c in enumerate(comps):
        verdict = HIGHER if low[i] > 1e-12 else LOWER if high[i] < -1e-12 else None
        if verdict is None:
            continue
        curves = query_curves(pm, truth, oriented(c, verdict), member[i], 2, metric=metric, limit=limit or LIMIT)
        lb = settlement_lower_bound(pm, truth, c, metric, counts, verdict, member[i], 2, curves=curves)
        chosen = clairvoyant_settling_set(pm, truth, c, metric, counts, verdict, member[i], 2, curves=curves)
        pool = member[i].sum()
        shares.append(lb / pool)
        found.append(len(chosen) / pool)
        exact.append(np.mean([cv.exact for cv in curves]))
    print(f"{len(shares)} significant comparisons, settled after every pair ({time.process_time() - t:.1f} s CPU; "
          f"{100 * np.mean(exact):.0f}% of the queries' curves exact, limit {limit or LIMIT}):\n"
          f"  proven lower bound, any order (even knowing the labels): median {fmt(float(np.median(shares)))}, "
          f"range {fmt(min(shares))}-{fmt(max(shares))}\n"
          f"  least settling set found knowing the labels: median {fmt(float(np.median(found)))}, "
          f"range {fmt(min(found))}-{fmt(max(found))}; at most 35% for {sum(f <= 0.35 for f in found)} of {len(found)}")
    return shares, found


def time_recompute(pm, truth, comps, metric, repeat=3):
    """CPU time of bounds + settlement + priorities for all comparisons, after a batch of judgments."""
    rng = np.random.default_rng(1)
    grades = np.where(rng.random(pm.n_pairs) < 0.3, truth, np.nan)
    counts = resample_counts(len(pm.qids), seed=0)
    best_cpu, best_wall = 1e9, 1e9
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        b = query_bounds(pm, grades, comps, metric, max_grade=2)
        st = settle(b, counts)
        pair_priorities(b, st, None, pm.n_pairs)
        best_cpu = min(best_cpu, time.process_time() - c)
        best_wall = min(best_wall, time.perf_counter() - t)
    print(f"recompute bounds + settlement + priorities, {len(comps)} comparisons, {metric}, pool of "
          f"{pm.n_pairs:,} pairs 30% judged: {best_cpu:.3f} s CPU, {best_wall:.3f} s wall "
          f"(best of {repeat}; load {os.getloadavg()[0]:.1f}; target < 1 s)")
    return best_cpu


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--metric", action="append", help="ndcg@10 (default) and/or ap")
    ap.add_argument("--mode", choices=["each", "all", "both"], default="both")
    ap.add_argument("--step", type=float, default=0.02, help="share of the pool judged between checks")
    ap.add_argument("--comparisons", type=int, default=None, help="only the first N pairs of runs (quick look)")
    ap.add_argument("--json", dest="json_out", default=None, help="write every comparison's figures here")
    ap.add_argument("--plans", default="decisive,decisive-pair,shuffled,depth",
                    help=f"orders to replay, of {', '.join(PLANS)} (oracle: knows the labels, a reference)")
    ap.add_argument("--no-estimate", action="store_true", help="skip the estimate (the slow part)")
    ap.add_argument("--estimate-until", type=float, default=0.5,
                    help="share of the pool up to which the estimate is asked (then given up)")
    ap.add_argument("--lower-bound", action="store_true",
                    help="also the proven lower bound of the share any order needs and the least settling set "
                         "found knowing the labels (nDCG, each pool)")
    ap.add_argument("--limit", type=int, default=None,
                    help="candidate sets per query for --lower-bound (more: more queries exact, slower)")
    args = ap.parse_args()
    t = time.perf_counter()
    pm, truth = load()
    print(f"robust03: 17 runs, {len(pm.qids)} queries, pool of {pm.n_pairs:,} pairs at depth 20 "
          f"(read in {time.perf_counter() - t:.1f} s); load average {os.getloadavg()}")
    comps = all_pairs(len(pm.runs))[: args.comparisons]
    out = {}
    for metric in args.metric or ["ndcg@10"]:
        time_recompute(pm, truth, comps, metric)
        if args.lower_bound and metric.startswith("ndcg"):
            lower_bounds(pm, truth, comps, metric, args.limit)
        for mode in (["each", "all"] if args.mode == "both" else [args.mode]):
            run_mode(pm, truth, comps, metric, mode, args.step, out, plans=args.plans.split(","),
                     estimate=not args.no_estimate, estimate_until=args.estimate_until)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(out, indent=1))
    print(f"load average at the end {os.getloadavg()}")


if __name__ == "__main__":
    main()
