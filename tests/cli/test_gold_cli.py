"""`golden judging gold` (add from adjudicated labels, seed judgments or by hand; list; retire;
settings; release) and the known-answer part of `golden judging progress`, on a real SQLite store."""

from __future__ import annotations

import json

from click.testing import CliRunner
from sqlmodel import select

from curation.cli import main
from curation.store.engine import session as new_session
from curation.store.models import Assignment, KnownAnswer, KnownAnswerHold, User
from tests.support.judgments import adjudicate
from tests.support.known_answer import known_answer_project
from tests.support.projects import sqlite_store


def _run(db, *args):
    return CliRunner().invoke(main, ["judging", "gold", *args, "--project", "recipes", "--db", db])


def test_gold_add_list_retire_settings_release(tmp_path):
    with sqlite_store(tmp_path) as (db, engine):
        pid, known = known_answer_project(engine, tmp_path / "p", rate=0, known=2)
        r = _run(db, "add", "--pair", "q007", "d007_03", "--grade", "1", "--grade", "2", "--reason", "either")
        assert r.exit_code == 0, r.output
        assert "1 known-answer pair(s) added" in r.output and "not mixed in yet" in r.output
        bad = _run(db, "add", "--pair", "q007", "d007_03", "--grade", "5")
        assert bad.exit_code == 1 and "grade" in bad.output
        missing = _run(db, "add", "--pair", "q999", "d007_03", "--grade", "1")
        assert missing.exit_code == 1 and "q999/d007_03: not in the pool" in missing.output
        assert _run(db, "add").exit_code == 2  # neither --from nor --pair

        adjudicate(engine, "q006", "d006_01", 2, project="recipes", reason="the steps are all there")
        r = _run(db, "add", "--from", "adjudicated", "--lead", "lena")
        assert r.exit_code == 0 and "1 known-answer pair(s) added" in r.output, r.output
        listed = json.loads(_run(db, "list", "--json").output)
        by_pair = {(k["qid"], k["docid"]): k for k in listed}
        assert by_pair["q007", "d007_03"]["grades"] == [1, 2] and by_pair["q007", "d007_03"]["source"] == "lead"
        assert by_pair["q006", "d006_01"] == {**by_pair["q006", "d006_01"], "grades": [2], "source": "adjudication",
                                              "reason": "the steps are all there", "created_by": "lena"}
        assert len(listed) == 4

        r = _run(db, "settings", "--rate", "2", "--hold", "--bar", "0.7", "--lead", "lena")
        assert r.exit_code == 0 and "rate 1 in 2, bar 0.7, hold below the bar" in r.output, r.output
        with new_session(engine) as s:
            carol = s.exec(select(User).where(User.name == "carol")).one()
            mixed = s.exec(select(Assignment).where(Assignment.judge_id == carol.id, Assignment.kind == "known")).all()
            assert mixed and {a.pair_id for a in mixed} <= {k.pair_id for k in s.exec(select(KnownAnswer))}
        assert _run(db, "settings", "--rate", "1").exit_code != 0

        r = _run(db, "retire", "--pair", "q007", "d007_03")
        assert r.exit_code == 0 and "1 known-answer pair(s) retired" in r.output
        assert len(json.loads(_run(db, "list", "--json").output)) == 3
        assert len(json.loads(_run(db, "list", "--json", "--all").output)) == 4

        with new_session(engine) as s:
            s.add(KnownAnswerHold(project_id=pid, judge_id=carol.id, answers=12, exact=0.1))
            s.commit()
        assert _run(db, "release", "carol", "--lead", "alice").exit_code == 1  # a judge cannot
        r = _run(db, "release", "carol", "--lead", "lena")
        assert r.exit_code == 0 and "carol's queue released" in r.output
        assert _run(db, "release", "carol", "--lead", "lena").exit_code == 1  # not held any more
        with new_session(engine) as s:
            assert s.exec(select(KnownAnswer)).all()


def test_progress_shows_known_answer_accuracy_apart(tmp_path):
    with sqlite_store(tmp_path) as (db, engine):
        pid, known = known_answer_project(engine, tmp_path / "p", rate=2)
        from curation.store.models import utcnow
        from tests.support.judgments import judge_queue

        judge_queue(engine, pid, "carol", lambda docid: 0, start=utcnow())
        r = CliRunner().invoke(main, ["judging", "progress", "--project", "recipes", "--db", db])
        assert r.exit_code == 0, r.output
        assert "known-answer pairs: 1 in 2 shown" in r.output
        assert f"known-answer items: {len(known)} answered, 0 to go (not counted in the work above)" in r.output
        line = next(x for x in r.output.splitlines() if x.startswith("carol") and "too few" in x)
        assert f"{len(known):>9}" in line and "0% [" in line
        data = json.loads(CliRunner().invoke(main, ["judging", "progress", "--project", "recipes", "--db", db,
                                                    "--json"]).output)
        assert data["known_done"] == len(known) and data["accuracy"][0]["judge"] == "carol"
