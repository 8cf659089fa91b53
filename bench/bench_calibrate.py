"""Benchmark of the machine judge's calibration report (``curation.machine.calibrate.calibration_report``).

Data shaped like a campaign: N pairs over Q queries whose sizes follow a Zipf law, three strata,
four runs, document lengths log-normal, three samples per pair with probabilities, human labels
skewed to "not relevant". The report (agreement with 1,000-resample query-bootstrap intervals, every
bias check, repeats, probabilities, prompt versions) is timed in CPU and wall clock; the peer is the
obvious way to get one of its intervals, scikit-learn's ``cohen_kappa_score`` called once per
query-bootstrap resample (measured on ``--peer-resamples`` resamples and scaled to 1,000), timed
in the same run. The load average is printed.

    python bench/bench_calibrate.py --pairs 20000 --queries 500
"""

from __future__ import annotations

import argparse
import os
import random
import time

import numpy as np


def make_data(n_pairs: int, n_queries: int, seed: int = 0):
    from curation.machine.bias import PairFacts
    from curation.machine.labels import MachineRow

    rng = random.Random(seed)
    weights = np.array([1 / (i + 1) for i in range(n_queries)])
    sizes = np.maximum(1, np.round(weights / weights.sum() * n_pairs)).astype(int)
    facts, human, rows = {}, {}, []
    order = 0
    for qi, size in enumerate(sizes):
        q = f"q{qi:05d}"
        stratum = ("head", "torso", "tail")[min(2, qi * 3 // n_queries)]
        for di in range(size):
            d = f"d{qi}_{di}"
            length = int(rng.lognormvariate(6.5, 0.8))
            systems = {f"run{r}": rng.randint(1, 50) for r in range(4) if rng.random() < 0.6} or {"run0": 1}
            facts[(q, d)] = PairFacts(q, d, length, stratum, "question" if qi % 2 else "keyword", systems)
            g = rng.choices((0, 1, 2), weights=(0.75, 0.18, 0.07))[0]
            human[(q, d)] = g
            m = g if rng.random() > 0.15 else (1 if g != 1 else rng.choice((0, 2)))
            for s in range(3):
                grade = m if rng.random() > 0.01 else (1 if m != 1 else 0)
                conf = 0.9 if grade == g else 0.6
                probs = {x: (conf if x == grade else (1 - conf) / 2) for x in (0, 1, 2)}
                rows.append(MachineRow(q, d, order, grade, s, "v1", "m", conf, probs, order))
                order += 1
    return facts, human, rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=20_000)
    ap.add_argument("--queries", type=int, default=500)
    ap.add_argument("--peer-resamples", type=int, default=100)
    args = ap.parse_args()
    from sklearn.metrics import cohen_kappa_score

    from curation.machine.calibrate import calibration_report
    from curation.machine.labels import machine_grades

    facts, human, rows = make_data(args.pairs, args.queries)
    print(f"load average before: {os.getloadavg()}")
    print(f"{len(facts):,} pairs, {args.queries} queries, {len(rows):,} machine labels (3 samples)")
    w0, c0 = time.perf_counter(), time.process_time()
    rep = calibration_report(project="bench", machine="m", rows=rows, human=human, facts=facts, scale=[0, 1, 2])
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    print(f"calibration_report: {wall:.2f} s wall, {cpu:.2f} s CPU "
          f"(exact agreement {rep.headline['exact'].value:.3f}, failed checks {rep.failed_checks or 'none'})")

    m = machine_grades(rows)
    units = sorted(human)
    qids = sorted({u[0] for u in units})
    by_q = {q: [] for q in qids}
    for i, u in enumerate(units):
        by_q[u[0]].append(i)
    h = np.array([human[u] for u in units])
    mm = np.array([m[u] for u in units])
    nprng = np.random.default_rng(0)
    c0 = time.process_time()
    for _ in range(args.peer_resamples):
        idx = np.concatenate([by_q[qids[j]] for j in nprng.integers(0, len(qids), len(qids))])
        cohen_kappa_score(h[idx], mm[idx], labels=[0, 1, 2])
    peer = (time.process_time() - c0) / args.peer_resamples * 1000
    print(f"peer: sklearn cohen_kappa_score per resample, one figure's 1,000-resample interval: {peer:.2f} s CPU "
          f"(measured on {args.peer_resamples} resamples)")
    print(f"ratio: the whole report (every figure and interval) in {cpu / peer:.2f}x the CPU time of the peer's "
          "one interval")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
