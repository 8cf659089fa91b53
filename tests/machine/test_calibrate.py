"""``golden labels calibrate`` on machine judges derived from the robust03 qrels (the humans' labels): the
agreement figures equal scikit-learn's and krippendorff's on the same pairs, each planted bias is
flagged by the check built for it and by no other (a clean machine passes them all), repeats and
probabilities are measured as the peer libraries measure them, prompt versions are compared with
the older one marked stale, and fewer than 30 compared pairs give "not enough pairs"."""

from __future__ import annotations

import json
from collections import Counter

import krippendorff
import numpy as np
import pytest
from click.testing import CliRunner
from sklearn.calibration import calibration_curve
from sklearn.metrics import brier_score_loss, cohen_kappa_score

from curation.cli import main
from curation.machine.calibrate import build_calibration_report
from curation.machine.labels import import_machine_labels
from curation.store.engine import session as new_session
from curation.store.projects import get_project
from tests.conftest import shared_path
from tests.support.machine import LENIENT_RUN, machine_rows, robust_project, write_machine
from tests.support.projects import sqlite_store

KINDS = ("clean", "long", "lenient", "flips")
PLANTED = {"clean": [], "long": ["length"], "lenient": ["run"], "flips": ["repeats"]}


@pytest.fixture(scope="module")
def robust(tmp_path_factory):
    """A SQLite store holding the robust03 project and the four simulated machines (module-wide: the
    checks read it only)."""
    folder = tmp_path_factory.mktemp("robust")
    with sqlite_store(folder) as (url, engine):
        truth, facts = robust_project(engine, shared_path, folder)
        rows = {}
        for kind in KINDS:
            rows[kind] = machine_rows(truth, facts, kind)
            with new_session(engine) as s:
                import_machine_labels(s, write_machine(folder / f"{kind}.jsonl", rows[kind]), machine=kind,
                                      project="r3")
        reports = {}
        with new_session(engine) as s:
            proj = get_project(s, "r3")
            for kind in KINDS:
                reports[kind] = build_calibration_report(s, proj, kind)
        yield dict(url=url, engine=engine, truth=truth, facts=facts, rows=rows, reports=reports, folder=folder)


def majority_of(rows, k=None):
    """The majority label of each pair's samples, computed here from the rows the test wrote."""
    by = {}
    for r in rows:
        by.setdefault((r["qid"], r["docid"]), []).append((r["sample"], r["grade"]))
    out = {}
    for u, s in by.items():
        s = sorted(s)[:k] if k else sorted(s)
        c = Counter(g for _, g in s)
        top = max(c.values())
        out[u] = next(g for _, g in s if c[g] == top)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_agreement_figures_equal_sklearn_and_krippendorff(robust, kind):
    rep = robust["reports"][kind]
    truth = robust["truth"]
    machine = majority_of(robust["rows"][kind])
    units = sorted(truth)
    h = np.array([truth[u] for u in units])
    m = np.array([machine[u] for u in units])
    assert rep.pairs == len(units)
    meas = rep.agreement.measures
    assert meas["agreement"].value == pytest.approx((h == m).mean())
    assert rep.headline["exact"].value == pytest.approx((h == m).mean())
    assert rep.headline["within_one"].value == pytest.approx((np.abs(h - m) <= 1).mean())
    assert rep.headline["signed"].value == pytest.approx((m - h).mean())
    for key, w in (("kappa", None), ("kappa_linear", "linear"), ("kappa_quadratic", "quadratic")):
        assert meas[key].value == pytest.approx(cohen_kappa_score(h, m, labels=[0, 1, 2], weights=w))
    for key, level in (("alpha_nominal", "nominal"), ("alpha_ordinal", "ordinal")):
        expected = krippendorff.alpha(reliability_data=np.vstack([h, m]).astype(float), level_of_measurement=level,
                                      value_domain=[0, 1, 2])
        assert meas[key].value == pytest.approx(expected)
    for est in (meas["agreement"], rep.headline["signed"]):
        assert est.low <= est.value <= est.high
    confusion = np.zeros((3, 3), dtype=int)
    np.add.at(confusion, (h, m), 1)
    assert rep.confusion == confusion.tolist()
    assert rep.signed == dict(sorted(Counter((m - h).tolist()).items()))


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_each_planted_bias_is_flagged_by_its_own_check_only(robust, kind):
    rep = robust["reports"][kind]
    assert rep.failed_checks == PLANTED[kind], [(c.key, c.finding) for c in rep.bias]
    checks = {c.key: c for c in rep.bias}
    if kind == "long":
        assert "more lenient on longer documents" in checks["length"].finding
    if kind == "lenient":
        flagged = [g.name for g in checks["run"].groups if g.flagged]
        assert LENIENT_RUN in checks["run"].finding and LENIENT_RUN in flagged
    assert rep.verdict.rule and rep.verdict.band in (
        "as consistent as a second person", "probably less consistent", "less consistent than a second person")


