"""Seeded simulations behind the statistics' before/after figures: does each statistic do what it says?

    /work/venv/bin/python bench/bench_methods.py [--sims 10000] [--samples 200]

1. nDCG at --rel-level 2 on robust03 (uic0301 vs NLPR03vb10, nDCG@5): the queries kept and the
   means, golden's (now: every query with a positive grade) against the earlier rule (only
   queries with a document graded >= 2) and pytrec_eval (trec_eval's C code).
2. Traffic-weighted means from a uniform sample of 100 of 5,700 Zipf-traffic queries: the bias of
   the earlier ratio weights and of the Horvitz-Thompson weights golden now writes and divides
   by the known stratum shares, over ``--samples`` seeded samples, in standard errors; the
   traffic (PPS) design beside them.
4. Coverage of the null by the 95% interval at 20 queries (``--sims`` seeded null pairs): the
   percentile bootstrap (the earlier default) against --ci auto (a t interval below 30 queries);
   the minimum detectable difference at n = 10 by the normal formula and by the t-test.

Figures are simulations, not timings; CPU time and the load average are printed so a run on the
shared machine can be judged.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's curation package, imported below

from curation.evaluate.metrics import QrelsIndex, QueryScores, evaluate, parse_metric  # noqa: E402 - after sys.path
from curation.evaluate.power import power  # noqa: E402 - after the sys.path line
from curation.evaluate.stats import compare, design, pair_scores  # noqa: E402 - after the sys.path line
from curation.formats.qrels import read_qrels  # noqa: E402 - after the sys.path line
from curation.formats.queries import parse_queries  # noqa: E402 - after the sys.path line
from curation.formats.runs import read_run  # noqa: E402 - after the sys.path line
from curation.sample.sampling import sample_queries  # noqa: E402 - after the sys.path line

SHARED = Path(os.environ.get("GOLDEN_SHARED_DATA", ROOT.parent / "shared" / "data"))


def rel_level() -> None:
    root = SHARED / "robust03"
    qrels = read_qrels(root / "qrels" / "robust03_qrels.txt")
    runs = {n: read_run(root / "runs" / f"input.{n}.gz") for n in ("uic0301", "NLPR03vb10")}
    index = QrelsIndex.build(qrels, rel_level=2)
    print("1. nDCG@5 at --rel-level 2, robust03")
    graded2 = [q for i, q in enumerate(index.qids) if index.num_rel[i] > 0]
    for name, run in runs.items():
        s = evaluate(run, index, ["ndcg@5"], rel_level=2)["ndcg@5"]
        old = np.mean([v for q, v in s.as_dict().items() if q in graded2])
        line = f"   {name:<11} before {old:.4f} over {len(graded2)} queries; now {s.mean:.4f} over {len(s.qids)}"
        try:
            import pytrec_eval

            ev = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.5"}, relevance_level=2)
            res = ev.evaluate({q: dict(zip(run.rankings[q], run.scores[q])) for q in run.rankings})
            line += f"; pytrec_eval {np.mean([v['ndcg_cut_5'] for v in res.values()]):.4f} over {len(res)}"
        except ImportError:
            pass
        print(line)


def zipf_log(path: Path, n: int = 5700, seed: int = 13):
    rng = np.random.default_rng(seed)
    traffic = np.maximum(1, np.round(20000 / np.arange(1, n + 1))).astype(int)
    texts = [f"query number {i}" for i in range(n)]
    markets = [("us", "de", "fr")[i % 3] for i in range(n)]
    value = np.clip(0.30 + 0.05 * np.log(traffic) + rng.normal(0, 0.15, n), 0, 1)
    path.write_text("query,market,n\n" + "".join(f"{q},{m},{c}\n" for q, m, c in zip(texts, markets, traffic)))
    return dict(zip(texts, value)), float((traffic * value).sum() / traffic.sum())


def weighting(samples: int) -> None:
    print(f"2. traffic-weighted mean from 100 of 5,700 Zipf queries, 3 strata, {samples} seeded samples")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "log.csv"
        value, truth = zipf_log(path)
        for design_name in ("uniform", "traffic"):
            ht, ratio = [], []
            for seed in range(samples):  # the uniform draw as this table measured it: the head left to the draw
                rows = sample_queries(path, query_col="query", count_col="n", strata=["market"], size=100, floor=5,
                                      seed=seed, weighting=design_name, head="drawn").rows
                recs = {r.qid: r for r in parse_queries(json.dumps(r) for r in rows)}
                qids = sorted(recs)
                x = np.array([value[recs[q].text] for q in qids])
                ht.append(design(qids, recs, "traffic").mean(x))
                if design_name == "uniform":  # golden's earlier uniform weight, a ratio
                    drawn: dict[str, int] = {}
                    for r in rows:
                        drawn[json.dumps(r["stratum"])] = drawn.get(json.dumps(r["stratum"]), 0) + r["traffic"]
                    w = np.array([recs[q].stratum_share * recs[q].traffic / drawn[json.dumps(recs[q].stratum)]
                                  for q in qids])
                    ratio.append(float((w * x).sum() / w.sum()))
            for label, est in (("before (ratio)", ratio), ("now (compare's mean)", ht)):
                if not est:
                    continue
                est = np.asarray(est)
                se = est.std(ddof=1) / math.sqrt(len(est))
                print(f"   {design_name:<8} {label:<24} mean {est.mean():.4f} vs truth {truth:.4f}: "
                      f"bias {est.mean() - truth:+.4f} = {(est.mean() - truth) / se:+.1f} se; sd of one "
                      f"estimate {est.std(ddof=1):.4f}")


def coverage(sims: int) -> None:
    print(f"4. 95% interval covering the null at 20 queries, {sims} seeded simulations")
    spec = parse_metric("ndcg@10")
    rng = np.random.default_rng(2026)
    covered = {"percentile": 0, "auto": 0}
    for s in range(sims):
        base = rng.beta(2, 3, 20)
        a = np.clip(base + rng.normal(0, 0.15, 20), 0, 1)
        b = np.clip(base + rng.normal(0, 0.15, 20), 0, 1)
        qids = [f"q{i:02d}" for i in range(20)]
        p = pair_scores(QueryScores(spec, "A", qids, a, np.ones(20)), QueryScores(spec, "B", qids, b, np.ones(20)))
        for ci in covered:
            c = compare(p, ci=ci, resamples=1000, seed=s)
            covered[ci] += c.low <= 0 <= c.high
    print(f"   percentile bootstrap (before) {covered['percentile'] / sims:.4f}; "
          f"--ci auto, t below 30 queries (now) {covered['auto'] / sims:.4f}")
    z = power(sd=0.3, n=10)
    print(f"   minimum detectable difference, sd 0.3, n = 10: normal 2.80 x se = {2.8016 * 0.3 / math.sqrt(10):.4f}"
          f" (before); paired t {z.multiplier:.2f} x se = {z.mdd:.4f} (now)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=10_000)
    ap.add_argument("--samples", type=int, default=200)
    args = ap.parse_args()
    print(f"load average at start: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    t0, c0 = time.perf_counter(), time.process_time()
    rel_level()
    weighting(args.samples)
    coverage(args.sims)
    print(f"wall {time.perf_counter() - t0:.1f} s, CPU {time.process_time() - c0:.1f} s; load average at end: "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
