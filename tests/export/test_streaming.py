"""The export computes the final labels a chunk of queries at a time, in a few numpy passes, and
writes its files as it goes: the same labels as the per-pair derivation
(curation.agree.labels.final_labels and latest_labels), the same bytes whatever the chunk size, and
never the whole judgments table in memory. On SQLite and PostgreSQL (the ``engine`` fixture)."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest
from sqlmodel import select

from curation.agree.labels import final_labels, latest_labels, load_judgments
from curation.export import gather
from curation.export import versions as export
from curation.export.archive import build_archive, read_archive
from curation.store.engine import session as new_session
from curation.store.models import Document, Judgment, Query
from curation.store.projects import get_project
from tests.support.rich_store import judged_project, rich_project


def _export(engine, out: Path, version: str, policy: str):
    with new_session(engine) as s:
        return export.export_version(s, get_project(s, "p"), version, policy=policy, out_dir=out,
                                     allow_incomplete=True, created_by="t")


@pytest.mark.parametrize("policy", ["adjudicated", "majority", "lead"])
def test_chunked_labels_are_the_per_pair_final_labels(engine, tmp_path, monkeypatch, policy):
    rich_project(engine, tmp_path / "in", n_queries=14, docs=8, seed=3)
    outputs = []
    for chunk in (1, 7, 10_000):  # one query per chunk, a few, all at once
        monkeypatch.setattr(gather, "CHUNK_PAIRS", chunk)
        res = _export(engine, tmp_path / f"out{chunk}", "v1", policy)
        folder = tmp_path / f"out{chunk}" / "v1"
        outputs.append({n: (folder / n).read_bytes() for n in ("qrels.txt", "qrels.jsonl", "queries.jsonl")})
        with new_session(engine) as s:  # the version is frozen: start again from the same state
            s.delete(s.exec(select(export.ExportVersion)).one())
            s.commit()
    assert outputs[0] == outputs[1] == outputs[2]

    records = [json.loads(line) for line in outputs[0]["qrels.jsonl"].decode().splitlines()]
    with new_session(engine) as s:
        proj = get_project(s, "p")
        active = set(s.exec(select(Query.qid).where(Query.status != "dropped")).all())
        excluded = set(s.exec(select(Document.docid).where(Document.excluded)).all())
        expected = [f for f in final_labels(s, proj, policy=policy)
                    if f.grade is not None and f.qid in active and f.docid not in excluded]
        latest = latest_labels(load_judgments(s, proj))
    assert [(r["qid"], r["docid"], r["grade"], r["source"]) for r in records] == \
        [(f.qid, f.docid, f.grade, f.source) for f in expected]
    assert {r["source"] for r in records} >= {"single", "unanimous", "adjudicated", "seed"}
    for r in records:
        assert [(v["judge"], v["grade"]) for v in r["judgments"]] == \
            sorted((j, lab.grade) for j, lab in latest.get((r["qid"], r["docid"]), {}).items())
    assert res.manifest["counts"]["pairs"] == len(records)
    assert outputs[0]["qrels.txt"].decode() == "".join(f"{r['qid']} 0 {r['docid']} {r['grade']}\n" for r in records)


def test_the_export_reads_the_judgments_a_chunk_at_a_time(engine, tmp_path, monkeypatch):
    # A spy on the chunked reads and on the file writes: no read and no write holds the whole table.
    rich_project(engine, tmp_path / "in", n_queries=30, docs=10, seed=5)
    with new_session(engine) as s:
        total = len(s.exec(select(Judgment.id)).all())
    reads, writes = [], []
    real_fetch, real_write = gather.plain_rows, gather._HashedFile.write

    def fetch(conn, stmt):
        rows = real_fetch(conn, stmt)
        reads.append(len(rows))
        return rows

    def write(self, text):
        writes.append(text.count(b"\n" if isinstance(text, bytes) else "\n"))
        return real_write(self, text)

    monkeypatch.setattr(gather, "plain_rows", fetch)
    monkeypatch.setattr(gather._HashedFile, "write", write)
    monkeypatch.setattr(gather, "CHUNK_PAIRS", 30)  # 3 queries of 10 pairs per chunk
    res = _export(engine, tmp_path / "out", "v1", "majority")
    pairs = res.manifest["counts"]["pairs"]
    judgment_reads = reads[1::2]  # each chunk reads its pool pairs, then its judgments
    assert len(judgment_reads) == 10 and sum(judgment_reads) <= total
    assert max(judgment_reads) < total / 4 and max(reads[0::2]) <= 30
    assert max(writes) <= 30 < pairs  # qrels.txt / qrels.jsonl get one chunk's lines per write


@pytest.mark.slow
def test_export_memory_does_not_grow_with_the_judgments(tmp_path, monkeypatch):
    # tracemalloc's peak during an export: eight times the judgments (same queries, same overlap set)
    # leave it where it was, far below the size of the files written.
    from tests.support.projects import sqlite_store

    monkeypatch.setattr(gather, "CHUNK_PAIRS", 2000)
    peaks, written = [], []
    for docs in (50, 400):
        folder = tmp_path / str(docs)
        folder.mkdir()
        with sqlite_store(folder) as (_url, eng):
            judged_project(eng, folder / "in", n_queries=100, docs=docs)
            _export(eng, folder / "warm", "v0", "adjudicated")  # imports and caches outside the measure
            tracemalloc.start()
            try:
                _export(eng, folder / "out", "v1", "adjudicated")
                peaks.append(tracemalloc.get_traced_memory()[1])
            finally:
                tracemalloc.stop()
            written.append(sum(p.stat().st_size for p in (folder / "out" / "v1").iterdir()))
    assert written[1] > 7 * written[0] and written[1] > 10_000_000
    assert peaks[1] < 1.5 * peaks[0] and peaks[1] < written[1] / 2, (peaks, written)


def test_a_zip_built_from_files_is_the_zip_built_from_bytes(tmp_path):
    data = {"qrels.txt": b"q 0 d 1\n" * 300_000, "manifest.json": b"{}\n", "CHANGES.md": "é\n".encode()}
    for name, b in data.items():
        (tmp_path / name).write_bytes(b)
    from_paths = build_archive("v1", {n: tmp_path / n for n in data})
    assert from_paths == build_archive("v1", data) and read_archive(from_paths) == data
