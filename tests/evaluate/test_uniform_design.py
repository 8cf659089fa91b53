"""A uniform draw's traffic-weighted mean: the head taken whole, the ratio estimator over the tail
calibrated to its known traffic, and the ratio model's prediction variance."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats as sps

from curation.evaluate.metrics import QueryScores, parse_metric
from curation.evaluate.prediction import prediction_variance, uniform_weights
from curation.evaluate.stats import VERDICT_UNTRUSTED, compare, design, pair_scores
from curation.formats.queries import parse_queries

SPEC = parse_metric("ndcg@10")


def records(rows):
    return {r.qid: r for r in parse_queries(json.dumps(r) for r in rows)}


def qs(run, values: dict):
    qids = sorted(values)
    return QueryScores(metric=SPEC, run=run, qids=qids, values=np.array([values[q] for q in qids], dtype=float),
                       judged=np.ones(len(qids)))


def uniform_rows(traffic, head, drawn, *, stratum="a", pool=None):
    """Rows as golden sample queries --weighting uniform writes them for one stratum of ``traffic``:
    the ``head`` indices taken whole, the ``drawn`` ones from the rest alike."""
    t = np.asarray(traffic)
    t_h, n = int(t.sum()), len(t)
    pool = t_h if pool is None else pool
    k = len(head) + len(drawn)
    pi = len(drawn) / (n - len(head))
    rows = []
    for i in list(head) + list(drawn):
        p = 1.0 if i in head else pi
        rows.append({"qid": f"{stratum}{i:03d}", "text": f"{stratum} {i}", "stratum": {"m": stratum},
                     "traffic": int(t[i]), "stratum_share": t_h / pool, "inclusion": p, "weight": t[i] / pool / p,
                     "stratum_traffic": t_h, "stratum_size": n, "stratum_drawn": k,
                     "stratum_traffic_sq": int(np.sum(t.astype(np.int64) ** 2)),
                     "stratum_traffic_log": float(np.sum(t * np.log(t)))})
    return rows


TRAFFIC = [50, 10, 8, 5, 2, 1]


def test_the_estimate_is_the_head_plus_the_tail_predicted_from_the_queries_drawn():
    # three tail queries drawn (fewer than four): the tail not drawn is predicted by their mean
    rows = uniform_rows(TRAFFIC, head=[0], drawn=[1, 3, 4])
    recs = records(rows)
    qids = sorted(recs)
    y = {"a000": 0.5, "a001": 0.2, "a003": 0.4, "a004": -0.1}
    x = np.array([y[q] for q in qids])
    d = design(qids, recs, "traffic")
    not_drawn = 8 + 1  # the tail's searches on the queries not drawn
    expected = (50 * 0.5 + 10 * 0.2 + 5 * 0.4 + 2 * -0.1 + not_drawn * np.mean([0.2, 0.4, -0.1])) / 76
    assert d.mean(x) == pytest.approx(expected, abs=1e-12)
    assert d.weights.sum() == pytest.approx(1.0, abs=1e-12)
    assert d.prediction is not None and "regression on log traffic" in d.estimator


def test_the_interval_is_the_prediction_variance_by_hand():
    rows = uniform_rows(TRAFFIC, head=[0], drawn=[1, 3, 4])
    recs = records(rows)
    qids = sorted(recs)
    y = {"a000": 0.5, "a001": 0.2, "a003": 0.4, "a004": -0.1}
    a = qs("A", dict.fromkeys(qids, 0.0))
    c = compare(pair_scores(a, qs("B", y)), queries=recs, weighting="traffic", resamples=200)
    v = np.array([0.2, 0.4, -0.1])
    sigma2 = float(np.var(v, ddof=1))
    # sigma^2 [ (searches predicted)^2 / m + the squared traffic of the queries not drawn ] / T^2
    se = np.sqrt(sigma2 * (9**2 / 3 + 8**2 + 1**2)) / 76
    half = float(sps.t.ppf(0.975, 2)) * se
    assert (c.high - c.low) / 2 == pytest.approx(half, rel=1e-9)
    assert c.p_delta_le_0 == pytest.approx(float(sps.t.cdf(-c.delta / se, 2)), rel=1e-9)
    assert (c.low > 0) == (c.p_delta_le_0 < 0.025)
    # the one stratum's interval is the same, and the histogram's draws come from the same t
    assert (c.strata[0].low, c.strata[0].high) == pytest.approx((c.low, c.high), rel=1e-9)
    assert np.mean(c.replicates <= 0) == pytest.approx(c.p_delta_le_0, abs=0.08)
    assert any("predicted" in n for n in c.notes)


def test_with_four_tail_queries_the_prediction_follows_log_traffic():
    # the Zipf tail not drawn is predicted by y = b0 + b1 log t fitted on the tail drawn (least squares)
    traffic = np.array([400, 90, 60, 40, 30, 20, 12, 9, 6, 4, 3, 2, 1, 1])
    drawn = [2, 4, 7, 9, 11]
    rows = uniform_rows(traffic, head=[0, 1], drawn=drawn)
    recs = records(rows)
    qids = sorted(recs)
    rng = np.random.default_rng(1)
    y = 0.1 + 0.05 * np.log(traffic) + rng.normal(0, 0.05, len(traffic))
    x = np.array([y[int(q[1:])] for q in qids])
    d = design(qids, recs, "traffic")
    X = np.column_stack([np.ones(len(drawn)), np.log(traffic[drawn])])
    beta = np.linalg.lstsq(X, y[drawn], rcond=None)[0]
    rest = [i for i in range(2, len(traffic)) if i not in drawn]
    predicted = float(np.sum(traffic[rest] * (beta[0] + beta[1] * np.log(traffic[rest]))))
    expected = (float(np.sum(traffic[[0, 1] + drawn] * y[[0, 1] + drawn])) + predicted) / traffic.sum()
    assert d.mean(x) == pytest.approx(expected, abs=1e-12)
    var, df = prediction_variance(x, d.prediction)
    resid = y[drawn] - X @ beta
    c = np.array([traffic[rest].sum(), np.sum(traffic[rest] * np.log(traffic[rest]))])
    by_hand = resid @ resid / 3 * (c @ np.linalg.inv(X.T @ X) @ c + np.sum(traffic[rest] ** 2.0)) / traffic.sum() ** 2
    assert var[0] == pytest.approx(by_hand, rel=1e-9) and df[0] == 3


def test_a_census_of_the_tail_has_no_variance():
    rows = uniform_rows(TRAFFIC, head=[0], drawn=[1, 2, 3, 4, 5])
    recs = records(rows)
    qids = sorted(recs)
    y = dict(zip(qids, [0.5, 0.2, 0.1, 0.4, -0.1, 0.3]))
    c = compare(pair_scores(qs("A", dict.fromkeys(qids, 0.0)), qs("B", y)), queries=recs, weighting="traffic",
                resamples=200)
    truth = sum(t * v for t, v in zip(TRAFFIC, [0.5, 0.2, 0.1, 0.4, -0.1, 0.3])) / 76
    assert c.delta == pytest.approx(truth, abs=1e-12)
    assert c.high - c.low == pytest.approx(0.0, abs=1e-12)


def test_prediction_variance_is_the_error_variance_under_the_model():
    # Many populations y_i = b0 + b1 log t_i + e_i with Zipf traffic; one uniform draw each (head taken
    # whole): the prediction variance averages to the error's real variance, and the t interval covers 95%.
    rng = np.random.default_rng(5)
    traffic = np.maximum(1, np.round(3000 / np.arange(1, 401))).astype(int)
    facts = {0: (float(traffic.sum()), float(traffic.sum()), float(np.sum(traffic.astype(np.int64) ** 2)),
                 float(np.sum(traffic * np.log(traffic))))}
    errors, variances, covered = [], [], 0
    runs = 3000
    for _ in range(runs):
        y = 0.1 + 0.03 * np.log(traffic) + rng.normal(0, 0.2, len(traffic))
        idx = np.r_[np.arange(6), np.sort(rng.choice(np.arange(6, len(traffic)), 40, replace=False))]
        certain = np.arange(len(idx)) < 6
        strata = np.zeros(len(idx), dtype=np.int64)
        w, pred = uniform_weights(traffic[idx], certain, strata, facts)
        var, df = prediction_variance(y[idx], pred)
        err = float(np.sum(w * y[idx])) - float((traffic * y).sum() / traffic.sum())
        errors.append(err)
        variances.append(var[0])
        covered += abs(err) <= sps.t.ppf(0.975, df[0]) * np.sqrt(var[0])
    assert np.mean(variances) == pytest.approx(np.mean(np.square(errors)), rel=0.08)
    assert 0.94 <= covered / runs <= 0.96


def test_a_uniform_draw_that_left_its_head_to_chance_is_refused():
    traffic = np.maximum(1, np.round(20000 / np.arange(1, 601))).astype(int)
    rng = np.random.default_rng(3)
    drawn = sorted(rng.choice(np.arange(1, 600), 30, replace=False).tolist())  # the head query not drawn
    y = rng.normal(0.05, 0.1, 600)
    for rows, refused in ((uniform_rows(traffic, head=[], drawn=drawn), True),
                          (uniform_rows(traffic, head=list(range(8)), drawn=drawn[8:] + [590, 591]), False)):
        recs = records(rows)
        qids = sorted(recs)
        b = qs("B", {q: float(y[int(q[1:])]) for q in qids})
        c = compare(pair_scores(qs("A", dict.fromkeys(qids, 0.0)), b), queries=recs, weighting="traffic",
                    resamples=200)
        assert (c.verdict == VERDICT_UNTRUSTED) == refused, c.notes
        if refused:
            assert any("--head certain" in n for n in c.notes)
