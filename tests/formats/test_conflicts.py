"""Repeated records (curation.formats.conflicts): identical repeats counted, conflicts refused with both
lines or resolved by the --on-conflict policy, for every reader that meets them."""

import pytest

from curation.formats.conflicts import Dedup
from curation.formats.fileio import InputError
from curation.formats.qrels import parse_grade, read_qrels


def test_dedup_counts_identical_repeats_and_names_both_lines_of_a_conflict():
    d = Dedup("f.txt", what="pair")
    assert d.add(("q", "d"), 1, 1) is True
    assert d.add(("q", "d"), 1, 4) is False
    assert d.repeats == 1
    with pytest.raises(InputError) as err:
        d.add(("q", "d"), 2, 7)
    assert str(err.value).startswith("f.txt:7: pair q/d has 2 here but 1 on line 1;")
    assert "--on-conflict" in str(err.value)


@pytest.mark.parametrize("policy, kept, conflicts", [("first", 1, 1), ("last", 2, 1)])
def test_dedup_policies_keep_one_and_count(policy, kept, conflicts):
    d = Dedup("f.txt", policy=policy)
    values = {}
    for lineno, value in enumerate([1, 2, 1], 1):
        if d.add("k", value, lineno):
            values["k"] = value
    # first: 1 kept, then 2 conflicts (dropped), then 1 is identical to the kept one
    # last: 1, then 2 replaces it, then 1 conflicts with 2 and replaces it again
    expected = {"first": (1, 1, 1), "last": (1, 2, 0)}[policy]
    assert (values["k"], d.conflicts, d.repeats) == expected
    assert d.summary().startswith("f.txt: ")


def test_unknown_policy_is_refused():
    with pytest.raises(ValueError, match="on_conflict: 'newest' is not one of error, first, last"):
        Dedup("f", policy="newest")


def test_qrels_pair_with_two_grades_is_refused_with_both_lines(tmp_path):
    path = tmp_path / "qrels.txt"
    path.write_text("q1 0 d1 1\nq1 0 d2 0\n\nq1 0 d1 2\n")
    with pytest.raises(InputError) as err:
        read_qrels(path)
    assert str(err.value).startswith(f"{path}:4: pair q1/d1 has 2 here but 1 on line 1")
    assert read_qrels(path, on_conflict="first") == {"q1": {"d1": 1, "d2": 0}}
    assert read_qrels(path, on_conflict="last") == {"q1": {"d1": 2, "d2": 0}}


def test_qrels_identical_repeats_are_counted(tmp_path):
    path = tmp_path / "qrels.txt"
    path.write_text("q1 0 d1 1\nq1 0 d1 1\nq1 0 d1 1\n")
    dedup = Dedup(path, what="pair")
    assert read_qrels(path, dedup=dedup) == {"q1": {"d1": 1}}
    assert dedup.repeats == 2


@pytest.mark.parametrize("raw", ["1e400", "inf", "-inf", "nan", "NaN", "Infinity", "1" + "0" * 40])
def test_non_finite_and_huge_grades_are_refused(raw):
    with pytest.raises(InputError, match=r"^g.txt:3: grade .* (finite|between|not an integer)"):
        parse_grade(raw, "g.txt", 3)


@pytest.mark.parametrize("raw", [float("inf"), float("nan"), 10**40, "x"])
def test_non_finite_json_grades_are_refused(raw):
    with pytest.raises(InputError, match=r"^g.jsonl:2: grade "):
        parse_grade(raw, "g.jsonl", 2)


def _lines(tmp_path, *lines, name="queries.jsonl"):
    path = tmp_path / name
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_queries_identical_repeat_is_read_once_and_counted(tmp_path):
    from curation.formats.queries import read_queries

    path = _lines(tmp_path, '{"qid": "q1", "text": "a"}', '{"qid": "q2", "text": "b"}', '{"qid": "q1", "text": "a"}')
    dedup = Dedup(path, what="qid")
    assert [q.qid for q in read_queries(path, dedup=dedup)] == ["q1", "q2"]
    assert dedup.repeats == 1


def test_queries_qid_with_two_texts_is_refused_or_resolved(tmp_path):
    from curation.formats.queries import read_queries

    path = _lines(tmp_path, '{"qid": "q1", "text": "a"}', '{"qid": "q2", "text": "b"}', '{"qid": "q1", "text": "c"}')
    with pytest.raises(InputError, match=rf"^{path}:3: qid 'q1' has 'c' here but 'a' on line 1"):
        read_queries(path)
    assert [(q.qid, q.text) for q in read_queries(path, on_conflict="first")] == [("q1", "a"), ("q2", "b")]
    assert [(q.qid, q.text) for q in read_queries(path, on_conflict="last")] == [("q1", "c"), ("q2", "b")]


@pytest.mark.parametrize("value", ["Infinity", "-Infinity", "NaN", "1e400"])
@pytest.mark.parametrize("key", ["traffic", "weight", "stratum_share"])
def test_queries_non_finite_numbers_are_refused(tmp_path, key, value):
    from curation.formats.queries import read_queries

    path = _lines(tmp_path, '{"qid": "q0", "text": "a"}', f'{{"qid": "q1", "text": "a", "{key}": {value}}}')
    with pytest.raises(InputError, match=rf"^{path}:2: '{key}' must be a finite non-negative number"):
        read_queries(path)


