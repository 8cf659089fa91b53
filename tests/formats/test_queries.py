"""queries.jsonl: the one reader and writer (curation.formats.queries), on real files."""

import gzip
import json

import pytest

from curation.formats.fileio import InputError
from curation.formats.queries import QueryRecord, iter_queries, read_queries, read_query_ids, write_queries


def _file(tmp_path, *lines, name="queries.jsonl"):
    path = tmp_path / name
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_reads_every_field(tmp_path):
    path = _file(
        tmp_path,
        '{"qid": 7, "text": "café hours", "stratum": {"market": "fr"}, "traffic": 12, "weight": 0.5,'
        ' "stratum_share": 0.25, "users": 3, "pii": ["email"], "split": "holdout", "note": "x"}',
        "",
        '{"qid": "q2", "text": "b"}',
    )
    first, second = read_queries(path)
    assert first == QueryRecord("7", "café hours", {"market": "fr"}, 12, 0.5, 0.25, 3, ["email"], "holdout")
    assert first.get("note") == "x" and first.get("market") == "fr" and first.get("absent") is None
    assert second == QueryRecord("q2", "b")


def test_query_is_another_name_for_text(tmp_path):
    path = _file(tmp_path, '{"qid": "1", "query": "brown fox"}', '{"qid": "2", "text": "t", "query": "q"}')
    assert [q.text for q in iter_queries(path)] == ["brown fox", "t"]


def test_gzip_and_byte_order_mark(tmp_path):
    path = tmp_path / "q.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write('\ufeff{"qid": "a", "text": "one"}\n')
    assert [q.qid for q in read_queries(path)] == ["a"]


@pytest.mark.parametrize(
    "line, words",
    [
        ('{"text": "no id"}', "missing or empty 'qid'"),
        ('{"qid": "", "text": "x"}', "missing or empty 'qid'"),
        ('{"qid": "q1", "text": "again"}', "qid 'q1' has 'again' here but 'fine' on line 1"),
        ('{"qid": "q3"}', "query 'q3' has no text"),
        ('{"qid": "q3", "text": "  "}', "query 'q3' has no text"),
        ('{"qid": "q3", "text": 5}', "query 'q3' has no text"),
        ('{"qid": "q3", "text": "x", "stratum": "us"}', "'stratum' must be an object"),
        ('{"qid": "q3", "text": "x", "traffic": "12"}', "'traffic' must be a finite non-negative number"),
        ('{"qid": "q3", "text": "x", "weight": -1}', "'weight' must be a finite non-negative number"),
        ('{"qid": "q3", "text": "x", "users": 1.5}', "'users' must be a non-negative integer"),
        ('{"qid": "q3", "text": "x", "split": "dev"}', "'split' must be null, \"tune\" or \"holdout\""),
        ('["q3", "x"]', "expected an object with qid and text"),
        ('{"qid": "q3", ', "not valid JSON"),
    ],
)
def test_bad_line_names_file_and_line(tmp_path, line, words):
    path = _file(tmp_path, '{"qid": "q1", "text": "fine"}', "", line)
    with pytest.raises(InputError) as err:
        read_queries(path)
    assert str(err.value).startswith(f"{path}:3: ")
    assert words in str(err.value)


def test_empty_file_and_missing_file(tmp_path):
    with pytest.raises(InputError, match="no queries"):
        read_queries(_file(tmp_path, ""))
    with pytest.raises(InputError, match="no such file"):
        read_queries(tmp_path / "absent.jsonl")


def test_reader_streams(tmp_path):
    path = _file(tmp_path, '{"qid": "a", "text": "x"}', "not json")
    records = iter_queries(path)
    assert next(records).qid == "a"  # the first record comes before the bad line is read
    with pytest.raises(InputError, match=":2: not valid JSON"):
        next(records)


def test_query_ids_from_text_or_jsonl(tmp_path):
    assert read_query_ids(_file(tmp_path, "3", "", "1 ", name="ids.txt")) == ["3", "1"]
    assert read_query_ids(_file(tmp_path, '{"qid": 9, "text": "x"}', '{"qid": 2, "text": "y"}')) == ["9", "2"]
    with pytest.raises(InputError, match=r"ids2.txt:2: qid '3' appears twice"):
        read_query_ids(_file(tmp_path, "3", "3", name="ids2.txt"))


def test_writer_round_trip_is_byte_stable(tmp_path):
    rows = [{"qid": "q1", "text": "café", "stratum": {"m": "us"}, "traffic": 4, "pii": []}, QueryRecord("q2", "b")]
    path = tmp_path / "out.jsonl"
    write_queries(rows, path)
    assert path.read_text(encoding="utf-8") == (
        '{"qid":"q1","text":"café","stratum":{"m":"us"},"traffic":4,"pii":[]}\n{"qid":"q2","text":"b"}\n'
    )
    again = tmp_path / "again.jsonl"
    write_queries(read_queries(path), again)
    assert again.read_bytes() == path.read_bytes()
    assert json.loads(path.read_text(encoding="utf-8").splitlines()[0])["text"] == "café"


