"""Round trips with other tools, on SQLite and PostgreSQL: a Quepid CSV, an RRE ratings file and a
learning-to-rank judgment list, written here by hand from each format's documentation, are imported
with ``golden judging import --format``, exported again with ``golden export create --format`` and read
back: the same (query, document, grade) rows. Rows whose query the project lacks are listed with
their file:line."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from curation.agree.labels import load_judgments
from curation.cli import main
from curation.formats.ltr import read_ltr
from curation.formats.normalize import normalize_text
from curation.formats.quepid import read_quepid
from curation.formats.rre import read_rre
from curation.store.engine import session as new_session
from curation.store.projects import get_project
from tests.support.projects import pairs_project

TEXTS = {"m1": "star wars", "m2": "Star Trek", "m3": "Mad Max, Fury Road", "m4": "the matrix", "m5": "-sequel"}
PAIRS = [("m1", "11"), ("m1", "1891"), ("m1", "1892"), ("m2", "193"), ("m2", "200"), ("m3", "76341"),
         ("m4", "603"), ("m5", "500")]

QUEPID = """query,docid,rating
star wars,11,3
star wars,1891,2
star wars,1892,0
star trek,193,1
star trek,200,0
"mad max, fury road",76341,2
the matrix,603,1
 -sequel,500,0
