"""The progress report (curation.judge.progress.build_progress, behind `golden judging progress` and the
lead's progress page): figures worked out by hand from answers given at known times through the
judging API, and counts taken independently from the store's tables with plain SQL."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from click.testing import CliRunner
from sqlalchemy import text

from curation.cli import main
from curation.judge import judging
from curation.judge.progress import build_progress, format_duration
from curation.store import projects, users
from curation.store.engine import session as new_session
from tests.support.judgments import judge_queue
from tests.support.projects import assigned_project

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


def answer(engine, project_id, who, answers, *, start, seconds):
    """``who`` answers their next pairs: each of ``answers`` is a grade, "skip" or ("unsure", grade);
    each pair is shown at ``start`` + i * ``seconds`` and answered ``seconds`` later."""
    with new_session(engine) as s:
        user = users.get_user(s, who)
        t = start
        for a in answers:
            task = judging.next_task(s, project_id, user, now=t)
            t += timedelta(seconds=seconds)
            if a == "skip":
                judging.submit(s, user, task.token, skip=True, now=t)
            elif isinstance(a, tuple):
                judging.submit(s, user, task.token, grade=a[1], unsure=True, note="not sure", now=t)
            else:
                judging.submit(s, user, task.token, grade=a, now=t)


@pytest.fixture
def judged(engine, tmp_path):
    setup = assigned_project(engine, tmp_path / "recipes", n_queries=6, docs_per_query=5, overlap=12, hold=True,
                             judges=("alice", "bob", "carol"))
    # alice: 10 labels 2 minutes apart, the last 70 minutes before NOW; bob: 4 labels, a skip and an
    # unsure label, 30 s apart, in the last half hour; carol never answers.
    judge_queue(engine, setup.project_id, "alice", lambda d: int(d[-1]) % 3, start=NOW - timedelta(minutes=90),
                seconds=120.0, limit=10)
    answer(engine, setup.project_id, "bob", [0, 1, 2, 1, "skip", ("unsure", 1)], start=NOW - timedelta(minutes=30),
           seconds=30)
    return setup


def _independent(engine, project_id):
    """Per judge name: (assigned rows, labelled rows, main rows), and the overlap pairs that every
    judge labelled, counted with plain SQL on the tables."""
    with engine.connect() as conn:
        rows = conn.execute(text(
            "SELECT u.name, COUNT(*), SUM(CASE WHEN a.done_at IS NOT NULL THEN 1 ELSE 0 END), "
            "SUM(CASE WHEN a.kind = 'main' THEN 1 ELSE 0 END) FROM assignment a JOIN \"user\" u ON u.id = a.judge_id "
            "WHERE a.project_id = :p GROUP BY u.name"), {"p": project_id}).all()
        complete = conn.execute(text(
            "SELECT COUNT(*) FROM (SELECT pair_id FROM assignment WHERE project_id = :p AND kind = 'overlap' "
            "GROUP BY pair_id HAVING COUNT(*) = SUM(CASE WHEN done_at IS NOT NULL THEN 1 ELSE 0 END)) t"),
            {"p": project_id}).scalar()
    return {name: (int(n), int(done), int(main)) for name, n, done, main in rows}, int(complete)


def test_figures_by_hand_and_from_the_tables(engine, judged):
    with new_session(engine) as s:
        report = build_progress(s, projects.get_project(s, "recipes"), now=NOW)
    counts, complete = _independent(engine, judged.project_id)
    by = {j.judge: j for j in report.judges}
    assert list(by) == ["alice", "bob", "carol"]
    for name, (n, done, main_rows) in counts.items():
        assert (by[name].assigned, by[name].done, by[name].held) == (n, done, main_rows)  # held: not released yet
    assert (by["alice"].done, by["bob"].done, by["carol"].done) == (10, 5, 0)  # the skip is not done

    alice, bob, carol = by["alice"], by["bob"], by["carol"]
    assert (alice.per_hour_hour, alice.per_hour_day) == (0.0, pytest.approx(10 / 24))
    assert (bob.per_hour_hour, bob.per_hour_day) == (6.0, pytest.approx(6 / 24))
    assert alice.median_seconds == 120.0 and bob.median_seconds == 30.0 and carol.median_seconds is None
    assert alice.last_active == NOW - timedelta(minutes=70) and bob.last_active == NOW - timedelta(minutes=27)
    assert (alice.unsure_share, alice.skipped_share) == (0.0, 0.0)
    assert (bob.unsure_share, bob.skipped_share) == (pytest.approx(1 / 5), pytest.approx(1 / 6))
    assert carol.last_active is None and carol.unsure_share is None and carol.skipped_share is None
    # Idle: work to do and no answer for 30 minutes (never answered counts).
    assert (alice.idle, bob.idle, carol.idle) == (True, False, True)

    assert report.overlap_pairs == 12 and report.overlap_judges == 3 and report.overlap_complete == complete == 0
    assert report.released is False
    total = sum(n for n, _, _ in counts.values())
    assert report.remaining_rows == total - 15 and report.held_rows == sum(m for _, _, m in counts.values())
    # The pace over the last hour with answers: that hour ends at bob's last answer (27 min before NOW)
    # and holds alice's answers from 86 to 70 min before NOW and bob's six: 15 answers, 14 gaps over
    # 59 minutes. The session (no gap over 30 min) is bob's six answers, 30 s apart: 5 gaps in 2.5 min.
    assert report.pace == pytest.approx(14 / (59 / 60))
    assert report.pace_session == pytest.approx(5 / (2.5 / 60))
    assert report.eta == NOW + timedelta(hours=(total - 15) / (14 / (59 / 60)))
    assert "over the last hour with answers (10:34-11:33 UTC, 15 answers)" in report.eta_note
    assert "120.0 an hour over the session since 11:30 UTC" in report.eta_note
    assert report.pairs == 30 and report.assigned_pairs == 30 and report.unassigned_pairs == 0
    assert report.done_pairs == 0  # no overlap pair has all three labels, main pairs are held
    assert report.hourly[-1] == 6 and report.hourly[-2] == 10 and sum(report.hourly) == 16

    # The idle time is configurable; two days later the pace is the one last measured, and the note
    # says that nobody has answered since.
    with new_session(engine) as s:
        project = projects.get_project(s, "recipes")
        later = build_progress(s, project, now=NOW, idle_after=timedelta(hours=2))
        assert [j.idle for j in later.judges] == [False, False, True]
        tomorrow = build_progress(s, project, now=NOW + timedelta(days=2))
        assert tomorrow.pace == pytest.approx(report.pace)
        assert "nobody has answered since 2026-03-02 11:33 UTC" in tomorrow.eta_note
        with pytest.raises(ValueError, match="idle_after"):
            build_progress(s, project, now=NOW, idle_after=timedelta(0))


def test_format_duration():
    assert [format_duration(timedelta(minutes=m)) for m in (0, 59, 60, 200, 60 * 49, 60 * 72)] == [
        "0 min", "59 min", "1 h", "3 h 20 min", "2 d 1 h", "3 d"]


def test_cli_prints_the_same_report(engine, db_url, judged):
    res = CliRunner().invoke(main, ["judging", "progress", "--project", "recipes", "--json", "--db", db_url])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    counts, _ = _independent(engine, judged.project_id)
    assert {j["judge"]: (j["assigned"], j["done"]) for j in data["judges"]} == {
        name: (n, done) for name, (n, done, _) in counts.items()}
    assert data["overlap_pairs"] == 12 and data["idle_after"] == 1800
    res = CliRunner().invoke(main, ["judging", "progress", "--project", "recipes", "--db", db_url])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[0] == "project recipes: 0 of 30 assigned pairs done, 30 to go"
    assert "overlap set: 0 of 12 pairs labelled by all 3 judges; main work held" in res.output
    carol = next(line for line in lines if line.startswith("carol"))
    assert "never" in carol and "IDLE (over 30 min)" in carol
    res = CliRunner().invoke(main, ["judging", "progress", "--project", "nope", "--db", db_url])
    assert res.exit_code == 1
