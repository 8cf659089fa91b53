"""Every change a lead makes to what the golden set says is in the audit trail: a
guidelines version, an information-need edit, a leak decision, an export (new, written again, and
--frozen) and an unlock, each shown by `golden admin audit`. SQLite and PostgreSQL."""

from __future__ import annotations

import json

from click.testing import CliRunner
from sqlmodel import select

from curation.cli import main
from curation.leak.findings import decide_many, decide_query, leak_overview
from curation.store.engine import session as new_session
from curation.store.models import User
from curation.store.needs import set_need
from curation.store.projects import get_project
from tests.leak.test_leak_review import setup  # noqa: F401 - the fixture: a project with its leak findings


def run(engine, *args):
    res = CliRunner().invoke(main, [*args, "--db", engine.url.render_as_string(hide_password=False)])
    assert res.exit_code == 0, res.output
    return res.output


def events(engine, action):
    return json.loads(run(engine, "admin", "audit", "--json", "--action", action))["events"]


def test_guidelines_needs_and_exports_are_audited(engine, project, tmp_path):
    guide = tmp_path / "GUIDELINES.md"
    guide.write_text("# Relevance\n\nA recipe that answers the question is relevant.\n")
    run(engine, "project", "guidelines", "set", str(guide), "--project", project.project_name, "--note", "first")
    run(engine, "project", "guidelines", "set", str(guide), "--project", project.project_name)  # unchanged
    [g] = [e for e in events(engine, "guidelines") if e["detail"]["note"] == "first"]
    assert g["target"].startswith(f"{project.project_name} guidelines v") and g["project_id"] == project.project_id
    assert g["address"].startswith("cli:")

    with new_session(engine) as s:
        lena = s.exec(select(User).where(User.name == "lena")).one()
        proj = get_project(s, project.project_name)
        qid = "q001"
        set_need(s, proj, qid, lead=lena, description="How to bake it", narrative=None, note="clearer")
        set_need(s, proj, qid, lead=lena, description="How to bake it", narrative=None)  # same text: no event
    [n] = events(engine, "need")
    assert n["actor"] == "lena" and n["detail"]["qid"] == qid and n["detail"]["note"] == "clearer"

    out = tmp_path / "exports"
    common = ["--project", project.project_name, "--out", str(out), "--allow-incomplete", "--by", "lena"]
    run(engine, "export", "create", "--version", "v1", *common)
    run(engine, "export", "create", "--version", "v1", *common)  # the same state: written again
    run(engine, "export", "create", "--version", "v1", "--frozen", "--project", project.project_name,
        "--out", str(tmp_path / "again"), "--by", "lena")
    ex = events(engine, "export")
    assert [e["target"] for e in ex] == [f"{project.project_name} v1"] * 3 and {e["actor"] for e in ex} == {"lena"}
    assert [bool(e["detail"].get("written_again")) for e in ex] == [True, True, False]  # newest first
    assert ex[0]["detail"]["written_again"].endswith("again/v1")
    text = run(engine, "admin", "audit", "--action", "export")
    assert text.count("\n") == 3 and "lena" in text


def test_leak_decisions_are_audited(engine, setup):  # noqa: F811
    with new_session(engine) as db:
        lena = db.exec(select(User).where(User.name == "lena")).one()
        ov = leak_overview(db, setup.project_id)
        q1 = next(q for q in ov.queries if q.qid == "q001")
        q2 = next(q for q in ov.queries if q.qid == "q002")
        decide_many(db, setup.project_id, [q1.chunks[0].finding_id], "exclude_chunk", lena)
        decide_query(db, setup.project_id, q2.query_id, "drop_query", lena)
    ev = events(engine, "leak_decision")
    assert [e["detail"]["decision"] for e in ev] == ["drop_query", "exclude_chunk"]
    assert ev[1]["detail"]["pairs"] == [["q001", q1.chunks[0].chunk_id]] and ev[1]["actor"] == "lena"
    assert {p[0] for p in ev[0]["detail"]["pairs"]} == {"q002"} and ev[0]["detail"]["count"] == len(q2.chunks)
    assert ev[0]["project_id"] == setup.project_id


def test_needs_changed_by_project_extend_are_audited(db_url, tmp_path):
    from tests.judge.test_needs import _files

    runner = CliRunner()
    paths = _files(tmp_path / "a")
    assert runner.invoke(main, ["admin", "db", "upgrade", "--db", db_url]).exit_code == 0
    out = runner.invoke(main, ["project", "create", "p", "--queries", str(paths["queries"]), "--pool",
                               str(paths["pool"]), "--corpus", str(paths["corpus"]), "--guidelines",
                               str(paths["guidelines"]), "--db", db_url])
    assert out.exit_code == 0, out.output
    audit = ["admin", "audit", "--json", "--action", "need", "--db", db_url]
    assert json.loads(runner.invoke(main, audit).output)["events"] == []  # a first need is no edit
    changed = _files(tmp_path / "b", need="Something else")
    out = runner.invoke(main, ["project", "extend", "p", "--pool", str(changed["pool"]), "--corpus",
                               str(changed["corpus"]), "--queries", str(changed["queries"]), "--db", db_url])
    assert out.exit_code == 0, out.output
    [e] = json.loads(runner.invoke(main, audit).output)["events"]
    assert e["detail"]["qids"] == ["q1"] and e["detail"]["count"] == 1 and e["address"].startswith("cli:")
