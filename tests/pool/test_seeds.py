"""Seed judgments from tickets and clicks: reading the files, keeping them apart from human
judgments, adding them to the pool blind, and the export marking labels that rest on a seed alone."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from sqlmodel import func, select

from curation.cli import main
from curation.export import versions as export
from curation.formats.fileio import InputError
from curation.formats.seeds_file import Seed, read_seeds
from curation.judge import assignment, judging
from curation.pool.seeds import import_seeds
from curation.store.engine import session as new_session
from curation.store.models import Judgment, PoolPair, Query, SeedJudgment
from curation.store.projects import get_project
from curation.store.users import get_user
from tests.support.judgments import judge
from tests.support.projects import pairs_project

PAIRS = [("007", "d1"), ("007", "d2"), ("10", "d1"), ("10", "d3"), ("9", "d4")]


def test_read_seeds_in_every_format(tmp_path):
    jl = tmp_path / "t.jsonl"
    jl.write_text('{"qid": "007", "docid": "d1"}\n\n{"qid": 10, "docid": "d3", "grade": 1}\n')
    assert list(read_seeds(jl)) == [Seed("007", "d1", None, 1), Seed("10", "d3", 1, 3)]
    tsv = tmp_path / "c.tsv"
    tsv.write_text("qid\tdocid\tgrade\n007\td1\t2\n9\td4\n")
    assert list(read_seeds(tsv)) == [Seed("007", "d1", 2, 2), Seed("9", "d4", None, 3)]
    csv = tmp_path / "c.csv"
    csv.write_text("qid,docid\n007,d2\n")
    assert list(read_seeds(csv)) == [Seed("007", "d2", None, 2)]
    txt = tmp_path / "c.txt"
    txt.write_text("# clicks\n007 d2 1\n")
    assert list(read_seeds(txt)) == [Seed("007", "d2", 1, 2)]


@pytest.mark.parametrize("name,content,message", [
    ("bad.jsonl", '{"qid": "1", "docid": "a"}\n{"qid": "1",\n', "bad.jsonl:2: not valid JSON"),
    ("bad.jsonl", '{"qid": "1"}\n', "bad.jsonl:1: missing or empty 'docid'"),
    ("bad.tsv", "1\ta\tb\tc\n", "bad.tsv:1: has 4 fields, expected 2 or 3"),
    ("bad.txt", "1 a 0.5\n", "bad.txt:1: grade '0.5' is not an integer"),
])
def test_bad_seed_files_name_the_line(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(InputError, match=message.replace(".", r"\.").replace("(", r"\(")):
        list(read_seeds(path))


def _seeds(engine):
    with new_session(engine) as s:
        return sorted((r.qid, r.docid, r.source, r.grade) for r in s.exec(select(SeedJudgment)))


def test_seeds_are_stored_apart_from_judgments_with_their_source(engine, tmp_path):
    pairs_project(engine, tmp_path / "in", PAIRS)
    tickets = tmp_path / "tickets.jsonl"
    tickets.write_text('{"qid": "007", "docid": "d1"}\n{"qid": "007", "docid": "d1"}\n'
                       '{"qid": "9", "docid": "d4", "grade": 1}\n')
    clicks = tmp_path / "clicks.tsv"
    clicks.write_text("007\td1\n007\td2\n007\td2\n")
    with new_session(engine) as s:
        rep = import_seeds(s, get_project(s, "p"), tickets, source="ticket")
        assert (rep.lines, rep.distinct, rep.added) == (3, 2, 2)
        rep = import_seeds(s, get_project(s, "p"), clicks, source="click")
        assert (rep.lines, rep.distinct, rep.added) == (3, 2, 2)
        again = import_seeds(s, get_project(s, "p"), tickets, source="ticket")
        assert (again.added, again.already) == (0, 2)
        assert s.exec(select(func.count(Judgment.id))).one() == 0  # no judgment was made up
        assert s.exec(select(func.count(PoolPair.id)).where(PoolPair.seed_source.is_not(None))).one() == 0
    # Scale 0-2: a ticket defaults to the top grade 2, a click to the weak positive 1.
    assert _seeds(engine) == [("007", "d1", "click", 1), ("007", "d1", "ticket", 2), ("007", "d2", "click", 1),
                              ("9", "d4", "ticket", 1)]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"qid": "007", "docid": "d1", "grade": 3}\n')
    with (new_session(engine) as s,
          pytest.raises(InputError, match="bad.jsonl:1: grade: 3 is not a grade of the scale 0-2 \\(0, 1, 2\\)")):
        import_seeds(s, get_project(s, "p"), bad, source="ticket")
    with new_session(engine) as s, pytest.raises(ValueError, match="source"):
        import_seeds(s, get_project(s, "p"), tickets, source="email")


def test_seeds_join_the_pool_blind(engine, tmp_path):
    pairs_project(engine, tmp_path / "in", PAIRS)
    path = tmp_path / "clicks.jsonl"
    rows = [("007", "d1"), ("007", "d4"), ("007", "d3"), ("10", "zz"), ("nope", "d1")]
    path.write_text("".join(json.dumps({"qid": q, "docid": d}) + "\n" for q, d in rows))
    with new_session(engine) as s:
        rep = import_seeds(s, get_project(s, "p"), path, source="click", add_to_pool=True, seed=1)
        assert (rep.pooled_new, rep.pooled_marked) == (2, 1)
        assert rep.unknown_queries == ["nope"] and rep.unknown_documents == ["10 zz"]
        q007 = s.exec(select(Query).where(Query.qid == "007")).one()
        pairs = list(s.exec(select(PoolPair).where(PoolPair.query_id == q007.id)))
    assert len(pairs) == 4 and all(p.seed_source == "click" for p in pairs if p.systems_json == "{}")
    assert sum(p.seed_source == "click" for p in pairs) == 3
    assert sorted(p.shuffle_order for p in pairs) == [0, 1, 2, 3]  # one shuffled order, seeds inside it

    # A judge meets the seeded pairs like any other: nothing in the task says where a pair came from.
    with new_session(engine) as s:
        proj = get_project(s, "p")
        assignment.assign(s, proj, ["alice"], overlap=0, hold=False)
        alice = get_user(s, "alice")
        seen = []
        while (task := judging.next_task(s, proj, alice)) is not None:
            text = json.dumps(task.__dict__, default=str).lower()
            assert "click" not in text and "ticket" not in text and "seed" not in text
            seen.append((task.qid, task.docid))
            judging.submit(s, alice, task.token, grade=0 if task.docid == "d4" else 1)
    assert ("007", "d4") in seen and ("007", "d3") in seen and len(seen) == 7


def test_export_marks_labels_resting_on_a_seed_alone(engine, tmp_path):
    pairs_project(engine, tmp_path / "in", PAIRS)
    judge(engine, tmp_path, "alice", {p: 1 for p in PAIRS})
    tickets = tmp_path / "tickets.tsv"
    tickets.write_text("10\td4\n9\td1\n")  # two pairs nobody pooled
    clicks = tmp_path / "clicks.tsv"
    clicks.write_text("007\td4\n007\td1\n")  # 007/d4 joins the pool; 007/d1 is pooled already
    with new_session(engine) as s:
        import_seeds(s, get_project(s, "p"), tickets, source="ticket")
        import_seeds(s, get_project(s, "p"), clicks, source="click", add_to_pool=True)

    # The pooled seed pair 007/d4 has no human label yet: it blocks like any unjudged pair.
    with new_session(engine) as s, pytest.raises(export.ExportBlocked) as exc:
        export.export_version(s, get_project(s, "p"), "v1", out_dir=tmp_path / "out")
    assert exc.value.unjudged == 1 and "007/d4" in str(exc.value)

    judge(engine, tmp_path, "alice", {("007", "d4"): 0})  # the judge rejects the click
    with new_session(engine) as s:
        res = export.export_version(s, get_project(s, "p"), "v1", out_dir=tmp_path / "out", created_by="t")
    lines = (tmp_path / "out" / "v1" / "qrels.jsonl").read_text().splitlines()
    records = {(r["qid"], r["docid"]): r for r in map(json.loads, lines)}
    assert {k for k, r in records.items() if r["seed_only"]} == {("10", "d4"), ("9", "d1")}
    assert records[("10", "d4")]["source"] == "seed" and records[("10", "d4")]["grade"] == 2
    assert records[("10", "d4")]["seeds"] == [{"source": "ticket", "grade": 2}]
    assert records[("10", "d4")]["judgments"] == []
    assert records[("007", "d4")]["source"] == "single" and records[("007", "d4")]["grade"] == 0
    assert records[("007", "d4")]["seeds"] == [{"source": "click", "grade": 1}]
    assert records[("007", "d1")]["seeds"] == [{"source": "click", "grade": 1}] and records[("007", "d1")]["grade"] == 1
    assert "10 0 d4 2\n" in (tmp_path / "out" / "v1" / "qrels.txt").read_text()
    m = res.manifest
    assert m["counts"]["seed_only"] == 2 and m["counts"]["sources"]["seed"] == 2
    assert m["seeds"] == {"by_source": {"ticket": 2, "click": 2}, "confirmed_by_judges": 1, "rejected_by_judges": 1,
                          "labels_resting_on_seed_alone": 2}
    assert m["pool"]["seed_pairs"] == 2


def test_cli_seed_judgments(engine, tmp_path):
    pairs_project(engine, tmp_path / "in", PAIRS)
    path = tmp_path / "tickets.jsonl"
    path.write_text('{"qid": "007", "docid": "d3"}\n{"qid": "42", "docid": "d1"}\n')
    url = engine.url.render_as_string(hide_password=False)
    res = CliRunner().invoke(main, ["judging", "seed", str(path), "--source", "ticket", "--add-to-pool", "--db", url])
    assert res.exit_code == 0, res.output
    assert "2 distinct pairs -> 2 new ticket seed judgments" in res.output
    assert "pool: 1 pairs added" in res.output and "1 qids not in the project (e.g. 42)" in res.output
    res = CliRunner().invoke(main, ["judging", "seed", str(path), "--source", "gossip", "--db", url])
    assert res.exit_code == 2
