"""Qualification (curation.judge.qualification) on SQLite and PostgreSQL: the draw (never a pair of
the judge's queue, seeded, fresh pairs on a retry), pass and fail against the pass mark, the retry,
the block and a lead's audited grant, teaching, the judges who carry on without it, the report
Progress and `golden judging progress` show, and answers that never become labels of the pool."""

from __future__ import annotations

import pytest
from sqlmodel import func, select

from curation.judge import qualification as q
from curation.judge.progress import build_progress
from curation.store import projects
from curation.store.audit import list_audit
from curation.store.engine import session as new_session
from curation.store.models import Assignment, Judgment, KnownAnswer, PoolPair, QualificationAnswer, utcnow
from curation.store.users import get_user
from tests.support.projects import assigned_project
from tests.support.qualified import add_known_pairs, expected_grade, require_qualification


@pytest.fixture
def setup(engine, tmp_path):
    s = assigned_project(engine, tmp_path / "p", n_queries=6, docs_per_query=5, overlap=3,
                         judges=("alice", "bob", "nina"))
    add_known_pairs(engine, s.project_id, avoid_judge="nina", n=12)
    require_qualification(engine, s.project_name, pairs=4, pass_mark=0.75, retries=1)
    return s


def _docid(db, pair_id):
    from curation.store.lookups import pair_keys

    return pair_keys(db, [pair_id])[pair_id][1]


def _answer_attempt(db, project, judge, right: int):
    """Answer the judge's open attempt: the first ``right`` pairs as expected, the rest wrong."""
    item = q.next_item(db, project, judge)
    taught = []
    while item is not None:
        grade = expected_grade(item.docid)
        if item.position > right:
            grade = (grade + 1) % 3
        taught.append(q.answer(db, project, judge, attempt=item.attempt, position=item.position, grade=grade))
        item = q.next_item(db, project, judge)
    return taught


def test_a_new_judge_fails_retries_with_fresh_pairs_and_passes(engine, setup):
    with new_session(engine) as db:
        project, nina = projects.get_project(db, setup.project_name), get_user(db, "nina")
        assert q.qualification_state(db, project, nina).status == q.IN_PROGRESS
        assert q.blocks_work(db, project, nina)
        queue = set(db.exec(select(Assignment.pair_id).where(Assignment.judge_id == nina.id)).all())
        taught = _answer_attempt(db, project, nina, right=2)  # 2 of 4: under 3 needed
        assert [t.exact for t in taught] == [True, True, False, False]
        state = q.qualification_state(db, project, nina)
        assert (state.status, state.attempt, state.correct, state.needed) == (q.FAILED, 1, 2, 3)
        first = {a.pair_id for a in db.exec(select(QualificationAnswer))}
        assert len(first) == 4 and not first & queue
        q.start_attempt(db, project, nina)
        db.commit()
        second_item = q.next_item(db, project, nina)
        assert second_item.attempt == 2
        _answer_attempt(db, project, nina, right=3)
        state = q.qualification_state(db, project, nina)
        assert (state.status, state.attempt, state.correct) == (q.PASSED, 2, 3)
        assert not q.blocks_work(db, project, nina)
        both = list(db.exec(select(QualificationAnswer.pair_id)))
        assert len(both) == 8 and len(set(both)) == 8  # the retry drew fresh pairs: 12 were there
        assert not set(both) & queue
        # nothing of it is a label of the pool: no Judgment row at all
        assert db.exec(select(func.count()).select_from(Judgment)).one() == 0
        assert q.qualification_pairs(db, project.id) == {(nina.id, p) for p in both}


def test_the_draw_is_seeded_and_never_a_pair_of_the_queue(engine, setup, tmp_path):
    with new_session(engine) as db:
        project, nina = projects.get_project(db, setup.project_name), get_user(db, "nina")
        attempt = q.start_attempt(db, project, nina)
        drawn = [a.pair_id for a in db.exec(select(QualificationAnswer).where(
            QualificationAnswer.attempt_id == attempt.id).order_by(QualificationAnswer.position))]
        db.rollback()
        again = q.start_attempt(db, project, nina)
        assert [a.pair_id for a in db.exec(select(QualificationAnswer).where(
            QualificationAnswer.attempt_id == again.id).order_by(QualificationAnswer.position))] == drawn
        known = set(db.exec(select(KnownAnswer.pair_id)).all())
        assert set(drawn) <= known


