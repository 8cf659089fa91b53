"""Other tools' judgment files, read by golden's one reader of each: Quepid's judgements CSV, RRE's
ratings JSON, learning-to-rank judgment lists. The example files are written here by hand from each
format's documentation (Quepid's case and book CSV exports, RRE's ratings examples, RankLib's file
format), never by golden's writers; errors name file:line."""

from __future__ import annotations

import json

import pytest

from curation.formats.fileio import InputError
from curation.formats.ltr import ltr_text, read_ltr
from curation.formats.quepid import quepid_csv_text, read_quepid
from curation.formats.rre import read_rre, rre_json_text

# A Quepid case's ratings export: query,docid,rating; a query without a rating is a row alone; a text
# Quepid made safe for spreadsheets starts with a space.
QUEPID_CASE = """query,docid,rating
star wars,11,3
star wars,1891,2
"mad max, fury road",76341,1
 -sequel,500,0
the matrix
"""

# A Quepid book's export: one column per rater, empty where the rater gave no judgement.
QUEPID_BOOK = """query,docid,alice@example.com,Bob
star wars,11,3,2
star wars,1891,,1
star trek,193,0,
"""

# RRE's layout (topics > query_groups > queries with placeholders; document -> gain), a group in
# Quepid's RRE layout (gain -> documents), and a rated query at the top level.
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
            {"template": "only_q.json", "placeholders": {"$query": "Star Wars"}}
          ],
          "relevant_documents": {
            "11": {"gain": 3},
            "1891": {"gain": 2}
          }
        }
      ]
    }
  ],
  "query_groups": [
    {
      "name": "trek",
      "queries": [{"template": "only_q.json", "placeholders": {"$query": "star trek"}}],
      "relevant_documents": {
        "0": ["193", "200"],
        "2": ["13475"]
      }
    }
  ]
}
"""

# RankLib's file format: <target> qid:<qid> <feature>:<value> ... # <info>, here as the OpenSearch
# LTR plugin and Quepid write it (document id, then the query's text), with a comment line.
LTR = """# judgment list for the movie demo
4 qid:1 1:9.8376875 2:12.318446 # 7555 rambo
3 qid:1 1:10.7808075 2:0.0 # 1370 rambo
0 qid:2 # 1368 first blood
"""


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_quepid_case_ratings_are_read_with_the_query_text_and_the_unrated_row_counted(tmp_path):
    read = read_quepid(_write(tmp_path, "case.csv", QUEPID_CASE))
    assert [(lab.line, lab.texts, lab.docid, lab.grade, lab.rater) for lab in read.labels] == [
        (2, ("star wars",), "11", 3, None), (3, ("star wars",), "1891", 2, None),
        (4, ("mad max, fury road",), "76341", 1, None), (5, (" -sequel",), "500", 0, None)]
    assert (read.raters, read.unrated) == ([], 1)


def test_quepid_book_is_read_rater_by_rater_and_empty_cells_are_no_judgement(tmp_path):
    read = read_quepid(_write(tmp_path, "book.csv", QUEPID_BOOK))
    assert read.raters == ["alice@example.com", "Bob"]
    assert [(lab.line, lab.docid, lab.grade, lab.rater) for lab in read.labels] == [
        (2, "11", 3, "alice@example.com"), (2, "11", 2, "Bob"), (3, "1891", 1, "Bob"),
        (4, "193", 0, "alice@example.com")]


@pytest.mark.parametrize("text, line, message", [
    ("q,docid,rating\nx,1,1\n", 1, "expected a header"),
    ("query,docid,rating\nstar wars,11,high\n", 2, "grade 'high' is not an integer"),
    ("query,docid,rating\nstar wars,11,2.5\n", 2, "grade '2.5' is not an integer"),
    ("query,docid,rating\nstar wars,,2\n", 2, "a rating without a document id"),
    ("query,docid,rating\nstar wars,11,2,9\n", 2, "has 4 fields, the header has 3"),
])
def test_quepid_errors_name_the_line(tmp_path, text, line, message):
    path = _write(tmp_path, "bad.csv", text)
    with pytest.raises(InputError, match=rf"^{path}:{line}: .*{message}"):
        read_quepid(path)


def test_quepid_file_with_only_unrated_queries_has_no_records_named_as_such(tmp_path):
    path = _write(tmp_path, "empty.csv", "query,docid,rating\nthe matrix\n")
    with pytest.raises(InputError, match=rf"^{path}: no records"):
        read_quepid(path)


def test_rre_groups_give_each_document_its_gain_its_line_and_the_queries_texts(tmp_path):
    read = read_rre(_write(tmp_path, "ratings.json", RRE))
    got = [(lab.line, lab.qid, lab.texts, lab.docid, lab.grade) for lab in read.labels]
    assert got == [
        (15, "Star Wars searches", ("star wars", "Star Wars", "Star Wars searches"), "11", 3),
        (16, "Star Wars searches", ("star wars", "Star Wars", "Star Wars searches"), "1891", 2),
        (27, "trek", ("star trek", "trek"), "193", 0),
        (27, "trek", ("star trek", "trek"), "200", 0),
        (28, "trek", ("star trek", "trek"), "13475", 2),
    ]
    lines = RRE.splitlines()
    assert '"11"' in lines[14] and '"193"' in lines[26] and '"13475"' in lines[27]  # the lines are the documents'


def test_rre_query_placeholder_names_the_text_and_a_top_level_query_is_read(tmp_path):
    text = json.dumps({"index": "i", "id_field": "id", "query_placeholder": "q",
                       "queries": [{"placeholders": {"q": "blade runner", "$query": "ignored"},
                                    "relevant_documents": [{"78": {"gain": "1"}}]}]})
    read = read_rre(_write(tmp_path, "r.json", text))
    assert [(lab.line, lab.qid, lab.texts, lab.docid, lab.grade) for lab in read.labels] == [
        (1, None, ("blade runner",), "78", 1)]


@pytest.mark.parametrize("rel, message", [
    ('{"11": {"gain": 1.5}}', "grade 1.5 is not an integer"),
    ('{"11": {"score": 1}}', "document '11': no \"gain\""),
    ('{"11": 3}', "relevant_documents: '11': expected \\{\"gain\": N\\} or a list"),
])
def test_rre_errors_name_the_group_line(tmp_path, rel, message):
    text = '{"index": "i",\n "id_field": "id",\n "query_groups": [{"name": "g",\n  "relevant_documents": ' + rel + "}]}"
    path = _write(tmp_path, "bad.json", text)
    with pytest.raises(InputError, match=rf"^{path}:4: {message}"):
        read_rre(path)


def test_rre_file_that_is_not_json_names_the_line(tmp_path):
    path = _write(tmp_path, "bad.json", '{"index": "i",\n "query_groups": [,]}')
    with pytest.raises(InputError, match=rf"^{path}:2: not valid JSON"):
        read_rre(path)


def test_ltr_lines_give_grade_qid_docid_and_text_and_skip_features_and_comments(tmp_path):
    read = read_ltr(_write(tmp_path, "judgments.txt", LTR))
    assert [(lab.line, lab.qid, lab.texts, lab.docid, lab.grade) for lab in read.labels] == [
        (2, "1", ("rambo",), "7555", 4), (3, "1", ("rambo",), "1370", 3), (4, "2", ("first blood",), "1368", 0)]
    assert read.meta == {}


@pytest.mark.parametrize("line, message", [
    ("2 1:0.5 # d1", "expected '<grade> qid:<qid>"),
    ("2 qid:1 1:0.5", "no document id"),
    ("2 qid:1 1:0.5 #", "no document id"),
    ("x qid:1 # d1", "grade 'x' is not an integer"),
    ("2 qid:1 1:nan # d1", "is not a feature"),
    ("2 qid:1 a:1 # d1", "is not a feature"),
])
def test_ltr_errors_name_the_line(tmp_path, line, message):
    path = _write(tmp_path, "bad.txt", "# ok\n" + line + "\n")
    with pytest.raises(InputError, match=rf"^{path}:2: .*{message}"):
        read_ltr(path)


def test_golden_writers_are_read_back_by_the_readers(tmp_path):
    rows = [("q-1", "what's on, tonight?", "d1", 2), ("q-1", "what's on, tonight?", "d2", 0), ("q-2", "=cmd", "d9", 1)]
    quepid = read_quepid(_write(tmp_path, "q.csv", quepid_csv_text((t, d, g) for _, t, d, g in rows)))
    assert [(lab.texts[0].strip(), lab.docid, lab.grade) for lab in quepid.labels] == [(t, d, g) for _, t, d, g in rows]
    assert quepid.labels[2].texts == (" =cmd",)  # made safe for spreadsheets, as Quepid does

    groups = [("q-1", "what's on, tonight?", [("d1", 2), ("d2", 0)]), ("q-2", "=cmd", [("d9", 1)])]
    golden = {"version": "v1", "scale": "0-2", "relevance_level": 1}
    rre = read_rre(_write(tmp_path, "r.json", rre_json_text(groups, index="p", golden=golden)))
    assert [(lab.qid, lab.texts[0], lab.docid, lab.grade) for lab in rre.labels] == rows
    assert rre.meta == golden

    ltr = read_ltr(_write(tmp_path, "l.txt", ltr_text(rows, header=golden)))
    assert [(lab.qid, lab.texts[0], lab.docid, lab.grade) for lab in ltr.labels] == rows
    assert ltr.meta == golden
    assert "2 qid:1 # d1 what's on, tonight?\n" in (tmp_path / "l.txt").read_text()  # numbered for RankLib


def test_ltr_keeps_numeric_qids_as_they_are(tmp_path):
    text = ltr_text([("7", "a b", "d1", 1), ("12", "c\td", "d2", 0)], header={"relevance_level": 1})
    assert text == "# golden relevance_level=1\n1 qid:7 # d1 a b\n0 qid:12 # d2 c d\n"


@pytest.mark.parametrize("reader, text", [(read_quepid, "query,docid,rating\nthe matrix\n"),
                                          (read_rre, '{"index": "i", "id_field": "id", "query_groups": []}'),
                                          (read_ltr, "# nothing yet\n")])
def test_a_file_without_a_rating_is_refused_unless_allowed(tmp_path, reader, text):
    path = _write(tmp_path, "empty", text)
    with pytest.raises(InputError, match=rf"^{path}: no records"):
        reader(path)
    assert reader(path, allow_empty=True).labels == []


def test_rre_document_ids_go_through_the_shared_id_rule(tmp_path):
    path = _write(tmp_path, "bad.json", '{"index": "i", "id_field": "id",\n "query_groups": [{"name": "g",\n'
                                        '  "relevant_documents": {"1": ["d1", null]}}]}')
    with pytest.raises(InputError, match=rf"^{path}:3: missing or empty 'docid'"):
        read_rre(path)


@pytest.mark.parametrize("rows, shard_rows, batch_rows", [(0, 3, 2), (1, 1, 1), (7, 3, 2), (7, 7, 50), (6, 2, 4)])
def test_hf_shards_hold_every_record_in_order_whatever_the_batch(tmp_path, monkeypatch, rows, shard_rows, batch_rows):
    from curation.formats.hf_dataset import read_hf_dataset, shard_names, write_hf_dataset

    monkeypatch.setattr("curation.formats.hf_dataset.BATCH_ROWS", batch_rows)
    records = [{"qid": f"q{i}", "docid": "d", "grade": i % 3, "source": "single", "seed_only": False,
                "judgments": [], "adjudication": None, "seeds": [], "pooled": True, "guidelines_version": None}
               for i in range(rows)]
    written = write_hf_dataset(iter(records), tmp_path, rows=rows, golden={"version": "v"}, title="t",
                               shard_rows=shard_rows)
    assert sorted(written) == sorted(shard_names(rows, shard_rows) + ["README.md"])
    meta, got = read_hf_dataset(tmp_path)
    assert meta == {"version": "v"}
    assert [(r["qid"], r["grade"]) for r in got] == [(r["qid"], r["grade"]) for r in records]
    with pytest.raises(ValueError, match="^records: no column for key"):
        write_hf_dataset(iter([{**records[0], "extra": 1}] if records else [{"qid": "x", "extra": 1}]),
                         tmp_path / "x", rows=1, golden={}, title="t")


def test_hf_rows_of_a_machine_filled_export_keep_the_machine_label(tmp_path):
    from curation.formats.hf_dataset import read_hf_dataset, write_hf_dataset

    base = {"qid": "q1", "source": "machine", "seed_only": False, "judgments": [], "adjudication": None,
            "seeds": [], "pooled": True, "guidelines_version": None}
    machine = {"judge": "llm", "kind": "machine", "grade": 2, "samples": 3, "model": "m", "prompt_version": "v3",
               "confidence": 0.75}
    records = [{**base, "docid": "d1", "grade": 2, "machine": machine},
               {**base, "docid": "d2", "grade": 0, "source": "single", "machine": None}]
    write_hf_dataset(records, tmp_path, rows=2, golden={}, title="t")
    _, rows = read_hf_dataset(tmp_path)
    assert [r["machine"] for r in rows] == [machine, None]
