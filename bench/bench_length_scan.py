"""The length check's power and false alarms: simulated machines (tests/support/length_lean.py:
40 queries x 20 pairs, lengths independent of the grades, 8% one-grade errors) with a lenient step
planted at each decile edge, and clean ones; the share flagged by the scan over the decile cut points
(max-T band, curation/machine/bias.py) and by the former rule (longer half - shorter half, 95%
interval excluding 0 and at least 0.10 grades), on the same simulations.

    PYTHONPATH=. python bench/bench_length_scan.py --seeds 200
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from curation.machine.bias import MATERIAL, bias_checks, excess_difference  # noqa: E402
from curation.machine.figures import Bootstrap, excludes_zero  # noqa: E402
from tests.support.length_lean import simulate  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--lean", type=float, default=0.5)
    ap.add_argument("--resamples", type=int, default=1000)
    args = ap.parse_args()
    print(f"load average {os.getloadavg()}; {args.seeds} seeds a row, lean {args.lean}, {args.resamples} resamples")
    print("| planted step | scan flags | half rule flags |")
    print("|---|---|---|")
    t0 = time.process_time()
    for step in [None, 1, 2, 3, 4, 5, 6, 7, 8, 9]:
        scan = half = 0
        for seed in range(args.seeds):
            facts, h, m = simulate(10_000 + seed, step=step, lean=args.lean)
            boot = Bootstrap([f.qid for f in facts], resamples=args.resamples, seed=0)
            check = next(c for c in bias_checks(facts, h, m, boot=boot, min_pairs=30) if c.key == "length")
            scan += check.flagged
            lengths = np.array([f.length for f in facts])
            longer = np.argsort(np.argsort(lengths, kind="stable"), kind="stable") * 10 // len(lengths) >= 5
            c = boot.contrast(excess_difference(np.asarray(h), np.asarray(m)), longer)
            half += bool(excludes_zero(c) and abs(c.value) >= MATERIAL)
        name = "none (clean)" if step is None else f"from decile {step + 1} on"
        print(f"| {name} | {100 * scan / args.seeds:.1f}% | {100 * half / args.seeds:.1f}% |")
    print(f"CPU {time.process_time() - t0:.1f} s")


if __name__ == "__main__":
    main()
