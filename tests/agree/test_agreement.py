"""Agreement figures against scikit-learn's cohen_kappa_score and the krippendorff package, on real
double-judged qrels and on generated label sets (degenerate ones included)."""

from __future__ import annotations

import json
import warnings
from collections import defaultdict
from datetime import UTC, datetime, timedelta

import krippendorff
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score

from curation.agree.agreement import agreement_report, drift, judge_timing, read_verdict
from curation.agree.labels import Label, latest_labels
from curation.agree.measures import cohen_kappa, compare_all, compare_pair
from curation.agree.settings import Thresholds

TOL = 1e-9


def _read_groups(path):
    """{group: {(qid, docid): grade}} read here with str.split, independently of curation.formats.qrels."""
    groups = defaultdict(dict)
    with open(path) as fh:
        for line in fh:
            if line.strip():
                qid, group, docid, grade = line.split()
                groups[group][(qid, docid)] = int(grade)
    return groups


def _lib_kappa(y1, y2, labels, weights=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cohen_kappa_score(y1, y2, labels=labels, weights=weights)


def _lib_alpha(data, domain, level):
    """krippendorff.alpha, or None where the package says it is undefined (raises or NaN)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            v = krippendorff.alpha(reliability_data=np.asarray(data, dtype=float), value_domain=domain,
                                   level_of_measurement=level)
    except ValueError:
        return None
    return None if not np.isfinite(v) else float(v)


def _check_pair_against_libraries(a: dict, b: dict, comparison, scale, cut):
    units = sorted(set(a) & set(b))
    y1 = [a[u] for u in units]
    y2 = [b[u] for u in units]
    assert comparison.pairs == len(units)
    m = comparison.measures
    assert abs(m["agreement"].value - np.mean(np.array(y1) == np.array(y2))) < TOL
    assert abs(m["kappa"].value - _lib_kappa(y1, y2, scale)) < TOL
    assert abs(m["kappa_linear"].value - _lib_kappa(y1, y2, scale, "linear")) < TOL
    assert abs(m["kappa_quadratic"].value - _lib_kappa(y1, y2, scale, "quadratic")) < TOL
    assert abs(m["alpha_nominal"].value - _lib_alpha([y1, y2], scale, "nominal")) < TOL
    assert abs(m["alpha_ordinal"].value - _lib_alpha([y1, y2], scale, "ordinal")) < TOL
    assert abs(m["alpha_interval"].value - _lib_alpha([y1, y2], scale, "interval")) < TOL
    b1 = [int(g >= cut) for g in y1]
    b2 = [int(g >= cut) for g in y2]
    assert abs(comparison.binary["agreement"].value - np.mean(np.array(b1) == np.array(b2))) < TOL
    assert abs(comparison.binary["kappa"].value - _lib_kappa(b1, b2, [0, 1])) < TOL
    assert abs(comparison.binary["alpha_nominal"].value - _lib_alpha([b1, b2], [0, 1], "nominal")) < TOL
    # The confusion matrix is sklearn's, rows = first judge.
    from sklearn.metrics import confusion_matrix

    assert comparison.confusion == confusion_matrix(y1, y2, labels=scale).tolist()


def _records(groups: dict) -> list[Label]:
    return [Label(q, d, f"group{g}", grade) for g, labels in groups.items() for (q, d), grade in labels.items()]


def test_qrels_123_judgment_groups_match_sklearn_and_krippendorff(shared):
    groups = _read_groups(shared("trec_eval_tests", "qrels.123"))
    assert sorted(groups) == ["0", "1", "2"]
    grades = {g for labels in groups.values() for g in labels.values()}
    scale = list(range(min(grades), max(grades) + 1))  # -1..6: weights are grade distances
    report = agreement_report(_records(groups), cut=1, resamples=200, seed=7)
    assert report.scale == scale
    assert len(report.pairwise) == 3
    for c in report.pairwise:
        ga, gb = (j.removeprefix("group") for j in c.judges)
        _check_pair_against_libraries(groups[ga], groups[gb], c, scale, 1)
        for est in list(c.measures.values()) + list(c.binary.values()):
            assert est.low <= est.high
    # All three groups together, missing labels allowed (group 2 judged fewer pairs).
    units = sorted(set().union(*groups.values()))
    data = [[groups[g].get(u, np.nan) for u in units] for g in ("0", "1", "2")]
    overall = report.overall
    assert overall.pairs == sum(sum(u in groups[g] for g in groups) >= 2 for u in units)
    assert abs(overall.measures["alpha_nominal"].value - _lib_alpha(data, scale, "nominal")) < TOL
    assert abs(overall.measures["alpha_ordinal"].value - _lib_alpha(data, scale, "ordinal")) < TOL
    assert abs(overall.measures["alpha_interval"].value - _lib_alpha(data, scale, "interval")) < TOL
    bdata = [[np.nan if np.isnan(x) else float(x >= 1) for x in row] for row in data]
    assert abs(overall.binary["alpha_nominal"].value - _lib_alpha(bdata, [0, 1], "nominal")) < TOL
    shared_units = [u for u in units if sum(u in groups[g] for g in groups) >= 2]
    unanimous = sum(len({groups[g][u] for g in groups if u in groups[g]}) == 1 for u in shared_units)
    assert abs(overall.measures["agreement"].value - unanimous / len(shared_units)) < TOL
    assert overall.measures["kappa"].value is None and "two judges" in overall.measures["kappa"].undefined
    # qrels.123 has three queries: the interval is flagged as rough.
    assert "only 3 queries" in overall.measures["alpha_nominal"].interval_note


@pytest.mark.slow
def test_robust03_two_assessments_match_libraries(shared):
    qrels = shared("robust03", "qrels")
    a = _read_groups(qrels / "robust03_qrels.txt")["0"]
    b = _read_groups(qrels / "mod_robust03_qrels.txt")["0"]
    recs = [Label(q, d, "nist", g) for (q, d), g in a.items()] + [
        Label(q, d, "modified", g) for (q, d), g in b.items()
    ]
    c = compare_pair(latest_labels(recs), "modified", "nist", scale=[0, 1, 2], cut=1, resamples=200, seed=1)
    _check_pair_against_libraries(b, a, c, [0, 1, 2], 1)
    assert c.queries == 100
    # The two files differ on 10 pairs out of 128,796 (hand count: every difference is 0 vs 1).
    assert c.pairs - round(c.measures["agreement"].value * c.pairs) == 10


def _resampled_library_interval(units, y1, y2, seed, resamples, measure):
    """The percentile interval recomputed with the libraries on explicitly resampled data: queries
    sorted as strings, drawn by numpy's default_rng(seed).integers(0, Q, (B, Q))."""
    qids = sorted({u[0] for u in units})
    by_q = defaultdict(list)
    for i, u in enumerate(units):
        by_q[u[0]].append(i)
    draws = np.random.default_rng(seed).integers(0, len(qids), size=(resamples, len(qids)))
    vals = []
    for row in draws:
        idx = [i for q in row for i in by_q[qids[q]]]
        r1, r2 = [y1[i] for i in idx], [y2[i] for i in idx]
        if measure == "kappa_quadratic":
            vals.append(_lib_kappa(r1, r2, [0, 1, 2, 3], "quadratic"))
        elif measure == "kappa":
            vals.append(_lib_kappa(r1, r2, [0, 1, 2, 3]))
        else:
            vals.append(_lib_alpha([r1, r2], [0, 1, 2, 3], measure.removeprefix("alpha_")))
    vals = np.array([np.nan if v is None else v for v in vals], dtype=float)
    vals = vals[~np.isnan(vals)]
    return np.quantile(vals, [0.025, 0.975])


def test_bootstrap_resamples_queries_and_matches_libraries_on_each_resample():
    rng = np.random.default_rng(3)
    recs, units, y1, y2 = [], [], [], []
    for q in range(25):
        bias = rng.integers(0, 2)  # queries differ, so resampling queries matters
        for d in range(rng.integers(2, 9)):
            g1 = int(rng.integers(0, 4))
            g2 = int(np.clip(g1 + rng.integers(-1, 2) + bias, 0, 3))
            u = (f"q{q}", f"d{d}")
            units.append(u), y1.append(g1), y2.append(g2)
            recs += [Label(*u, "a", g1), Label(*u, "b", g2)]
    order = sorted(range(len(units)), key=lambda i: units[i])
    units, y1, y2 = [units[i] for i in order], [y1[i] for i in order], [y2[i] for i in order]
    c = compare_pair(latest_labels(recs), "a", "b", scale=[0, 1, 2, 3], cut=2, resamples=60, seed=11)
    for name in ("kappa", "kappa_quadratic", "alpha_nominal", "alpha_ordinal", "alpha_interval"):
        low, high = _resampled_library_interval(units, y1, y2, 11, 60, name)
        assert abs(c.measures[name].low - low) < TOL, name
        assert abs(c.measures[name].high - high) < TOL, name
    again = compare_pair(latest_labels(recs), "a", "b", scale=[0, 1, 2, 3], cut=2, resamples=60, seed=11)
    assert again == c  # seeded: the same intervals
    other = compare_pair(latest_labels(recs), "a", "b", scale=[0, 1, 2, 3], cut=2, resamples=60, seed=12)
    assert other.measures["kappa"].low != c.measures["kappa"].low


def test_kappa_by_hand():
    # po = 3/4; judge 1: two 0s, two 1s; judge 2: three 0s, one 1 -> pe = .5*.75 + .5*.25 = .5; k = .5
    assert cohen_kappa([0, 1, 1, 0], [0, 1, 0, 0], scale=[0, 1]).value == pytest.approx(0.5, abs=TOL)


def test_degenerate_inputs_are_undefined_with_a_reason_not_nan():
    # No overlap at all.
    recs = [Label("q1", "d1", "a", 1), Label("q1", "d2", "b", 0)]
    r = agreement_report(recs, scale=[0, 1, 2])
    c = r.pairwise[0]
    assert c.pairs == 0
    for est in c.measures.values():
        assert est.value is None and est.undefined
    assert r.verdict.band == "undefined"
    assert "golden judging assign" in " ".join(r.notes)
    json.dumps(r.as_dict(), allow_nan=False)
    # Both judges give the same single grade everywhere: kappa and alpha undefined.
    recs = [Label(f"q{i}", "d", j, 0) for i in range(5) for j in "ab"]
    c = agreement_report(recs, scale=[0, 1]).pairwise[0]
    assert c.measures["agreement"].value == 1.0
    assert "chance agreement is 1" in c.measures["kappa"].undefined
    assert "no variation" in c.measures["alpha_nominal"].undefined
    # One judge gives one grade everywhere: kappa is 0 (as sklearn says) and flagged.
    recs = [Label(f"q{i}", "d", "a", 0) for i in range(6)] + [Label(f"q{i}", "d", "b", i % 3) for i in range(6)]
    c = agreement_report(recs, scale=[0, 1, 2]).pairwise[0]
    assert abs(c.measures["kappa"].value - _lib_kappa([0] * 6, [i % 3 for i in range(6)], [0, 1, 2])) < TOL
    assert "whatever the other judge does" in c.measures["kappa"].note
    # A single pair: no interval (one query), a clear reason.
    c = agreement_report([Label("q", "d", "a", 1), Label("q", "d", "b", 2)], scale=[0, 1, 2]).pairwise[0]
    assert c.pairs == 1
    assert c.measures["agreement"].value == 0.0
    assert c.measures["kappa"].low is None and "one query" in c.measures["kappa"].interval_note
    # No labels at all, and one judge only.
    assert agreement_report([]).verdict.band == "undefined"
    one = agreement_report([Label("q", "d", "a", 1)])
    assert one.pairwise == [] and one.overall.measures["agreement"].value is None


def test_latest_label_counts_and_skips_are_ignored():
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    recs = [
        Label("q", "d", "a", 0, t0),
        Label("q", "d", "a", 2, t0 + timedelta(seconds=5)),  # changed: the latest counts
        Label("q", "d", "a", None, t0 + timedelta(seconds=9)),  # a skip after it: ignored
        Label("q", "d", "b", 2, t0),
    ]
    labels = latest_labels(recs)
    assert labels[("q", "d")]["a"].grade == 2
    assert agreement_report(recs, scale=[0, 1, 2]).overall.measures["agreement"].value == 1.0


def test_verdict_bands_and_thresholds():
    def comp(agree, n=100):
        recs = []
        for i in range(n):
            recs += [Label(f"q{i % 10}", f"d{i}", "a", 1), Label(f"q{i % 10}", f"d{i}", "b", 1 if i < agree else 0)]
        return compare_all(latest_labels(recs), ["a", "b"], scale=[0, 1], cut=1, resamples=0)

    assert read_verdict(comp(75), on="graded").band == "usable"
    assert read_verdict(comp(65), on="graded").band == "marginal"
    v = read_verdict(comp(55), on="graded")
    assert v.band == "not usable" and "more queries will not fix it" in v.message
    assert v.thresholds == Thresholds()
    strict = Thresholds(usable=0.8, marginal=0.7)
    assert read_verdict(comp(75), on="graded", thresholds=strict).band == "marginal"
    assert read_verdict(comp(20, n=20), on="graded").band == "too few pairs"
    with pytest.raises(ValueError, match="thresholds"):
        Thresholds(usable=0.5, marginal=0.6)
    # 90% agreement that chance explains: judge a calls everything relevant, b nearly everything.
    recs = []
    for i in range(100):
        recs += [Label(f"q{i % 10}", f"d{i}", "a", 1), Label(f"q{i % 10}", f"d{i}", "b", 0 if i % 10 == 0 else 1)]
    c = compare_all(latest_labels(recs), ["a", "b"], scale=[0, 1], cut=1, resamples=0)
    v = read_verdict(c, on="graded")
    assert v.band == "usable" and v.value == pytest.approx(0.9)
    assert "beyond chance the judges hardly agree" in v.caveat
    assert read_verdict(comp(75), on="graded").caveat  # comp's judge a gives one grade only: chance again
    balanced = []
    for i in range(100):
        g = i % 2
        balanced += [Label(f"q{i % 10}", f"d{i}", "a", g), Label(f"q{i % 10}", f"d{i}", "b", g if i % 10 else 1 - g)]
    v = read_verdict(compare_all(latest_labels(balanced), ["a", "b"], scale=[0, 1], cut=1, resamples=0), on="graded")
    assert v.band == "usable" and v.caveat is None


def test_cut_must_split_the_scale():
    with pytest.raises(ValueError, match="^cut"):
        agreement_report([Label("q", "d", "a", 1)], scale=[0, 1, 2], cut=0)
    with pytest.raises(ValueError, match="^judgments"):
        agreement_report([Label("q", "d", "a", 5)], scale=[0, 1, 2])


def test_default_cut_follows_the_scale():
    recs = [Label("q", "d", "a", 3), Label("q", "d", "b", 2)]
    # 1 splits 0-1, 0-2, 0-3 (TREC's grade >= 1); on 1-3 it would make every grade relevant: 2 then.
    for scale, cut in (([0, 1], 1), ([0, 1, 2], 1), ([0, 1, 2, 3], 1), ([1, 2, 3], 2), ([2, 3, 4], 3)):
        report = agreement_report(recs if scale[-1] >= 3 else [], scale=scale, resamples=0)
        assert (report.scale, report.cut) == (scale, cut)
    # 1-3: the two labels are both relevant at grade >= 2, so they agree on the binary scale.
    assert agreement_report(recs, scale=[1, 2, 3], resamples=0).overall.binary["agreement"].value == 1.0
    # No scale given: every integer from 0 (or the lowest grade) to the highest, cut 1 as before.
    report = agreement_report(recs, resamples=0)
    assert (report.scale, report.cut) == ([0, 1, 2, 3], 1)


def test_drift_is_rolling_agreement_in_judging_order():
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    recs = []
    for i in range(20):  # first ten pairs agree, the last ten do not
        t = t0 + timedelta(minutes=i)
        recs += [Label("q", f"d{i}", "a", 1, t), Label("q", f"d{i}", "b", 1 if i < 10 else 0, t)]
    points = drift(latest_labels(list(reversed(recs))), ["a", "b"], window=10)
    assert [p.index for p in points] == list(range(1, 21))
    assert points[9].agreement == 1.0 and points[19].agreement == 0.0
    assert points[14].agreement == pytest.approx(0.5) and points[19].cumulative == pytest.approx(0.5)


def test_timing_median_and_fast_share():
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    secs = [1.0, 1.5, 3.0, 10.0]
    recs = [Label("q", f"d{i}", "a", 1, t0 + timedelta(seconds=s), t0) for i, s in enumerate(secs)]
    (t,) = judge_timing(recs)
    assert t.median_seconds == pytest.approx(2.25) and t.share_under_2s == pytest.approx(0.5)


@st.composite
def label_sets(draw):
    """2-4 judges, grades 0-3, labels missing at random; sometimes one judge with one grade only."""
    n_judges = draw(st.integers(2, 4))
    n_units = draw(st.integers(0, 30))
    n_queries = draw(st.integers(1, 6))
    constant = draw(st.booleans())
    recs = []
    for u in range(n_units):
        q = f"q{draw(st.integers(0, n_queries - 1))}"
        for j in range(n_judges):
            if draw(st.integers(0, 3)) == 0:
                continue  # missing
            grade = 0 if (constant and j == 0) else draw(st.integers(0, 3))
            recs.append(Label(q, f"d{u}", f"j{j}", grade))
    return recs


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(label_sets())
def test_generated_label_sets_match_libraries(recs):
    scale = [0, 1, 2, 3]
    report = agreement_report(recs, scale=scale, cut=2, resamples=20, seed=0)
    json.dumps(report.as_dict(), allow_nan=False)  # never a NaN
    labels = latest_labels(recs)
    for c in report.pairwise:
        a, b = c.judges
        units = sorted(u for u in labels if a in labels[u] and b in labels[u])
        y1 = [labels[u][a].grade for u in units]
        y2 = [labels[u][b].grade for u in units]
        for name, w in (("kappa", None), ("kappa_linear", "linear"), ("kappa_quadratic", "quadratic")):
            est = c.measures[name]
            lib = _lib_kappa(y1, y2, scale, w) if units else float("nan")
            if np.isnan(lib):
                assert est.value is None and est.undefined
            else:
                assert abs(est.value - lib) < TOL
        for level in ("nominal", "ordinal"):
            est = c.measures[f"alpha_{level}"]
            lib = _lib_alpha([y1, y2], scale, level) if units else None
            if lib is None:
                assert est.value is None and est.undefined
            else:
                assert abs(est.value - lib) < TOL
        for est in c.measures.values():
            if est.low is not None:
                assert est.low <= est.high
    units = sorted(labels)
    judges = report.judges
    if len(judges) >= 2 and units:
        data = [[labels[u][j].grade if j in labels[u] else np.nan for u in units] for j in judges]
        for level in ("nominal", "ordinal"):
            est = report.overall.measures[f"alpha_{level}"]
            lib = _lib_alpha(data, scale, level)
            if lib is None:
                assert est.value is None and est.undefined
            else:
                assert abs(est.value - lib) < TOL


def test_interval_alpha_reads_grades_as_numbers_and_equals_krippendorff():
    # Grades 0, 1, 2, 10 (a numeric scale with a gap): the interval alpha weighs 0 vs 10 a hundred
    # times 0 vs 1, so it differs from the ordinal one; both equal the krippendorff package.
    rng = np.random.default_rng(5)
    scale = [0, 1, 2, 10]
    recs, y = [], {"a": {}, "b": {}, "c": {}}
    for q in range(12):
        for d in range(5):
            base = int(rng.integers(0, 4))
            for j in y:
                if j == "c" and d % 2:
                    continue  # judge c leaves pairs out: missing labels
                g = scale[int(np.clip(base + rng.integers(-1, 2), 0, 3))]
                y[j][(f"q{q}", f"d{d}")] = g
                recs.append(Label(f"q{q}", f"d{d}", j, g))
    labels = latest_labels(recs)
    c = compare_pair(labels, "a", "b", scale=scale, cut=2, resamples=50, seed=1)
    units = sorted(y["a"])
    lib = _lib_alpha([[y["a"][u] for u in units], [y["b"][u] for u in units]], scale, "interval")
    assert abs(c.measures["alpha_interval"].value - lib) < TOL
    assert abs(c.measures["alpha_interval"].value - c.measures["alpha_ordinal"].value) > 0.01
    assert c.measures["alpha_interval"].low <= c.measures["alpha_interval"].value <= c.measures["alpha_interval"].high
    overall = compare_all(labels, ["a", "b", "c"], scale=scale, cut=2, resamples=50, seed=1)
    data = [[y[j].get(u, np.nan) for u in units] for j in ("a", "b", "c")]
    assert abs(overall.measures["alpha_interval"].value - _lib_alpha(data, scale, "interval")) < TOL
    # on a binary scale the interval alpha is the nominal one: not repeated
    assert "alpha_interval" not in compare_pair(labels, "a", "b", scale=[0, 1, 2, 10], cut=2).binary


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_kappa_is_sklearns_float_to_the_last_bit(weights):
    # golden computes Cohen's kappa itself (scikit-learn costs ~2 s of imports in `golden export create`), in
    # the steps sklearn's cohen_kappa_score takes: the two agree exactly, not within a tolerance, on
    # scales of 2-5 grades (some unused), small and large samples, one-sided and degenerate ones.
    rng = np.random.default_rng(17)
    checked = 0
    for _ in range(400):
        k = int(rng.integers(2, 6))
        scale = sorted(rng.choice(np.arange(-1, 7), size=k, replace=False).tolist())
        n = int(rng.choice([1, 2, 5, 30, 1000, 20000]))
        used = scale if rng.random() < 0.7 else scale[: max(1, k - 2)]
        y1 = rng.choice(used, size=n)
        y2 = np.where(rng.random(n) < rng.random(), y1, rng.choice(used, size=n))
        ours = cohen_kappa(y1, y2, scale=scale, weights=weights)
        lib = _lib_kappa(y1, y2, scale, weights)
        if ours.defined:
            assert ours.value == float(lib), (scale, n)
            checked += 1
        else:
            assert lib is None or not np.isfinite(lib) or len(set(y1) | set(y2)) == 1
    assert checked > 200
