"""How queries count in golden stats compare's mean: Horvitz-Thompson weights
over the strata's known shares (unbiased under uniform and traffic sampling), user-weighted means
and a stated target mix of strata."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

from curation.cli import main
from curation.evaluate.metrics import QueryScores, parse_metric
from curation.evaluate.stats import compare, design, pair_scores, parse_mix
from curation.formats.queries import parse_queries
from curation.sample.logs import collapse_log
from curation.sample.sampling import sample_queries

SPEC = parse_metric("ndcg@10")


def records(rows):
    """Rows as golden sample queries writes them, read back by the one queries reader."""
    return {r.qid: r for r in parse_queries(json.dumps(r) for r in rows)}


def qs(run, values: dict):
    qids = sorted(values)
    return QueryScores(metric=SPEC, run=run, qids=qids, values=np.array([values[q] for q in qids], dtype=float),
                       judged=np.ones(len(qids)))


def zipf_log(path, n=5700, seed=13):
    """A log as one line per distinct query with its count: Zipf traffic (20,000 / rank), three
    markets, and a per-query value that grows with traffic (popular queries are easier)."""
    rng = np.random.default_rng(seed)
    traffic = np.maximum(1, np.round(20000 / np.arange(1, n + 1))).astype(int)
    texts = [f"query number {i}" for i in range(n)]
    markets = [("us", "de", "fr")[i % 3] for i in range(n)]
    value = np.clip(0.30 + 0.05 * np.log(traffic) + rng.normal(0, 0.15, n), 0, 1)
    path.write_text("query,market,n\n" + "".join(f"{q},{m},{c}\n" for q, m, c in zip(texts, markets, traffic)))
    truth = float((traffic * value).sum() / traffic.sum())
    return path, dict(zip(texts, value)), truth


# ---------------------------------------------------------------------------------------------
# item 2: uniform draws get Horvitz-Thompson weights, and the mean divides by the known shares


def test_uniform_rows_carry_horvitz_thompson_weights_and_their_strata_totals(tmp_path):
    path, _, _ = zipf_log(tmp_path / "log.csv", n=300)
    result = sample_queries(path, query_col="query", count_col="n", strata=["market"], size=30, floor=5, seed=4,
                            weighting="uniform")
    total = sum(s.traffic for s in result.strata)
    for s in result.strata:
        rows = [r for r in result.rows if r["stratum"] == s.values]
        for r in rows:
            assert (r["stratum_traffic"], r["stratum_size"], r["stratum_drawn"]) == (s.traffic, s.distinct,
                                                                                   s.allocated)
            # the head taken whole (inclusion 1), the others drawn alike from the rest
            head = sum(1 for o in rows if o["inclusion"] == 1.0)
            assert head == 0 or s.allocated - head >= 2
            if r["inclusion"] != 1.0:
                assert r["inclusion"] == pytest.approx((s.allocated - head) / (s.distinct - head))
            # (t_i / T) / pi_i: what the query stands for over the probability it had of being drawn
            assert r["weight"] == pytest.approx(r["traffic"] / total / r["inclusion"], rel=1e-12)


def test_every_possible_uniform_sample_averages_to_the_traffic_weighted_truth():
    # Two strata of 7 queries, 3 and 2 drawn: over all 35 x 21 equally likely samples, the
    # estimate golden stats compare makes averages to the truth exactly; the old ratio weights do not.
    traffic = {"us": [400, 90, 30, 12, 5, 2, 1], "de": [200, 40, 9, 3, 2, 1, 1]}
    value = {"us": [0.9, 0.7, 0.5, 0.4, 0.2, 0.1, 0.3], "de": [0.8, 0.6, 0.2, 0.3, 0.1, 0.5, 0.2]}
    k = {"us": 3, "de": 2}
    total = sum(sum(t) for t in traffic.values())
    truth = sum(t * v for m in traffic for t, v in zip(traffic[m], value[m])) / total
    ht, ratio = [], []
    for us in itertools.combinations(range(7), 3):
        for de in itertools.combinations(range(7), 2):
            rows, vals = [], {}
            for m, picked in (("us", us), ("de", de)):
                t_h = sum(traffic[m])
                for i in picked:
                    qid = f"{m}{i}"
                    t = traffic[m][i]
                    rows.append({"qid": qid, "text": qid, "stratum": {"market": m}, "traffic": t,
                                 "stratum_share": t_h / total, "inclusion": k[m] / 7,
                                 "weight": t / total / (k[m] / 7), "stratum_traffic": t_h, "stratum_size": 7,
                                 "stratum_drawn": k[m]})
                    vals[qid] = value[m][i]
            recs = records(rows)
            qids = sorted(vals)
            x = np.array([vals[q] for q in qids])
            ht.append(design(qids, recs, "traffic").mean(x))
            for r in rows:  # golden's earlier uniform weight: share x t_i / traffic drawn in the stratum
                drawn = sum(o["traffic"] for o in rows if o["stratum"] == r["stratum"])
                r["weight"] = r["stratum_share"] * r["traffic"] / drawn
            w = np.array([next(r["weight"] for r in rows if r["qid"] == q) for q in qids])
            ratio.append(float((w * x).sum() / w.sum()))
    assert len(ht) == 35 * 21
    assert np.mean(ht) == pytest.approx(truth, abs=1e-12)
    assert abs(np.mean(ratio) - truth) > 0.01


def test_some_queries_left_out_of_a_stratum_scale_the_rest():
    # A query without a value (e.g. no relevant document) leaves its stratum's other draws to
    # stand for it: the stratum keeps its known share.
    rows = [{"qid": f"q{i}", "text": f"t{i}", "stratum": {"m": "a" if i < 4 else "b"}, "traffic": 10,
             "stratum_share": 0.5, "inclusion": 0.4, "weight": 0.5 / 4, "stratum_drawn": 4} for i in range(8)]
    recs = records(rows)
    qids = ["q0", "q1", "q4", "q5", "q6", "q7"]  # q2 and q3 left out
    d = design(qids, recs, "traffic")
    x = np.array([1.0, 1.0, 0.0, 0.0, 0.0, 0.0])
    assert d.total == pytest.approx(1.0) and d.mean(x) == pytest.approx(0.5)
    assert "Horvitz-Thompson" in d.estimator


@pytest.mark.slow
@pytest.mark.parametrize("weighting", ["traffic", "uniform"])
def test_both_sample_weightings_are_unbiased_on_a_zipf_log(tmp_path, weighting):
    # 200 seeded samples of 100 of 5,700 queries: the mean of the rows' Horvitz-Thompson estimates is
    # within 2 standard errors of the traffic-weighted truth. (The earlier uniform weights, a ratio
    # over the traffic drawn with the head left to chance, missed it by -0.098, 22 standard errors, on
    # this log: bench/bench_weighting.py.) golden stats compare's estimate of a uniform draw takes the
    # head whole and predicts the tail not drawn by a regression on log traffic: its bias is a small
    # part of its spread.
    path, value, truth = zipf_log(tmp_path / "log.csv")
    ht, estimates = [], []
    for seed in range(200):
        rows = sample_queries(path, query_col="query", count_col="n", strata=["market"], size=100, floor=5,
                              seed=seed, weighting=weighting).rows
        recs = records(rows)
        qids = sorted(recs)
        x = np.array([value[recs[q].text] for q in qids])
        d = design(qids, recs, "traffic")
        estimates.append(d.mean(x))
        ht.append(float(np.sum(np.array([recs[q].weight for q in qids]) * x)) / d.total)
    se = np.std(ht, ddof=1) / math.sqrt(len(ht))
    assert abs(np.mean(ht) - truth) <= 2 * se, (np.mean(ht), truth, se)
    sd = np.std(estimates, ddof=1)
    assert abs(np.mean(estimates) - truth) <= (2 * sd / math.sqrt(200) if weighting == "traffic" else 0.3 * sd)


# ---------------------------------------------------------------------------------------------
# item 8: user-weighted means and a stated mix


USER_LOG = """query,user,market
news,u1,us
news,u1,us
news,u2,us
weather,u2,us
weather,u3,us
recipes,u3,de
news,u4,us
recipes,u4,de
tax forms,u4,de
"""


def test_user_mass_gives_every_user_one_unit_shared_by_their_queries(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text(USER_LOG)
    c = collapse_log(path, query_col="query", user_col="user", strata=["market"])
    mass = dict(zip(c.queries["text"], c.user_mass))
    # u1: {news}; u2: {news, weather}; u3: {weather, recipes}; u4: {news, recipes, tax forms}
    assert mass == pytest.approx({"news": (1 + 1 / 2 + 1 / 3) / 4, "weather": (1 / 2 + 1 / 2) / 4,
                                  "recipes": (1 / 2 + 1 / 3) / 4, "tax forms": (1 / 3) / 4})


def test_user_weighted_mean_of_a_whole_log_is_the_mean_over_users(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text(USER_LOG)
    rows = sample_queries(path, query_col="query", user_col="user", strata=["market"], size=4, floor=1).rows
    recs = records(rows)
    value = {"news": 0.9, "weather": 0.5, "recipes": 0.2, "tax forms": 0.0}
    qids = sorted(recs)
    x = np.array([value[recs[q].text] for q in qids])
    users = {"u1": ["news"], "u2": ["news", "weather"], "u3": ["weather", "recipes"],
             "u4": ["news", "recipes", "tax forms"]}
    by_user = np.mean([np.mean([value[q] for q in qs_]) for qs_ in users.values()])
    d = design(qids, recs, "traffic", unit="user")
    assert d.mean(x) == pytest.approx(by_user, abs=1e-12) and "Horvitz-Thompson" in d.estimator
    # a hand-written query (no user weight, weight 0) changes nothing
    hand = records(rows + [{"qid": "qhand", "text": "my own", "stratum": {"source": "handwritten"},
                            "weight": 0.0, "stratum_share": 0.0}])
    d2 = design(qids + ["qhand"], hand, "traffic", unit="user")
    assert d2.mean(np.append(x, 1.0)) == pytest.approx(by_user, abs=1e-12) and d2.total == pytest.approx(1.0)
    searches = {"news": 4, "weather": 2, "recipes": 2, "tax forms": 1}
    by_search = sum(searches[t] * value[t] for t in value) / 9
    assert design(qids, recs, "traffic").mean(x) == pytest.approx(by_search, abs=1e-12)
    with pytest.raises(ValueError, match="user_weight"):
        design(qids, records([{k: v for k, v in r.items() if k != "user_weight"} for r in rows]), "traffic",
               unit="user")


def test_user_weighted_mean_from_a_cluster_column():
    rows = [{"qid": f"q{i}", "text": f"t{i}", "user": u} for i, u in enumerate(["a", "a", "a", "b"])]
    recs = records(rows)
    a, b = qs("A", {f"q{i}": 0.0 for i in range(4)}), qs("B", {"q0": 0.3, "q1": 0.6, "q2": 0.9, "q3": 0.1})
    c = compare(pair_scores(a, b), queries=recs, unit="user", cluster_col="user", resamples=200)
    assert c.delta == pytest.approx((0.6 + 0.1) / 2) and c.unit == "user"
    assert c.as_dict()["unit"] == "user"


def test_mix_sets_each_strata_share():
    rows = [{"qid": f"q{i}", "text": f"t{i}", "stratum": {"market": "us" if i < 6 else "de"}} for i in range(10)]
    recs = records(rows)
    a = qs("A", {f"q{i}": 0.0 for i in range(10)})
    b = qs("B", {f"q{i}": (0.1 if i < 6 else 0.5) + 0.01 * i for i in range(10)})
    us = np.mean([0.1 + 0.01 * i for i in range(6)])
    de = np.mean([0.5 + 0.01 * i for i in range(6, 10)])
    c = compare(pair_scores(a, b), queries=recs, mix="market=us=0.2,market=de=0.8", resamples=300)
    assert c.delta == pytest.approx(0.2 * us + 0.8 * de)
    assert c.mix == {"market=us": 0.2, "market=de": 0.8}
    assert {s.label: round(s.weight, 6) for s in c.strata} == {"market=de": 0.8, "market=us": 0.2}
    same = compare(pair_scores(a, b), queries=recs, mix="us=0.2,de=0.8", resamples=300)
    assert same.delta == c.delta
    from curation.evaluate.html_report import render_comparison

    page = render_comparison(c)
    assert "target mix: market=us 0.2, market=de 0.8" in page and "unit: query" in page


@pytest.mark.parametrize("text, message", [
    ("us=0.5,de=0.6", "sum to 1.1"), ("us=0.5", "sum to 0.5"), ("us0.5,de=0.5", "is not STRATUM=SHARE"),
    ("us=-1,de=2", "must be positive"),
])
def test_mix_refuses_what_it_cannot_read(text, message):
    with pytest.raises(ValueError, match=message):
        parse_mix(text)


def test_mix_must_name_every_stratum_and_only_known_ones():
    rows = [{"qid": f"q{i}", "text": f"t{i}", "stratum": {"market": ("us", "de", "fr")[i % 3]}} for i in range(9)]
    recs = records(rows)
    qids = sorted(recs)
    with pytest.raises(ValueError, match="missing market=fr"):
        design(qids, recs, "unweighted", mix="us=0.5,de=0.5")
    with pytest.raises(ValueError, match="no stratum 'uk'"):
        design(qids, recs, "unweighted", mix="us=0.5,uk=0.5")


def test_compare_cli_records_unit_and_mix_in_json(tmp_path):
    qrels = tmp_path / "qrels.txt"
    run_a, run_b = tmp_path / "a.trec", tmp_path / "b.trec"
    rows, ql, la, lb = [], [], [], []
    for i in range(40):
        q = f"q{i:02d}"
        rows.append({"qid": q, "text": f"query {i}", "stratum": {"market": "us" if i % 2 else "de"}})
        ql.append(f"{q} 0 d1 1\n")
        la.append(f"{q} Q0 d1 {1 + i % 3} {10 - i % 3} A\n{q} Q0 x 1 5 A\n")
        lb.append(f"{q} Q0 d1 1 10 B\n{q} Q0 x 2 5 B\n")
    queries = tmp_path / "queries.jsonl"
    queries.write_text("".join(json.dumps(r) + "\n" for r in rows))
    qrels.write_text("".join(ql))
    run_a.write_text("".join(la))
    run_b.write_text("".join(lb))
    res = CliRunner().invoke(main, ["stats", "compare", str(run_a), str(run_b), "--qrels", str(qrels), "--queries",
                                    str(queries), "--metric", "mrr@10", "--mix", "us=0.25,de=0.75",
                                    "--resamples", "300", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["mix"] == {"us": 0.25, "de": 0.75} and out["unit"] == "query"
    assert "stated mix" in out["estimator"]
    res = CliRunner().invoke(main, ["stats", "compare", str(run_a), str(run_b), "--qrels", str(qrels), "--queries",
                                    str(queries), "--metric", "mrr@10", "--mix", "us=0.25"])
    assert res.exit_code != 0 and "sum to 0.25" in res.output


def test_mix_on_one_dimension_shares_a_group_among_its_strata():
    # strata market x shape; --mix names markets only: each market's share goes to its two shapes in
    # proportion to their own (here equal-per-query) shares
    rows, vb = [], {}
    for i in range(12):
        market, shape = ("us" if i < 8 else "de"), ("question" if i % 2 else "keyword")
        rows.append({"qid": f"q{i:02d}", "text": f"t{i}", "stratum": {"market": market, "shape": shape}})
        vb[f"q{i:02d}"] = (0.2 if market == "us" else 0.6) + (0.1 if shape == "question" else 0.0)
    recs = records(rows)
    a = qs("A", {q: 0.0 for q in vb})
    c = compare(pair_scores(a, qs("B", vb)), queries=recs, mix="market=us=0.3,market=de=0.7", resamples=300)
    us = np.mean([v for q, v in vb.items() if int(q[1:]) < 8])
    de = np.mean([v for q, v in vb.items() if int(q[1:]) >= 8])
    assert c.delta == pytest.approx(0.3 * us + 0.7 * de)
    weights = {s.label: s.weight for s in c.strata}
    assert weights["market=us, shape=keyword"] == pytest.approx(0.15)
    assert weights["market=de, shape=question"] == pytest.approx(0.35)
    with pytest.raises(ValueError, match="is named by"):
        design(sorted(recs), recs, "unweighted", mix="market=us=0.3,market=de=0.4,shape=keyword=0.3")


# ---------------------------------------------------------------------------------------------
# Intervals that follow the sampling design


def _pps_rows(rng, n_certain=4, n_free=30):
    """A traffic sample as golden sample queries writes it: ``n_certain`` queries taken with certainty and
    ``n_free`` drawn by traffic, in two strata."""
    rows = []
    for i in range(n_certain + n_free):
        certain = i < n_certain
        stratum = {"m": "a" if i % 2 else "b"}
        pi = 1.0 if certain else float(rng.uniform(0.05, 0.6))
        rows.append({"qid": f"q{i:02d}", "text": f"t{i}", "stratum": stratum, "traffic": 10, "inclusion": pi,
                     "weight": 0.01 * (3 if certain else 1) / pi, "stratum_share": 0.5})
    return rows


def test_queries_taken_with_certainty_add_no_variance():
    rng = np.random.default_rng(2)
    recs = records(_pps_rows(rng))
    qids = sorted(recs)
    d = rng.normal(0.02, 0.1, len(qids))
    a = qs("A", dict.fromkeys(qids, 0.0))
    c1 = compare(pair_scores(a, qs("B", dict(zip(qids, d)))), queries=recs, weighting="traffic", resamples=2000)
    d2 = d.copy()
    d2[:4] += rng.normal(0, 0.5, 4)  # move only the certain queries' differences
    c2 = compare(pair_scores(a, qs("B", dict(zip(qids, d2)))), queries=recs, weighting="traffic", resamples=2000)
    assert c1.delta != pytest.approx(c2.delta)
    assert c1.high - c1.low == pytest.approx(c2.high - c2.low, rel=1e-12)
    # the Rao-Wu replicates hold them fixed too: their spread does not move either
    assert np.std(c1.replicates) == pytest.approx(np.std(c2.replicates), rel=1e-9)
    assert any("taken with certainty" in n for n in c1.notes)
    # and P(delta <= 0) comes from the same t as the interval
    assert (c1.low > 0) == (c1.p_delta_le_0 < 0.025)


def test_rao_wu_replicates_have_the_with_replacement_variance():
    from curation.evaluate.bootstrap import rescaled_replicates, t_variance

    rng = np.random.default_rng(6)
    n = 40
    x = rng.normal(0.1, 0.2, n)
    w = rng.uniform(0.5, 2, n)
    strata = np.arange(n) % 3
    fixed = np.zeros(n, dtype=bool)
    fixed[:5] = True
    total = w.sum()
    reps = rescaled_replicates(x, weights=w, strata=strata, fixed=fixed, resamples=40000, seed=1, total=total)
    var, df = t_variance((w * x / total)[~fixed], strata=strata[~fixed])
    assert np.var(reps) == pytest.approx(var, rel=0.03) and df == n - 5 - 3
    assert np.mean(reps) == pytest.approx(float((w * x).sum() / total), abs=3 * np.sqrt(var / 40000) + 1e-4)


def _design_draws(tmp_path, weighting, draws, head="certain", unrelated=False):
    """``draws`` samples of 100 of the Zipf log's 5,700 queries, each compared with the traffic
    weighting: (estimates, intervals, verdicts) for a difference related to traffic (or, with
    ``unrelated``, one that is not: 0.03 + N(0, 0.1))."""
    path, value, truth = zipf_log(tmp_path / "log.csv")
    if unrelated:
        rng = np.random.default_rng(14)
        traffic = np.maximum(1, np.round(20000 / np.arange(1, 5701))).astype(int)
        other = np.clip(0.03 + rng.normal(0, 0.1, 5700), -1, 1)
        value = {f"query number {i}": float(v) for i, v in enumerate(other)}
        truth = float((traffic * other).sum() / traffic.sum())
    est, iv, verdicts = [], [], []
    for seed in range(draws):
        rows = sample_queries(path, query_col="query", count_col="n", strata=["market"], size=100, floor=5,
                              seed=seed, weighting=weighting, head=head).rows
        recs = records(rows)
        qids = sorted(recs)
        a = qs("A", dict.fromkeys(qids, 0.0))
        b = qs("B", {q: value[recs[q].text] for q in qids})
        c = compare(pair_scores(a, b), queries=recs, weighting="traffic", resamples=100, seed=seed)
        est.append(c.delta)
        iv.append((c.low, c.high))
        verdicts.append(c.verdict)
    return np.array(est), np.array(iv), verdicts, truth


@pytest.mark.slow
def test_traffic_design_interval_covers_and_is_as_wide_as_the_real_spread(tmp_path):
    # The issue: the half-width was 0.141-0.146 for a real sd of 0.0132 (coverage 1.000), because
    # the ~19 queries taken with certainty were resampled. bench/bench_intervals.py design: 1,000 draws.
    est, iv, verdicts, truth = _design_draws(tmp_path, "traffic", 200)
    coverage = np.mean((iv[:, 0] <= truth) & (truth <= iv[:, 1]))
    ratio = np.mean((iv[:, 1] - iv[:, 0]) / 2) / (1.96 * np.std(est, ddof=1))
    assert 0.91 <= coverage <= 0.99, coverage
    assert 1 / 1.3 <= ratio <= 1.3, ratio
    assert not any(v.startswith("no trustworthy") for v in verdicts)


@pytest.mark.slow
@pytest.mark.parametrize("unrelated", [False, True], ids=["related", "unrelated"])
def test_uniform_design_interval_covers_and_is_as_wide_as_the_real_spread(tmp_path, unrelated):
    # The head taken whole, the tail drawn alike: the tail not drawn predicted by a regression on log
    # traffic, with the model's prediction variance. bench/bench_intervals.py design: 1,000 draws.
    est, iv, verdicts, truth = _design_draws(tmp_path, "uniform", 300, unrelated=unrelated)
    coverage = np.mean((iv[:, 0] <= truth) & (truth <= iv[:, 1]))
    ratio = np.mean((iv[:, 1] - iv[:, 0]) / 2) / (1.96 * np.std(est, ddof=1))
    assert 0.93 <= coverage <= 0.97, coverage
    assert 1 / 1.3 <= ratio <= 1.3, ratio
    assert not any(v.startswith("no trustworthy") for v in verdicts)


@pytest.mark.slow
def test_uniform_draws_that_leave_the_head_to_chance_get_no_trusted_interval(tmp_path):
    # Whether a head query is drawn decides the traffic-weighted estimate: intervals covered
    # 43-61%. The verdict itself says no interval can be trusted.
    est, iv, verdicts, truth = _design_draws(tmp_path, "uniform", 30, head="drawn")
    assert all(v == "no trustworthy interval: the traffic weights are too unequal" for v in verdicts)


def test_user_weighted_means_hold_certainty_units_fixed_too():
    # --unit user --weighting traffic: the same sampled queries, weighted by their user mass; the
    # queries taken with certainty add no variance to the user-weighted mean either.
    rng = np.random.default_rng(12)
    rows = _pps_rows(rng)
    for r in rows:
        r["user_weight"] = r["weight"] * rng.uniform(0.5, 1.5)
        r["stratum_user_share"] = 0.5
    recs = records(rows)
    qids = sorted(recs)
    d = rng.normal(0.02, 0.1, len(qids))
    a = qs("A", dict.fromkeys(qids, 0.0))
    widths = []
    for shift in (0.0, 0.7):
        d2 = d.copy()
        d2[:4] += shift
        c = compare(pair_scores(a, qs("B", dict(zip(qids, d2)))), queries=recs, weighting="traffic", unit="user",
                    resamples=500)
        widths.append(c.high - c.low)
    assert widths[0] == pytest.approx(widths[1], rel=1e-12)


def test_weights_unequal_only_between_strata_still_give_a_verdict():
    # Ten strata of 20 queries each (a floor), one carrying 90% of the traffic: the weights differ
    # twentyfold between strata but not within one; a stratified estimate loses nothing to that.
    from curation.evaluate.stats import VERDICT_UNTRUSTED, weight_trouble

    shares = [0.9] + [0.1 / 9] * 9
    rows = [{"qid": f"s{h}q{i}", "text": f"s{h}q{i}", "stratum": {"m": str(h)}, "traffic": 5,
             "inclusion": 0.1, "weight": shares[h] / 20, "stratum_share": shares[h], "stratum_drawn": 20}
            for h in range(10) for i in range(20)]
    recs = records(rows)
    qids = sorted(recs)
    rng = np.random.default_rng(0)
    a = qs("A", dict.fromkeys(qids, 0.0))
    c = compare(pair_scores(a, qs("B", {q: 0.05 + rng.normal(0, 0.05) for q in qids})), queries=recs,
                weighting="traffic", resamples=200)
    assert c.verdict == "B better"
    # the same weights spread unequally within a stratum are refused
    w = np.array([0.9 / 20] * 19 + [3.0])
    assert "Kish" in weight_trouble(w, np.ones(20, dtype=bool), total=None)
    assert VERDICT_UNTRUSTED.startswith("no trustworthy interval")


def test_per_stratum_intervals_follow_the_same_t_rule():
    from scipy import stats as sps

    rows = [{"qid": f"q{i:02d}", "text": f"t{i}", "stratum": {"m": "us" if i < 12 else "de"}} for i in range(20)]
    recs = records(rows)
    rng = np.random.default_rng(7)
    d = rng.normal(0.03, 0.1, 20)
    qids = sorted(recs)
    c = compare(pair_scores(qs("A", dict.fromkeys(qids, 0.0)), qs("B", dict(zip(qids, d)))), queries=recs,
                weighting="stratum", resamples=200)
    for s in c.strata:
        x = np.array([dv for q, dv in zip(qids, d) if recs[q].stratum["m"] == s.label.split("=")[1]])
        ci = sps.ttest_1samp(x, 0).confidence_interval(0.95)
        assert (s.low, s.high) == pytest.approx((ci.low, ci.high), rel=1e-10)
