"""Corpus: snapshot fingerprint, fetching pooled documents, the reservoir sample, golden sample corpus."""

from __future__ import annotations

import gzip
import hashlib
import json
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from scipy import stats

from curation.cli import main
from curation.formats.corpus import (
    Doc,
    corpus_fingerprint,
    draw_key,
    draw_piece,
    fetch_docs,
    iter_corpus_file,
    read_docids,
    sample_corpus,
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


def test_hash_draw_is_uniform_over_documents(tmp_path):
    """Each of 40 documents is among the 5 drawn with probability 1/8 over seeds (chi-square)."""
    n, k, reps = 40, 5, 1600
    corpus = write_jsonl(tmp_path / "c.jsonl", [Doc(f"d{i}", "t") for i in range(n)])
    counts = Counter()
    for seed in range(reps):
        piece = draw_piece(str(corpus), 0, frozenset(), k, seed)
        assert len({doc.id for _, _, doc in piece.smallest}) == k  # distinct within a draw
        counts.update(doc.id for _, _, doc in piece.smallest)
    observed = [counts[f"d{i}"] for i in range(n)]
    assert sum(observed) == reps * k
    assert stats.chisquare(observed).pvalue > 1e-3


def test_draw_does_not_depend_on_order_or_files(tmp_path):
    """The same documents in another order, or cut into other files, give the same sample."""
    docs = [Doc(f"d{i:03d}", f"text {i}") for i in range(200)]
    whole = write_jsonl(tmp_path / "whole.jsonl", docs)
    shuffled = list(reversed(docs))
    parts = [write_jsonl(tmp_path / f"p{j}.jsonl", shuffled[a:b])
             for j, (a, b) in enumerate([(0, 13), (13, 150), (150, 200)])]
    one, many = tmp_path / "one.jsonl", tmp_path / "many.jsonl"
    r1 = sample_corpus([whole], keep=["d007"], size=25, seed=3, out=one)
    r2 = sample_corpus(parts, keep=["d007"], size=25, seed=3, out=many)
    ids = {json.loads(line)["id"] for line in one.read_text().splitlines()}
    assert ids == {json.loads(line)["id"] for line in many.read_text().splitlines()} and "d007" in ids
    assert r1.fingerprint == r2.fingerprint and r1.corpus_fingerprint == r2.corpus_fingerprint
    # The rule itself: the 24 others are those with the smallest seeded hash of their id.
    expected = sorted((d.id for d in docs if d.id != "d007"), key=lambda i: draw_key(3, i))[:24]
    assert ids - {"d007"} == set(expected)


def test_sample_keeps_every_listed_doc_and_draws_the_rest(tmp_path):
    docs = [Doc(f"d{i:03d}", f"text {i}") for i in range(300)]
    corpus = write_jsonl(tmp_path / "c.jsonl", docs)
    keep = ["d005", "d299", "d150", "missing"]
    out = tmp_path / "s.jsonl"
    res = sample_corpus([corpus], keep=keep, size=50, seed=9, out=out)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    ids = [r["id"] for r in rows]
    assert len(ids) == 50 == len(set(ids))
    assert {"d005", "d299", "d150"} <= set(ids)
    assert (res.kept, res.drawn, res.corpus_docs, res.keep_missing) == (3, 47, 300, ["missing"])
    assert ids == sorted(ids)  # corpus order
    assert res.fingerprint == corpus_fingerprint(out)
    assert res.corpus_fingerprint == corpus_fingerprint(corpus)
    out2 = tmp_path / "s2.jsonl"
    sample_corpus([corpus], keep=keep, size=50, seed=9, out=out2)
    assert out2.read_bytes() == out.read_bytes()
    out3 = tmp_path / "s3.jsonl"
    sample_corpus([corpus], keep=keep, size=50, seed=10, out=out3)
    assert out3.read_bytes() != out.read_bytes()


def test_sample_draw_covers_the_whole_corpus(tmp_path):
    """Not the first or newest records: over seeds, each third of the corpus gets about a third."""
    docs = [Doc(f"d{i:04d}", "t") for i in range(600)]
    corpus = write_jsonl(tmp_path / "c.jsonl", docs)
    thirds = Counter()
    for seed in range(30):
        out = tmp_path / f"s{seed}.jsonl"
        sample_corpus([corpus], keep=[], size=30, seed=seed, out=out)
        for line in out.read_text().splitlines():
            thirds[int(json.loads(line)["id"][1:]) // 200] += 1
    assert stats.chisquare([thirds[0], thirds[1], thirds[2]]).pvalue > 1e-3


def test_sample_edge_cases(tmp_path):
    corpus = write_jsonl(tmp_path / "c.jsonl", DOCS)
    with pytest.raises(ValueError, match="smaller than the 3 documents to keep"):
        sample_corpus([corpus], keep=["d1", "d2", "d3"], size=2, seed=0, out=tmp_path / "x.jsonl")
    assert not (tmp_path / "x.jsonl").exists()
    res = sample_corpus([corpus], keep=["d2"], size=10, seed=0, out=tmp_path / "all.parquet")
    assert res.short and (res.kept, res.drawn) == (1, 3)
    back = list(iter_corpus_file(tmp_path / "all.parquet"))
    assert back == DOCS


def test_corpus_sample_cli(tmp_path):
    docs = [Doc(f"d{i}", f"text {i}") for i in range(100)]
    corpus = write_jsonl(tmp_path / "c.jsonl", docs)
    pool = tmp_path / "pool.jsonl"
    pool.write_text('{"qid":"1","docid":"d7","order":1}\n{"qid":"1","docid":"nope","order":2}\n')
    out = tmp_path / "sample.jsonl.gz"
    res = CliRunner().invoke(
        main, ["sample", "corpus", str(corpus), "--size", "20", "--keep", str(pool), "--seed", "4", "--out", str(out)]
    )
    assert res.exit_code == 0, res.output
    assert "Kept  1 judged or pooled documents (of 2 listed)" in res.output
    assert "1 listed documents are not in the corpus: nope" in res.output
    assert "Drew  19 of the other 99 records" in res.output
    fp = corpus_fingerprint(out)
    assert f"Wrote {out}: 20 records, fingerprint {fp.sha256}" in res.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "text": "x"}\n{"text": "no id"}\n')
    res = CliRunner().invoke(main, ["sample", "corpus", str(bad), "--size", "1", "--out", str(tmp_path / "o.jsonl")])
    assert res.exit_code == 1 and f"{bad}:2: record has no id" in res.output
    assert not (tmp_path / "o.jsonl").exists()


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
