"""Paired statistics: exact tests against scipy and hand calculations, bootstrap behaviour, weighting."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats as sps

from curation.evaluate.attribution import attribute
from curation.evaluate.bootstrap import bootstrap_replicates, interval
from curation.evaluate.exact_tests import mcnemar, sign_test
from curation.evaluate.metrics import QueryScores, evaluate, parse_metric
from curation.evaluate.noise import noise, sweep
from curation.evaluate.power import power
from curation.evaluate.stats import compare, pair_scores, query_weights, verdict
from curation.formats.queries import read_queries


def scores(run, values: dict, metric="ndcg@10", dropped=()):
    qids = sorted(values)
    return QueryScores(metric=parse_metric(metric), run=run, qids=qids,
                       values=np.array([values[q] for q in qids], dtype=float), judged=np.ones(len(qids)),
                       dropped=list(dropped))


def write_queries(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return {q.qid: q for q in read_queries(path)}


# ---------------------------------------------------------------------------------------------
# exact tests


def test_sign_test_matches_binomtest_and_hand_calculation():
    d = np.array([0.1] * 7 + [-0.2] * 2 + [0.0] * 3)
    s = sign_test(d)
    assert (s.better, s.worse, s.tied) == (7, 2, 3)
    assert s.pvalue == pytest.approx(sps.binomtest(7, 9, 0.5).pvalue)
    assert s.pvalue == pytest.approx(2 * (36 + 9 + 1) / 2**9)  # 2 * P(X >= 7), X ~ Bin(9, 1/2)
    assert sign_test(np.zeros(4)).pvalue == 1.0


def test_mcnemar_is_the_exact_binomial_on_discordant_pairs():
    a = np.array([1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0])
    b = np.array([1, 1, 0, 1, 1, 1, 1, 1, 1, 0, 1, 0])
    m = mcnemar(a, b)
    assert (m.both, m.a_only, m.b_only, m.neither) == (3, 1, 6, 2)
    assert m.pvalue == pytest.approx(sps.binomtest(6, 7, 0.5).pvalue)
    assert m.pvalue == pytest.approx(2 * (7 + 1) / 2**7)
    with pytest.raises(ValueError, match="binary"):
        mcnemar(np.array([0.5, 1]), np.array([0, 1]))


def test_compare_runs_mcnemar_only_for_binary_metrics():
    a = scores("A", {f"q{i}": float(i % 2) for i in range(20)}, metric="success@10")
    b = scores("B", {f"q{i}": float(i % 3 == 0) for i in range(20)}, metric="success@10")
    c = compare(pair_scores(a, b), resamples=500)
    assert c.mcnemar is not None
    a2 = scores("A", {f"q{i}": float(i % 2) for i in range(20)})
    b2 = scores("B", {f"q{i}": float(i % 3 == 0) for i in range(20)})
    assert compare(pair_scores(a2, b2), resamples=500).mcnemar is None


# ---------------------------------------------------------------------------------------------
# bootstrap


def test_percentile_interval_covers_the_true_delta_about_95_percent():
    rng = np.random.default_rng(11)
    true_delta, n, sets = 0.02, 60, 400
    covered = 0
    for s in range(sets):
        # skewed per-query differences (a gamma minus its mean) around the true delta
        d = true_delta + 0.15 * (rng.gamma(2.0, 1.0, n) - 2.0) / math.sqrt(2.0)
        lo, hi = interval(bootstrap_replicates(d, resamples=2000, seed=s))
        covered += lo <= true_delta <= hi
    assert 0.92 <= covered / sets <= 0.975, covered / sets


def test_more_resamples_steady_the_endpoints_without_narrowing():
    d = np.random.default_rng(5).normal(0.01, 0.1, 80)
    few = np.array([interval(bootstrap_replicates(d, resamples=200, seed=s)) for s in range(30)])
    many = np.array([interval(bootstrap_replicates(d, resamples=8000, seed=s)) for s in range(30)])
    assert many[:, 0].std() < 0.5 * few[:, 0].std()
    assert many[:, 1].std() < 0.5 * few[:, 1].std()
    width_few, width_many = (few[:, 1] - few[:, 0]).mean(), (many[:, 1] - many[:, 0]).mean()
    assert width_many == pytest.approx(width_few, rel=0.08)
    # and the width is what the standard error says: 2 * 1.96 * sd / sqrt(n), approximately
    assert width_many == pytest.approx(2 * 1.96 * d.std(ddof=1) / math.sqrt(len(d)), rel=0.08)


def test_same_seed_same_replicates_byte_for_byte():
    d = np.random.default_rng(1).normal(size=50)
    r1 = bootstrap_replicates(d, resamples=1000, seed=42)
    assert r1.tobytes() == bootstrap_replicates(d, resamples=1000, seed=42).tobytes()
    assert r1.tobytes() != bootstrap_replicates(d, resamples=1000, seed=43).tobytes()


def test_replicates_do_not_depend_on_the_number_of_threads(monkeypatch):
    import curation.evaluate.bootstrap as stats_module

    d = np.random.default_rng(1).normal(size=2000)
    monkeypatch.setattr(stats_module.os, "cpu_count", lambda: 2)
    threaded = bootstrap_replicates(d, resamples=3000, seed=5)
    monkeypatch.setattr(stats_module.os, "cpu_count", lambda: 1)
    assert threaded.tobytes() == bootstrap_replicates(d, resamples=3000, seed=5).tobytes()


def test_stratified_resampling_keeps_each_stratum_whole():
    # stratum 0 always differs by 1, stratum 1 by 0: equal-per-stratum mean is 0.5 in every replicate
    d = np.array([1.0] * 3 + [0.0] * 7)
    strata = np.array([0] * 3 + [1] * 7)
    w = np.array([1 / 3] * 3 + [1 / 7] * 7)
    reps = bootstrap_replicates(d, weights=w, strata=strata, resamples=500, seed=0)
    assert np.allclose(reps, 0.5)


def test_cluster_bootstrap_resamples_whole_clusters():
    # 8 clusters of 5 identical queries: the cluster bootstrap is the bootstrap of the 8 cluster values
    per_cluster = np.random.default_rng(2).normal(size=8)
    d = np.repeat(per_cluster, 5)
    clustered = bootstrap_replicates(d, clusters=np.repeat(np.arange(8), 5), resamples=1000, seed=9)
    assert np.allclose(clustered, bootstrap_replicates(per_cluster, resamples=1000, seed=9))
    naive = bootstrap_replicates(d, resamples=1000, seed=9)
    assert clustered.std() > 1.8 * naive.std()  # sqrt(5) wider: the 40 queries are only 8 draws


def test_bca_through_scipy_and_its_limits():
    rng = np.random.default_rng(0)
    a = scores("A", {f"q{i:02d}": v for i, v in enumerate(rng.uniform(0, 1, 60))})
    b = scores("B", {q: v + 0.05 + rng.normal(0, 0.1) for q, v in a.as_dict().items()})
    p = pair_scores(a, b)
    pct = compare(p, resamples=4000, seed=1)
    bca = compare(p, resamples=4000, seed=1, ci="bca")
    res = sps.bootstrap((p.diff,), np.mean, n_resamples=4000, method="BCa",
                        random_state=np.random.default_rng(1))
    assert (bca.low, bca.high) == pytest.approx((res.confidence_interval.low, res.confidence_interval.high))
    assert bca.low == pytest.approx(pct.low, abs=0.01) and bca.high == pytest.approx(pct.high, abs=0.01)


# ---------------------------------------------------------------------------------------------
# pairing, dropped queries, weights


def test_dropped_queries_leave_both_arms_paired():
    a = scores("A", {"q1": 0.1, "q2": 0.2, "q4": 0.4, "q5": 0.5}, dropped=["q3"])
    b = scores("B", {"q1": 0.3, "q2": 0.2, "q3": 0.9, "q5": 0.1})
    p = pair_scores(a, b)
    assert p.qids == ["q1", "q2", "q5"]
    assert p.a.tolist() == [0.1, 0.2, 0.5] and p.b.tolist() == [0.3, 0.2, 0.1]
    assert p.dropped == ["q3", "q4"] and p.reasons == {"no value in one arm": 2}


def test_query_without_relevant_documents_is_dropped_from_both_and_counted():
    qrels = {"q1": {"a": 1}, "q2": {"b": 0}, "q3": {"c": 1}}
    ra = evaluate({"q1": ["a"], "q2": ["b"], "q3": ["x"]}, qrels, ["recall@5"])["recall@5"]
    rb = evaluate({"q1": ["x"], "q2": ["b"], "q3": ["c"]}, qrels, ["recall@5"])["recall@5"]
    c = compare(pair_scores(ra, rb), resamples=200)
    assert c.n == 2 and c.dropped == 1 and c.drop_reasons == {"no relevant document (grade >= 1)": 1}
    assert c.delta == 0.0 and c.sign.better == 1 and c.sign.worse == 1


def test_weights_change_the_answer_exactly_as_declared(tmp_path):
    rows = [
        {"qid": "a1", "text": "x", "stratum": {"market": "us"}, "traffic": 50, "weight": 0.3},
        {"qid": "a2", "text": "x", "stratum": {"market": "us"}, "traffic": 40, "weight": 0.3},
        {"qid": "a3", "text": "x", "stratum": {"market": "us"}, "traffic": 30, "weight": 0.2},
        {"qid": "b1", "text": "x", "stratum": {"market": "de"}, "traffic": 10, "weight": 0.2},
        {"qid": "h1", "text": "x", "stratum": {"source": "handwritten"}, "traffic": 0, "weight": 0},
    ]
    queries = write_queries(tmp_path / "queries.jsonl", rows)
    d = {"a1": 0.1, "a2": 0.2, "a3": 0.3, "b1": -0.4, "h1": 1.0}
    a = scores("A", {q: 0.5 for q in d})
    b = scores("B", {q: 0.5 + v for q, v in d.items()})
    p = pair_scores(a, b, queries=queries)
    unweighted = compare(p, queries=queries, resamples=300)
    assert unweighted.delta == pytest.approx((0.1 + 0.2 + 0.3 - 0.4 + 1.0) / 5)
    per_stratum = compare(p, queries=queries, weighting="stratum", resamples=300)
    assert per_stratum.delta == pytest.approx((0.2 + (-0.4) + 1.0) / 3)  # us mean 0.2, de, handwritten
    traffic = compare(p, queries=queries, weighting="traffic", resamples=300)
    assert traffic.delta == pytest.approx((0.3 * 0.1 + 0.3 * 0.2 + 0.2 * 0.3 + 0.2 * -0.4) / 1.0)
    assert any("hand-written" in n for n in traffic.notes)
    labels = {s.label: s for s in traffic.strata}
    assert set(labels) == {"market=us", "market=de", "handwritten"}
    assert labels["handwritten"].weight == 0.0 and labels["market=us"].weight == pytest.approx(0.8)
    assert labels["market=us"].n == 3 and labels["market=us"].delta == pytest.approx((0.03 + 0.06 + 0.06) / 0.8)
    w, strata, names = query_weights(p.qids, queries, "stratum")
    assert w.tolist() == pytest.approx([1 / 3, 1 / 3, 1 / 3, 1, 1])


def test_split_keeps_only_that_split(tmp_path):
    rows = [{"qid": f"q{i}", "text": "t", "stratum": {}, "split": "holdout" if i % 2 else "tune"} for i in range(10)]
    queries = write_queries(tmp_path / "q.jsonl", rows)
    a = scores("A", {f"q{i}": 0.0 for i in range(10)})
    b = scores("B", {f"q{i}": float(i) for i in range(10)})
    p = pair_scores(a, b, queries=queries, split="holdout")
    assert p.qids == ["q1", "q3", "q5", "q7", "q9"] and p.reasons == {"other split": 5}
    with pytest.raises(ValueError, match="split"):
        pair_scores(a, b, split="holdout")


# ---------------------------------------------------------------------------------------------
# verdict, power


@pytest.mark.parametrize(
    "low, high, tie, expected",
    [
        (0.01, 0.05, None, "B better"),
        (-0.05, -0.01, None, "A better"),
        (-0.01, 0.02, None, "cannot distinguish at this query count"),
        (-0.01, 0.02, 0.03, "equivalent within ±0.03"),
        (-0.01, 0.04, 0.03, "cannot distinguish at this query count"),  # reaches past the tie
        (0.005, 0.02, 0.03, "equivalent within ±0.03"),
        (0.01, 0.05, 0.03, "B better"),
        (-0.03, 0.01, 0.03, "cannot distinguish at this query count"),  # touching -tie is not inside
    ],
)
def test_verdict(low, high, tie, expected):
    assert verdict(low, high, tie=tie) == expected


def test_power_tends_to_the_normal_formula_with_many_queries():
    p = power(sd=0.2, n=5000, delta=0.05)
    z = 1.959964 + 0.841621  # normal quantiles for 97.5% and 80%, from tables
    assert p.se == pytest.approx(0.2 / math.sqrt(5000))
    assert p.mdd == pytest.approx(z * p.se, rel=1e-3)
    assert abs(p.needed - math.ceil((z * 0.2 / 0.05) ** 2)) <= 2  # 126 by the normal formula
    assert any("winner's curse" in n for n in p.notes)
    d = np.array([0.1, -0.1, 0.3, 0.1])
    q = power(d, delta=0.1)
    assert q.sd == pytest.approx(np.std(d, ddof=1)) and q.n == 4 and q.observed == pytest.approx(0.1)
    with pytest.raises(ValueError, match="sd, n"):
        power(sd=0.1)


@pytest.mark.parametrize("sd, n", [(0.2, 5), (0.2, 10), (0.25, 20), (0.18, 30), (0.3, 100), (0.12, 250)])
@pytest.mark.parametrize("delta", [0.02, 0.05, 0.1])
def test_power_equals_statsmodels_ttestpower(sd, n, delta):
    # The paired t-test's power through the noncentral t: statsmodels' TTestPower on the effect
    # size delta / sd gives the same minimum detectable difference and (rounded up) query count.
    from statsmodels.stats.power import TTestPower

    p = power(sd=sd, n=n, delta=delta)
    tp = TTestPower()
    es = tp.solve_power(nobs=n, alpha=0.05, power=0.8, alternative="two-sided")
    assert p.mdd == pytest.approx(es * sd, rel=1e-5)  # statsmodels solves to about 1e-6
    needed = tp.solve_power(effect_size=delta / sd, alpha=0.05, power=0.8, alternative="two-sided")
    assert abs(p.needed - math.ceil(needed)) <= 1 and p.needed >= needed
    assert tp.power(effect_size=delta / sd, nobs=p.needed, alpha=0.05) >= 0.8


@pytest.mark.parametrize("sd, n, delta", [(0.1, 2, 0.5), (0.1, 2, 0.05), (0.3, 2, 2.0), (0.2, 3, 0.5)])
def test_power_at_two_queries_answers_and_equals_statsmodels(sd, n, delta):
    # scipy's nct.cdf is NaN at 1 degree of freedom and a large noncentrality (the issue's
    # "function value at x=1.58 is NaN"); the fallback integration gives statsmodels' answer.
    from scipy import stats as sps
    from statsmodels.stats.power import TTestPower

    from curation.evaluate.power import _nct_cdf_integrated, t_power

    assert math.isnan(sps.nct.cdf(-sps.t.ppf(0.975, 1), 1, 3 * math.sqrt(2) / 0.1))
    p = power(sd=sd, n=n, delta=delta)
    tp = TTestPower()
    assert p.mdd == pytest.approx(tp.solve_power(nobs=n, alpha=0.05, power=0.8) * sd, rel=1e-5)
    needed = tp.solve_power(effect_size=delta / sd, alpha=0.05, power=0.8)
    assert p.needed == max(2, math.ceil(needed))
    for d in (0.01, 0.3, 1.58, 3.0):
        ours, theirs = t_power(d, sd, n), tp.power(effect_size=d / sd, nobs=n, alpha=0.05)
        assert 0 <= ours <= 1
        if math.isfinite(theirs):  # statsmodels goes through the same nct.cdf and is NaN where it is
            assert ours == pytest.approx(theirs, abs=1e-9)
    # the integration agrees with scipy where scipy answers
    for x, df, nc in ((-12.706, 1, 1.0), (2.0, 1, 3.0), (-1.5, 4, -0.5), (0.3, 9, 2.0)):
        assert _nct_cdf_integrated(x, df, nc) == pytest.approx(sps.nct.cdf(x, df, nc), abs=1e-8)


def test_power_at_ten_queries_is_the_t_answer_not_the_normal_one():
    # The figure: the normal formula says 2.80 x se; the t-test needs 3.15 x se at n = 10.
    p = power(sd=0.3, n=10)
    assert p.multiplier == pytest.approx(3.1496, abs=1e-3)
    assert any("only 10 queries" in note for note in p.notes)
    assert not any("only" in note and "queries:" in note for note in power(sd=0.3, n=30).notes)


def test_power_never_plans_for_the_observed_difference():
    d = np.array([0.1, -0.05, 0.3, 0.12, 0.0, 0.2])
    p = power(d)
    assert p.needed is None and p.delta is None and p.observed == pytest.approx(d.mean())
    assert any("--delta" in note and f"{d.mean():+.4f}" in note for note in p.notes)


# ---------------------------------------------------------------------------------------------
# noise, sweep, attribution


def test_noise_floor_and_null_arm():
    rng = np.random.default_rng(4)
    base = rng.uniform(0, 1, 200)
    reps = [scores(f"r{i}", {f"q{j:03d}": v + rng.normal(0, 0.01) for j, v in enumerate(base)}) for i in range(10)]
    n = noise(reps, resamples=2000)
    means = np.array([r.mean for r in reps])
    sd = means.std(ddof=1)
    assert n.sd == pytest.approx(sd) and n.range == pytest.approx(np.ptp(means))
    # The method's rule by default: 3 sd of the repeated runs; range and the paired formula beside it.
    assert n.rule == "3sd" and n.threshold == pytest.approx(3 * sd)
    assert n.thresholds == pytest.approx({"3sd": 3 * sd, "range": np.ptp(means),
                                          "paired": 1.959964 * math.sqrt(2) * sd}, rel=1e-5)
    assert noise(reps, resamples=200, rule="paired").threshold == pytest.approx(1.959964 * math.sqrt(2) * sd, rel=1e-5)
    assert noise(reps, resamples=200, rule="range").threshold == pytest.approx(np.ptp(means))
    with pytest.raises(ValueError, match="rule must be one of 3sd, range, paired"):
        noise(reps, rule="2sd")
    assert n.null_ok and not n.notes
    # Four repeats: a floor is still given, with a note that it is loose.
    few = noise(reps[:4], resamples=200)
    assert any("only 4 repeated runs" in note for note in few.notes)
    shifted = scores("broken", {q: v + 0.05 for q, v in reps[0].as_dict().items()})
    bad = noise([reps[0], shifted], resamples=2000)
    assert not bad.null_ok and any("NULL ARM FAILED" in note for note in bad.notes)


def test_sweep_ranks_on_tune_and_remeasures_top_three_on_holdout(tmp_path):
    rng = np.random.default_rng(8)
    rows = [{"qid": f"q{i:03d}", "text": "t", "stratum": {}, "split": "tune" if i < 120 else "holdout"}
            for i in range(200)]
    queries = write_queries(tmp_path / "q.jsonl", rows)
    base = rng.uniform(0, 1, 200)
    configs = [scores(f"c{k}", {r["qid"]: base[i] + rng.normal(0, 0.1) for i, r in enumerate(rows)})
               for k in range(10)]
    s = sweep(configs, queries=queries, seed=1)
    assert s.n_tune == 120 and s.n_holdout == 80 and s.configs == 10
    tune_means = {c.run: np.mean([c.as_dict()[q] for q in c.qids if int(q[1:]) < 120]) for c in configs}
    assert [r.run for r in s.rows] == sorted(tune_means, key=tune_means.get, reverse=True)
    assert [r.holdout is not None for r in s.rows] == [True] * 3 + [False] * 7
    # ten equal configurations: the expected maximum of 10 standard normals is 1.54 standard errors
    assert s.optimism == pytest.approx(1.54 * s.noise_se, rel=0.25)
    assert s.rows[0].gap == pytest.approx(s.rows[0].tune - s.rows[0].holdout)


def test_sweep_separates_the_splits_difficulty_from_the_winners_optimism(tmp_path):
    # A null sweep (ten equal configurations) whose holdout queries are 0.05 harder: every
    # configuration's gap carries that 0.05; the winner's own optimism is its gap beyond the average.
    rng = np.random.default_rng(9)
    rows = [{"qid": f"q{i:03d}", "text": "t", "stratum": {}, "split": "tune" if i < 100 else "holdout"}
            for i in range(200)]
    queries = write_queries(tmp_path / "q.jsonl", rows)
    base = rng.uniform(0.2, 0.8, 200) - np.where(np.arange(200) >= 100, 0.05, 0.0)
    configs = [scores(f"c{k}", {r["qid"]: base[i] + rng.normal(0, 0.1) for i, r in enumerate(rows)})
               for k in range(10)]
    s = sweep(configs, queries=queries, seed=1)
    tune = np.array([np.mean([c.as_dict()[f"q{i:03d}"] for i in range(100)]) for c in configs])
    hold = np.array([np.mean([c.as_dict()[f"q{i:03d}"] for i in range(100, 200)]) for c in configs])
    assert s.mean_gap == pytest.approx(float(np.mean(tune - hold)))
    winner = int(np.argmax(tune))
    assert s.winner_gap == pytest.approx(tune[winner] - hold[winner]) == pytest.approx(s.rows[0].gap)
    assert s.winner_excess == pytest.approx(s.winner_gap - s.mean_gap)
    assert s.top == 3 and not any("--top" in n for n in s.notes)
    wide = sweep(configs, queries=queries, seed=1, top=5)
    assert [r.holdout is not None for r in wide.rows] == [True] * 5 + [False] * 5
    assert any("--top 5: the method re-scores at most the top 3" in n for n in wide.notes)
    with pytest.raises(ValueError, match="top must be"):
        sweep(configs, queries=queries, top=0)


def test_attribution_main_effects_and_interaction_both_ways():
    q = [f"q{i}" for i in range(30)]
    rng = np.random.default_rng(3)
    x00 = rng.uniform(0, 0.5, 30)
    x10, x01 = x00 + 0.10, x00 + 0.05
    x11 = x00 + 0.10 + 0.05 + 0.02  # interaction +0.02
    cells = [scores(n, dict(zip(q, v))) for n, v in (("base", x00), ("a", x10), ("b", x01), ("ab", x11))]
    r = attribute(*cells, a_name="rerank", b_name="expansion", resamples=500)
    got = {e.name: e.delta for e in r.effects}
    assert got["rerank with expansion off"] == pytest.approx(0.10)
    assert got["rerank with expansion on"] == pytest.approx(0.12)
    assert got["expansion with rerank off"] == pytest.approx(0.05)
    assert got["expansion with rerank on"] == pytest.approx(0.07)
    inter = [e for e in r.effects if e.name.startswith("interaction")]
    assert len(inter) == 2 and all(e.delta == pytest.approx(0.02) for e in inter)
    assert all(e.low == pytest.approx(e.delta) for e in r.effects)  # constant differences: no spread
