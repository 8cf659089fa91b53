"""What the readers refuse that Python would take: JSON by golden's rules (duplicate keys,
huge integers, deep nesting, lone surrogates, ids that are not strings or integers, numbers that are not
numbers), columns of the wrong type (Parquet binary, list and struct columns, a TSV row with a field too
many, a header naming a column twice), a second header inside a CSV log, grades.json problems with the
file's name; and what they accept on purpose gives the clean file's result."""

from __future__ import annotations

import pytest

from curation.formats.corpus import iter_corpus_file
from curation.formats.fileio import InputError, load_json, trec_fields
from curation.formats.grades_file import read_grades
from curation.formats.pool_file import iter_pool
from curation.formats.qrels import parse_grade, read_qrels
from curation.formats.queries import read_queries
from curation.formats.runs import read_run


def _write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------------
# numbers and TREC fields


@pytest.mark.parametrize("raw", ["1_0", "1e1", "\u0661", "\uff11", "\u00b2", " 1", "0x1", "1.5", "++1", ""])
def test_a_grade_is_ascii_digits_with_a_sign(raw):
    with pytest.raises(InputError, match=r"^q.txt:7: grade"):
        parse_grade(raw, "q.txt", 7)


@pytest.mark.parametrize(("raw", "grade"), [("2", 2), ("-1", -1), ("+3", 3), ("2.0", 2), (2, 2), (2.0, 2)])
def test_grades_golden_reads(raw, grade):
    assert parse_grade(raw, "q.txt", 7) == grade


def test_trec_fields_split_on_ascii_space_and_tab_only():
    assert trec_fields(" q1\t0  d1 1\r\n") == ["q1", "0", "d1", "1"]
    assert trec_fields("q1\u00a00 d1\x1f1") == ["q1\u00a00", "d1\x1f1"]
    assert trec_fields(" \t\n") == []


@pytest.mark.parametrize("score", ["0.5_492", "\u0660.5", "\uff11", "1e1_0", "0x10", "1.5f"])
def test_a_run_score_in_a_form_python_reads_and_trec_files_must_not_hold_is_refused(tmp_path, score):
    lines = [f"q{q} Q0 d{d} {d} {100 - d} sys\n" for q in range(1, 4) for d in range(1, 30)]
    lines[40] = f"q2 Q0 dX 99 {score} sys\n"
    path = _write(tmp_path, "run.trec", "".join(lines))
    with pytest.raises(InputError, match=rf"^{path}:41: score"):
        read_run(path)


def test_a_run_rank_that_is_no_integer_is_refused_on_both_paths(tmp_path):
    lines = [f"q{q} Q0 d{d} {d} {100 - d} sys\n" for q in range(1, 4) for d in range(1, 30)]
    lines[40] = "q2 Q0 dX x9 1.5 sys\n"
    path = _write(tmp_path, "run.trec", "".join(lines))  # ASCII: the fast path is tried first
    with pytest.raises(InputError, match=rf"^{path}:41: rank 'x9'"):
        read_run(path)


@pytest.mark.parametrize("score", ["true", '"0.5"', "null", "[1]"])
def test_a_jsonl_run_score_is_a_json_number(tmp_path, score):
    path = _write(tmp_path, "run.jsonl", '{"qid": "q1", "docid": "d1", "score": 1}\n'
                                         f'{{"qid": "q1", "docid": "d2", "score": {score}}}\n')
    with pytest.raises(InputError, match=rf"^{path}:2: score"):
        read_run(path)


def test_a_byte_order_mark_past_the_first_byte_is_refused_with_its_line(tmp_path):
    path = tmp_path / "qrels.txt"
    path.write_bytes(b"\xef\xbb\xbfq1 0 d1 1\n" + b"\xef\xbb\xbfq1 0 d2 1\n")  # two files joined with cat
    with pytest.raises(InputError, match=rf"^{path}:2: a byte-order mark"):
        read_qrels(path)
    path.write_bytes(b"\xef\xbb\xbfq1 0 d1 1\nq1 0 d2 1\n")  # at the start only: accepted, as without it
    assert read_qrels(path) == {"q1": {"d1": 1, "d2": 1}}


# ---------------------------------------------------------------------------------------------
# JSON


@pytest.mark.parametrize(("value", "message"), [
    ("null", "missing or empty 'qid'"),
    ("true", "'qid' is a boolean"),
    ('{"a": 1}', "'qid' is an object"),
    ("[1]", "'qid' is a list"),
    ("1.5", "'qid' is a number that is not an integer"),
    ('""', "missing or empty 'qid'"),
    ('" "', "missing or empty 'qid'"),
    ("NaN", "'qid' is a number that is not an integer"),
])
def test_a_json_id_is_a_non_empty_string_or_an_integer(tmp_path, value, message):
    path = _write(tmp_path, "queries.jsonl", '{"qid": "q1", "text": "a"}\n'
                                             f'{{"qid": {value}, "text": "b"}}\n')
    with pytest.raises(InputError, match=rf"^{path}:2: {message}"):
        list(read_queries(path))


def test_an_integer_id_is_kept_as_written(tmp_path):
    path = _write(tmp_path, "queries.jsonl", '{"qid": 301, "text": "a"}\n{"qid": -7, "text": "b"}\n')
    assert [q.qid for q in read_queries(path)] == ["301", "-7"]


