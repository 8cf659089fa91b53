"""TREC qrels: the one parser (curation.formats.qrels), on real files and on an export's bytes."""

import gzip

import pytest

from curation.formats.fileio import InputError
from curation.formats.qrels import QrelLine, iter_qrels, parse_grade, parse_qrels, qrels_dict, read_qrels


def test_reads_lines_grades_and_skips_comments(tmp_path):
    path = tmp_path / "qrels.txt.gz"
    with gzip.open(path, "wt") as fh:
        fh.write("# judged in 2024\n301 0 FT1 2\n\n301 alice FT2 0\n302\t0\tLA1\t1.0\n301 bob FT1 -1\n")
    assert list(iter_qrels(path)) == [
        QrelLine("301", "0", "FT1", 2), QrelLine("301", "alice", "FT2", 0),
        QrelLine("302", "0", "LA1", 1), QrelLine("301", "bob", "FT1", -1),
    ]
    # a pair given two grades is refused unless a policy says which one to keep
    assert read_qrels(path, on_conflict="last") == {"301": {"FT1": -1, "FT2": 0}, "302": {"LA1": 1}}


@pytest.mark.parametrize(
    "line, words",
    [
        ("1 0 d", "has 3 fields, expected 4"),
        ("1 0 d 2 x", "has 5 fields, expected 4"),
        ("1 0 d 2.5", "grade '2.5' is not an integer"),
        ("1 0 d high", "grade 'high' is not an integer"),
    ],
)
def test_bad_line_names_file_and_line(tmp_path, line, words):
    path = tmp_path / "q.txt"
    path.write_text(f"1 0 a 1\n\n{line}\n")
    with pytest.raises(InputError) as err:
        read_qrels(path)
    assert str(err.value) == f"{path}:3: {words}" or str(err.value).startswith(f"{path}:3: {words}")


def test_export_bytes_go_through_the_same_parser():
    """compare_pooled read an export's qrels.txt with its own loop, which turned grade 2.5 into 2."""
    data = b"1 0 a 2\n1 0 b 0\n"
    assert qrels_dict(parse_qrels(data.decode().splitlines(), "qrels.txt")) == {"1": {"a": 2, "b": 0}}
    with pytest.raises(InputError, match=r"^qrels.txt:2: grade '2.5' is not an integer"):
        list(parse_qrels(["1 0 a 2", "1 0 b 2.5"], "qrels.txt"))


@pytest.mark.parametrize("raw, grade", [(2, 2), ("2", 2), ("-1", -1), ("3.0", 3), (1.0, 1)])
def test_parse_grade_accepts_integers(raw, grade):
    assert parse_grade(raw, "f", 1) == grade


@pytest.mark.parametrize("raw", [True, "2.5", 0.5, "", None, "two", [1]])
def test_parse_grade_refuses_the_rest(raw):
    with pytest.raises(InputError, match=r"^f:4: grade .* is not an integer"):
        parse_grade(raw, "f", 4)


def test_writer_round_trips(tmp_path):
    from curation.formats.qrels import write_qrels

    lines = [QrelLine("301", "0", "FT1", 2), QrelLine("9", "alice", "é", -1)]
    path = tmp_path / "out.txt"
    write_qrels(lines, path)
    assert path.read_text(encoding="utf-8") == "301 0 FT1 2\n9 alice é -1\n"
    assert list(iter_qrels(path)) == lines


def test_one_line_parser_skips_blank_and_comment_lines():
    from curation.formats.qrels import parse_qrel_line

    assert parse_qrel_line("  ", "f", 1) is None and parse_qrel_line("# note", "f", 2) is None
    assert parse_qrel_line("7\t0  d1 1\n", "f", 3) == QrelLine("7", "0", "d1", 1)
    with pytest.raises(InputError, match=r"^f:4: has 3 fields"):
        parse_qrel_line("7 0 d1", "f", 4)


def test_label_records_round_trip_in_the_export_layout():
    from curation.formats.qrels import format_label_record, parse_label_records

    record = {"qid": "007", "docid": "d1", "grade": 2, "source": "single", "judgments": [{"judge": "é"}]}
    line = format_label_record(record)
    assert line == '{"qid": "007", "docid": "d1", "grade": 2, "source": "single", "judgments": [{"judge": "é"}]}\n'
    assert list(parse_label_records(["", line], "x.jsonl")) == [record]


@pytest.mark.parametrize("line, words", [
    ('{"qid": "1", "grade": 1}', "x.jsonl:1: missing or empty 'docid'"),
    ('{"qid": "1", "docid": "d", "grade": 1.5}', "x.jsonl:1: grade 1.5 is not an integer"),
    ('{"qid": "1", "docid": "d"}', "x.jsonl:1: missing 'grade'"),
    ('[1]', "x.jsonl:1: expected an object with qid, docid and grade"),
])
def test_label_records_refuse_what_an_export_cannot_hold(line, words):
    from curation.formats.qrels import parse_label_records

    with pytest.raises(InputError) as err:
        list(parse_label_records([line], "x.jsonl"))
    assert str(err.value) == words
