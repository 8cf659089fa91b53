"""One count of work on every page: after a lead excludes leak chunks and drops a query in
the middle of the judging, the judge's page, the lead's Progress page, the dashboard, the
Comparisons panel and `golden judging progress` show the same done / to-go figures, and they are
the figures counted independently with plain SQL on the tables (retired pairs left out); the
panel's count of pairs with a final label is named so, not "judged"."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

from click.testing import CliRunner
from sqlalchemy import text
from sqlmodel import select

from curation.cli import main
from curation.evaluate import decisive
from curation.leak.findings import decide, decide_query, record_findings
from curation.store.engine import session as new_session
from curation.store.models import Assignment, Document, LeakFinding, PoolPair, Query, User
from curation.store.projects import get_project
from curation.store.users import get_user
from tests.support.client import login
from tests.support.judgments import judge_queue
from tests.support.projects import RUN_NAMES, assigned_project

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def _independent(engine, project_id):
    """Per judge name: (done, to go) over the assignment rows of pairs whose query is not dropped and
    whose document is not excluded, counted with plain SQL."""
    with engine.connect() as conn:
        rows = conn.execute(text(
            "SELECT u.name, SUM(CASE WHEN a.done_at IS NOT NULL THEN 1 ELSE 0 END), "
            "SUM(CASE WHEN a.done_at IS NULL THEN 1 ELSE 0 END) FROM assignment a "
            "JOIN \"user\" u ON u.id = a.judge_id JOIN poolpair p ON p.id = a.pair_id "
            "JOIN query q ON q.id = p.query_id JOIN document d ON d.id = p.document_id "
            "WHERE a.project_id = :p AND q.status <> 'dropped' AND NOT d.excluded GROUP BY u.name"),
            {"p": project_id}).all()
    return {name: (int(done), int(left)) for name, done, left in rows}


def _retire_mid_project(engine, project_id):
    """The lead excludes two chunks (one alice labelled, one bob has still to judge) and drops a
    query, through the leak review's decisions."""
    with new_session(engine) as s:
        alice, bob = get_user(s, "alice"), get_user(s, "bob")

        def docid_of(judge, done):
            return s.exec(select(Document.docid).join(PoolPair, PoolPair.document_id == Document.id)
                          .join(Assignment, Assignment.pair_id == PoolPair.id)
                          .where(Assignment.judge_id == judge.id, Assignment.done_at.is_not(None) if done
                                 else Assignment.done_at.is_(None)).order_by(Assignment.position)).first()

        labelled, open_ = docid_of(alice, True), docid_of(bob, False)
        records = [{"qid": "q004", "status": "leak",
                    "matches": [{"chunk_id": labelled, "mode": "exact", "score": 1.0},
                                {"chunk_id": open_, "mode": "exact", "score": 1.0}]},
                   {"qid": "q005", "status": "leak", "matches": [{"chunk_id": "elsewhere", "mode": "exact",
                                                                   "score": 1.0}]}]
        record_findings(s, project_id, records)
        lena = get_user(s, "lena")
        by_chunk = {f.chunk_id: f.id for f in s.exec(select(LeakFinding))}
        decide(s, project_id, by_chunk[labelled], "exclude_chunk", lena)
        decide(s, project_id, by_chunk[open_], "exclude_chunk", lena)
        q005 = s.exec(select(Query).where(Query.qid == "q005")).one()
        decide_query(s, project_id, q005.id, "drop_query", lena)
        assert s.exec(select(Query).where(Query.qid == "q005")).one().status == "dropped"


