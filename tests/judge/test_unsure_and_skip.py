"""Unsure answers carry the judge's best grade, reach the lead's "Unsure answers" queue, no longer
block the export and are flagged in it; skipping a pair already answered keeps the answer.
On SQLite and PostgreSQL."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import insert
from sqlmodel import select

from curation.agree import adjudication
from curation.agree.labels import final_labels
from curation.export.versions import ExportBlocked, export_version
from curation.judge.judging import next_task, previous_task, progress, submit
from curation.store.engine import session
from curation.store.models import Assignment, Judgment, User
from curation.store.projects import get_project


def _user(s, name):
    return s.exec(select(User).where(User.name == name)).one()


def _label_rest(s, project, judge, grade=2):
    while (task := next_task(s, project, judge)) is not None:
        submit(s, judge, task.token, grade=grade)


def test_an_unsure_answer_with_a_grade_goes_to_the_lead_and_does_not_block_the_export(project, engine, tmp_path):
    with session(engine) as s:
        proj = get_project(s, project.project_name)
        alice, bob, lena = _user(s, "alice"), _user(s, "bob"), _user(s, "lena")
        first = next_task(s, proj, alice)
        submit(s, alice, first.token, grade=1, unsure=True, note="a blog, not a recipe?")
        _label_rest(s, proj, alice)
        _label_rest(s, proj, bob)
        # bob's label of an overlap pair is 2 where alice said 1 (unsure): both queues list it
        queue = adjudication.unsure_answers(s, proj)
        assert [(e.qid, e.docid) for e in queue] == [(first.qid, first.docid)]
        (mine,) = [lab for lab in queue[0].labels if lab.judge == "alice"]
        assert (mine.grade, mine.unsure, mine.note) == (1, True, "a blog, not a recipe?")
        assert adjudication.unsure_counts(s, proj) == (1, 0)

        # alice's first pair is an overlap pair (they come first), which bob labelled 2: the only
        # thing blocking the export is that disagreement, not the unsure answer itself
        overlap = {a.pair_id for a in s.exec(select(Assignment).where(Assignment.kind == "overlap"))}
        assert queue[0].pair_id in overlap
        assert [e.pair_id for e in adjudication.disagreements(s, proj)] == [queue[0].pair_id]
        with pytest.raises(ExportBlocked, match="1 disagreement is unresolved") as blocked:
            export_version(s, proj, "v1", out_dir=tmp_path / "out")
        assert "no human label" not in str(blocked.value)
        # the lead changes the grade from the unsure queue; the reason is optional
        adjudication.resolve_unsure(s, proj, pair_id=queue[0].pair_id, lead=lena, grade=0)
        assert adjudication.unsure_answers(s, proj) == []
        assert adjudication.unsure_counts(s, proj) == (0, 1)
        label = {(f.qid, f.docid): f for f in final_labels(s, proj)}[(first.qid, first.docid)]
        assert (label.grade, label.source) == (0, "adjudicated")
        assert label.reason == "unsure answer (grade 1) changed to 0 by the lead"
        res = export_version(s, proj, "v1", out_dir=tmp_path / "out")
    records = [json.loads(line) for line in (tmp_path / "out" / "v1" / "qrels.jsonl").read_text().splitlines()]
    flagged = [r for r in records if r.get("unsure")]
    assert [(r["qid"], r["docid"], r["grade"]) for r in flagged] == [(first.qid, first.docid, 0)]
    assert all("unsure" not in r for r in records if r not in flagged)  # absent, not false: old bytes kept
    assert res.manifest["counts"]["unsure"] == {"labels": 1, "decided_by_lead": 1}


def test_a_lead_confirms_an_unsure_grade_and_an_old_ungraded_unsure_answer_is_resolvable(project, engine, tmp_path):
    with session(engine) as s:
        proj = get_project(s, project.project_name)
        alice, lena = _user(s, "alice"), _user(s, "lena")
        task = next_task(s, proj, alice)
        with pytest.raises(ValueError, match="needs your best grade"):
            submit(s, alice, task.token, unsure=True, note="no grade given")
        submit(s, alice, task.token, grade=2, unsure=True)
        adjudication.resolve_unsure(s, proj, pair_id=adjudication.unsure_answers(s, proj)[0].pair_id, lead=lena,
                                    grade=2)
        label = {(f.qid, f.docid): f for f in final_labels(s, proj)}[(task.qid, task.docid)]
        assert (label.grade, label.reason) == (2, "unsure answer (grade 2) confirmed by the lead")

        # A store from before: an unsure answer without a grade. It is in the queue (grade none),
        # the export counts the pair unjudged until a lead gives it a grade there.
        other = next_task(s, proj, alice)
        s.connection().execute(insert(Judgment.__table__), {
            "project_id": proj.id, "pair_id": s.exec(select(Assignment.pair_id).where(
                Assignment.position == other.position, Assignment.judge_id == alice.id)).one(),
            "judge_id": alice.id, "grade": None, "unsure": True, "skipped": False, "note": "old", "source": "human"})
        s.commit()
        entry = [e for e in adjudication.unsure_answers(s, proj) if e.docid == other.docid][0]
        assert [(lab.grade, lab.note) for lab in entry.labels if lab.judge == "alice"] == [(None, "old")]
        with pytest.raises(ValueError, match="no judge marked pair"):
            adjudication.resolve_unsure(s, proj, pair_id=-5, lead=lena, grade=1)
        with pytest.raises(ValueError, match="only a lead"):
            adjudication.resolve_unsure(s, proj, pair_id=entry.pair_id, lead=alice, grade=1)
        adjudication.resolve_unsure(s, proj, pair_id=entry.pair_id, lead=lena, grade=1)
        label = {(f.qid, f.docid): f for f in final_labels(s, proj)}[(other.qid, other.docid)]
        assert (label.grade, label.reason) == (1, "unsure answer (grade none) changed to 1 by the lead")


def test_skip_after_back_keeps_the_answer(project, engine):
    with session(engine) as s:
        proj = get_project(s, project.project_name)
        alice = _user(s, "alice")
        first = next_task(s, proj, alice)
        submit(s, alice, first.token, grade=2)
        second = next_task(s, proj, alice)
        before = progress(s, proj, alice)
        back = previous_task(s, proj, alice, before=second.position)
        assert back.position == first.position and back.relabel and back.current_grade == 2
        submit(s, alice, back.token, skip=True)
        after = progress(s, proj, alice)
        assert (after.done, after.skipped) == (before.done, 0) == (1, 0)  # the counter does not drop
        # the next pair is the one the judge was at, and the answered pair never comes back
        assert next_task(s, proj, alice).position == second.position
        seen = []
        while (task := next_task(s, proj, alice)) is not None:
            seen.append(task.position)
            submit(s, alice, task.token, grade=0)
        assert first.position not in seen
        label = {(f.qid, f.docid): f for f in final_labels(s, proj)}[(first.qid, first.docid)]
        assert dict(label.votes)["alice"] == 2
        # shown again later, it is still "answered before: 2" (the skip in the history is not an answer)
        again = previous_task(s, proj, alice, before=second.position)
        assert again.relabel and again.current_grade == 2
        history = s.exec(select(Judgment.grade, Judgment.skipped).where(Judgment.judge_id == alice.id)
                         .order_by(Judgment.id)).all()
        assert history[:2] == [(2, False), (None, True)]


def test_golden_adjudicate_unsure_lists_and_decides(project, engine):
    from click.testing import CliRunner

    from curation.cli import main

    url = engine.url.render_as_string(hide_password=False)
    with session(engine) as s:
        proj = get_project(s, project.project_name)
        alice = _user(s, "alice")
        task = next_task(s, proj, alice)
        submit(s, alice, task.token, grade=1, unsure=True, note="which reset?")
    runner = CliRunner()
    listed = runner.invoke(main, ["labels", "adjudicate", "--unsure", "--project", proj.name, "--db", url])
    assert listed.exit_code == 0, listed.output
    assert listed.output.strip() == f"{task.qid}/{task.docid}  distance 0  alice=1 (unsure)"
    done = runner.invoke(main, ["labels", "adjudicate", "--unsure", "--project", proj.name, "--lead", "lena", "--pair",
                                f"{task.qid}/{task.docid}", "--grade", "1", "--db", url])
    assert done.exit_code == 0, done.output
    again = runner.invoke(main, ["labels", "adjudicate", "--unsure", "--project", proj.name, "--db", url])
    assert again.output.strip() == "no unsure answers wait for a lead"
    with session(engine) as s:
        label = {(f.qid, f.docid): f for f in final_labels(s, get_project(s, proj.name))}[(task.qid, task.docid)]
    assert (label.grade, label.source) == (1, "adjudicated")
    assert label.reason == "unsure answer (grade 1) confirmed by the lead"


@pytest.mark.parametrize("seed", [3, 11])
def test_the_queue_counts_light_pass_agrees_with_every_judgment_read_one_by_one(project, engine, seed):
    """The two queues' counts (one pass over the driver's plain rows, ``open_queues``) against a
    brute force over the Judgment records and against the queues' detailed entries, on random
    histories: relabels, skips, unsure answers with and without a grade, adjudications."""
    import random
    from collections import defaultdict
    from datetime import UTC, datetime, timedelta

    from curation.store.models import Adjudication, PoolPair

    rng = random.Random(seed)
    with session(engine) as s:
        proj = get_project(s, project.project_name)
        judges = [_user(s, n) for n in ("alice", "bob", "lena")]
        pairs = list(s.exec(select(PoolPair.id).where(PoolPair.project_id == proj.id)))
        start = datetime(2026, 1, 1, tzinfo=UTC)
        rows = []
        for _ in range(300):
            grade = rng.choice([None, 0, 1, 2, 2])
            unsure = rng.random() < 0.2 or grade is None
            rows.append({"project_id": proj.id, "pair_id": rng.choice(pairs[1:]), "judge_id": rng.choice(judges).id,
                         "grade": grade, "unsure": unsure, "skipped": rng.random() < 0.1, "source": "human",
                         "purpose": "pool", "answered_at": start + timedelta(seconds=rng.randrange(200))})
        # and one pair whose only answer is an ungraded "unsure": in the unsure queue at distance 0
        lonely = pairs[0]  # no row drawn above
        rows.append({**rows[0], "pair_id": lonely, "grade": None, "unsure": True, "skipped": False})
        s.connection().execute(insert(Judgment.__table__), rows)
        for pair_id in rng.sample(pairs, 4):
            s.add(Adjudication(project_id=proj.id, pair_id=pair_id, lead_id=judges[2].id, grade=1, reason="r"))
        s.commit()

        graded, answered = {}, {}
        for j in sorted(s.exec(select(Judgment).where(Judgment.project_id == proj.id)),
                        key=lambda j: (j.answered_at, j.id)):
            if j.skipped or j.purpose != "pool":
                continue
            if j.grade is not None:
                graded[(j.pair_id, j.judge_id)] = j.grade
            if j.grade is not None or j.unsure:
                answered[(j.pair_id, j.judge_id)] = (j.grade, j.unsure)
        grades_of = defaultdict(set)
        for (pair_id, _), grade in graded.items():
            grades_of[pair_id].add(grade)
        split = {p for p, gs in grades_of.items() if len(gs) > 1}
        flagged = {p for (p, _), (_, unsure) in answered.items() if unsure}
        answer_grades = defaultdict(set)
        for (pair_id, _), (grade, _) in answered.items():
            if grade is not None:
                answer_grades[pair_id].add(grade)
        # ... and the grade distances the queues sort by
        assert adjudication._latest_passes(s, proj.id) == (
            {p: max(grades_of[p]) - min(grades_of[p]) for p in split},
            {p: max(answer_grades[p]) - min(answer_grades[p]) if answer_grades[p] else 0 for p in flagged})
        done = set(s.exec(select(Adjudication.pair_id).where(Adjudication.project_id == proj.id)))
        expected = tuple((len(ps - done), len(ps & done)) for ps in (split, flagged))

        queue, unsure = adjudication.open_queues(s, proj)
        assert (tuple(queue), tuple(unsure)) == expected
        assert split and flagged and split & done and lonely in flagged  # the draw reached every case it checks
        assert adjudication.queue_counts(s, proj) == queue
        assert adjudication.unsure_counts(s, proj) == unsure
        assert {e.pair_id for e in adjudication.disagreements(s, proj, include_resolved=True)} == split
        assert {e.pair_id for e in adjudication.unsure_answers(s, proj, include_resolved=True)} == flagged
