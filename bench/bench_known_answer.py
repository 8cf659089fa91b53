"""The known-answer flag on simulated judges: how soon it finds a judge who is not reading, how often it
flags careful ones, and how well the final-label policies recover the truth from the same judges.

Four judges (curation.agree.simulate): error rates 0.05, 0.15 and 0.35 (a wrong answer is one of the
other grades at random) and one who answers at random; true grades 50/30/20% on the 0-2 scale. Each
judge answers ``--answers`` known-answer pairs per seed, and the rule of curation.judge.known_answer
(95% Wilson interval of exact accuracy wholly under the bar 0.6, after at least MIN_ANSWERS) is asked
after every answer (``first_flag``). Each seeded share is printed beside the exact probability of the
same event (``flag_chance``: the distribution of hits, step by step), the peer that says whether the
seeds are representative. Then the same judges label ``--pairs`` pool pairs, ``--k`` per pair, and
the final labels of majority vote, Dawid-Skene and MACE (crowd-kit, via curation.agree.labels) are
compared against the truth. Extra rows: other scales, a judge who always gives the commonest grade,
and a judge who stops reading after 100 careful answers.

    python bench/bench_known_answer.py
    python bench/bench_known_answer.py --seeds 1000 --answers 400 --policy-seeds 10
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CAREFUL = ("careful", "steady", "sloppy")


def _cell(share: float, exact: float, seeds: int) -> str:
    """A seeded share beside its exact probability, with the seeds' binomial standard error."""
    se = math.sqrt(max(exact * (1 - exact), 1e-12) / seeds)
    return f"{share:.3f} (exact {exact:.4f}, {abs(share - exact) / se:.1f} se)"


def detection_table(det, chance, seeds: int) -> None:
    print(f"\nRandom judge (accuracy 1/3): share of {seeds} seeds flagged within N known-answer pairs")
    print("| N | seeded (exact probability, distance in standard errors) |")
    print("|---:|---|")
    exact = chance(1 / 3, 60)
    for n in (20, 40, 60):
        print(f"| {n} | {_cell(det.share_flagged('random', n), exact[n - 1], seeds)} |")
    at = sorted(f for f in det.flagged_at["random"] if f is not None)
    print(f"median answers to the flag: {statistics.median(at)}; never within {det.answers}: "
          f"{len(det.flagged_at['random']) - len(at)} seeds")


def false_flag_table(det, chance, seeds: int, rates) -> None:
    horizons = [h for h in (40, 100, 400, 1000) if h <= det.answers]
    print(f"\nCareful judges: share of {seeds} seeds flagged within the horizon (answers watched)")
    print("| judge (error) | " + " | ".join(f"{h}" for h in horizons) + " |")
    print("|---|" + "---:|" * len(horizons))
    none_exact = [1.0] * len(horizons)
    for name in CAREFUL:
        exact = chance(1 - rates[name], det.answers)
        cells = [_cell(det.share_flagged(name, h), exact[h - 1], seeds) for h in horizons]
        none_exact = [p * (1 - exact[h - 1]) for p, h in zip(none_exact, horizons, strict=True)]
        print(f"| {name} ({rates[name]}) | " + " | ".join(cells) + " |")
    cells = [_cell(1 - det.share_none_flagged(CAREFUL, h), 1 - p, seeds) for h, p in zip(horizons, none_exact,
                                                                                        strict=True)]
    print("| any of the three | " + " | ".join(cells) + " |")


def other_judges_table(chance, answers: int) -> None:
    from curation.agree.simulate import TRUTH_SHARES

    print("\nOther judges, exact probability of a flag within N answers")
    print("| judge | accuracy | by 20 | by 40 | by 60 | by 100 | ever (400) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    rows = [("at random, binary scale", 1 / 2), ("at random, 0-3 scale", 1 / 4),
            (f"always the commonest grade ({TRUTH_SHARES[0]:.0%} of pairs)", TRUTH_SHARES[0]),
            ("error 0.45", 0.55), ("error 0.30", 0.70)]
    for label, acc in rows:
        p = chance(acc, max(answers, 400))
        print(f"| {label} | {acc:.3f} | " + " | ".join(f"{p[n - 1]:.4f}" for n in (20, 40, 60, 100, 400)) + " |")


