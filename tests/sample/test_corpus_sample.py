"""The comparison corpus's sample (curation.sample.corpus): the seeded hash draw, its independence
from order and files, the kept documents, and ``golden sample corpus``."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from click.testing import CliRunner
from scipy import stats

from curation.cli import main
from curation.formats.corpus import Doc, corpus_fingerprint, iter_corpus_file
from curation.sample.corpus import draw_key, draw_piece, sample_corpus
from tests.formats.test_corpus import DOCS, write_jsonl


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