@pytest.mark.slow
def test_the_clean_machine_reads_as_a_second_person_and_the_biased_ones_lean(robust):
    reps = robust["reports"]
    assert reps["clean"].verdict.band == "as consistent as a second person"
    assert reps["lenient"].lean == "more lenient than the humans"
    assert reps["long"].lean == "more lenient than the humans"
    hh = reps["clean"].human_human
    assert hh is not None and hh.pairs == 150


@pytest.mark.slow
def test_repeat_consistency_against_a_hand_count(robust):
    rows = robust["rows"]["flips"]
    truth = robust["truth"]
    rep = robust["reports"]["flips"].repeats
    by = {}
    for r in rows:
        by.setdefault((r["qid"], r["docid"]), set()).add(r["grade"])
    changed = sum(len(g) > 1 for g in by.values()) / len(by)
    assert rep.changed.value == pytest.approx(changed) and rep.flagged
    for entry in rep.majority_of_k:
        if entry["k"] == 5:
            assert entry["agreement"] is None and entry["pairs"] == 0
            continue
        m = majority_of(rows, entry["k"])
        assert entry["agreement"].value == pytest.approx(np.mean([m[u] == truth[u] for u in truth]))
    assert not robust["reports"]["clean"].repeats.flagged
    assert robust["reports"]["clean"].repeats.changed.value == 0


@pytest.mark.slow
def test_probabilities_are_scored_by_sklearn(robust):
    rows = robust["rows"]["long"]
    truth = robust["truth"]
    rep = robust["reports"]["long"].probabilities
    m = majority_of(rows)
    conf = {}
    for r in rows:
        conf.setdefault((r["qid"], r["docid"]), []).append(r["probability"][str(r["grade"])])
    units = sorted(truth)
    y = np.array([m[u] == truth[u] for u in units], dtype=int)
    p = np.array([np.mean(conf[u]) for u in units])
    assert rep.brier == pytest.approx(brier_score_loss(y, p))
    prob_true, prob_pred = calibration_curve(y, p, n_bins=10)
    assert [b["observed"] for b in rep.reliability] == pytest.approx(prob_true.tolist())
    assert [b["predicted"] for b in rep.reliability] == pytest.approx(prob_pred.tolist())
    top = next(b for b in rep.bands if b["low"] == 0.9)
    accepted = p >= 0.9 - 1e-9
    assert top["accepted_pairs"] == int(accepted.sum())
    assert top["accepted_agreement"].value == pytest.approx(y[accepted].mean())
    assert top["to_people"] == len(units) - int(accepted.sum())


@pytest.mark.slow
def test_calibrate_cli_text_json_and_html(robust, tmp_path):
    runner = CliRunner()
    res = runner.invoke(main, ["labels", "calibrate", "--machine", "long", "--db", robust["url"], "--html",
                               str(tmp_path / "r.html")])
    assert res.exit_code == 0, res.output
    assert "[FLAG] Document length" in res.output and "failed checks: length" in res.output
    assert "no check could run" not in res.output
    assert "humans vs humans (overlap set, 150 pairs)" in res.output
    html = (tmp_path / "r.html").read_text()
    assert 'data-testid="check-length" class="flagged"' in html
    res = runner.invoke(main, ["labels", "calibrate", "--machine", "lenient", "--json", "--db", robust["url"]])
    d = json.loads(res.output)
    assert d["kind"] == "machine" and d["failed_checks"] == ["run"]
    assert "length" in d["checks_run"] and d["checks_summary"].startswith("failed checks: run")
    assert d["bias_checks"][0]["key"] == "length" and d["human_human"]["pairs"] == 150
    # the text shows each tested group's contrast, the figure the flag stands on
    run = next(g for c in d["bias_checks"] if c["key"] == "run" for g in c["groups"] if g["name"] == LENIENT_RUN)
    res = runner.invoke(main, ["labels", "calibrate", "--machine", "lenient", "--db", robust["url"]])
    line = next(ln for ln in res.output.splitlines() if ln.strip().startswith(LENIENT_RUN[:34]))
    assert f"contrast {run['contrast']['value']:+.3f}" in line and line.endswith("<- flagged"), line
    res = runner.invoke(main, ["labels", "calibrate", "--machine", "nobody", "--db", robust["url"]])
    assert res.exit_code == 1 and "no machine judge 'nobody'" in res.output


@pytest.mark.slow
def test_prompt_versions_are_compared_on_shared_pairs_and_the_older_marked_stale(robust, tmp_path):
    truth, facts = robust["truth"], robust["facts"]
    v1 = machine_rows(truth, facts, "long", prompt_version="p1", seed=8)
    some = sorted(truth)[:400]
    v2 = [r for r in machine_rows(truth, facts, "clean", prompt_version="p2", seed=9)
          if (r["qid"], r["docid"]) in set(some)]
    with new_session(robust["engine"]) as s:
        import_machine_labels(s, write_machine(tmp_path / "v1.jsonl", v1), machine="versioned", project="r3")
        import_machine_labels(s, write_machine(tmp_path / "v2.jsonl", v2), machine="versioned", project="r3")
        rep = build_calibration_report(s, get_project(s, "r3"), "versioned", ranking=False)
    assert rep.prompt_version == "p2" and rep.pairs == 400
    old, new = rep.versions
    assert (old.version, old.stale, new.version, new.stale) == ("p1", True, "p2", False)
    assert old.pairs == len(truth) and old.shared == 400
    m1, m2 = majority_of(v1), majority_of(v2)
    assert old.same_as_current.value == pytest.approx(np.mean([m1[u] == m2[u] for u in some]))
    assert old.agreement_shared.value == pytest.approx(np.mean([m1[u] == truth[u] for u in some]))
    assert old.current_agreement_shared.value == pytest.approx(np.mean([m2[u] == truth[u] for u in some]))
    assert any("stale" in n for n in rep.notes)