def test_query_text_over_the_limit_is_refused_with_the_limit(tmp_path, monkeypatch):
    from curation.formats.queries import read_queries

    path = _lines(tmp_path, '{"qid": "q0", "text": "a"}', '{"qid": "q1", "text": "' + "é" * 60 + '"}')
    monkeypatch.setenv("GOLDEN_MAX_QUERY_BYTES", "100")
    with pytest.raises(InputError, match=rf"^{path}:2: query q1's text is 120 bytes, over the limit of 100 bytes "
                                         r"\(raise it with GOLDEN_MAX_QUERY_BYTES=N\)"):
        read_queries(path)
    monkeypatch.setenv("GOLDEN_MAX_QUERY_BYTES", "120")
    assert len(read_queries(path)) == 2
    monkeypatch.setenv("GOLDEN_MAX_QUERY_BYTES", "lots")
    with pytest.raises(ValueError, match="GOLDEN_MAX_QUERY_BYTES: 'lots' is not a positive whole number"):
        read_queries(path)


def test_corpus_id_with_two_texts_is_refused_with_both_lines_even_across_files(tmp_path):
    from curation.formats.corpus import fetch_docs

    a = _lines(tmp_path, '{"id": "d1", "text": "one"}', "", '{"id": "d2", "text": "two"}', name="a.jsonl")
    b = _lines(tmp_path, '{"id": "d1", "text": "one"}', '{"id": "d2", "text": "TWO"}', name="b.jsonl")
    with pytest.raises(InputError, match=rf"^{b}:2: document 'd2' has 'TWO' here but 'two' on line 3 of {a}"):
        fetch_docs([a, b], ["d1", "d2"])
    fetched = fetch_docs([a, b], ["d1", "d2"], on_conflict="last")
    assert {d: doc.text for d, doc in fetched.docs.items()} == {"d1": "one", "d2": "TWO"}
    assert fetched.duplicates == ["d1", "d2"]
    assert (fetched.repeats, fetched.conflicts) == (1, 1)
    # a document nobody asked for is not held in memory (a hash and its text's start only), but checked
    with pytest.raises(InputError, match=rf"^{b}:2: document 'd2' has 'TWO' here but 'two' on line 3 of {a}"):
        fetch_docs([a, b], ["d1"])
    assert fetch_docs([a, b], ["d1"], on_conflict="first").docs["d1"].text == "one"


def test_corpus_tsv_lines_are_numbered_from_the_header(tmp_path):
    from curation.formats.corpus import fetch_docs

    tsv = _lines(tmp_path, "id\ttext", "d1\tone", "d1\tuno", name="c.tsv")
    with pytest.raises(InputError, match=rf"^{tsv}:3: document 'd1' has 'uno' here but 'one' on line 2"):
        fetch_docs([tsv], ["d1"])


def test_document_text_over_the_limit_is_refused_with_the_limit(tmp_path, monkeypatch):
    from curation.formats.corpus import fetch_docs

    path = _lines(tmp_path, '{"id": "d0", "text": "ok"}', '{"id": "d1", "text": "' + "x" * 2000 + '"}', name="c.jsonl")
    assert fetch_docs([path], ["d1"]).docs["d1"].text == "x" * 2000  # the default is far above
    monkeypatch.setenv("GOLDEN_MAX_DOC_BYTES", "1999")
    with pytest.raises(InputError, match=rf"^{path}:2: document 'd1''s text is 2000 bytes, over the limit of 1999 "
                                         r"bytes \(raise it with GOLDEN_MAX_DOC_BYTES=N\)"):
        fetch_docs([path], ["d0"])


def test_qrels_line_over_the_limit_is_refused_with_the_limit(tmp_path, monkeypatch):
    path = _lines(tmp_path, "q1 0 d1 1", "q1 0 " + "d" * 300 + " 1", name="qrels.txt")
    assert len(read_qrels(path)["q1"]) == 2
    monkeypatch.setenv("GOLDEN_MAX_LINE_BYTES", "200")
    with pytest.raises(InputError, match=rf"^{path}:2: the line is 307 bytes, over the limit of 200 bytes "
                                         r"\(raise it with GOLDEN_MAX_LINE_BYTES=N\)"):
        read_qrels(path)


@pytest.mark.parametrize("name", ["hand.txt", "hand.jsonl"])
def test_handwritten_query_over_the_limit_is_refused_with_the_line(tmp_path, monkeypatch, name):
    from curation.formats.query_list import read_query_list

    long = "word " * 30  # 149 bytes once normalised
    line = long if name.endswith(".txt") else '{"text": "' + long + '"}'
    path = _lines(tmp_path, "short one", "", line, name=name) if name.endswith(".txt") else _lines(
        tmp_path, '{"text": "short one"}', "", line, name=name)
    assert len(read_query_list(path)) == 2
    monkeypatch.setenv("GOLDEN_MAX_QUERY_BYTES", "100")
    with pytest.raises(InputError, match=rf"^{path}:3: query's text is 149 bytes, over the limit of 100 bytes"):
        read_query_list(path)
