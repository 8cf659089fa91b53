"""Numbers from the command line and repeated qrels pairs in golden stats metrics / compare: non-finite or
unbounded values refused with the option's name, conflicting pairs with both lines, repeats counted."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from curation.cli import main


def _files(tmp_path, qrels_lines):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(line + "\n" for line in qrels_lines))
    runs = []
    for name, order in (("a", ["d1", "d2"]), ("b", ["d2", "d1"])):
        run = tmp_path / f"{name}.trec"
        run.write_text("".join(f"q{q} Q0 {d} {r} {10 - r} {name}\n" for q in (1, 2) for r, d in enumerate(order, 1)))
        runs.append(str(run))
    return str(qrels), runs


@pytest.mark.parametrize("tie", ["inf", "-inf", "nan", "1e400", "-0.1"])
def test_compare_refuses_a_tie_that_is_not_a_finite_non_negative_number(tmp_path, tie):
    qrels, (a, b) = _files(tmp_path, ["q1 0 d1 1", "q2 0 d2 1"])
    result = CliRunner().invoke(main, ["stats", "compare", a, b, "--qrels", qrels, "--tie", tie, "--resamples", "100"])
    assert result.exit_code == 2, result.output
    assert "--tie" in result.output and "finite" in result.output
    assert "equivalent" not in result.output


@pytest.mark.parametrize("metric", ["ndcg@99999999999999999999", "p@1000001"])
def test_metric_cutoff_beyond_the_limit_is_a_usage_error(tmp_path, metric):
    qrels, (a, b) = _files(tmp_path, ["q1 0 d1 1", "q2 0 d2 1"])
    result = CliRunner().invoke(main, ["stats", "compare", a, b, "--qrels", qrels, "--metric", metric])
    assert result.exit_code == 2, result.output
    assert "cutoff k must be between 1 and 1000000" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_conflicting_qrels_pair_is_refused_and_identical_repeats_are_reported(tmp_path):
    qrels, (a, b) = _files(tmp_path, ["q1 0 d1 1", "q2 0 d2 1", "q1 0 d1 0"])
    result = CliRunner().invoke(main, ["stats", "metrics", a, b, "--qrels", qrels, "-m", "p@1"])
    assert result.exit_code == 1, result.output
    assert f"{qrels}:3: pair q1/d1 has 0 here but 1 on line 1" in result.output
    first = CliRunner().invoke(main, ["stats", "metrics", a, b, "--qrels", qrels, "-m", "p@1", "--on-conflict",
                                      "first"])
    assert first.exit_code == 0, first.output
    # first keeps q1/d1 = 1: run a ranks d1 first for both queries -> P@1 = (1 + 0) / 2
    assert "0.5000" in first.output
    assert "conflicting repeat(s) resolved by --on-conflict first" in first.output
    qrels2, _ = _files(tmp_path, ["q1 0 d1 1", "q1 0 d1 1", "q2 0 d2 1"])
    again = CliRunner().invoke(main, ["stats", "metrics", a, b, "--qrels", qrels2, "-m", "p@1"])
    assert again.exit_code == 0, again.output
    assert "1 identical duplicate pair line(s) dropped" in again.output


def test_guidelines_over_the_limit_are_refused_with_the_file_and_the_limit(engine, tmp_path, monkeypatch):
    from tests.support.projects import pairs_project

    pairs_project(engine, tmp_path / "p", [("q1", "d1")])
    db = engine.url.render_as_string(hide_password=False)
    path = tmp_path / "GUIDELINES.md"
    path.write_text("Relevant: answers the question.\n" * 40)  # 1280 bytes
    monkeypatch.setenv("GOLDEN_MAX_GUIDELINES_BYTES", "1000")
    result = CliRunner().invoke(main, ["project", "guidelines", "set", str(path), "--db", db])
    assert result.exit_code == 1, result.output
    assert f"{path}: the guidelines text is 1280 bytes, over the limit of 1000 bytes" in result.output
    assert "GOLDEN_MAX_GUIDELINES_BYTES=N" in result.output
    monkeypatch.setenv("GOLDEN_MAX_GUIDELINES_BYTES", "2000")
    result = CliRunner().invoke(main, ["project", "guidelines", "set", str(path), "--db", db])
    assert result.exit_code == 0, result.output


def test_project_create_refuses_conflicts_and_reports_identical_repeats(engine, tmp_path):
    from sqlmodel import select

    from curation.store.engine import session as new_session
    from curation.store.models import Document, Project, Query
    from tests.support.projects import write_project_files

    queries = [{"qid": "q1", "text": "one"}, {"qid": "q2", "text": "two"}, {"qid": "q1", "text": "one"}]
    pool = [{"qid": "q1", "docid": "d1", "order": 0, "systems": {"A": 1}},
            {"qid": "q2", "docid": "d2", "order": 0, "systems": {"A": 1}}]
    corpus = [{"id": "d1", "text": "first"}, {"id": "d2", "text": "second"}, {"id": "d1", "text": "FIRST"}]
    paths = write_project_files(tmp_path, queries, pool, corpus)
    db = engine.url.render_as_string(hide_password=False)
    args = ["project", "create", "p", "--queries", str(paths["queries"]), "--pool", str(paths["pool"]),
            "--corpus", str(paths["corpus"]), "--guidelines", str(paths["guidelines"]), "--db", db]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1, result.output
    assert f"{paths['corpus']}:3: document 'd1' has 'FIRST' here but 'first' on line 1" in result.output
    with new_session(engine) as s:
        assert s.exec(select(Project)).all() == []
    result = CliRunner().invoke(main, args + ["--on-conflict", "last"])
    assert result.exit_code == 0, result.output
    assert f"{paths['queries']}: 1 identical duplicate qid line(s) dropped" in result.output
    assert f"{paths['corpus']}: 1 conflicting repeat(s) resolved by --on-conflict last" in result.output
    with new_session(engine) as s:
        assert sorted(s.exec(select(Query.qid)).all()) == ["q1", "q2"]
        assert dict(s.exec(select(Document.docid, Document.text)).all()) == {"d1": "FIRST", "d2": "second"}


def test_corpus_sample_refuses_a_kept_id_with_two_texts_and_counts_identical_repeats(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"id": "d1", "text": "one"}\n{"id": "d2", "text": "two"}\n{"id": "d1", "text": "ONE"}\n'
                      '{"id": "d2", "text": "two"}\n{"id": "d3", "text": "three"}\n')
    keep = tmp_path / "keep.txt"
    keep.write_text("d1\nd2\n")
    out = tmp_path / "sample.jsonl"
    args = ["sample", "corpus", str(corpus), "--size", "2", "--keep", str(keep), "--out", str(out)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1, result.output
    assert f"{corpus}:3: document 'd1' has 'ONE' here but 'one' on line 1" in result.output
    assert not out.exists()
    result = CliRunner().invoke(main, args + ["--on-conflict", "last"])
    assert result.exit_code == 0, result.output
    assert (f"{corpus}: 1 identical duplicate document line(s) dropped; 1 conflicting repeat(s) resolved"
            in result.output)
    texts = [line for line in out.read_text().splitlines()]
    assert len(texts) == 2 and '"ONE"' in texts[0] and '"two"' in texts[1]


@pytest.mark.parametrize("value", ["NaN", "Infinity", "1e400"])
def test_project_create_refuses_non_finite_traffic_with_the_line_and_stores_nothing(engine, tmp_path, value):
    """`"traffic": NaN` was an IntegrityError traceback from the store; Infinity was stored."""
    from sqlmodel import select

    from curation.store.engine import session as new_session
    from curation.store.models import Project
    from tests.support.projects import write_project_files

    paths = write_project_files(tmp_path, [{"qid": "q1", "text": "one"}],
                                [{"qid": "q1", "docid": "d1", "order": 0, "systems": {"A": 1}}],
                                [{"id": "d1", "text": "first"}])
    paths["queries"].write_text('{"qid": "q1", "text": "one", "traffic": ' + value + "}\n")
    db = engine.url.render_as_string(hide_password=False)
    result = CliRunner().invoke(main, ["project", "create", "p", "--queries", str(paths["queries"]), "--pool",
                                       str(paths["pool"]), "--corpus", str(paths["corpus"]), "--guidelines",
                                       str(paths["guidelines"]), "--db", db])
    assert result.exit_code == 1, result.output
    assert f"{paths['queries']}:1: 'traffic' must be a finite non-negative number" in result.output
    with new_session(engine) as s:
        assert s.exec(select(Project)).all() == []


def test_leakcheck_reports_identical_repeated_queries_and_refuses_conflicting_ones(tmp_path):
    queries = tmp_path / "queries.jsonl"
    queries.write_text('{"qid": "q1", "text": "hello there world"}\n{"qid": "q1", "text": "hello there world"}\n')
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"id": "d1", "text": "nothing in common at all here"}\n')
    out = tmp_path / "leaks.jsonl"
    args = ["leakcheck", "--queries", str(queries), "--corpus", str(corpus), "--workers", "1", "--out", str(out)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert f"{queries}: 1 identical duplicate qid line(s) dropped" in result.output
    assert len(out.read_text().splitlines()) == 1
    queries.write_text('{"qid": "q1", "text": "hello there world"}\n{"qid": "q1", "text": "another text"}\n')
    out.unlink()
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1, result.output
    assert f"{queries}:2: qid 'q1' has 'another text' here but 'hello there world' on line 1" in result.output
    assert not out.exists()
    result = CliRunner().invoke(main, args + ["--on-conflict", "last"])
    assert result.exit_code == 0, result.output
    assert '"another text"' in out.read_text() or "another text" in out.read_text()


@pytest.mark.parametrize("args, words", [
    (["--sd-diff", "0.1", "--delta", "1e-320"], "delta: 1e-320 is too small to plan for"),
    (["--sd-diff", "0.1", "--delta", "inf"], "'inf' is not a finite number"),
    (["--sd-diff", "nan", "--delta", "0.02"], "'nan' is not a finite number"),
])
def test_power_refuses_values_it_cannot_plan_with_and_prints_no_traceback(args, words):
    """A delta of 1e-320 was an OverflowError traceback."""
    result = CliRunner().invoke(main, ["stats", "power", "--queries", "50", *args])
    assert result.exit_code in (1, 2), result.output
    assert words in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


@pytest.mark.parametrize("args", [
    ["export", "split", "--holdout", "nan"], ["export", "split", "--holdout", "inf"],
    ["labels", "agreement", "--usable", "nan"], ["labels", "agreement", "--marginal", "-inf"],
    ["stats", "coverage", "--qrels", "{qrels}", "--holes-at", "nan", "{run}"],
])
def test_float_options_refuse_non_finite_values_as_usage_errors(tmp_path, args):
    """NaN compares false with every bound, so a range check after parsing let it through."""
    qrels, (run, _) = _files(tmp_path, ["q1 0 d1 1"])
    args = [a.format(qrels=qrels, run=run) for a in args]
    result = CliRunner().invoke(main, [*args, "--db", f"sqlite:///{tmp_path / 'none.db'}"])
    assert result.exit_code == 2, result.output
    option = next(a for a in args if a.startswith("--") and a != "--qrels")
    assert "is not a finite number" in result.output and option in result.output
