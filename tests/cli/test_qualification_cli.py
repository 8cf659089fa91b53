"""Qualification from the command line on a real SQLite store: `golden judging gold settings
--qualification/--pass-mark/--retries` (checked, audited), `golden judging progress` showing each
judge's state (text and --json), and `golden judging gold grant` for a blocked judge."""

from __future__ import annotations

import json

from click.testing import CliRunner

from curation.cli import main
from curation.judge import qualification as q
from curation.store import projects
from curation.store.engine import session as new_session
from curation.store.users import get_user
from tests.support.projects import assigned_project, sqlite_store
from tests.support.qualified import add_known_pairs, expected_grade


def _run(db, *args):
    return CliRunner().invoke(main, [*args, "--project", "recipes", "--db", db])


def _fail_every_attempt(engine):
    with new_session(engine) as s:
        project, nina = projects.get_project(s, "recipes"), get_user(s, "nina")
        while q.qualification_state(s, project, nina).status in (q.IN_PROGRESS, q.FAILED):
            if q.qualification_state(s, project, nina).status == q.FAILED:
                q.start_attempt(s, project, nina)
                s.commit()
            item = q.next_item(s, project, nina)
            while item is not None:
                q.answer(s, project, nina, attempt=item.attempt, position=item.position,
                         grade=(expected_grade(item.docid) + 1) % 3)
                item = q.next_item(s, project, nina)


def test_settings_progress_and_grant(tmp_path):
    with sqlite_store(tmp_path) as (db, engine):
        s = assigned_project(engine, tmp_path / "p", n_queries=6, docs_per_query=5, overlap=3,
                             judges=("alice", "bob", "nina"))
        add_known_pairs(engine, s.project_id, avoid_judge="nina", n=12)
        r = _run(db, "judging", "gold", "settings")
        assert r.exit_code == 0 and "qualification: off" in r.output, r.output
        r = _run(db, "judging", "gold", "settings", "--qualification", "4", "--pass-mark", "0.75", "--retries", "1",
                 "--lead", "lena")
        assert r.exit_code == 0, r.output
        assert "qualification: 4 known-answer pairs, pass mark 0.75, 1 retry after a failed attempt" in r.output
        assert _run(db, "judging", "gold", "settings", "--pass-mark", "0").exit_code == 2
        assert _run(db, "judging", "gold", "settings", "--qualification", "-1").exit_code == 2
        audit = CliRunner().invoke(main, ["admin", "audit", "--action", "qualification_settings", "--json", "--db", db])
        assert json.loads(audit.output)["events"][0]["actor"] == "lena"

        r = _run(db, "judging", "progress")
        assert r.exit_code == 0 and "qualification: 4 known-answer pairs, 3 exact to pass" in r.output, r.output
        assert "in progress" in r.output
        _fail_every_attempt(engine)
        r = _run(db, "judging", "progress")
        line = next(x for x in r.output.splitlines() if x.startswith("nina") and "blocked" in x)
        assert "2 of 2" in line and "BLOCKED" in line
        rows = json.loads(_run(db, "judging", "progress", "--json").output)["qualification"]
        assert {r["judge"]: r["status"] for r in rows} == {"alice": "in progress", "bob": "in progress",
                                                           "nina": "blocked"}

        assert _run(db, "judging", "gold", "grant", "nina", "--lead", "alice").exit_code == 1  # a judge
        r = _run(db, "judging", "gold", "grant", "nina", "--lead", "lena")
        assert r.exit_code == 0 and "nina may take the qualification again (attempt 3)" in r.output, r.output
        again = _run(db, "judging", "gold", "grant", "nina", "--lead", "lena")
        assert again.exit_code == 1 and "only a blocked judge" in again.output
