"""Releasing the held-back pool needs an agreement measured on the overlap set (before,
`golden judging release --agreement 0.71` was accepted with no label in the store), or --force with a
reason, which is recorded. Real stores (SQLite and PostgreSQL), labels through the importer."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from curation.agree.agreement import build_agreement_report
from curation.agree.release import ReleaseRefused, review_and_release
from curation.cli import main
from curation.judge.assignment import assign
from curation.store import projects, users
from curation.store.engine import session
from curation.store.models import Project
from tests.support.judgments import judge
from tests.support.projects import pairs_project

PAIRS = [(f"q{q}", f"d{q}_{d}") for q in range(8) for d in range(4)]  # 32 pairs: above min_pairs (30)


@pytest.fixture
def held(engine, tmp_path):
    pairs_project(engine, tmp_path, PAIRS)
    with session(engine) as s:
        project = projects.get_project(s, "p")
        assign(s, project, ["alice", "bob"], overlap=len(PAIRS), seed=1, hold=True)
    return engine


def _project(s):
    return projects.get_project(s, "p")


def test_no_labels_no_release_unless_forced_with_a_reason(held, db_url):
    with session(held) as s:
        lena, alice = users.get_user(s, "lena"), users.get_user(s, "alice")
        with pytest.raises(ValueError, match="only a lead or admin"):
            review_and_release(s, _project(s), alice, force=True, reason="x")
        with pytest.raises(ReleaseRefused, match="no agreement is measured") as refused:
            review_and_release(s, _project(s), lena)
        assert refused.value.band == "undefined"
        with pytest.raises(ReleaseRefused):
            review_and_release(s, _project(s), lena, force=True, reason="  ")  # forced, but no reason
        with pytest.raises(ReleaseRefused, match="no agreement can be measured"):
            review_and_release(s, _project(s), lena, claimed=0.71)
        assert s.get(Project, _project(s).id).released_at is None
    runner = CliRunner()
    res = runner.invoke(main, ["judging", "release", "--lead", "lena", "--agreement", "0.71", "--db", db_url])
    assert res.exit_code == 1 and "no agreement can be measured" in res.output
    res = runner.invoke(main, ["judging", "release", "--lead", "lena", "--db", db_url])
    assert res.exit_code == 1 and "no agreement is measured" in res.output and "force" in res.output
    res = runner.invoke(main, ["judging", "release", "--lead", "lena", "--force", "--db", db_url])
    assert res.exit_code == 2 and "--force needs --reason" in res.output
    with session(held) as s:
        assert s.get(Project, _project(s).id).released_at is None
    res = runner.invoke(main, ["judging", "release", "--lead", "lena", "--force", "--reason", "pilot run", "--db",
                               db_url])
    assert res.exit_code == 0, res.output
    assert "released by lena (forced: pilot run)" in res.output
    with session(held) as s:
        proj = s.get(Project, _project(s).id)
        assert proj.released_at is not None and proj.released_agreement is None
        assert proj.released_reason == "pilot run"


def test_a_usable_measured_agreement_releases_and_records_the_measured_value(held, db_url, tmp_path):
    grades = {pair: (i * 7) % 3 for i, pair in enumerate(PAIRS)}
    judge(held, tmp_path, "alice", grades)
    bob = dict(grades)
    bob[PAIRS[0]] = (grades[PAIRS[0]] + 1) % 3  # one disagreement in 32
    judge(held, tmp_path, "bob", bob)
    with session(held) as s:
        report = build_agreement_report(s, _project(s))
    assert report.verdict.band == "usable" and report.verdict.pairs == 32
    measured = report.verdict.value
    res = CliRunner().invoke(main, ["judging", "release", "--lead", "lena", "--agreement", "0.5", "--db", db_url])
    assert res.exit_code == 1 and f"measured agreement is {measured:.3f}" in res.output
    res = CliRunner().invoke(main, ["judging", "release", "--lead", "lena", "--agreement", f"{measured:.3f}", "--db",
                                    db_url])
    assert res.exit_code == 0, res.output
    assert f"at agreement {measured:.3f}" in res.output and "forced" not in res.output
    with session(held) as s:
        proj = s.get(Project, _project(s).id)
        assert proj.released_agreement == pytest.approx(measured) and proj.released_reason is None