def test_blocked_after_the_last_attempt_then_a_lead_grants_one(engine, setup):
    with new_session(engine) as db:
        project, nina, lena = (projects.get_project(db, setup.project_name), get_user(db, "nina"),
                               get_user(db, "lena"))
        _answer_attempt(db, project, nina, right=0)
        with pytest.raises(ValueError, match="only a blocked judge"):
            q.grant_attempt(db, project, nina, lena)
        db.rollback()
        q.start_attempt(db, project, nina)
        db.commit()
        _answer_attempt(db, project, nina, right=1)
        state = q.qualification_state(db, project, nina)
        assert (state.status, state.attempt, state.attempts_allowed) == (q.BLOCKED, 2, 2)
        assert q.blocks_work(db, project, nina) and q.next_item(db, project, nina) is None
        with pytest.raises(ValueError, match="blocked"):
            q.start_attempt(db, project, nina)
        db.rollback()
        report = build_progress(db, project)
        row = next(r for r in report.qualification if r.judge == "nina")
        assert (row.status, row.attempt, row.correct, row.needed) == (q.BLOCKED, 2, 1, 3)
        assert q.grant_attempt(db, project, nina, lena).attempt == 3
        state = q.qualification_state(db, project, nina)
        assert (state.status, state.attempts_allowed) == (q.IN_PROGRESS, 3)
        event = list_audit(db, action="qualification_granted")[0]
        assert (event.actor, event.target) == ("lena", "nina")
        # 12 known-answer pairs, 8 used: the third attempt takes the 4 fresh ones
        _answer_attempt(db, project, nina, right=4)
        assert q.qualification_state(db, project, nina).status == q.PASSED
        assert len(set(db.exec(select(QualificationAnswer.pair_id)).all())) == 12


def test_a_retry_reuses_pairs_only_when_the_set_is_too_small(engine, tmp_path):
    s = assigned_project(engine, tmp_path / "small", n_queries=6, docs_per_query=5, overlap=3,
                         judges=("alice", "bob", "nina"))
    add_known_pairs(engine, s.project_id, avoid_judge="nina", n=6)
    require_qualification(engine, s.project_name, pairs=4, pass_mark=1.0)
    with new_session(engine) as db:
        project, nina = projects.get_project(db, s.project_name), get_user(db, "nina")
        first = {t.position: t for t in _answer_attempt(db, project, nina, right=0)}
        assert len(first) == 4 and q.qualification_state(db, project, nina).status == q.FAILED
        q.start_attempt(db, project, nina)
        db.commit()
        rows = db.exec(select(QualificationAnswer.pair_id, QualificationAnswer.attempt_id)).all()
        by_attempt = {}
        for pair, attempt in rows:
            by_attempt.setdefault(attempt, set()).add(pair)
        one, two = (by_attempt[k] for k in sorted(by_attempt))
        assert len(two) == 4 and len(two - one) == 2  # the two unused pairs, then two seen ones


def test_teaching_gives_the_pairs_reason_or_the_guidelines_grade(engine, setup):
    with new_session(engine) as db:
        project, nina = projects.get_project(db, setup.project_name), get_user(db, "nina")
        taught = _answer_attempt(db, project, nina, right=4)
        grades = {g.grade: g for g in projects.grades(project)}
        for t in taught:
            known = db.exec(select(KnownAnswer).join(PoolPair, PoolPair.id == KnownAnswer.pair_id).where(
                KnownAnswer.id == db.exec(select(QualificationAnswer.known_answer_id).where(
                    QualificationAnswer.position == t.position)).first())).one()
            assert t.accepted == (expected_grade(_docid(db, known.pair_id)),)
            if known.reason:
                assert (t.reason_from, t.reason) == ("pair", known.reason)
            else:
                g = grades[t.accepted[0]]
                assert t.reason_from == "guidelines" and t.reason == f"{g.name}: {g.description}"
        with pytest.raises(LookupError):
            q.teaching(db, project, get_user(db, "alice"), attempt=1, position=1)
        # answering again changes nothing
        again = q.answer(db, project, nina, attempt=1, position=1, grade=(taught[0].grade + 1) % 3)
        assert again == taught[0]


def test_grades_off_the_scale_and_pairs_of_others_are_refused(engine, setup):
    with new_session(engine) as db:
        project, nina, alice = (projects.get_project(db, setup.project_name), get_user(db, "nina"),
                                get_user(db, "alice"))
        item = q.next_item(db, project, nina)
        with pytest.raises(ValueError, match="not a grade of the scale"):
            q.answer(db, project, nina, attempt=item.attempt, position=item.position, grade=7)
        with pytest.raises(LookupError):
            q.answer(db, project, nina, attempt=item.attempt, position=99, grade=1)
        with pytest.raises(LookupError):
            q.answer(db, project, alice, attempt=item.attempt, position=item.position, grade=1)


