"""A single judge gets no overlap set (agreement needs two judges on the same pairs) and a message
saying why, instead of an overlap set that holds the rest of the pool back."""

from __future__ import annotations

from click.testing import CliRunner
from sqlmodel import select

from curation.cli import main
from curation.judge.assignment import assign, main_visible
from curation.store.engine import session
from curation.store.models import Assignment, Project
from curation.store.projects import get_project
from curation.store.users import add_user
from tests.support.projects import counts_project


def test_one_judge_gets_every_pair_as_main_work_and_is_told_why(engine, tmp_path):
    with session(engine) as s:
        counts_project(s, tmp_path, name="solo")  # 14 pairs
        add_user(s, "alice", role="judge", password="password1")
        add_user(s, "bob", role="judge", password="password1")
        project = get_project(s, "solo")
        report = assign(s, project, ["alice"], overlap=5, seed=1)
        assert report.overlap_pairs == 0 and report.new_main_pairs == 14
        assert "alice is the only judge" in report.note and "two judges" in report.note
        kinds = s.exec(select(Assignment.kind).where(Assignment.project_id == project.id)).all()
        assert kinds == ["main"] * 14
        proj = s.get(Project, project.id)
        assert not report.held and main_visible(proj)
        # A second judge added later gets main work only (no overlap set to calibrate against), no note.
        again = assign(s, project, ["alice", "bob"], overlap=5, seed=1)
        assert again.note is None and again.new_main_pairs == 0


def test_two_judges_still_get_an_overlap_set(engine, tmp_path):
    with session(engine) as s:
        counts_project(s, tmp_path, name="duo")
        add_user(s, "alice", role="judge", password="password1")
        add_user(s, "bob", role="judge", password="password1")
        report = assign(s, get_project(s, "duo"), ["alice", "bob"], overlap=5, seed=1)
        assert report.overlap_pairs == 5 and report.note is None and report.held


def test_cli_says_why_a_single_judge_has_no_overlap_set(engine, db_url, tmp_path):
    with session(engine) as s:
        counts_project(s, tmp_path, name="solo")
        add_user(s, "alice", role="judge", password="password1")
    res = CliRunner().invoke(main, ["judging", "assign", "--project", "solo", "--judges", "alice", "--overlap", "5",
                                    "--db", db_url])
    assert res.exit_code == 0, res.output
    assert "overlap set of 0 pairs" in res.output and "14 new main pairs" in res.output
    assert "note: no overlap set: alice is the only judge" in res.output
    assert "main pairs are held back until" not in res.output