def test_every_page_and_the_cli_show_the_same_count(app, engine, db_url, tmp_path):
    setup = assigned_project(engine, tmp_path / "p", n_queries=6, docs_per_query=5, overlap=6, hold=False)
    pid = setup.project_id
    with new_session(engine) as s:  # a comparison, so that the Comparisons panel shows its report too
        decisive.record_comparisons(s, get_project(s, "recipes"), [f"{RUN_NAMES[0]},{RUN_NAMES[1]}"])
        s.commit()
    judge_queue(engine, pid, "alice", lambda d: int(d[-1]) % 3, start=T0, seconds=20.0, limit=8)
    judge_queue(engine, pid, "bob", lambda d: int(d[-1]) % 3, start=T0, seconds=20.0, limit=5)
    _retire_mid_project(engine, pid)
    # bob judges all that is left to him: the retired pairs are not offered, and he is done.
    judge_queue(engine, pid, "bob", lambda d: int(d[-1]) % 3, start=T0.replace(hour=10), seconds=20.0)
    want = _independent(engine, pid)
    assert want["bob"][1] == 0 and want["alice"][1] > 0
    done = sum(d for d, _ in want.values())
    left = sum(n for _, n in want.values())

    # The judge's page of each judge.
    for name, (d, n) in want.items():
        body = login(app.test_client(), name).get(f"/projects/{pid}/judge").data.decode()
        assert re.search(r'id="progress-counts">(\d+) / (\d+) done', body).groups() == (str(d), str(d + n)), name

    lead = login(app.test_client(), "lena")
    # Progress: per judge and for the project; bob is done, not idle.
    body = lead.get(f"/lead/{pid}/progress").data.decode()
    for name, (d, n) in want.items():
        row = re.search(rf'<tr data-judge="{name}"[^>]*data-state="(\w+)">(.*?)</tr>', body, re.S)
        assert re.search(r'data-col="done">(\d+)<', row.group(2)).group(1) == str(d)
        assert re.search(r'data-col="assigned">(\d+)<', row.group(2)).group(1) == str(d + n)
        assert row.group(1) == ("done" if n == 0 else "idle")
    assert 'data-testid="finished">done<' in body

    def work(page: str) -> tuple[int, int]:
        return (int(re.search(r'data-testid="work-done">(\d+)<', page).group(1)),
                int(re.search(r'data-testid="work-remaining">(\d+)<', page).group(1)))

    assert work(body) == (done, left)
    assert work(lead.get(f"/lead/{pid}").data.decode()) == (done, left)  # the dashboard
    panel = lead.get(f"/lead/{pid}/comparisons", headers={"HX-Request": "true"}).data.decode()
    assert work(panel) == (done, left)
    # The panel's other figure is a different quantity, named as such: the pool pairs with a final
    # label (the settlement report's, as `golden decisive settle --json` gives it), never "judged".
    assert 'data-testid="comparisons-table"' in panel and "pairs judged" not in panel
    settle = CliRunner().invoke(main, ["decisive", "settle", "--project", "recipes", "--json", "--db", db_url])
    assert settle.exit_code == 0, settle.output
    rep = json.loads(settle.output)
    finals = re.search(r'data-testid="final-labels">(\d+)</span> of (\d+) pool pairs\s+have a final label', panel)
    assert finals and finals.groups() == (str(rep["judged_pairs"]), str(rep["pool_pairs"]))

    out = CliRunner().invoke(main, ["judging", "progress", "--project", "recipes", "--json", "--db", db_url])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert (data["done_rows"], data["remaining_rows"]) == (done, left)
    assert {j["judge"]: (j["done"], j["remaining"]) for j in data["judges"]} == want
    assert {j["judge"]: j["state"] for j in data["judges"]} == {"alice": "idle", "bob": "done"}
    text_out = CliRunner().invoke(main, ["judging", "progress", "--project", "recipes", "--db", db_url]).output
    assert f"answers: {done} done, {left} to go" in text_out
    bob_line = next(line for line in text_out.splitlines() if line.startswith("bob"))
    assert bob_line.endswith("DONE")


def test_the_count_is_the_same_for_one_judge_and_for_all(engine, tmp_path):
    from curation.store import workload

    setup = assigned_project(engine, tmp_path / "p", n_queries=4, docs_per_query=4, overlap=4, hold=True)
    judge_queue(engine, setup.project_id, "alice", lambda d: 1, start=T0, seconds=10.0, limit=3)
    _retire_mid_project_small(engine, setup.project_id)
    with new_session(engine) as s:
        proj = get_project(s, "recipes")
        everyone = workload.count_work(s, proj.id, visible=False)
        for user in s.exec(select(User).where(User.name.in_(["alice", "bob"]))):
            assert workload.count_work(s, proj.id, visible=False, judge_id=user.id) == {user.id: everyone[user.id]}
            w = everyone[user.id]
            assert w.held == w.total - w.overlap_total  # main rows held until the release
            assert w.open_now == w.overlap_total - w.overlap_done


def _retire_mid_project_small(engine, project_id):
    with new_session(engine) as s:
        s.exec(select(Query).where(Query.qid == "q001")).one().status = "dropped"
        s.commit()