def test_judges_already_labelling_carry_on(engine, setup):
    from tests.support.judgments import judge_queue

    judge_queue(engine, setup.project_id, "alice", lambda d: 1, start=utcnow(), limit=2)
    with new_session(engine) as db:
        project = projects.get_project(db, setup.project_name)
        assert q.qualification_state(db, project, get_user(db, "alice")).status == q.EXEMPT
        assert not q.blocks_work(db, project, get_user(db, "alice"))
        assert q.blocks_work(db, project, get_user(db, "bob"))


def test_too_few_known_answer_pairs(engine, tmp_path):
    s = assigned_project(engine, tmp_path / "few", judges=("alice", "nina"))
    add_known_pairs(engine, s.project_id, avoid_judge="nina", n=2)
    require_qualification(engine, s.project_name, pairs=4)
    with new_session(engine) as db:
        project, nina = projects.get_project(db, s.project_name), get_user(db, "nina")
        assert q.qualification_state(db, project, nina).status == q.UNAVAILABLE
        assert q.blocks_work(db, project, nina)
        with pytest.raises(ValueError, match="unavailable"):
            q.start_attempt(db, project, nina)


def test_settings_are_checked_and_audited(engine, setup):
    with new_session(engine) as db:
        project, lena = projects.get_project(db, setup.project_name), get_user(db, "lena")
        for bad in (dict(pairs=-1), dict(pass_mark=0.0), dict(pass_mark=1.5), dict(retries=-2)):
            with pytest.raises(ValueError):
                q.set_qualification(db, project, lead=lena, **bad)
        db.rollback()
        assert q.set_qualification(db, project, lead=lena, pairs=4) == {}  # unchanged: nothing recorded
        assert q.set_qualification(db, project, lead=lena, pairs=0) == {"qualification_pairs": 0}
        assert not q.blocks_work(db, project, get_user(db, "nina"))
        assert build_progress(db, project).qualification == []
        events = list_audit(db, action="qualification_settings")
        assert [e.actor for e in events] == ["lena", "lena"]  # the fixture's and this one


@pytest.mark.parametrize("pairs,mark,needed", [(10, 0.8, 8), (4, 0.75, 3), (3, 0.7, 3), (5, 1.0, 5), (10, 0.01, 1)])
def test_the_pass_mark_in_answers(pairs, mark, needed):
    assert q._needed(pairs, mark) == needed


def test_pairs_of_a_judges_qualification_are_never_mixed_into_their_work(engine, setup):
    from curation.judge import gold
    from curation.store.models import KNOWN_KIND

    with new_session(engine) as db:
        project, nina = projects.get_project(db, setup.project_name), get_user(db, "nina")
        _answer_attempt(db, project, nina, right=4)
        met = {p for _, p in q.qualification_pairs(db, project.id)}
        gold.set_known_settings(db, project, rate=2)  # mixes the known-answer set into every queue
        mixed = set(db.exec(select(Assignment.pair_id).where(Assignment.judge_id == nina.id,
                                                             Assignment.kind == KNOWN_KIND)).all())
        assert mixed and not mixed & met
        others = set(db.exec(select(Assignment.pair_id).where(Assignment.judge_id != nina.id,
                                                              Assignment.kind == KNOWN_KIND)).all())
        assert others  # the set is mixed for the others as usual


def test_a_stale_query_moves_without_the_pairs_the_judge_met_in_qualification(engine, setup):
    """An idle judge's open main pairs move to a judge who asks (``release_stale``), but a pair the
    asking judge was taught in qualification stays with its owner, and the owner's other queries
    still move (the met pair does not pin the query taken)."""
    from datetime import timedelta

    from curation.judge.judging import release_stale

    with new_session(engine) as db:
        project, nina = projects.get_project(db, setup.project_name), get_user(db, "nina")
        _answer_attempt(db, project, nina, right=4)
        met = {p for j, p in q.qualification_pairs(db, project.id) if j == nina.id}
        others_open = set(db.exec(select(Assignment.pair_id).where(
            Assignment.project_id == project.id, Assignment.judge_id != nina.id, Assignment.kind == "main",
            Assignment.done_at.is_(None))).all())
        assert met & others_open  # a pair nina met sits open in another judge's main queue
        later = utcnow() + timedelta(days=1)
        moved = 0
        while n := release_stale(db, project, nina, stale_after=timedelta(hours=1), now=later):
            moved += n
        mine = set(db.exec(select(Assignment.pair_id).where(Assignment.project_id == project.id,
                                                            Assignment.judge_id == nina.id)).all())
        left = set(db.exec(select(Assignment.pair_id).where(
            Assignment.project_id == project.id, Assignment.judge_id != nina.id, Assignment.kind == "main",
            Assignment.done_at.is_(None))).all())
        assert moved == len(others_open - met)  # every other open pair moved ...
        assert not mine & met and left == others_open & met  # ... and only the met ones stayed
