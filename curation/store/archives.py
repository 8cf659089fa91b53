"""An export version's frozen zip in the store, in chunks (table ``exportchunk``).

A zip of a big export (10 million judgments: hundreds of MB) is never one value in the store
nor one object in memory: :class:`ChunkWriter` is the seekable file ``zipfile`` writes it into,
storing each ``chunk_size`` bytes as a row (version id, chunk number, bytes) as soon as they are
written; ``zipfile`` goes back only to rewrite an entry's local header once the entry is
written, which patches the row or rows holding it. :class:`ChunkReader` is the seekable file
``zipfile`` reads a stored zip from, one chunk row at a time; :func:`iter_chunks` streams the
bytes in order (the versions page's download). The version row keeps the zip's size and sha256
(``archive_bytes``, ``archive_sha256``), so listing versions reads no archive.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Iterator

from sqlalchemy import delete, insert, select, update
from sqlmodel import Session

from curation.store.models import ExportChunk, ExportVersion

CHUNK_SIZE = 1 << 20  # bytes per row: 1 MiB, well within SQLite's and PostgreSQL's limits for one value


class _Positioned(io.RawIOBase):
    """What :class:`ChunkWriter` and :class:`ChunkReader` share: a position ``pos`` in ``size``
    bytes that ``seek`` moves, within the bounds ``_seekable_to`` sets."""

    pos: int
    size: int

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        pos = {io.SEEK_SET: 0, io.SEEK_CUR: self.pos, io.SEEK_END: self.size}[whence] + offset
        self._seekable_to(pos)
        self.pos = pos
        return pos

    def _seekable_to(self, pos: int) -> None:
        raise NotImplementedError


class ChunkWriter(_Positioned):
    """A seekable, write-only file whose bytes go to ``exportchunk`` rows of version ``version_id``
    as they are written: at most one chunk (plus one patched chunk) is held in memory."""

    def __init__(self, session: Session, version_id: int, chunk_size: int = CHUNK_SIZE):
        super().__init__()
        if chunk_size < 1:
            raise ValueError("chunk_size must be >= 1")
        self.session, self.version_id, self.chunk_size = session, version_id, chunk_size
        self.pos = 0  # where the next write goes
        self.size = 0  # bytes written so far (the file's length)
        self.base = 0  # offset of buf's first byte: every byte before it is stored
        self.buf = bytearray()

    def writable(self) -> bool:
        return True

    def _seekable_to(self, pos: int) -> None:
        if not 0 <= pos <= self.size:
            raise ValueError(f"seek to {pos}: outside the {self.size} bytes written")

    def write(self, data) -> int:
        view = memoryview(data).cast("B")
        n = len(view)
        if self.pos < self.base:  # back over stored chunks (zipfile rewriting a local header)
            k = min(n, self.base - self.pos)
            self._patch(self.pos, view[:k])
            self.pos += k
            view = view[k:]
        at = self.pos - self.base
        self.buf[at:at + len(view)] = view
        self.pos += len(view)
        self.size = max(self.size, self.pos)
        while len(self.buf) >= self.chunk_size:
            self._store(bytes(self.buf[:self.chunk_size]))
            del self.buf[:self.chunk_size]
            self.base += self.chunk_size
        return n

    def _store(self, chunk: bytes) -> None:
        self.session.execute(insert(ExportChunk).values(version_id=self.version_id, no=self.base // self.chunk_size,
                                                        data=chunk))

    def _patch(self, pos: int, data: memoryview) -> None:
        while len(data):
            no, at = divmod(pos, self.chunk_size)
            k = min(len(data), self.chunk_size - at)
            where = (ExportChunk.version_id == self.version_id, ExportChunk.no == no)
            chunk = bytearray(self.session.execute(select(ExportChunk.data).where(*where)).scalar_one())
            chunk[at:at + k] = data[:k]
            self.session.execute(update(ExportChunk).where(*where).values(data=bytes(chunk)))
            pos, data = pos + k, data[k:]

    def close(self) -> None:
        if not self.closed and self.buf:
            self._store(bytes(self.buf))
            self.base += len(self.buf)
            self.buf = bytearray()
        super().close()


class ChunkReader(_Positioned):
    """A seekable, read-only file over the stored chunks of version ``version_id`` (``size``
    bytes), reading one chunk row at a time."""

    def __init__(self, session: Session, version_id: int, size: int):
        super().__init__()
        self.session, self.version_id, self.size = session, version_id, size
        self.pos = 0
        self._no, self._chunk = -1, b""
        self.chunk_size = len(self._load(0)) if size else 1  # every chunk but the last has this size

    def _load(self, no: int) -> bytes:
        if no != self._no:
            self._chunk = self.session.execute(select(ExportChunk.data).where(
                ExportChunk.version_id == self.version_id, ExportChunk.no == no)).scalar_one()
            self._no = no
        return self._chunk

    def readable(self) -> bool:
        return True

    def _seekable_to(self, pos: int) -> None:
        if pos < 0:
            raise ValueError(f"seek to {pos}: before the start")

    def readinto(self, buffer) -> int:
        out = memoryview(buffer).cast("B")
        done = 0
        while done < len(out) and self.pos < self.size:  # fill it whole (zipfile expects full reads)
            no, at = divmod(self.pos, self.chunk_size)
            chunk = self._load(no)
            k = min(len(out) - done, len(chunk) - at)
            out[done:done + k] = chunk[at:at + k]
            done += k
            self.pos += k
        return done


def write_chunks(session: Session, version: ExportVersion, write, *, chunk_size: int = CHUNK_SIZE) -> None:
    """Store what ``write(file)`` writes as ``version``'s archive (the row must have its id: flushed),
    then its size and sha256 (read back chunk by chunk)."""
    writer = ChunkWriter(session, version.id, chunk_size)
    try:
        write(writer)
    finally:
        writer.close()
    digest = hashlib.sha256()
    for chunk in iter_chunks(session, version.id):
        digest.update(chunk)
    version.archive_bytes, version.archive_sha256 = writer.size, digest.hexdigest()
    session.add(version)


def iter_chunks(session: Session, version_id: int) -> Iterator[bytes]:
    """The stored bytes of version ``version_id``'s archive, in order, one chunk row at a time."""
    no = 0
    while True:
        chunk = session.execute(select(ExportChunk.data).where(ExportChunk.version_id == version_id,
                                                              ExportChunk.no == no)).scalar_one_or_none()
        if chunk is None:
            return
        yield chunk
        no += 1


def open_archive(session: Session, version: ExportVersion) -> ChunkReader:
    """The stored archive of ``version`` as a seekable file read from the store as it is read."""
    return ChunkReader(session, version.id, version.archive_bytes or 0)


class _SessionReader(ChunkReader):
    """A :class:`ChunkReader` on a session of its own, closed with the reader."""

    def close(self) -> None:
        if not self.closed:
            self.session.close()
        super().close()


def open_archive_alone(engine, version_id: int, size: int) -> ChunkReader:
    """:func:`open_archive` on a store session of its own, closed when the file is closed: for a
    download streamed after the request's session is gone."""
    from curation.store.engine import session as new_session

    session = new_session(engine)
    try:
        return _SessionReader(session, version_id, size)
    except BaseException:
        session.close()
        raise


def delete_chunks(session: Session, version_id: int) -> None:
    session.execute(delete(ExportChunk).where(ExportChunk.version_id == version_id))