def test_the_export_layout_is_the_one_parameter_of_the_writer():
    from curation.formats.queries import format_query, queries_text

    row = {"qid": "q1", "text": "café", "stratum": {"m": "us"}, "split": None}
    assert format_query(row, spaced=True) == '{"qid": "q1", "text": "café", "stratum": {"m": "us"}, "split": null}'
    assert queries_text([row, QueryRecord("q2", "b")]) == (
        '{"qid":"q1","text":"café","stratum":{"m":"us"},"split":null}\n{"qid":"q2","text":"b"}\n'
    )


def test_stats_reads_queries_by_the_same_rules(tmp_path):
    """`golden stats` took empty text and any split; the queries reader refuses both, so stats does too."""
    from curation.cli.stats import _load_queries

    def stats_read_queries(path):
        return _load_queries(str(path), None)[0]

    good = stats_read_queries(_file(tmp_path, '{"qid": 1, "query": "x", "stratum": {"m": "us"}, "weight": 2}'))
    assert list(good) == ["1"] and good["1"].text == "x" and good["1"].weight == 2 and good["1"].get("m") == "us"
    with pytest.raises(InputError, match=r"q.jsonl:1: query 'a' has no text"):
        stats_read_queries(_file(tmp_path, '{"qid": "a", "text": ""}', name="q.jsonl"))
    with pytest.raises(InputError, match=r"s.jsonl:1: 'split' must be null"):
        stats_read_queries(_file(tmp_path, '{"qid": "a", "text": "x", "split": "dev"}', name="s.jsonl"))


def _create_from(folder, query_lines):
    from sqlmodel import select

    from curation.store.engine import session
    from curation.store.models import Query
    from curation.store.projects import create_project
    from tests.support.projects import sqlite_store, write_inputs

    paths = write_inputs(folder / "in", queries={"q1": 1, "q2": 1})
    _file(folder / "in", *query_lines)
    with sqlite_store(folder) as (_, engine), session(engine) as s:
        create_project(s, "p", queries_path=paths["queries.jsonl"], pool_path=paths["pool.jsonl"],
                       corpus_paths=[paths["corpus.jsonl"]], guidelines_path=paths["GUIDELINES.md"])
        return {q.qid: (q.text, q.split, q.traffic) for q in s.exec(select(Query))}


def test_project_create_reads_queries_by_the_same_rules(tmp_path):
    """The store refused a `query` field the leak check took, and turned an unknown split into none."""
    got = _create_from(tmp_path / "a", ['{"qid": "q1", "query": "from another tool"}',
                                  '{"qid": "q2", "text": "t", "split": "holdout", "traffic": 3}'])
    assert got == {"q1": ("from another tool", None, 0.0), "q2": ("t", "holdout", 3.0)}
    with pytest.raises(InputError, match=r"queries.jsonl:2: 'split' must be null"):
        _create_from(tmp_path / "b", ['{"qid": "q1", "text": "a"}', '{"qid": "q2", "text": "b", "split": "test"}'])


def test_leak_check_reads_queries_by_the_same_rules(tmp_path):
    """The leak check took a query whose text was empty (which every document 'contains')."""
    from curation.leak.inputs import query_texts

    assert query_texts(_file(tmp_path, '{"qid": 4, "query": "a b"}', '{"qid": 5, "text": "c"}')) == [
        ("4", "a b"), ("5", "c")]
    with pytest.raises(InputError, match=r"e.jsonl:1: query 'a' has no text"):
        query_texts(_file(tmp_path, '{"qid": "a", "text": ""}', name="e.jsonl"))


def test_pool_reads_its_query_list_by_the_same_rules(tmp_path):
    """`golden pool --queries` took any JSONL with a qid, a file `golden project create` then refused."""
    from click.testing import CliRunner

    from curation.cli import main

    run = tmp_path / "r.trec"
    run.write_text("1 Q0 a 1 3 r\n2 Q0 b 1 3 r\n", encoding="utf-8")
    only_ids = _file(tmp_path, '{"qid": 1}', '{"qid": 2}', name="ids.jsonl")
    res = CliRunner().invoke(main, ["pool", str(run), "--queries", str(only_ids), "--out", str(tmp_path / "p.jsonl")])
    assert res.exit_code == 1 and f"{only_ids}:1: query '1' has no text" in res.output
    listed = _file(tmp_path, "2", name="ids.txt")
    res = CliRunner().invoke(main, ["pool", str(run), "--queries", str(listed), "--out", str(tmp_path / "p.jsonl")])
    assert res.exit_code == 0 and [json.loads(x)["qid"] for x in (tmp_path / "p.jsonl").open()] == ["2"]
