"""golden judging import: TREC qrels loaded as a judge's labels, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import warnings
from collections import defaultdict

import pytest
from click.testing import CliRunner
from sklearn.metrics import cohen_kappa_score

from curation.agree.agreement import agreement_report
from curation.agree.labels import load_judgments
from curation.cli import main
from curation.judge.importing import import_judgments
from curation.store.engine import session as new_session
from tests.support.judgments import write_qrels
from tests.support.projects import add_users, pairs_project


def _groups(path):
    groups = defaultdict(dict)
    for line in open(path):
        q, g, d, r = line.split()
        groups[g][(q, d)] = int(r)
    return groups


def test_import_reports_missing_pairs_skips_out_of_scale_and_is_idempotent(engine, tmp_path):
    pairs_project(engine, tmp_path / "p", [("q1", "d1"), ("q1", "d2"), ("q2", "d3")], scale="0-2")
    add_users(engine, alice="judge")
    qrels = write_qrels(tmp_path / "qrels.txt", [
        ("q1", 0, "d1", 2), ("q1", 0, "d2", 0), ("q2", 0, "d3", 5),  # 5 is not on the 0-2 scale
        ("q2", 0, "d9", 1), ("q3", 0, "d1", 1),  # not in the pool
    ])
    with new_session(engine) as s:
        r = import_judgments(s, qrels, judge="alice")
        assert (r.lines, r.imported, r.missing, r.out_of_scale) == (5, 2, 2, 1)
        assert r.missing_examples == [("q2", "d9"), ("q3", "d1")]
        assert "not in the pool" in r.summary()
        again = import_judgments(s, qrels, judge="alice", clip=True)  # the clipped line is new, the rest known
        assert (again.imported, again.already, again.clipped) == (1, 2, 1)
    with new_session(engine) as s:
        from curation.store.projects import get_project

        recs = load_judgments(s, get_project(s, "p"))
    assert sorted((j.qid, j.docid, j.judge, j.grade) for j in recs) == [
        ("q1", "d1", "alice", 2), ("q1", "d2", "alice", 0), ("q2", "d3", "alice", 2)]


def test_import_needs_a_known_judge_and_a_group_for_multi_group_files(engine, tmp_path):
    pairs_project(engine, tmp_path / "p", [("q1", "d1")])
    qrels = write_qrels(tmp_path / "q.txt", [("q1", 0, "d1", 1), ("q1", 1, "d1", 0)])
    with new_session(engine) as s:
        with pytest.raises(ValueError, match="^judge: no user 'ghost'"):
            import_judgments(s, qrels, judge="ghost", group="0")
        with pytest.raises(ValueError, match="^group: .* holds judgment groups 0, 1"):
            import_judgments(s, qrels, judge="ghost", create_judge=True)
        with pytest.raises(ValueError, match="^group: '7' is not in"):
            import_judgments(s, qrels, judge="ghost", create_judge=True, group="7")
        r = import_judgments(s, qrels, judge="ghost", group="1", create_judge=True)
        assert (r.imported, r.grades) == (1, {0: 1})
        from curation.store.users import get_user

        assert get_user(s, "ghost").active is False  # an imported assessor cannot log in


def test_qrels_123_imported_group_by_group_gives_the_libraries_kappa(engine, tmp_path, shared):
    path = shared("trec_eval_tests", "qrels.123")
    groups = _groups(path)
    pairs = sorted(set().union(*groups.values()))
    left_out = pairs[:4]  # not pooled: reported as missing
    pairs_project(engine, tmp_path / "p", pairs[4:], name="trec", scale="0-3")
    runner = CliRunner()
    outs = {}
    for g in ("0", "1", "2"):
        res = runner.invoke(main, ["judging", "import", str(path), "--judge", f"assessor{g}", "--group", g,
                                   "--project", "trec", "--clip", "--create-judge",
                                   "--db", engine.url.render_as_string(hide_password=False)])
        assert res.exit_code == 0, res.output
        outs[g] = res.output
    n_missing0 = sum(p in groups["0"] for p in left_out)
    assert f"{n_missing0} pairs are not in the pool" in outs["0"]
    assert "clipped to its ends" in outs["0"]
    res = runner.invoke(main, ["judging", "import", str(path), "--judge", "x", "--create-judge", "--db",
                               engine.url.render_as_string(hide_password=False)])
    assert res.exit_code == 1 and "--group G" in res.output

    with new_session(engine) as s:
        from curation.store.projects import get_project

        recs = load_judgments(s, get_project(s, "trec"), overlap_only=True)
    report = agreement_report(recs, scale=[0, 1, 2, 3], cut=1, resamples=0)

    def clip(g):
        return min(max(g, 0), 3)

    for c in report.pairwise:
        a, b = (j.removeprefix("assessor") for j in c.judges)
        units = sorted(u for u in set(groups[a]) & set(groups[b]) if u not in left_out)
        y1 = [clip(groups[a][u]) for u in units]
        y2 = [clip(groups[b][u]) for u in units]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = cohen_kappa_score(y1, y2, labels=[0, 1, 2, 3], weights="linear")
        assert c.pairs == len(units)
        assert abs(c.measures["kappa_linear"].value - expected) < 1e-9

    # golden labels agreement --json prints the same numbers for scripts.
    res = runner.invoke(main, ["labels", "agreement", "--project", "trec", "--json", "--resamples", "50",
                               "--db", engine.url.render_as_string(hide_password=False)])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    first = data["pairwise"][0]
    assert first["judges"] == ["assessor0", "assessor1"]
    assert abs(first["measures"]["kappa_linear"]["value"] - report.pairwise[0].measures["kappa_linear"].value) < 1e-12
    assert data["verdict"]["thresholds"] == {"usable": 0.7, "marginal": 0.6, "min_pairs": 30, "chance_alpha": 0.2}
    assert data["bootstrap"] == {"resamples": 50, "seed": 0, "confidence": 0.95, "unit": "query"}
    res = runner.invoke(main, ["labels", "agreement", "--project", "trec", "--resamples", "50",
                               "--db", engine.url.render_as_string(hide_password=False)])
    assert res.exit_code == 0, res.output
    assert "verdict: USABLE" in res.output and "Cohen's kappa, linear weights" in res.output


def test_imported_labels_count_as_done_in_the_judges_queue(engine, tmp_path):
    from curation.judge import judging
    from curation.store.users import get_user
    from tests.support.projects import assigned_project

    setup = assigned_project(engine, tmp_path / "p", n_queries=2, docs_per_query=3, judges=("alice",), overlap=6)
    with new_session(engine) as s:
        alice = get_user(s, "alice")
        first = judging.next_task(s, setup.project_id, alice)
        path = write_qrels(tmp_path / "earlier.qrels", [(first.qid, 0, first.docid, 2)])
        assert import_judgments(s, path, judge="alice", project=setup.project_name).imported == 1
        assert judging.progress(s, setup.project_id, alice).done == 1
        nxt = judging.next_task(s, setup.project_id, alice)
        assert (nxt.qid, nxt.docid) != (first.qid, first.docid)  # not asked again


def test_import_refuses_a_pair_given_two_grades_and_counts_identical_repeats(engine, tmp_path):
    """A qrels file giving a pair two grades stored two judgments, the last one winning, without a word."""
    pairs_project(engine, tmp_path / "p", [("q1", "d1"), ("q1", "d2")], scale="0-2")
    add_users(engine, alice="judge")
    qrels = write_qrels(tmp_path / "qrels.txt", [("q1", 0, "d1", 2), ("q1", 0, "d2", 0), ("q1", 0, "d1", 1)])
    db = engine.url.render_as_string(hide_password=False)
    result = CliRunner().invoke(main, ["judging", "import", str(qrels), "--judge", "alice", "--db", db])
    assert result.exit_code == 1, result.output
    assert f"{qrels}:3: pair q1/d1 has 1 here but 2 on line 1" in result.output
    assert "Traceback" not in result.output
    with new_session(engine) as s:
        from curation.store.projects import get_project

        assert load_judgments(s, get_project(s, "p")) == []
        r = import_judgments(s, qrels, judge="alice", on_conflict="first")
        assert (r.lines, r.imported, r.conflicts) == (3, 2, 1)
        assert "resolved by --on-conflict first" in r.summary()
    repeated = write_qrels(tmp_path / "rep.txt", [("q1", 0, "d2", 1), ("q1", 0, "d2", 1)])
    with new_session(engine) as s:
        r = import_judgments(s, repeated, judge="alice")
        assert (r.lines, r.imported, r.repeats) == (2, 1, 1)
        assert "1 identical duplicate pair line(s) dropped" in r.summary()
        recs = load_judgments(s, get_project(s, "p"))
    assert sorted((j.docid, j.grade) for j in recs) == [("d1", 2), ("d2", 0), ("d2", 1)]
