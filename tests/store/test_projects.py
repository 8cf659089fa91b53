"""Loading a project: queries with strata and weights, pooled pairs with hidden provenance, only the
pooled documents' texts, label scales, versioned guidelines, extending the pool, and the CLI."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from sqlmodel import select

from curation.cli import main
from curation.formats.fileio import InputError
from curation.store.engine import session
from curation.store.models import Document, GuidelinesVersion, PoolPair, Project, Query, Run
from curation.store.projects import (
    DEFAULT_SCALES,
    create_project,
    current_guidelines,
    extend_pool,
    get_project,
    grades,
    guidelines_history,
    list_projects,
    scale_grades,
    set_guidelines,
)
from tests.support.projects import GUIDELINES, counts_project, write_inputs


def test_create_loads_queries_pairs_and_only_pooled_documents(engine, tmp_path):
    with session(engine) as s:
        project, paths = counts_project(s, tmp_path / "in", extra_docs=5)
        assert project.scale == "0-2" and project.pool_depth == 10
        queries = {q.qid: q for q in s.exec(select(Query).where(Query.project_id == project.id))}
        assert sorted(queries) == ["q1", "q2", "q3", "q4"]
        q1 = queries["q1"]
        assert q1.text == "query text q1" and json.loads(q1.stratum_json) == {"market": "us"}
        assert q1.stratum_key == "market=us" and queries["q2"].stratum_key == "market=uk"
        assert (q1.traffic, q1.users, q1.weight, q1.stratum_share) == (10.0, 1, 0.25, 0.5)
        assert json.loads(q1.pii_json) == ["email"] and queries["q2"].pii_json is None
        pairs = s.exec(select(PoolPair).where(PoolPair.project_id == project.id)).all()
        assert len(pairs) == 4 + 3 + 5 + 2
        docs = {d.docid: d for d in s.exec(select(Document).where(Document.project_id == project.id))}
        assert len(docs) == 14 and not any(d.startswith("extra") for d in docs)  # unpooled docs not stored
        assert docs["q3-d4"].text == "text of q3-d4" and docs["q3-d4"].title == "Title q3-d4"
        q3 = queries["q3"].id
        by_doc = {docs_id: p for p in pairs if p.query_id == q3 for docs_id in [p.document_id]}
        d0 = by_doc[docs["q3-d0"].id]
        assert json.loads(d0.systems_json) == {"bm25": 1, "dense": 5}  # provenance kept, hidden
        assert d0.shuffle_order == 4 and d0.batch == 0
        runs = {r.name: r for r in s.exec(select(Run).where(Run.project_id == project.id))}
        assert set(runs) == {"bm25", "dense"} and runs["bm25"].sha256 == "a" * 64
        gv = current_guidelines(s, project)
        assert gv.version == 1 and gv.text == GUIDELINES


def test_missing_documents_are_named(engine, tmp_path):
    paths = write_inputs(tmp_path, skip_docs={"q2-d1", "q4-d0"})
    with session(engine) as s:
        with pytest.raises(InputError) as err:
            create_project(s, "p", queries_path=paths["queries.jsonl"], pool_path=paths["pool.jsonl"],
                           corpus_paths=[paths["corpus.jsonl"]], guidelines_path=paths["GUIDELINES.md"])
        assert "2 pooled documents are not in the corpus" in str(err.value)
        assert "'q2-d1'" in str(err.value) and "'q4-d0'" in str(err.value) and "--allow-missing" in str(err.value)
        assert s.exec(select(Project)).first() is None  # nothing half-loaded
        rep = create_project(s, "p", queries_path=paths["queries.jsonl"], pool_path=paths["pool.jsonl"],
                             corpus_paths=[paths["corpus.jsonl"]], guidelines_path=paths["GUIDELINES.md"],
                             allow_missing=True)
        assert rep.missing_docids == ["q2-d1", "q4-d0"] and rep.pairs == 12 and rep.documents == 12


def test_pool_rows_are_checked_against_the_queries(sqlite_engine, tmp_path):
    paths = write_inputs(tmp_path)
    with open(paths["pool.jsonl"], "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"qid": "q9", "docid": "q1-d0", "order": 0, "systems": {}}) + "\n")
    with session(sqlite_engine) as s:
        with pytest.raises(InputError, match=r"pool.jsonl:15: qid 'q9' is not in"):
            create_project(s, "p", queries_path=paths["queries.jsonl"], pool_path=paths["pool.jsonl"],
                           corpus_paths=[paths["corpus.jsonl"]], guidelines_path=paths["GUIDELINES.md"])


@pytest.mark.parametrize(
    "line, message",
    [
        ('{"qid": "q1", "docid": "q1-d0", "order": 0, "systems": {}}',
         "pool.jsonl:15: pair ('q1', 'q1-d0') appears twice"),
        ('{"qid": "q1", "order": 0}', "pool.jsonl:15: missing or empty 'docid'"),
        ('{"qid": "q1", "docid": "x", "systems": [1]}', "pool.jsonl:15: 'systems' must be an object"),
        ("not json", "pool.jsonl:15: not valid JSON"),
    ],
)
def test_bad_pool_lines_name_file_and_line(sqlite_engine, tmp_path, line, message):
    paths = write_inputs(tmp_path)
    with open(paths["pool.jsonl"], "a", encoding="utf-8") as fh:
        fh.write(line + "\n")
    with session(sqlite_engine) as s:
        with pytest.raises(InputError) as err:
            create_project(s, "p", queries_path=paths["queries.jsonl"], pool_path=paths["pool.jsonl"],
                           corpus_paths=[paths["corpus.jsonl"]], guidelines_path=paths["GUIDELINES.md"])
        assert message in str(err.value)


def test_duplicate_project_name_is_refused(sqlite_engine, tmp_path):
    with session(sqlite_engine) as s:
        counts_project(s, tmp_path / "a", name="news")
        with pytest.raises(ValueError, match="a project called 'news' exists"):
            counts_project(s, tmp_path / "b", name="news")


def test_scales_have_a_name_and_description_per_grade():
    assert [g.grade for g in scale_grades("binary")] == [0, 1]
    assert [g.grade for g in scale_grades("0-2")] == [0, 1, 2]
    assert [g.grade for g in scale_grades("0-3")] == [0, 1, 2, 3]
    for scale in DEFAULT_SCALES.values():
        assert all(g.name and g.description for g in scale)
    custom = scale_grades("binary", [{"grade": 1, "name": "Useful", "description": "Answers it"}, {"grade": 0}])
    assert [(g.grade, g.name) for g in custom] == [(0, "Not relevant"), (1, "Useful")]
    with pytest.raises(ValueError, match=r"scale 0-2 has grades \[0, 1, 2\], got \[0, 1\]"):
        scale_grades("0-2", [{"grade": 0}, {"grade": 1}])
    with pytest.raises(ValueError, match="scale '1-5'"):
        scale_grades("1-5")


def test_project_scale_is_stored(sqlite_engine, tmp_path):
    with session(sqlite_engine) as s:
        project, _ = counts_project(s, tmp_path, scale="0-3", grades=[
            {"grade": 0, "name": "Off"}, {"grade": 1}, {"grade": 2}, {"grade": 3, "name": "Perfect"}])
        assert [(g.grade, g.name) for g in grades(project)] == [(0, "Off"), (1, "Related"), (2, "Highly relevant"),
                                                               (3, "Perfect")]


def test_guidelines_versions(engine, tmp_path):
    with session(engine) as s:
        project, _ = counts_project(s, tmp_path)
        v, new = set_guidelines(s, project, GUIDELINES)
        assert (v.version, new) == (1, False)  # same text: no new version
        v, new = set_guidelines(s, project, GUIDELINES + "\nTables count.\n", note="tables")
        assert (v.version, new) == (2, True) and v.note == "tables"
        assert [g.version for g in guidelines_history(s, project)] == [1, 2]
        assert current_guidelines(s, project).version == 2
        with pytest.raises(ValueError, match="empty"):
            set_guidelines(s, project, "  \n")


def test_extend_adds_only_new_pairs_and_merges_provenance(engine, tmp_path):
    with session(engine) as s:
        project, paths = counts_project(s, tmp_path / "v1")
        bigger = write_inputs(tmp_path / "v2", queries={"q1": 6, "q2": 3, "q3": 5, "q4": 2})
        # The extended pool also saw q2-d0 from a third run.
        lines = bigger["pool.jsonl"].read_text().splitlines()
        lines = [json.dumps(dict(json.loads(x), systems={"splade": 7})) if '"q2-d0"' in x else x for x in lines]
        bigger["pool.jsonl"].write_text("\n".join(lines) + "\n")
        rep = extend_pool(s, project, pool_path=bigger["pool.jsonl"], corpus_paths=[bigger["corpus.jsonl"]])
        assert (rep.new_pairs, rep.new_documents, rep.pairs) == (2, 2, 16)
        new = s.exec(select(PoolPair).where(PoolPair.project_id == project.id, PoolPair.batch == 1)).all()
        new_docids = sorted(s.get(Document, p.document_id).docid for p in new)
        assert new_docids == ["q1-d4", "q1-d5"]
        q2d0 = s.exec(select(PoolPair).join(Document, Document.id == PoolPair.document_id)
                      .where(Document.docid == "q2-d0")).one()
        assert json.loads(q2d0.systems_json) == {"bm25": 1, "dense": 3, "splade": 7}
        again = extend_pool(s, project, pool_path=bigger["pool.jsonl"], corpus_paths=[bigger["corpus.jsonl"]])
        assert again.new_pairs == 0


def test_extend_refuses_new_queries(sqlite_engine, tmp_path):
    with session(sqlite_engine) as s:
        project, _ = counts_project(s, tmp_path / "v1")
        other = write_inputs(tmp_path / "v2", queries={"q1": 2, "q9": 1})
        with pytest.raises(InputError, match="qid 'q9' is not in project 'demo'"):
            extend_pool(s, project, pool_path=other["pool.jsonl"], corpus_paths=[other["corpus.jsonl"]])


def test_get_project_needs_a_name_when_there_are_several(sqlite_engine, tmp_path):
    with session(sqlite_engine) as s:
        with pytest.raises(ValueError, match="no project in the store"):
            get_project(s)
        counts_project(s, tmp_path / "a", name="alpha")
        assert get_project(s).name == "alpha"
        counts_project(s, tmp_path / "b", name="beta")
        with pytest.raises(ValueError, match="several projects .*alpha, beta.*--project"):
            get_project(s)
        with pytest.raises(ValueError, match="no project 'gamma'"):
            get_project(s, "gamma")
        rows = list_projects(s)
        assert [(r.name, r.queries, r.pairs, r.documents, r.guidelines_version) for r in rows] == [
            ("alpha", 4, 14, 14, 1), ("beta", 4, 14, 14, 1)]


def test_cli_project_create_list_extend_and_guidelines(engine, db_url, tmp_path):
    paths = write_inputs(tmp_path / "in", extra_docs=3)
    runner = CliRunner()
    res = runner.invoke(main, ["project", "create", "news", "--queries", str(paths["queries.jsonl"]),
                               "--pool", str(paths["pool.jsonl"]), "--corpus", str(paths["corpus.jsonl"]),
                               "--guidelines", str(paths["GUIDELINES.md"]), "--scale", "0-3", "--db", db_url])
    assert res.exit_code == 0, res.output
    assert "project news: 4 queries, 14 pairs, 14 documents, scale 0-3, guidelines v1" in res.output
    res = runner.invoke(main, ["project", "list", "--db", db_url])
    assert res.exit_code == 0 and "news" in res.output and "0-3" in res.output
    new_text = tmp_path / "G2.md"
    new_text.write_text(GUIDELINES + "More.\n")
    res = runner.invoke(main, ["project", "guidelines", "set", str(new_text), "--db", db_url, "--note", "more"])
    assert res.exit_code == 0 and "guidelines v2 recorded" in res.output
    res = runner.invoke(main, ["project", "guidelines", "set", str(new_text), "--db", db_url])
    assert "unchanged (still v2)" in res.output
    bigger = write_inputs(tmp_path / "v2", queries={"q1": 5, "q2": 3, "q3": 5, "q4": 2})
    res = runner.invoke(main, ["project", "extend", "news", "--pool", str(bigger["pool.jsonl"]),
                               "--corpus", str(bigger["corpus.jsonl"]), "--db", db_url])
    assert res.exit_code == 0 and "1 new pairs, 1 new documents (15 pairs in all)" in res.output
    missing = write_inputs(tmp_path / "m", skip_docs={"q1-d1"})
    res = runner.invoke(main, ["project", "create", "other", "--queries", str(missing["queries.jsonl"]),
                               "--pool", str(missing["pool.jsonl"]), "--corpus", str(missing["corpus.jsonl"]),
                               "--guidelines", str(missing["GUIDELINES.md"]), "--db", db_url])
    assert res.exit_code == 1 and "'q1-d1'" in res.output and "Traceback" not in res.output
    with session(engine) as s:
        assert s.exec(select(GuidelinesVersion)).all()[-1].note == "more"
