"""Benchmark: decisive judging guided by a machine judge, on the 17 TREC 2003 Robust runs (qrels as judges).

    /work/venv/bin/python bench/bench_decisive_machine.py [--metric ndcg@10] [--every 1] [--resamples 10000]
        [--seeds 5] [--agreements 0.6,0.7,0.8,0.9] [--lean 0.2] [--estimate] [--check pair] [--json FILE]

Each comparison judges its own pool (the two runs' top 20; ``mode="each"``), in blocks of a
query's 10 most decisive pairs (when a machine guides: a query's first block is the pairs the plan
asks for in it, 1 to 10, and blocks go by their mean priority), the order recomputed every 2% of the
pool and the settlement checked after every pair (``--check pair``, the default since the fifth
round of issue 31) or only every 2% (``--check batch``) (``curation.evaluate.simulate``). The
machine is built from the qrels (``curation.evaluate.simulate.machine_from_qrels``): each grade
kept with probability AGREEMENT, else moved to a neighbouring grade, upward with probability
0.5 + LEAN (the machine more lenient);
"random" shuffles the qrels' grades across the pool (a machine that says nothing). One seed drives
both the machine and the order's ties; the blind orders are replayed with the same seeds.

Figures, over the comparisons whose fully judged verdict is significant: the median share of the
pool judged when the guarantee settles (a comparison never settled counts as 100%), as the median
over the seeds, with the range; the wrong calls (settled verdicts the fully judged pool contradicts:
must be 0); with ``--estimate``, the share at which the estimate (with the machine's labels among
its features) is 95% sure and its wrong calls. ``--every N`` takes every Nth of the 136 pairs of
runs (a quicker, reduced configuration). The clairvoyant and lower-bound figures are quoted from
bench/README.md (bench_decisive.py --lower-bound), not recomputed. Load average printed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's curation package, imported below
sys.path.insert(0, str(ROOT / "bench"))

from bench_decisive import load  # noqa: E402 - after the sys.path line

from curation.evaluate import plan  # noqa: E402
from curation.evaluate.simulate import all_pairs, machine_from_qrels, simulate  # noqa: E402


def fmt(x):
    return "-" if x is None else f"{100 * x:.1f}%"


def machine_arrays(truth, agreement, lean, seed, G):
    """The simulated machine as simulate() takes it: P(grade >= 1), P(top grade) (one sample: 0 or 1)
    and its grade as the calibration class."""
    mg = machine_from_qrels(truth, 0.0 if agreement == "random" else agreement, lean=lean, max_grade=G, seed=seed,
                            random=agreement == "random")
    return (mg >= 1).astype(float), (mg >= G).astype(float), mg.astype(np.int64), float((mg == truth).mean())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--metric", default="ndcg@10")
    ap.add_argument("--every", type=int, default=1, help="every Nth pair of runs (1: all 136)")
    ap.add_argument("--resamples", type=int, default=10_000)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--first-seed", type=int, default=0,
                    help="seeds FIRST_SEED .. FIRST_SEED+SEEDS-1 (to run seeds in separate processes)")
    ap.add_argument("--agreements", default="0.6,0.7,0.8,0.9,random")
    ap.add_argument("--lean", type=float, default=0.2)
    ap.add_argument("--blind", default="decisive,decisive-pair", help="blind orders to replay beside")
    ap.add_argument("--estimate", action="store_true")
    ap.add_argument("--json", dest="json_out", default=None)
    ap.add_argument("--check", choices=("pair", "batch"), default="pair",
                    help="when the guarantee is checked: after every pair (as the panel reads labels as they come; "
                         "the order is still recomputed every 2%%), or only after each 2%% batch (the rounds before "
                         "the fifth)")
    ap.add_argument("--plan-samples", type=int, default=None,
                    help="labellings drawn from the machine's belief per plan (0: the most likely one alone; "
                         "default curation.evaluate.plan.SAMPLES)")
    args = ap.parse_args()
    if args.plan_samples is not None:
        plan.SAMPLES = args.plan_samples
    pm, truth = load()
    G = int(truth.max())
    comps = all_pairs(len(pm.runs))[:: args.every]
    print(f"robust03, {args.metric}, depth 20, {len(comps)} comparisons (every {args.every}), "
          f"{args.resamples} resamples, seeds {args.first_seed}-{args.first_seed + args.seeds - 1}, step 2%, "
          f"check after each {args.check}, each pool, plan samples {plan.SAMPLES}; load {os.getloadavg()}")
    out = {}
    rows = []

    def replay(label, seed, gran="block", **machine):
        t = time.process_time()
        res = simulate(pm, truth, comps, args.metric, order="decisive", mode="each", granularity=gran, step=0.02,
                       resamples=args.resamples, seed=seed, check=args.check,
                       estimate=args.estimate and gran == "block", estimate_until=0.5, **machine)
        s = res.summary()
        print(f"  {label:<22} seed {seed}: median {fmt(s['median_share_significant'])}, significant "
              f"{s['significant']}, settled {s['settled_of_significant']}, wrong {s['wrong_calls']}"
              + (f"; estimate {fmt(s['median_estimate_share_significant'])}, wrong {s['estimate_wrong_calls']}"
                 if args.estimate and gran == "block" else "")
              + f" ({time.process_time() - t:.0f} s CPU, load {os.getloadavg()[0]:.1f})", flush=True)
        out.setdefault(label, []).append(s)
        return s

    plans = []
    for b in [x for x in args.blind.split(",") if x]:
        plans.append((f"blind {b}", None, "pair" if b == "decisive-pair" else "block"))
    for a in args.agreements.split(","):
        plans.append((f"machine {a}", a if a == "random" else float(a), "block"))
    for label, a, gran in plans:
        per = []
        exact = []
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            kw = {}
            if a is not None:
                rel, top, key, agree = machine_arrays(truth, a, args.lean, seed, G)
                kw = dict(machine=rel, machine_top=top, machine_key=key)
                exact.append(agree)
            per.append(replay(label, seed, gran, **kw))
        meds = [s["median_share_significant"] for s in per]
        est = [s["median_estimate_share_significant"] for s in per] if args.estimate and gran == "block" else []
        rows.append((label, float(np.median(meds)), min(meds), max(meds), sum(s["wrong_calls"] for s in per),
                     float(np.mean(exact)) if exact else None, est, sum(s["estimate_wrong_calls"] for s in per),
                     sum(s["comparisons"] for s in per)))
    print(f"\n| order ({args.metric}, {len(comps)} comparisons, {args.resamples} resamples, {args.seeds} seeds) | "
          "exact agreement | median share at settlement (range over seeds) | wrong calls | estimate 95% (wrong) |")
    print("|---|---|---|---|---|")
    for label, med, lo, hi, wrong, agree, est, ewrong, n in rows:
        e = f"{fmt(float(np.median(est)))} ({ewrong} of {n})" if est else "-"
        print(f"| {label} | {fmt(agree) if agree is not None else '-'} | {fmt(med)} ({fmt(lo)}-{fmt(hi)}) | {wrong} | "
              f"{e} |")
    print("| clairvoyant set (knows every label; bench/README.md, not recomputed) | - | 35.9% | 0 | - |")
    print("| proven lower bound, any order (bench/README.md, not recomputed) | - | 28.6% | - | - |")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(out, indent=1))
    print(f"load average at the end {os.getloadavg()}")


if __name__ == "__main__":
    main()
