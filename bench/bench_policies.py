"""Final-label policies on simulated judges of set reliability.

Four judges: error rates 0.05, 0.15, 0.35 (a wrong answer is one of the other grades at random) and
one who answers at random; each pair is labelled by ``--k`` of them (drawn at random), true grades
uniform on the 0-2 scale (:mod:`curation.agree.simulate`). For each seed, the share of pairs whose
final label is the true grade under: majority vote (most common grade, ties broken at random),
the ``majority`` policy (strict majority, else unresolved = a miss), ``median``, ``dawid_skene`` and
``mace`` (crowd-kit 1.4.2, :func:`curation.agree.labels.model_estimates`). Prints the mean, the
lowest and the number of seeds on which Dawid-Skene beats majority vote, and the CPU time per fit.

    python bench/bench_policies.py
    python bench/bench_policies.py --pairs 1000 --seeds 20 --k 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=300)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--no-mace", action="store_true", help="leave MACE out (crowd-kit's MACE takes seconds)")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    from curation.agree.labels import model_estimates
    from curation.agree.simulate import plurality, policy_labels, recovery, simulate_judges

    model_estimates({("q", "d"): {"a": 0, "b": 1}}, "dawid_skene")  # crowd-kit's imports, not timed below
    names = ["majority vote", "majority policy", "median", "dawid_skene"] + ([] if args.no_mace else ["mace"])
    scores = {n: [] for n in names}
    cpu = {"dawid_skene": [], "mace": []}
    for seed in range(args.seeds):
        sim = simulate_judges(pairs=args.pairs, k=args.k, seed=seed)
        scores["majority vote"].append(recovery(sim, plurality(sim.votes, seed=seed)))
        scores["majority policy"].append(recovery(sim, policy_labels(sim.votes, "majority")))
        scores["median"].append(recovery(sim, policy_labels(sim.votes, "median")))
        for policy in ("dawid_skene", "mace"):
            if policy in scores:
                t = time.process_time()
                scores[policy].append(recovery(sim, policy_labels(sim.votes, policy)))
                cpu[policy].append(time.process_time() - t)
    print(f"load average {os.getloadavg()[0]:.2f}; {args.seeds} seeds x {args.pairs} pairs, {args.k} of 4 judges "
          "per pair (error 0.05, 0.15, 0.35, random); scale 0-2")
    print(f"| {'policy':<16} | {'recovered (mean)':>16} | {'lowest':>7} | {'DS better on':>12} | {'CPU s/fit':>9} |")
    print(f"|{'-' * 18}|{'-' * 18}:|{'-' * 8}:|{'-' * 13}:|{'-' * 10}:|")
    ds = scores["dawid_skene"]
    for n in names:
        better = sum(d > x for d, x in zip(ds, scores[n], strict=True)) if n != "dawid_skene" else "-"
        fit = f"{statistics.mean(cpu[n]):.2f}" if cpu.get(n) else "-"
        print(f"| {n:<16} | {statistics.mean(scores[n]):>16.3f} | {min(scores[n]):>7.3f} | "
              f"{better!s:>12} | {fit:>9} |")


if __name__ == "__main__":
    main()