def test_fewer_than_30_pairs_say_not_enough_pairs(sqlite_engine, tmp_path):
    from tests.support.judgments import judge
    from tests.support.projects import pairs_project

    pairs = [(f"q{i}", f"d{j}") for i in range(4) for j in range(5)]
    pairs_project(sqlite_engine, tmp_path / "in", pairs)
    judge(sqlite_engine, tmp_path, "alice", {u: 1 for u in pairs})
    path = write_machine(tmp_path / "m.jsonl", [{"qid": q, "docid": d, "grade": 1} for q, d in pairs])
    with new_session(sqlite_engine) as s:
        import_machine_labels(s, path, machine="llm", project="p")
        rep = build_calibration_report(s, get_project(s, "p"), "llm")
    assert rep.pairs == 20 and rep.headline is None and rep.agreement is None
    assert rep.verdict.band == "not enough pairs"
    assert all(g.agreement is None for c in rep.bias for g in c.groups)
    d = rep.as_dict()
    assert d["enough_pairs"] is False and d["headline"] is None
    # No check could run: the report says so rather than "failed checks: none".
    assert d["failed_checks"] == [] and d["checks_run"] == []
    assert d["checks_summary"] == "no check could run: too few pairs with both a human and a machine label"


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["lenient", "long"])
def test_ranking_correlation_equals_scipy_on_ir_measures_scores(robust, kind):
    """The runs' nDCG@10 under human and machine labels computed by ir_measures from the pooled
    rankings, ranked, and Kendall's tau by scipy: the report's tau and swapped pairs match."""
    import ir_measures
    from scipy.stats import kendalltau

    truth, facts = robust["truth"], robust["facts"]
    machine = majority_of(robust["rows"][kind])
    runs = {}
    for (q, d), (_, systems) in facts.items():
        for run, rank in systems.items():
            runs.setdefault(run, []).append(ir_measures.ScoredDoc(q, d, 1000.0 - rank))

    def means(labels):  # over the queries with a relevant document (golden leaves the others out of nDCG)
        qrels = [ir_measures.Qrel(q, d, g) for (q, d), g in labels.items()]
        with_rel = {q for (q, _), g in labels.items() if g >= 1}
        out = {}
        for run, docs in runs.items():
            per = {m.query_id: m.value for m in ir_measures.iter_calc([ir_measures.nDCG @ 10], qrels, docs)}
            out[run] = float(np.mean([per.get(q, 0.0) for q in sorted(with_rel)]))
        return out

    human_means, machine_means = means(truth), means(machine)
    ranking = robust["reports"][kind].ranking
    assert ranking.human_means == pytest.approx(human_means, abs=1e-6)
    comp = ranking.comparisons[0]
    assert comp.labels == "machine" and comp.means == pytest.approx(machine_means, abs=1e-6)
    names = sorted(runs)
    tau = kendalltau([human_means[n] for n in names], [machine_means[n] for n in names]).statistic
    assert comp.kendall_tau == pytest.approx(tau)
    swapped = sum((human_means[a] - human_means[b]) * (machine_means[a] - machine_means[b]) < 0
                  for i, a in enumerate(names) for b in names[i + 1:])
    assert comp.swapped == swapped


@pytest.mark.slow
def test_each_person_against_the_machine_on_the_overlap_set_equals_sklearn(robust):
    """bob labelled 150 overlap pairs, alice all: each against the machine on the pairs both labelled."""
    from curation.agree.labels import load_judgments
    from curation.store.engine import session as new_session

    rep = robust["reports"]["long"]
    machine = majority_of(robust["rows"]["long"])
    with new_session(robust["engine"]) as s:
        records = load_judgments(s, get_project(s, "r3"), overlap_only=True)
    latest = {}
    for r in records:
        latest[(r.judge, r.qid, r.docid)] = r.grade
    by = {a.judges[0]: a for a in rep.machine_vs_people}
    assert sorted(by) == ["alice", "bob"] and all(a.judges[1] == "machine" for a in by.values())
    for judge, a in by.items():
        units = sorted((q, d) for j, q, d in latest if j == judge)
        h = [latest[(judge, q, d)] for q, d in units]
        m = [machine[u] for u in units]
        assert a.pairs == len(units) == 150
        assert a.measures["kappa"].value == pytest.approx(cohen_kappa_score(h, m, labels=[0, 1, 2]))
