"""Benchmark: do golden compare's intervals keep their promise?

Three tables, each from seeded simulations through golden's own functions:

1. ``null``: null coverage of the default interval (``compare(ci="auto")``: the t interval) at
   n = 10, 20, 29, 30, 31, 50, 100 queries on normal, t3 and robust03-shaped differences (per-query
   nDCG@10 differences of every pair of the 17 robust03 runs, each pair's centred, pooled), and how
   often the printed P(delta <= 0) contradicts the interval (it cannot: same t distribution).
2. ``design``: with the population fixed (the bench's synthetic Zipf log, as tests/evaluate's
   ``zipf_log``) and the draw the only randomness, ``sample_queries`` (traffic PPS with certainty
   units; uniform with the head taken whole; uniform with the head left to the draw) then
   ``compare(weighting="traffic")``: coverage of the traffic-weighted truth,
   mean half-width and the estimator's real spread (1.96 x its sd over the draws), for a difference
   related to traffic and one unrelated to it. Intervals the verdict refuses (weights too unequal)
   are counted apart.
3. ``family``: five equal systems on 50 queries, every pair compared: the family-wise
   false-positive rate with no correction, Bonferroni, Holm, Benjamini-Hochberg and the paired
   randomised Tukey HSD, over 1,000 simulated data sets.

    python bench/bench_intervals.py                  # all three tables
    python bench/bench_intervals.py null --sims 10000
    python bench/bench_intervals.py design --sims 1000
    python bench/bench_intervals.py family --sims 1000

Prints the load average and CPU time. Figures: bench/README.md, "Intervals under the design".
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from curation.evaluate.stats import Paired, compare  # noqa: E402

NS = (10, 20, 29, 30, 31, 50, 100)
DATA = ROOT.parent.parent / "shared" / "data" / "robust03"
if not DATA.exists():
    DATA = Path("/work/shared/data/robust03")


def robust03_differences(metric: str = "ndcg@10") -> np.ndarray:
    """Per-query ``metric`` differences of every pair of the robust03 runs, each pair centred, pooled."""
    from curation.evaluate.metrics import evaluate
    from curation.formats.qrels import read_qrels
    from curation.formats.runs import read_run

    qrels = read_qrels(DATA / "qrels" / "robust03_qrels.txt")
    runs = [read_run(p, depth=1000) for p in sorted((DATA / "runs").glob("input.*.gz"))]
    per_run = [evaluate(r, qrels, [metric])[metric].as_dict() for r in runs]
    qids = sorted(set.intersection(*(set(v) for v in per_run)))
    x = np.array([[v[q] for q in qids] for v in per_run])
    out = []
    for i in range(len(runs)):
        for j in range(i + 1, len(runs)):
            d = x[j] - x[i]
            out.append(d - d.mean())
    return np.concatenate(out)


def draw_null(shape: str, n: int, rng: np.random.Generator, pool: np.ndarray | None) -> np.ndarray:
    if shape == "normal":
        return rng.normal(0, 0.1, n)
    if shape == "t3":
        return 0.05 * rng.standard_t(3, n)
    return rng.choice(pool, n)


def _paired(d: np.ndarray, qids=None) -> Paired:
    qids = qids or [f"q{i:03d}" for i in range(len(d))]
    return Paired("ndcg@10", "A", "B", list(qids), np.zeros(len(d)), np.asarray(d, dtype=float))


def null_table(sims: int, seed: int = 28, pool: np.ndarray | None = None) -> dict:
    """Coverage of 0 by the default interval, and contradictions between it and P(delta <= 0)."""
    pool = robust03_differences() if pool is None else pool
    rng = np.random.default_rng(seed)
    out = {}
    for shape in ("normal", "t3", "robust03"):
        for n in NS:
            covered = contradict = 0
            for s in range(sims):
                c = compare(_paired(draw_null(shape, n, rng, pool)), resamples=100, seed=s)
                inside = c.low <= 0 <= c.high
                covered += inside
                contradict += inside != (0.025 <= c.p_delta_le_0 <= 0.975)
            out[(shape, n)] = (covered / sims, contradict)
    return out


# ---------------------------------------------------------------------------------------------
# the design table


def zipf_population(path: Path, n: int = 5700, seed: int = 13):
    """The tests' synthetic log (tests/evaluate/test_weighting.py's zipf_log): 20,000 / rank
    searches, three markets; two per-query differences: one that grows with traffic, one unrelated."""
    rng = np.random.default_rng(seed)
    traffic = np.maximum(1, np.round(20000 / np.arange(1, n + 1))).astype(int)
    texts = [f"query number {i}" for i in range(n)]
    markets = [("us", "de", "fr")[i % 3] for i in range(n)]
    related = np.clip(0.02 + 0.01 * np.log(traffic) + rng.normal(0, 0.1, n), -1, 1)
    unrelated = np.clip(0.03 + rng.normal(0, 0.1, n), -1, 1)
    path.write_text("query,market,n\n" + "".join(f"{q},{m},{c}\n" for q, m, c in zip(texts, markets, traffic)))
    truth = {k: float((traffic * v).sum() / traffic.sum()) for k, v in (("related", related), ("unrelated", unrelated))}
    return {"related": dict(zip(texts, related)), "unrelated": dict(zip(texts, unrelated))}, truth


DESIGNS = {"traffic": ("traffic", "certain"), "uniform": ("uniform", "certain"),
           "uniform, head drawn": ("uniform", "drawn")}


def design_table(sims: int, *, size: int = 100, workdir: Path | None = None, designs=tuple(DESIGNS)) -> dict:
    from curation.formats.queries import parse_queries
    from curation.sample.sampling import sample_queries

    workdir = Path(tempfile.mkdtemp()) if workdir is None else workdir
    values, truth = zipf_population(workdir / "log.csv")
    out = {}
    for name in designs:
        weighting, head = DESIGNS[name]
        res = {k: {"est": [], "half": [], "cover": 0, "refused": 0} for k in values}
        for seed in range(sims):
            rows = sample_queries(workdir / "log.csv", query_col="query", count_col="n", strata=["market"],
                                  size=size, floor=5, seed=seed, weighting=weighting, head=head).rows
            recs = {r.qid: r for r in parse_queries(json.dumps(r) for r in rows)}
            qids = sorted(recs)
            for kind, v in values.items():
                d = np.array([v[recs[q].text] for q in qids])
                c = compare(_paired(d, qids), queries=recs, weighting="traffic", resamples=100, seed=seed)
                r = res[kind]
                r["est"].append(c.delta)
                if c.verdict.startswith("no trustworthy") or c.low != c.low:  # the verdict refused an interval
                    r["refused"] += 1
                    continue
                r["half"].append((c.high - c.low) / 2)
                r["cover"] += c.low <= truth[kind] <= c.high
        for kind, r in res.items():
            given = sims - r["refused"]
            out[(name, kind)] = {
                "coverage": r["cover"] / given if given else float("nan"),
                "half": float(np.mean(r["half"])) if r["half"] else float("nan"),
                "spread": 1.96 * float(np.std(r["est"], ddof=1)),
                "sd": float(np.std(r["est"], ddof=1)),
                "refused": r["refused"],
                "bias": float(np.mean(r["est"]) - truth[kind]),
            }
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("table", nargs="?", choices=["null", "design", "family", "all"], default="all")
    ap.add_argument("--sims", type=int, default=None)
    args = ap.parse_args(argv)
    print(f"load average before: {os.getloadavg()}")
    t0 = time.process_time()
    if args.table in ("null", "all"):
        sims = args.sims or 10_000
        tab = null_table(sims)
        print(f"\nnull coverage of the default interval (t), {sims} data sets per cell; "
              "contradictions of P(delta <= 0) with the interval in brackets")
        print("shape     " + "".join(f"{n:>12}" for n in NS))
        for shape in ("normal", "t3", "robust03"):
            print(f"{shape:<10}" + "".join(f"{tab[(shape, n)][0]:>9.4f} ({tab[(shape, n)][1]})" for n in NS))
    if args.table in ("design", "all"):
        sims = args.sims or 1000
        tab = design_table(sims)
        print(f"\ndesign-based intervals, {sims} draws of 100 of 5,700 queries per design "
              "(compare --weighting traffic)")
        print(f"{'design':<21}{'difference':<11}{'coverage':>9}{'half-width':>11}{'1.96 sd':>9}{'ratio':>7}"
              f"{'refused':>8}{'bias':>9}")
        for (name, kind), r in tab.items():
            print(f"{name:<21}{kind:<11}{r['coverage']:>9.3f}{r['half']:>11.4f}{r['spread']:>9.4f}"
                  f"{r['half'] / r['spread']:>7.2f}{r['refused']:>8}{r['bias']:>+9.4f}")
    if args.table in ("family", "all"):
        from curation.evaluate.multiple import family_table

        sims = args.sims or 1000
        tab = family_table(sims)
        print(f"\nfive equal systems, 50 queries, all 10 pairs: family-wise false-positive rate over {sims} data sets")
        for name, rate in tab.items():
            print(f"{name:<22}{rate:>7.3f}")
    print(f"\nCPU time {time.process_time() - t0:.1f} s; load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
