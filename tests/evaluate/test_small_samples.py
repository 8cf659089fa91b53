"""Few queries: the default interval keeps its coverage at 20 queries, and every
command that estimates from few queries or repeats says so."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from curation.evaluate.attribution import attribute
from curation.evaluate.bootstrap import t_interval
from curation.evaluate.metrics import QueryScores, parse_metric
from curation.evaluate.stats import compare, pair_scores

SPEC = parse_metric("ndcg@10")


def qs(run, values, qids=None):
    qids = qids or [f"q{i:03d}" for i in range(len(values))]
    return QueryScores(metric=SPEC, run=run, qids=list(qids), values=np.asarray(values, dtype=float),
                       judged=np.ones(len(values)))


def _null_pair(rng, n):
    """Two runs equal in distribution: per-query difficulty plus independent noise, clipped to [0, 1]."""
    base = rng.beta(2, 3, n)
    return (np.clip(base + rng.normal(0, 0.15, n), 0, 1), np.clip(base + rng.normal(0, 0.15, n), 0, 1))


@pytest.fixture(scope="module")
def robust03_shape():
    """Per-query nDCG@10 differences of every pair of the robust03 runs, each pair centred, pooled."""
    from curation.evaluate.metrics import evaluate
    from curation.formats.qrels import read_qrels
    from curation.formats.runs import read_run
    from tests.conftest import shared_path

    root = shared_path("robust03")
    qrels = read_qrels(root / "qrels" / "robust03_qrels.txt")
    per_run = [evaluate(read_run(p, depth=1000), qrels, ["ndcg@10"])["ndcg@10"].as_dict()
               for p in sorted((root / "runs").glob("input.*.gz"))]
    qids = sorted(set.intersection(*(set(v) for v in per_run)))
    x = np.array([[v[q] for q in qids] for v in per_run])
    return np.concatenate([(x[j] - x[i]) - (x[j] - x[i]).mean()
                           for i in range(len(x)) for j in range(i + 1, len(x))])


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["normal", "t3", "robust03"])
def test_default_interval_covers_the_null_at_least_94_percent_at_every_query_count(shape, robust03_shape):
    # The figures: percentile from 30 queries covered 0.917-0.934 at 30. The default is now
    # the t interval at every n (bench/bench_intervals.py null: 10,000 data sets a cell).
    rng = np.random.default_rng(28)
    sims = 3000
    for n in (10, 20, 29, 30, 31, 50, 100):
        covered = 0
        for s in range(sims):
            d = (rng.normal(0, 0.1, n) if shape == "normal" else 0.05 * rng.standard_t(3, n) if shape == "t3"
                 else rng.choice(robust03_shape, n))
            c = compare(pair_scores(qs("A", np.zeros(n)), qs("B", d)), resamples=100, seed=s)
            covered += c.low <= 0 <= c.high
            assert (c.low <= 0 <= c.high) == (0.025 <= c.p_delta_le_0 <= 0.975)
        assert covered / sims >= 0.94, (shape, n, covered / sims)


def test_t_interval_is_scipys_paired_t_interval():
    rng = np.random.default_rng(1)
    a, b = _null_pair(rng, 18)
    c = compare(pair_scores(qs("A", a), qs("B", b)), resamples=200, ci="t")
    ci = sps.ttest_rel(b, a).confidence_interval(0.95)
    assert (c.low, c.high) == pytest.approx((ci.low, ci.high), rel=1e-12)
    assert "95% t interval" in c.interval_text and c.as_dict()["interval"] == c.interval_text


def test_t_interval_with_clusters_is_the_t_interval_of_the_cluster_means():
    # equal-sized clusters, unweighted: the linearised variance is that of the cluster means
    rng = np.random.default_rng(4)
    d = rng.normal(0.02, 0.1, (8, 4))
    z = (d - d.mean()).sum(axis=1) / d.size
    low, high, df = t_interval(z, d.mean())
    ref = sps.ttest_1samp(d.mean(axis=1), 0).confidence_interval(0.95)
    assert df == 7 and (low, high) == pytest.approx((ref.low, ref.high), rel=1e-12)


@pytest.mark.parametrize("n", [2, 3, 12, 29, 30, 31, 200])
def test_auto_is_the_t_interval_at_every_query_count_and_its_p_comes_from_the_same_t(n):
    # One rule from 2 queries up: the paired t interval (scipy's ttest_rel), and P(delta <= 0)
    # is the one-sided t-test's p-value for B > A, so the two cannot contradict each other.
    rng = np.random.default_rng(n)
    a, b = _null_pair(rng, n)
    b = b + 0.02
    c = compare(pair_scores(qs("A", a), qs("B", b)), resamples=200)
    assert c.ci_method == "t" and c.ci_requested == "auto"
    ref = sps.ttest_rel(b, a)
    ci = ref.confidence_interval(0.95)
    assert (c.low, c.high) == pytest.approx((ci.low, ci.high), rel=1e-10)
    assert c.p_delta_le_0 == pytest.approx(sps.ttest_rel(b, a, alternative="greater").pvalue, rel=1e-10)
    assert (c.low > 0) == (c.p_delta_le_0 < 0.025) and (c.high < 0) == (c.p_delta_le_0 > 0.975)
    assert any(f"only {n} queries" in note for note in c.notes) == (n < 30)


def test_percentile_on_request_says_it_covers_less_below_30_queries():
    rng = np.random.default_rng(3)
    a, b = _null_pair(rng, 12)
    forced = compare(pair_scores(qs("A", a), qs("B", b)), resamples=500, ci="percentile")
    assert forced.ci_method == "percentile" and any("covers less often" in n for n in forced.notes)
    # its P(delta <= 0) comes from the same replicates as its interval
    assert forced.p_delta_le_0 == pytest.approx(float(np.mean(forced.replicates <= 0)))


def test_attribute_below_30_queries_uses_t_intervals_and_says_so():
    rng = np.random.default_rng(8)
    x = [rng.uniform(0, 1, 15) for _ in range(4)]
    r = attribute(*[qs(n, v) for n, v in zip("abcd", x)], resamples=300)
    assert r.ci_method == "t" and any("only 15 queries" in n for n in r.notes)
    ci = sps.ttest_rel(x[1], x[0]).confidence_interval(0.95)
    assert (r.effects[0].low, r.effects[0].high) == pytest.approx((ci.low, ci.high), rel=1e-12)
    assert not math.isnan(r.effects[-1].low)
