"""Machine labels in (``golden judging import --machine``): the reader's errors name file and line,
labels land in their own table, and a machine label never reaches human agreement, final labels or
an export unless asked for (each path checked against the same store before and after the import)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from sqlmodel import func, select

from curation.agree.agreement import build_agreement_report
from curation.agree.labels import final_labels, load_judgments
from curation.cli import main
from curation.export import versions as export
from curation.formats.fileio import InputError
from curation.formats.machine_labels import read_machine_labels
from curation.machine.labels import import_machine_labels, load_machine_rows, machine_grades
from curation.store.engine import session as new_session
from curation.store.models import Judgment, MachineLabel, User
from curation.store.projects import get_project
from tests.support.judgments import adjudicate, judge
from tests.support.projects import pairs_project, read_files

PAIRS = [("q1", "d1"), ("q1", "d2"), ("q1", "d3"), ("q2", "d1"), ("q2", "d4"), ("q3", "d5")]
ALICE = {("q1", "d1"): 2, ("q1", "d2"): 0, ("q1", "d3"): 1, ("q2", "d1"): 1, ("q2", "d4"): 0}
BOB = {("q1", "d1"): 2, ("q2", "d1"): 0}


def write_lines(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def machine_file(tmp_path, grade_shift=0):
    rows = []
    for (q, d) in PAIRS:
        for s in range(3):
            g = 2 if d in ("d1", "d5") else 0
            rows.append({"qid": q, "docid": d, "grade": g, "sample": s, "probability": {"0": 0.2, "2": 0.8}
                         if g == 2 else {"0": 0.9, "2": 0.1}, "rationale": "looks on topic", "model": "m-large"})
    return write_lines(tmp_path / "llm.jsonl", rows)


@pytest.fixture
def judged(engine, tmp_path):
    pairs_project(engine, tmp_path / "in", PAIRS)
    judge(engine, tmp_path, "alice", ALICE)
    judge(engine, tmp_path, "bob", BOB)
    adjudicate(engine, "q2", "d1", 1)
    return engine


def test_jsonl_and_qrels_are_read_with_their_fields(tmp_path):
    p = write_lines(tmp_path / "m.jsonl", [
        {"qid": "q1", "docid": "d1", "grade": 2, "probability": {"0": 0.1, "1": 0.2, "2": 0.7}, "sample": 1,
         "model": "m", "prompt_version": "v2", "rationale": "why"},
        {"qid": 7, "docid": "d2", "grade": "1", "confidence": 0.6},
    ])
    a, b = read_machine_labels(p)
    assert (a.qid, a.grade, a.sample, a.model, a.prompt_version, a.rationale) == ("q1", 2, 1, "m", "v2", "why")
    assert a.probabilities == ((0, 0.1), (1, 0.2), (2, 0.7)) and a.confidence == 0.7
    assert (b.qid, b.grade, b.confidence, b.sample) == ("7", 1, 0.6, 0)
    q = tmp_path / "m.qrels"
    q.write_text("q1 0 d1 2\nq1 0 d2 0\n")
    assert [(r.qid, r.docid, r.grade, r.sample) for r in read_machine_labels(q)] == [("q1", "d1", 2, 0),
                                                                                      ("q1", "d2", 0, 0)]


@pytest.mark.parametrize("row, message", [
    ({"qid": "q1", "docid": "d1", "grade": 2, "probability": {"0": 0.5, "2": 0.6}}, "sum to 1.1"),
    ({"qid": "q1", "docid": "d1", "grade": 2, "confidence": 1.5}, "confidence 1.5 is not between 0 and 1"),
    ({"qid": "q1", "docid": "d1", "grade": 2.5}, "grade 2.5 is not an integer"),
    ({"qid": "q1", "docid": "d1", "grade": 1, "sample": -1}, "sample -1"),
    ({"qid": "q1", "grade": 1}, "missing or empty 'docid'"),
])
def test_bad_lines_are_refused_naming_file_and_line(tmp_path, row, message):
    p = write_lines(tmp_path / "m.jsonl", [{"qid": "q0", "docid": "d0", "grade": 0}, row])
    with pytest.raises(InputError) as exc:
        read_machine_labels(p)
    assert f"{p}:2:" in str(exc.value) and message in str(exc.value)


def test_two_grades_for_one_sample_are_a_conflict_naming_both_lines(tmp_path):
    p = write_lines(tmp_path / "m.jsonl", [{"qid": "q", "docid": "d", "grade": 0},
                                           {"qid": "q", "docid": "d", "grade": 0, "sample": 1},
                                           {"qid": "q", "docid": "d", "grade": 2}])
    with pytest.raises(InputError, match=r":3: .* on line 1"):
        read_machine_labels(p)


def test_import_stores_machine_labels_apart_and_once(judged, tmp_path):
    path = machine_file(tmp_path)
    with new_session(judged) as s:
        before = s.exec(select(func.count(Judgment.id))).one()
        rep = import_machine_labels(s, path, machine="llm", project="p", prompt_version="v1")
        assert rep.imported == 18 and rep.samples == 3 and rep.prompt_versions == ["v1"] and rep.models == ["m-large"]
        again = import_machine_labels(s, path, machine="llm", project="p", prompt_version="v1")
        assert again.imported == 0 and again.already == 18
        assert s.exec(select(func.count(Judgment.id))).one() == before
        assert s.exec(select(func.count(MachineLabel.id))).one() == 18
        assert s.exec(select(User).where(User.name == "llm")).first() is None
        rows = load_machine_rows(s, get_project(s, "p"), "llm")
    assert machine_grades(rows) == {u: (2 if u[1] in ("d1", "d5") else 0) for u in PAIRS}


def test_a_human_users_name_is_refused_for_a_machine(judged, tmp_path):
    with new_session(judged) as s, pytest.raises(ValueError, match="'alice' is a human user"):
        import_machine_labels(s, machine_file(tmp_path), machine="alice", project="p")


def test_machine_labels_never_change_agreement_final_labels_or_export(judged, tmp_path, db_url):
    def state():
        with new_session(judged) as s:
            proj = get_project(s, "p")
            finals = final_labels(s, proj, include_unjudged=True)
            records = load_judgments(s, proj)
            report = build_agreement_report(s, proj).as_dict()
            res = export.export_version(s, proj, "v1", out_dir=tmp_path / "ex", allow_incomplete=True,
                                        created_by="t")
        return finals, records, report, res

    before = state()
    res = CliRunner().invoke(main, ["judging", "import", str(machine_file(tmp_path)), "--judge", "llm", "--machine",
                                    "--prompt-version", "v1", "--project", "p", "--db", db_url])
    assert res.exit_code == 0, res.output
    assert "18 labels by machine judge llm" in res.output
    after = state()  # the same version name again: refused (VersionFrozen) if the export's state changed
    assert before[0] == after[0]  # final labels (q3/d5 stays unjudged though the machine labelled it)
    assert before[1] == after[1]  # the judgments agreement is computed from
    assert before[2] == after[2]  # the agreement report
    assert before[3].new and not after[3].new and before[3].state_sha256 == after[3].state_sha256
    after = (*after[:3], read_files(after[3].path))
    assert b"llm" not in after[3]["qrels.jsonl"] and b"llm" not in after[3]["manifest.json"]


def test_cli_refuses_machine_options_without_machine(judged, tmp_path, db_url):
    res = CliRunner().invoke(main, ["judging", "import", str(machine_file(tmp_path)), "--judge", "llm",
                                    "--model", "m", "--db", db_url])
    assert res.exit_code == 2 and "add --machine" in res.output


def test_a_machine_judges_name_is_refused_for_human_labels(judged, tmp_path, db_url):
    runner = CliRunner()
    res = runner.invoke(main, ["judging", "import", str(machine_file(tmp_path)), "--judge", "llm", "--machine",
                               "--db", db_url])
    assert res.exit_code == 0, res.output
    qrels = tmp_path / "h.qrels"
    qrels.write_text("q1 0 d1 2\n")
    res = runner.invoke(main, ["judging", "import", str(qrels), "--judge", "llm", "--create-judge", "--db", db_url])
    assert res.exit_code == 1 and "'llm' is a machine judge" in res.output
    with new_session(judged) as s:
        assert s.exec(select(User).where(User.name == "llm")).first() is None


def test_qrels_lines_out_of_scale_and_unpooled_pairs_are_reported(judged, tmp_path):
    path = tmp_path / "m.qrels"
    path.write_text("q1 0 d1 2\nq1 0 d2 5\nq1 0 d3 -1\nq9 0 d9 1\n")
    with new_session(judged) as s:
        rep = import_machine_labels(s, path, machine="m1", project="p", model="mx", prompt_version="p7")
        assert (rep.imported, rep.out_of_scale, rep.missing, rep.missing_examples) == (1, 2, 1, [("q9", "d9")])
        clipped = import_machine_labels(s, path, machine="m2", project="p", clip=True)
        assert (clipped.imported, clipped.clipped) == (3, 2)
        rows = load_machine_rows(s, get_project(s, "p"), "m1")
        assert [(r.qid, r.docid, r.grade, r.model, r.prompt_version) for r in rows] == [("q1", "d1", 2, "mx", "p7")]
        assert {(r.docid, r.grade) for r in load_machine_rows(s, get_project(s, "p"), "m2")} == {
            ("d1", 2), ("d2", 2), ("d3", 0)}
    assert "1 pairs are not in the pool" in rep.summary() and "golden labels calibrate" in rep.summary()
