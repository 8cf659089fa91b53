"""The frozen zip of an export version in the store's chunks: written as it is written,
read as it is read, never one value nor one object in memory; and the upgrade of stores that kept
it as one value (migration 0019), on SQLite and PostgreSQL."""

from __future__ import annotations

import hashlib
import os
import tracemalloc
import zipfile

import pytest
from alembic import command
from sqlalchemy import text
from sqlmodel import select

from curation.export.archive import build_archive, read_archive, store_archive, stored_openers
from curation.store.archives import ChunkReader, iter_chunks, open_archive
from curation.store.engine import make_engine
from curation.store.engine import session as new_session
from curation.store.migrate import alembic_config, current_revision, head_revision, upgrade
from curation.store.models import ExportChunk, ExportVersion, Project


def _files(tmp_path, size: int) -> dict:
    """A version's files: a big incompressible data file given as a path, small ones as bytes."""
    big = tmp_path / "qrels.jsonl"
    with open(big, "wb") as fh:
        for _ in range(size // (1 << 20)):
            fh.write(os.urandom(1 << 20))
    return {"qrels.jsonl": big, "qrels.txt": b"q1 0 d1 2\n" * 1000, "manifest.json": b'{"version": "v1"}\n'}


def _version(session) -> ExportVersion:
    project = Project(name="p", grades_json="[]")
    session.add(project)
    session.flush()
    row = ExportVersion(project_id=project.id, name="v1", state_sha256="0" * 64, manifest_json="{}")
    session.add(row)
    session.flush()
    return row


def test_the_zip_goes_to_the_store_in_chunks_as_it_is_written(engine, tmp_path):
    size = 24 << 20  # the writer's own blocks (1 MiB read, compressed, a chunk) are a few MiB at most
    files = _files(tmp_path, size)
    expected = build_archive("v1", files)
    assert len(expected) > size
    with new_session(engine) as s:
        row = _version(s)
        tracemalloc.start()
        try:
            store_archive(s, row, "v1", files, chunk_size=64 << 10)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        s.commit()
        # The writer held a chunk and a block of the file being compressed, never the archive.
        assert peak < len(expected) / 4, (peak, len(expected))
        n = s.exec(select(ExportChunk).where(ExportChunk.version_id == row.id)).all()
        assert len(n) == -(-len(expected) // (64 << 10))
        assert all(len(c.data) == 64 << 10 for c in n if c.no < len(n) - 1)
        stored = b"".join(iter_chunks(s, row.id))
        assert stored == expected  # the same bytes as the zip built in memory (the local headers patched)
        assert (row.archive_bytes, row.archive_sha256) == (len(expected), hashlib.sha256(expected).hexdigest())
        with zipfile.ZipFile(open_archive(s, row)) as zf:
            assert zf.testzip() is None
        # Read back one file as it is read: a chunk at a time, not the whole zip.
        opener = stored_openers(s, row)["qrels.jsonl"]
        tracemalloc.start()
        try:
            digest = hashlib.sha256()
            with opener() as fh:
                while block := fh.read(1 << 16):
                    digest.update(block)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert digest.hexdigest() == hashlib.sha256(files["qrels.jsonl"].read_bytes()).hexdigest()
        assert peak < len(expected) / 4, (peak, len(expected))
        assert read_archive(open_archive(s, row))["qrels.txt"] == files["qrels.txt"]


def test_reads_cross_chunks_and_seek_from_the_end(engine):
    data = bytes(range(256)) * 40  # 10,240 bytes
    with new_session(engine) as s:
        row = _version(s)
        from curation.store.archives import write_chunks

        write_chunks(s, row, lambda out: (out.write(data[:5000]), out.seek(100), out.write(b"X" * 3000),
                                          out.seek(0, 2), out.write(data[5000:])), chunk_size=999)
        expected = data[:100] + b"X" * 3000 + data[3100:]
        assert b"".join(iter_chunks(s, row.id)) == expected and row.archive_bytes == len(expected)
        reader = ChunkReader(s, row.id, row.archive_bytes)
        assert reader.read(2500) == expected[:2500]  # across chunks 0-2
        reader.seek(-22, 2)
        assert reader.read() == expected[-22:]
        reader.seek(998)
        assert reader.read(3) == expected[998:1001]
        assert reader.read(0) == b"" and reader.seek(0, 2) == len(expected) and reader.read(5) == b""


def _downgrade(url: str, revision: str) -> None:
    eng = make_engine(url)
    try:
        with eng.begin() as conn:
            cfg = alembic_config()
            cfg.attributes["connection"] = conn
            command.downgrade(cfg, revision)
    finally:
        eng.dispose()


def test_upgrade_moves_stored_zips_into_chunks_and_downgrade_puts_them_back(db_url, tmp_path):
    eng = make_engine(db_url)
    try:
        upgrade(eng, "0016")
        zips = {1: build_archive("v1", _files(tmp_path, 2 << 20)), 2: b"", 3: None,
                4: build_archive("v2", {"qrels.txt": b"q 0 d 1\n"})}
        with eng.begin() as conn:
            conn.execute(text("INSERT INTO project (id, name, scale, grades_json, hold_main, created_at) "
                              "VALUES (1, 'p', '0-2', '[]', false, CURRENT_TIMESTAMP)"))
            for vid, blob in zips.items():
                conn.execute(text("INSERT INTO exportversion (id, project_id, name, state_sha256, manifest_json, "
                                  "archive, created_at) VALUES (:id, 1, :name, 'x', '{}', :blob, CURRENT_TIMESTAMP)"),
                             {"id": vid, "name": f"v{vid}", "blob": blob})
        upgrade(eng)
        assert current_revision(eng) == head_revision()
        with new_session(eng) as s:
            for vid, blob in zips.items():
                row = s.get(ExportVersion, vid)
                if blob is None:
                    assert row.archive_bytes is None and not list(iter_chunks(s, vid))
                    continue
                assert b"".join(iter_chunks(s, vid)) == blob
                assert (row.archive_bytes, row.archive_sha256) == (len(blob), hashlib.sha256(blob).hexdigest())
                if blob:
                    assert len(list(iter_chunks(s, vid))) == -(-len(blob) // (1 << 20))
                    assert set(read_archive(open_archive(s, row))) == {"qrels.jsonl", "qrels.txt", "manifest.json"} \
                        if vid == 1 else {"qrels.txt"}
    finally:
        eng.dispose()
    _downgrade(db_url, "0016")
    eng = make_engine(db_url)
    try:
        with eng.connect() as conn:
            back = dict(conn.execute(text("SELECT id, archive FROM exportversion")).all())
        assert {k: (bytes(v) if v is not None else None) for k, v in back.items()} == zips
    finally:
        eng.dispose()


@pytest.mark.parametrize("n", [0, 1])
def test_a_version_without_chunks_has_no_files(engine, n):
    with new_session(engine) as s:
        row = _version(s)
        assert stored_openers(s, row) == {}
        if n:
            from curation.store.archives import write_chunks

            write_chunks(s, row, lambda out: out.write(build_archive("v1", {"qrels.txt": b"a 0 b 1\n"})))
            assert set(stored_openers(s, row)) == {"qrels.txt"}
            s.commit()
            s.delete(row)  # a version's chunks go with it (ON DELETE CASCADE)
            s.commit()
            assert not s.exec(select(ExportChunk)).all()
