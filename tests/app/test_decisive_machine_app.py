"""A machine judge guiding the decisive order in a project: `golden judging assign --order decisive
--machine NAME` keeps the choice, `--machine none` gives back today's order exactly, the Comparisons
panel and `golden decisive settle` name the machine, and the judge's page shows nothing of it."""

from __future__ import annotations

import json

from click.testing import CliRunner
from sqlmodel import select

from curation.cli import main
from curation.evaluate import decisive
from curation.machine.guide import guide_machine, guided_priority_map
from curation.machine.labels import import_machine_labels
from curation.store.engine import session as new_session
from curation.store.models import Assignment
from curation.store.projects import get_project
from tests.support.client import csrf, login
from tests.support.judgments import judge
from tests.support.machine import write_machine
from tests.support.projects import RUN_NAMES, assigned_project

MACHINE = "oracle-llm-7"  # a name that could not appear on a judge's page by chance
RATIONALE = "MACHINE-RATIONALE-SENTINEL"


def _queue(db, project_id):
    rows = db.exec(select(Assignment.judge_id, Assignment.pair_id, Assignment.position)
                   .where(Assignment.project_id == project_id, Assignment.kind == "main")).all()
    return sorted(rows)


def _setup(engine, folder):
    s = assigned_project(engine, folder, n_queries=8, docs_per_query=12, overlap=0, hold=False)
    with new_session(engine) as db:
        proj = get_project(db, s.project_name)
        pm, _, _ = decisive.load_pool(db, proj)
        a, b = RUN_NAMES[0], RUN_NAMES[1]
        rb = pm.ranks[pm.run_index(b)]
        # the machine calls relevant what run B puts at ranks 5-8 (and nothing else)
        rows = [{"qid": pm.qids[q], "docid": d, "grade": 2 if 5 <= rb[i] <= 8 else 0,
                 "probability": {"0": 0.05, "2": 0.95} if 5 <= rb[i] <= 8 else {"0": 0.95, "2": 0.05},
                 "rationale": RATIONALE}
                for i, (q, d) in enumerate(zip(pm.pair_query.tolist(), pm.docids))]
        import_machine_labels(db, write_machine(folder / "m.jsonl", rows), machine=MACHINE, project=s.project_name)
    # the machine guides only once human labels confirm it: a judge agrees with it on three queries
    judge(engine, folder, s.judges[0], {(r["qid"], r["docid"]): r["grade"] for r in rows if r["qid"] in pm.qids[:3]},
          project=s.project_name)
    return s, f"{a},{b}"


def test_machine_guides_the_order_and_none_gives_todays_order(engine, tmp_path):
    s, comp = _setup(engine, tmp_path / "p")
    db_url = engine.url.render_as_string(False)
    base = ["judging", "assign", "--project", s.project_name, "--judges", "alice,bob", "--order", "decisive",
            "--compare", comp, "--db", db_url, "--seed", "3"]
    out = CliRunner().invoke(main, base)
    assert out.exit_code == 0, out.output
    assert "guided by" not in out.output
    with new_session(engine) as db:
        blind_queue = _queue(db, s.project_id)
        proj = get_project(db, s.project_name)
        blind = decisive.pair_priority_map(db, proj)
        assert guided_priority_map(db, proj) == blind  # no machine set: today's priorities
    out = CliRunner().invoke(main, [*base, "--machine", MACHINE])
    assert out.exit_code == 0, out.output
    assert f"guided by machine judge {MACHINE}" in out.output
    with new_session(engine) as db:
        proj = get_project(db, s.project_name)
        assert guide_machine(db, proj) == MACHINE
        guided = guided_priority_map(db, proj)
        assert guided.keys() == blind.keys() and guided != blind
        ids = sorted(blind)
        assert sorted(ids, key=lambda p: (-guided[p], p)) != sorted(ids, key=lambda p: (-blind[p], p))
    out = CliRunner().invoke(main, [*base, "--machine", "none"])
    assert out.exit_code == 0, out.output
    with new_session(engine) as db:
        assert guide_machine(db, get_project(db, s.project_name)) is None
        assert _queue(db, s.project_id) == blind_queue  # byte for byte: the same positions
    bad = CliRunner().invoke(main, [*base, "--machine", "nobody"])
    assert bad.exit_code != 0 and "nobody" in bad.output
    plain = CliRunner().invoke(main, ["judging", "assign", "--project", s.project_name, "--judges", "alice",
                                      "--machine", MACHINE, "--db", db_url])
    assert plain.exit_code == 2 and "--order decisive" in plain.output


def test_panel_names_the_machine_and_the_judge_page_shows_nothing_of_it(app, engine, tmp_path):
    s, comp = _setup(engine, tmp_path / "p")
    db_url = engine.url.render_as_string(False)
    out = CliRunner().invoke(main, ["judging", "assign", "--project", s.project_name, "--judges", "alice,bob",
                                    "--order", "decisive", "--compare", comp, "--machine", MACHINE, "--db", db_url])
    assert out.exit_code == 0, out.output
    settle = CliRunner().invoke(main, ["decisive", "settle", "--project", s.project_name, "--db", db_url, "--json"])
    assert settle.exit_code == 0, settle.output
    rep = json.loads(settle.output)
    assert rep["machine"] == MACHINE
    text = CliRunner().invoke(main, ["decisive", "settle", "--project", s.project_name, "--db", db_url])
    assert f"order: guided by machine judge {MACHINE}" in text.output

    lead = login(app.test_client(), "lena")
    body = lead.get(f"/lead/{s.project_id}/comparisons", headers={"HX-Request": "true"}).data.decode()
    assert f"guided by machine judge {MACHINE}" in body
    assert "Estimate: wrong calls measured" in body
    # the setting: CSRF-protected, then back to the blind order
    page = lead.get(f"/lead/{s.project_id}")
    assert lead.post(f"/lead/{s.project_id}/comparisons/machine", data={"machine": ""}).status_code == 400
    r = lead.post(f"/lead/{s.project_id}/comparisons/machine", data={"machine": "", "csrf_token": csrf(page.data)})
    assert r.status_code == 302
    body = lead.get(f"/lead/{s.project_id}/comparisons", headers={"HX-Request": "true"}).data.decode()
    assert "Order: blind" in body
    judge = login(app.test_client(), "alice")
    assert judge.get(f"/lead/{s.project_id}/comparisons").status_code == 403
    assert judge.post(f"/lead/{s.project_id}/comparisons/machine",
                      data={"machine": MACHINE, "csrf_token": csrf(page.data)}).status_code in (302, 400, 403)

    # set it again and look at every page the judge gets along the queue
    with new_session(engine) as db:
        from curation.machine.guide import set_guide_machine

        set_guide_machine(db, get_project(db, s.project_name), MACHINE)
        db.commit()
    for _ in range(3):
        html = judge.get(f"/projects/{s.project_id}/judge").data.decode()
        assert "<form" in html or "queue" in html.lower()
        for secret in (MACHINE, RATIONALE, "machine", "guided", "decisive", "priority"):
            assert secret not in html, secret
