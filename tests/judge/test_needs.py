"""Information needs per query: read from queries.jsonl, passed on by `golden
sample --handwritten`, loaded by `project create` / `extend --queries`, shown to the judge with the
version recorded in each judgment, written by a lead as a new version, exported in queries.jsonl.
On SQLite and PostgreSQL."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from sqlmodel import select

from curation.cli import main
from curation.export.versions import export_version
from curation.formats.fileio import InputError
from curation.formats.queries import parse_queries
from curation.judge.assignment import assign
from curation.judge.judging import next_task, submit
from curation.sample.sampling import sample_queries
from curation.store.engine import session
from curation.store.models import Judgment, QueryNeed
from curation.store.needs import current_need, set_need
from curation.store.projects import create_project, extend_pool, get_project
from curation.store.users import add_user
from tests.support.projects import write_project_files


def test_queries_jsonl_carries_description_and_narrative():
    rows = list(parse_queries([
        '{"qid": "a", "text": "reset", "description": " Reset a password. ", "narrative": "Not the router."}',
        '{"qid": "b", "text": "export", "description": null, "narrative": "  "}',
    ]))
    assert [(r.description, r.narrative) for r in rows] == [("Reset a password.", "Not the router."), (None, None)]
    assert rows[0].as_dict()["description"] == "Reset a password."
    with pytest.raises(InputError, match=r"queries.jsonl:1: 'narrative' must be a string or null, got \['x'\]"):
        list(parse_queries(['{"qid": "a", "text": "t", "narrative": ["x"]}']))


def test_sample_passes_the_needs_of_handwritten_queries_on(tmp_path):
    log = tmp_path / "log.csv"
    log.write_text("query\n" + "".join(f"query {i}\n" for i in range(30)), encoding="utf-8")
    hand = tmp_path / "hand.jsonl"
    hand.write_text('{"text": "Reset  Password", "description": "How to reset a forgotten password"}\n'
                    '{"text": "export limits"}\n', encoding="utf-8")
    rows = sample_queries(log, query_col="query", size=5, floor=1, seed=0, handwritten=hand).rows
    by_text = {r["text"]: r for r in rows}
    assert by_text["reset password"]["description"] == "How to reset a forgotten password"
    assert "description" not in by_text["export limits"] and "narrative" not in by_text["export limits"]
    assert all("description" not in r for r in rows if r["stratum"] != {"source": "handwritten"})


def _need(need):
    return need.version, need.description, need.narrative


def _files(folder, *, need="Reset a forgotten password"):
    queries = [{"qid": "q1", "text": "reset", "description": need, "narrative": "Router resets are not relevant."},
               {"qid": "q2", "text": "export limits"}]
    corpus = [{"id": f"d{i}", "text": f"text {i}"} for i in range(4)]
    pool = [{"qid": q, "docid": f"d{i}", "order": i, "systems": {"r": i + 1}} for q in ("q1", "q2") for i in range(2)]
    return write_project_files(folder, queries, pool, corpus)


def test_needs_from_create_to_judgment_to_export(engine, tmp_path):
    paths = _files(tmp_path / "v1")
    with session(engine) as s:
        report = create_project(s, "p", queries_path=paths["queries"], pool_path=paths["pool"],
                                corpus_paths=[paths["corpus"]], guidelines_path=paths["guidelines"])
        assert report.needs == 1
        project = get_project(s, "p")
        alice = add_user(s, "alice", password="password1")
        lena = add_user(s, "lena", role="lead", password="password1")
        assign(s, project, [alice], overlap=0, seed=1, hold=False)
        assert _need(current_need(s, project, "q1")) == (1, "Reset a forgotten password",
                                                         "Router resets are not relevant.")
        assert current_need(s, project, "q2").empty and current_need(s, project, "nope") is None

        shown = {}
        while (task := next_task(s, project, alice)) is not None:
            shown[(task.qid, task.docid)] = (task.need_version, task.need_description)
            if task.qid == "q1" and len([k for k in shown if k[0] == "q1"]) == 1:
                # a lead rewrites q1's need between two of its pairs: the second pair shows version 2
                need, is_new = set_need(s, project, "q1", lead=lena, description="Reset the account password",
                                        narrative=None, note="not the router")
                assert (need.version, is_new) == (2, True)
                assert set_need(s, project, "q1", lead=lena, description="Reset the account password",
                                narrative="")[1] is False  # the same text: no new version
            submit(s, alice, task.token, grade=1)
        q1 = sorted(v for k, v in shown.items() if k[0] == "q1")
        assert q1 == [(1, "Reset a forgotten password"), (2, "Reset the account password")]
        assert all(v == (None, None) for k, v in shown.items() if k[0] == "q2")
        recorded = s.exec(select(QueryNeed.version).join(Judgment, Judgment.need_version_id == QueryNeed.id)
                          .order_by(Judgment.id)).all()
        assert sorted(recorded) == [1, 2]
        with pytest.raises(ValueError, match="only a lead"):
            set_need(s, project, "q1", lead=alice, description="x", narrative=None)
        with pytest.raises(ValueError, match="no query 'q9'"):
            set_need(s, project, "q9", lead=lena, description="x", narrative=None)

        # `project extend --queries`: a changed need becomes the next version, an unchanged one does not
        changed = _files(tmp_path / "v2", need="Reset a password you forgot")
        assert extend_pool(s, project, pool_path=changed["pool"], corpus_paths=[changed["corpus"]],
                           queries_path=changed["queries"]).needs == 1
        assert _need(current_need(s, project, "q1")) == (3, "Reset a password you forgot",
                                                         "Router resets are not relevant.")
        res = export_version(s, project, "v1", out_dir=tmp_path / "out")
    queries = {r["qid"]: r for r in map(json.loads, (tmp_path / "out" / "v1" / "queries.jsonl").read_text()
                                        .splitlines())}
    assert (queries["q1"]["description"], queries["q1"]["need_version"]) == ("Reset a password you forgot", 3)
    assert "description" not in queries["q2"] and "need_version" not in queries["q2"]
    labels = [json.loads(x) for x in (tmp_path / "out" / "v1" / "qrels.jsonl").read_text().splitlines()]
    assert sorted(v.get("need_version") for r in labels if r["qid"] == "q1" for v in r["judgments"]) == [1, 2]
    assert res.manifest["counts"]["pairs"] == 4


def test_cli_create_and_extend_report_the_needs(db_url, tmp_path):
    runner = CliRunner()
    paths = _files(tmp_path / "a")
    assert runner.invoke(main, ["admin", "db", "upgrade", "--db", db_url]).exit_code == 0
    out = runner.invoke(main, ["project", "create", "p", "--queries", str(paths["queries"]), "--pool",
                               str(paths["pool"]), "--corpus", str(paths["corpus"]), "--guidelines",
                               str(paths["guidelines"]), "--db", db_url])
    assert out.exit_code == 0, out.output
    assert "1 queries carry an information need" in out.output
    changed = _files(tmp_path / "b", need="Something else")
    out = runner.invoke(main, ["project", "extend", "p", "--pool", str(changed["pool"]), "--corpus",
                               str(changed["corpus"]), "--queries", str(changed["queries"]), "--db", db_url])
    assert out.exit_code == 0, out.output
    assert f"1 information needs updated from {changed['queries']}" in out.output