def drift_row(seeds: int, before: int = 100, after: int = 300) -> None:
    """A judge careful (error 0.05) for ``before`` answers who then answers at random."""
    from curation.agree.simulate import known_answer_records
    from curation.judge.known_answer import first_flag

    waits = []
    for seed in range(seeds):
        recs = (known_answer_records(0.05, answers=before, seed=f"drift-a:{seed}")
                + known_answer_records(None, answers=after, seed=f"drift-b:{seed}"))
        at = first_flag(recs)
        waits.append(None if at is None else at - before)
    found = sorted(w for w in waits if w is not None)
    print(f"\nA judge careful for {before} answers who then answers at random ({seeds} seeds): flagged "
          f"{len(found) / seeds:.3f} within {after} answers after the change, median "
          f"{statistics.median(found) if found else '-'} answers after it (the flag reads all answers: "
          "the recent window on Progress shows the change sooner)")


def policies_table(seeds: int, pairs: int, k: int, mace: bool) -> None:
    from curation.agree.labels import model_estimates
    from curation.agree.simulate import TRUTH_SHARES, plurality, policy_labels, recovery, simulate_judges

    model_estimates({("q", "d"): {"a": 0, "b": 1}}, "dawid_skene")  # crowd-kit's imports, not timed
    names = ["majority vote", "dawid_skene"] + (["mace"] if mace else [])
    scores = {n: [] for n in names}
    cpu = {n: 0.0 for n in names}
    for seed in range(seeds):
        sim = simulate_judges(pairs=pairs, k=k, seed=seed, truth_shares=TRUTH_SHARES)
        t = time.process_time()
        scores["majority vote"].append(recovery(sim, plurality(sim.votes, seed=seed)))
        cpu["majority vote"] += time.process_time() - t
        for policy in names[1:]:
            t = time.process_time()
            scores[policy].append(recovery(sim, policy_labels(sim.votes, policy)))
            cpu[policy] += time.process_time() - t
    print(f"\nFinal labels from the same judges: {seeds} seeds x {pairs} pairs, {k} of the 4 judges per pair, "
          "truth 50/30/20%: share of true grades recovered")
    print("| policy | mean | lowest | Dawid-Skene better on | CPU s a fit |")
    print("|---|---:|---:|---:|---:|")
    ds = scores["dawid_skene"]
    for n in names:
        better = f"{sum(d > x for d, x in zip(ds, scores[n], strict=True))} of {seeds}" if n != "dawid_skene" else "-"
        print(f"| {n} | {statistics.mean(scores[n]):.3f} | {min(scores[n]):.3f} | {better} | "
              f"{cpu[n] / seeds:.3f} |")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=1000, help="seeds of the detection simulation")
    ap.add_argument("--answers", type=int, default=400, help="known-answer pairs each judge answers per seed")
    ap.add_argument("--policy-seeds", type=int, default=10)
    ap.add_argument("--pairs", type=int, default=300)
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--no-mace", action="store_true", help="leave MACE out (crowd-kit's MACE takes seconds)")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    from curation.agree.simulate import ERROR_RATES, detection
    from curation.judge.known_answer import DEFAULT_BAR, MIN_ANSWERS, flag_chance

    print(f"load average {os.getloadavg()[0]:.2f}; bar {DEFAULT_BAR}, at least {MIN_ANSWERS} answers, "
          "95% Wilson interval; scale 0-2, truth 50/30/20%")
    t = time.process_time()
    det = detection(seeds=args.seeds, answers=args.answers)
    spent = time.process_time() - t
    print(f"detection simulation: {args.seeds} seeds x 4 judges x {args.answers} answers, "
          f"{spent:.2f} s CPU ({spent / (args.seeds * 4 * args.answers) * 1e6:.2f} us an answer, drawing included)")
    detection_table(det, flag_chance, args.seeds)
    false_flag_table(det, flag_chance, args.seeds, ERROR_RATES)
    other_judges_table(flag_chance, args.answers)
    drift_row(min(args.seeds, 500))
    policies_table(args.policy_seeds, args.pairs, args.k, not args.no_mace)
    print(f"\nload average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
