"""Corpus: snapshot fingerprint, fetching pooled documents, reading docids (its sample is tested in
tests/sample/test_corpus_sample.py)."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curation.formats.corpus import (
    Doc,
    corpus_fingerprint,
    fetch_docs,
    read_docids,
)
from curation.formats.fileio import InputError

DOCS = [
    Doc("d1", "Reset your password from the sign-in page.", "Passwords", "https://help.example/pw"),
    Doc("d2", "Invoices can be exported as CSV.", None, None),
    Doc("d3", "Caf\u00e9 hours: 8\u201318.", "Hours", None),
    Doc("d4", "Two-factor codes expire after 30 seconds.", None, "https://help.example/2fa"),
]


def write_jsonl(path: Path, docs) -> Path:
    with open(path, "w", encoding="utf-8") as fh:
        for d in docs:
            row = {"id": d.id, "text": d.text}
            if d.title is not None:
                row["title"] = d.title
            if d.url is not None:
                row["url"] = d.url
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


def expected_fingerprint(docs) -> str:
    """The documented definition, computed here from hashlib alone."""
    total = 0
    for d in docs:
        payload = json.dumps([d.id, d.text, d.title, d.url], ensure_ascii=False, separators=(",", ":"))
        total += int(hashlib.sha256(payload.encode()).hexdigest(), 16)
    total %= 2**256
    h = hashlib.sha256(b"golden.corpus/1" + b"\x00" + str(len(docs)).encode() + b"\x00" + total.to_bytes(32, "big"))
    return h.hexdigest()


def test_fingerprint_follows_its_definition_and_ignores_order_and_format(tmp_path):
    fp = corpus_fingerprint(write_jsonl(tmp_path / "a.jsonl", DOCS))
    assert fp.sha256 == expected_fingerprint(DOCS) and fp.docs == 4
    assert corpus_fingerprint(write_jsonl(tmp_path / "b.jsonl", DOCS[::-1])) == fp
    # The same records split over two files, one of them gzipped.
    write_jsonl(tmp_path / "c1.jsonl", DOCS[:2])
    with gzip.open(tmp_path / "c2.jsonl.gz", "wt", encoding="utf-8") as fh:
        for d in DOCS[2:]:
            fh.write(json.dumps({"id": d.id, "text": d.text, "title": d.title, "url": d.url},
                                ensure_ascii=False) + "\n")
    assert corpus_fingerprint([tmp_path / "c1.jsonl", tmp_path / "c2.jsonl.gz"]) == fp
    table = pa.table({"id": [d.id for d in DOCS], "text": [d.text for d in DOCS],
                      "title": [d.title for d in DOCS], "url": [d.url for d in DOCS]})
    pq.write_table(table, tmp_path / "d.parquet")
    assert corpus_fingerprint(tmp_path / "d.parquet") == fp
    tsv = tmp_path / "e.tsv"
    tsv.write_text("id\ttitle\ttext\turl\n"
                   + "".join(f"{d.id}\t{d.title or ''}\t{d.text}\t{d.url or ''}\n" for d in DOCS[::-1]))
    assert corpus_fingerprint(tsv) == fp


def test_fingerprint_changes_with_any_content_change(tmp_path):
    fp = corpus_fingerprint(write_jsonl(tmp_path / "a.jsonl", DOCS))
    changed = [DOCS[0], Doc("d2", "Invoices can be exported as CSV!", None, None), *DOCS[2:]]
    assert corpus_fingerprint(write_jsonl(tmp_path / "b.jsonl", changed)) != fp
    assert corpus_fingerprint(write_jsonl(tmp_path / "c.jsonl", DOCS + [DOCS[0]])) != fp  # a repeated record
    assert corpus_fingerprint(write_jsonl(tmp_path / "d.jsonl", DOCS[:3])) != fp
    retitled = [Doc("d1", DOCS[0].text, None, DOCS[0].url), *DOCS[1:]]
    assert corpus_fingerprint(write_jsonl(tmp_path / "e.jsonl", retitled)) != fp


def test_fetch_docs_returns_texts_and_names_missing(tmp_path):
    corpus = write_jsonl(tmp_path / "c.jsonl", DOCS)
    got = fetch_docs([corpus], ["d3", "d1", "gone-1", "gone-0"])
    assert set(got.docs) == {"d1", "d3"}
    assert got.docs["d3"].text == "Caf\u00e9 hours: 8\u201318." and got.docs["d1"].url == "https://help.example/pw"
    assert got.missing == ["gone-0", "gone-1"]
    assert got.fingerprint.sha256 == expected_fingerprint(DOCS)


def test_read_docids_from_pool_qrels_run_and_list(tmp_path):
    pool = tmp_path / "pool.jsonl"
    pool.write_text('{"qid":"1","docid":"a","order":1}\n{"qid":"2","docid":"b","order":1}\n'
                    '{"qid":"3","docid":"a","order":1}\n')
    assert read_docids(pool) == ["a", "b"]
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("1 0 x 1\n1 0 y 0\n")
    assert read_docids(qrels) == ["x", "y"]
    run = tmp_path / "run.trec"
    run.write_text("1 Q0 r1 1 2.0 s\n")
    assert read_docids(run) == ["r1"]
    bad = tmp_path / "bad.txt"
    bad.write_text("a\nb c\n")
    with pytest.raises(InputError, match="bad.txt:2: has 2 fields"):
        read_docids(bad)


def test_jsonl_block_errors_name_the_line_of_the_whole_file(tmp_path):
    from curation.formats.corpus import iter_jsonl_docs

    block = b'{"id": "a", "text": "x"}\n\n{"docid": 7, "body": "y"}\n{"title": "no id"}\n'
    calls = []

    def first_line():
        calls.append(1)
        return 101

    docs = iter_jsonl_docs(block.split(b"\n"), "big.jsonl", first_line=first_line)
    assert [(d.id, d.text) for d in (next(docs), next(docs))] == [("a", "x"), ("7", "y")]
    assert calls == []  # the offset is only computed for an error
    with pytest.raises(InputError, match=r"^big.jsonl:104: record has no id"):
        next(docs)
    with pytest.raises(InputError, match=r"^big.jsonl:12: not valid JSON"):
        list(iter_jsonl_docs(['{"id": 1, "text": "t"}', "{"], "big.jsonl", first_line=11))