@pytest.mark.parametrize(("line", "message"), [
    ('{"qid": "q2", "text": "b", "text": "c"}', "duplicate key 'text'"),
    ('{"qid": "q2", "text": "b", "n": ' + "1" * 401 + "}", "an integer of 401 digits"),
    ('{"qid": "q2", "text": "b", "n": ' + "9" * 5000 + "}", "an integer of 5000 digits"),
    ('{"qid": "q2", "text": "b", "n": ' + "[" * 100_000 + "]" * 100_000 + "}", "JSON nested more than 64 levels"),
    ('{"qid": "q2", "text": "b\\ud800"}', "a lone surrogate"),
    ('{"qid": "q2", "text": "b\\udc00x"}', "a lone surrogate"),
], ids=["duplicate-key", "401-digits", "5000-digits", "100000-deep", "lone-high-surrogate", "lone-low-surrogate"])
def test_json_golden_does_not_read_is_refused_with_file_and_line(tmp_path, line, message):
    path = _write(tmp_path, "queries.jsonl", '{"qid": "q1", "text": "a"}\n' + line + "\n")
    with pytest.raises(InputError, match=rf"^{path}:2: {message}"):
        list(read_queries(path))


def test_a_surrogate_pair_and_an_escaped_backslash_are_read(tmp_path):
    path = _write(tmp_path, "queries.jsonl", '{"qid": "q1", "text": "\\ud83d\\ude00 \\\\ud800"}\n')
    assert [q.text for q in read_queries(path)] == ["\U0001F600 \\ud800"]


def test_a_duplicate_key_in_a_json_document_names_its_line(tmp_path):
    path = _write(tmp_path, "meta.json", '{\n  "depth": 5,\n  "seed": 1,\n  "depth": 6\n}\n')
    with pytest.raises(InputError, match=rf"^{path}:4: duplicate key 'depth'"):
        load_json(path)


def test_a_pool_id_of_the_wrong_type_is_refused(tmp_path):
    path = _write(tmp_path, "pool.jsonl", '{"qid": "q1", "docid": "d1", "order": 1}\n'
                                          '{"qid": "q1", "docid": {"id": "d2"}, "order": 2}\n')
    with pytest.raises(InputError, match=rf"^{path}:2: 'docid' is an object"):
        list(iter_pool(path))


def test_grades_file_problems_name_the_file(tmp_path):
    path = _write(tmp_path, "grades.json", '[\n{"grade": 0, "name": "no"},\n{"grade": "1", "name": "yes"}\n]\n')
    with pytest.raises(InputError, match=rf"^{path}:3: grade '1' is not a number"):
        read_grades(path)
    path = _write(tmp_path, "grades.json", '[\n{"grade": 0, "name": "no"},\n{"grade": 1, "name": ["yes"]}\n]\n')
    with pytest.raises(InputError, match=rf"^{path}:3: 'name' of grade 1 must be a string"):
        read_grades(path)


# ---------------------------------------------------------------------------------------------
# columns


def _parquet(path, columns: dict):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table(columns), path)
    return path


@pytest.mark.parametrize("column", ["text_binary", "text_struct", "text_list", "id_list", "id_binary", "title_list"])
def test_a_parquet_corpus_column_of_the_wrong_type_is_named_with_its_type(tmp_path, column):
    import pyarrow as pa

    ids = pa.array(["d1", "d2"])
    texts = pa.array(["From the start.", "Another one."])
    table = {"id": ids, "text": texts}
    name, kind = column.split("_")
    values = {"binary": pa.array([b"From the start.", b"Another one."]),
              "struct": pa.array([{"t": "From the start."}, {"t": "Another one."}]),
              "list": pa.array([["kb-1"], ["kb-2"]])}[kind]
    table[name] = values
    path = _parquet(tmp_path / "corpus.parquet", table)
    with pytest.raises(InputError, match=rf"^{path}: column '{name}' is (binary|struct|list)"):
        list(iter_corpus_file(path))


def test_a_parquet_corpus_with_integer_ids_reads_them_as_written(tmp_path):
    import pyarrow as pa

    path = _parquet(tmp_path / "corpus.parquet", {"id": pa.array([7, 301]), "text": pa.array(["a", "b"])})
    assert [d.id for d in iter_corpus_file(path)] == ["7", "301"]


def test_a_tsv_corpus_row_with_a_field_too_many_is_refused(tmp_path):
    path = _write(tmp_path, "corpus.tsv", "id\ttitle\ttext\nd1\tT\tone\nd2\tT\ttwo\twith a tab\n")
    with pytest.raises(InputError, match=rf"^{path}:3: has 4 fields, expected 3"):
        list(iter_corpus_file(path))


def test_a_tsv_corpus_header_naming_a_column_twice_is_refused(tmp_path):
    path = _write(tmp_path, "corpus.tsv", "id\ttext\ttext\nd1\tone\tT\n")
    with pytest.raises(InputError, match=rf"^{path}:1: column 'text' appears twice"):
        list(iter_corpus_file(path))


def test_a_header_line_again_inside_a_csv_log_is_refused(tmp_path):
    """Two logs joined with cat: the second header is no query (it was sampled as one, stratum and all)."""
    from curation.sample.logs import collapse_log

    one = "query,surface\nweather,web\nnews,app\n"
    path = _write(tmp_path, "log.csv", one + one)
    with pytest.raises(InputError, match=rf"^{path}:4: the header line again"):
        collapse_log(path, query_col="query", strata=["surface"])


def test_a_parquet_log_column_of_the_wrong_type_is_named(tmp_path):
    import pyarrow as pa

    from curation.sample.logs import collapse_log

    path = _parquet(tmp_path / "log.parquet", {"query": pa.array([["weather"], ["news"]])})
    with pytest.raises(InputError, match=rf"^{path}: column 'query' is list"):
        collapse_log(path, query_col="query")