blade runner,78,3
blade runner,79,1
the matrix
"""

RRE = """{
  "index": "movies",
  "id_field": "id",
  "topics": [
    {
      "description": "Space operas",
      "query_groups": [
        {
          "name": "Star Wars searches",
          "queries": [
            {"template": "only_q.json", "placeholders": {"$query": "star wars"}},
            {"template": "only_q.json", "placeholders": {"$query": "STAR WARS"}}
          ],
          "relevant_documents": {"11": {"gain": 3}, "1891": {"gain": 2}, "1892": {"gain": 0}}
        },
        {
          "name": "trek",
          "queries": [{"template": "only_q.json", "placeholders": {"$query": "star trek"}}],
          "relevant_documents": {"0": ["200"], "1": ["193"]}
        }
      ]
    }
  ],
  "query_groups": [
    {"name": "m3", "queries": [], "relevant_documents": {"76341": {"gain": 2}}},
    {"name": "m4", "queries": [], "relevant_documents": {"603": {"gain": 1}}},
    {"name": "m5", "queries": [], "relevant_documents": {"500": {"gain": 0}}},
    {
      "name": "Replicants",
      "queries": [{"template": "only_q.json", "placeholders": {"$query": "blade runner"}}],
      "relevant_documents": {"78": {"gain": 3}}
    }
  ]
}
"""

LTR = """# a judgment list as RankLib reads it
3 qid:1 1:12.5 2:0.3 # 11 star wars
2 qid:1 1:10.1 2:0.2 # 1891 star wars
0 qid:1 1:3.0 2:0.0 # 1892 star wars
1 qid:2 # 193 star trek
0 qid:2 # 200 star trek
2 qid:3 # 76341 mad max, fury road
1 qid:4 # 603 the matrix
0 qid:5 # 500 -sequel
3 qid:9 # 78 blade runner
"""

EXPECTED = {("m1", "11"): 3, ("m1", "1891"): 2, ("m1", "1892"): 0, ("m2", "193"): 1, ("m2", "200"): 0,
            ("m3", "76341"): 2, ("m4", "603"): 1, ("m5", "500"): 0}
BY_TEXT = {"star wars": "m1", "star trek": "m2", "mad max, fury road": "m3", "the matrix": "m4", "-sequel": "m5"}


def _db(engine) -> list[str]:
    return ["--db", engine.url.render_as_string(hide_password=False)]


def _run(engine, args) -> str:
    res = CliRunner().invoke(main, [*args, *_db(engine)])
    assert res.exit_code == 0, res.output
    return res.output


def _labels(engine) -> dict[tuple[str, str], int]:
    with new_session(engine) as s:
        return {(j.qid, j.docid): j.grade for j in load_judgments(s, get_project(s, "p"))}


def _project(engine, tmp_path, qids=None):
    texts = TEXTS if qids is None else {q: TEXTS[m] for m, q in zip(TEXTS, qids)}
    pairs = PAIRS if qids is None else [(dict(zip(TEXTS, qids))[q], d) for q, d in PAIRS]
    pairs_project(engine, tmp_path / "in", pairs, texts=texts, scale="0-3")


@pytest.mark.parametrize("fmt, text, name", [("quepid", QUEPID, "case.csv"), ("rre", RRE, "ratings.json")])
def test_a_quepid_or_rre_file_round_trips_through_golden(engine, tmp_path, fmt, text, name):
    _project(engine, tmp_path)
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    out = _run(engine, ["import-judgments", str(path), "--format", fmt, "--judge", "ext", "--create-judge"])
    assert _labels(engine) == EXPECTED
    # the rows for "blade runner" match no query: counted and listed with their lines
    lines = {"quepid": "10-11: 'blade runner'", "rre": "31: qid Replicants 'blade runner'"}[fmt]
    missing = {"quepid": 2, "rre": 1}[fmt]
    assert f"{missing} rows were not imported" in out
    assert f"{path}:{lines}: " in out and "no query of the project has this" in out
    if fmt == "quepid":
        assert "1 rows name a query but give no rating" in out
    again = _run(engine, ["import-judgments", str(path), "--format", fmt, "--judge", "ext"])
    assert "-> 0 judgments" in again and "8 lines were imported before" in again

    out = _run(engine, ["export", "--version", "v1", "--project", "p", "--out", str(tmp_path / "out"),
                        "--format", fmt, "--by", "t"])
    exported = tmp_path / "out" / "v1" / {"quepid": "quepid.csv", "rre": "rre.json"}[fmt]
    assert ("Quepid: quepid.csv; cannot hold: qid" if fmt == "quepid" else "RRE: rre.json; cannot hold:") in out
    reader = read_quepid if fmt == "quepid" else read_rre
    theirs = {(BY_TEXT.get(" ".join(lab.texts[0].lower().split()), lab.qid), lab.docid): lab.grade
              for lab in reader(path).labels if "blade runner" not in lab.texts}
    ours = {(lab.qid if fmt == "rre" else BY_TEXT[lab.texts[0].strip().lower()], lab.docid): lab.grade
            for lab in reader(exported).labels}
    assert theirs == ours == EXPECTED


def test_an_ltr_list_round_trips_by_qid_and_falls_back_to_the_text(engine, tmp_path):
    _project(engine, tmp_path, qids=["1", "2", "3", "4", "5"])
    path = tmp_path / "judgments.txt"
    path.write_text(LTR, encoding="utf-8")
    out = _run(engine, ["import-judgments", str(path), "--format", "ltr", "--judge", "ext", "--create-judge"])
    assert "1 rows were not imported" in out
    assert f"{path}:10: qid 9 'blade runner': no query of the project has this id or text" in out
    assert _labels(engine) == {(str(list(TEXTS).index(m) + 1), d): g for (m, d), g in EXPECTED.items()}

    _run(engine, ["export", "--version", "v1", "--project", "p", "--out", str(tmp_path / "out"), "--format", "ltr",
                  "--relevance-level", "2", "--by", "t"])
    exported = read_ltr(tmp_path / "out" / "v1" / "ltr.txt")
    assert exported.meta == {"version": "v1", "scale": "0-3", "relevance_level": 2}
    theirs = {(lab.qid, lab.docid, lab.grade, lab.texts[0]) for lab in read_ltr(path).labels if lab.qid != "9"}
    assert {(lab.qid, lab.docid, lab.grade, normalize_text(lab.texts[0])) for lab in exported.labels} == theirs


def test_an_ltr_list_from_another_tool_is_matched_by_text_when_its_ids_are_not_the_projects(engine, tmp_path):
    _project(engine, tmp_path)  # qids m1..m5: the file's numbers 1..5 are Quepid's own ids
    path = tmp_path / "judgments.txt"
    path.write_text(LTR, encoding="utf-8")
    _run(engine, ["import-judgments", str(path), "--format", "ltr", "--judge", "ext", "--create-judge"])
    assert _labels(engine) == EXPECTED


def test_a_quepid_book_is_imported_one_rater_at_a_time(engine, tmp_path):
    _project(engine, tmp_path)
    path = tmp_path / "book.csv"
    path.write_text("query,docid,alice@example.com,Bob\nstar wars,11,3,2\nstar wars,1891,,1\n", encoding="utf-8")
    res = CliRunner().invoke(main, ["import-judgments", str(path), "--format", "quepid", "--judge", "x",
                                    "--create-judge", *_db(engine)])
    assert res.exit_code != 0 and "raters alice@example.com, Bob" in res.output and "--group RATER" in res.output
    _run(engine, ["import-judgments", str(path), "--format", "quepid", "--group", "Bob", "--judge", "bob",
                  "--create-judge"])
    _run(engine, ["import-judgments", str(path), "--format", "quepid", "--group", "alice@example.com",
                  "--judge", "alice", "--create-judge"])
    with new_session(engine) as s:
        got = sorted((j.judge, j.qid, j.docid, j.grade) for j in load_judgments(s, get_project(s, "p")))
    assert got == [("alice", "m1", "11", 3), ("bob", "m1", "11", 2), ("bob", "m1", "1891", 1)]


def test_a_text_shared_by_two_queries_matches_neither(engine, tmp_path):
    pairs_project(engine, tmp_path / "in", [("a", "d1"), ("b", "d1")], texts={"a": "Jazz Bass", "b": "jazz  bass"})
    path = tmp_path / "case.csv"
    path.write_text("query,docid,rating\njazz bass,d1,1\n", encoding="utf-8")
    out = _run(engine, ["import-judgments", str(path), "--format", "quepid", "--judge", "x", "--create-judge"])
    assert f"{path}:2: 'jazz bass': its text is the text of several queries (a, b)" in out
    assert _labels(engine) == {}


def test_a_machine_judges_rre_file_is_imported_apart_from_people(engine, tmp_path):
    _project(engine, tmp_path)
    path = tmp_path / "llm.json"
    # compact JSON: every rating on one line, and one group whose variants are two different queries
    path.write_text('{"index": "m", "id_field": "id", "query_groups": [{"name": "g", "queries": ['
                    '{"placeholders": {"$query": "star wars"}}, {"placeholders": {"$query": "star trek"}}], '
                    '"relevant_documents": {"2": ["11", "193"]}}, {"name": "x", "queries": [{"placeholders": '
                    '{"$query": "blade runner"}}], "relevant_documents": {"78": {"gain": 1}}}]}', encoding="utf-8")
    out = _run(engine, ["import-judgments", str(path), "--format", "rre", "--judge", "llm", "--machine"])
    assert "3 lines -> 2 labels by machine judge llm" in out  # 11 goes to star wars, 193 to star trek
    assert "2 pairs are not in the pool" in out  # star wars/193 and star trek/11
    assert f"{path}:1: qid x 'blade runner': no query of the project has this id or text" in out
    from curation.machine.labels import load_machine_rows, machine_grades

    with new_session(engine) as s:
        got = machine_grades(load_machine_rows(s, get_project(s, "p"), "llm"))
    assert got == {("m1", "11"): 2, ("m2", "193"): 2}
    assert _labels(engine) == {}  # a machine's labels are never a person's
    again = _run(engine, ["import-judgments", str(path), "--format", "rre", "--judge", "llm", "--machine"])
    assert "-> 0 labels" in again and "2 lines were imported before" in again
