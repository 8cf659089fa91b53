"""A version's files as one deterministic zip (what the store keeps and the versions page serves).

The zip is written into any seekable file (:func:`write_archive`): into the store's chunks as it
is written (:func:`store_archive`, :mod:`curation.store.archives`), so a big export's zip is never
held whole; :func:`build_archive` gives the same bytes in memory (tests, small versions).
:func:`stored_openers` reads a stored zip's files from the chunks as they are read.
"""

from __future__ import annotations

import io
import os
import shutil
import zipfile
from collections.abc import Callable
from typing import BinaryIO

from curation.export.manifest import folder_order

_ZIP_TIME = (1980, 1, 1, 0, 0, 0)


def write_archive(out: BinaryIO, version: str, files: dict[str, bytes | os.PathLike]) -> None:
    """Write the deterministic zip of a version into the seekable file ``out``: entries
    ``<version>/<name>`` in :func:`~curation.export.manifest.folder_order`, a fixed timestamp
    (1980-01-01) and permissions, deflate level 6 (Python's ``zipfile``). A file is given as its
    bytes or as a path, which is compressed as it is read (the same bytes)."""
    with zipfile.ZipFile(out, "w") as zf:
        for name in folder_order(files):
            info = zipfile.ZipInfo(f"{version}/{name}", date_time=_ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3
            info.external_attr = 0o100644 << 16
            data = files[name]
            if isinstance(data, bytes):
                zf.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED, compresslevel=6)
                continue
            # What writestr does, with the data read from the file in blocks.
            info._compresslevel = 6
            info.file_size = os.path.getsize(data)
            with open(data, "rb") as src, zf.open(info, mode="w") as dest:
                shutil.copyfileobj(src, dest, 1 << 20)


def build_archive(version: str, files: dict[str, bytes | os.PathLike]) -> bytes:
    """The zip of :func:`write_archive`, as bytes."""
    buf = io.BytesIO()
    write_archive(buf, version, files)
    return buf.getvalue()


def store_archive(session, row, version: str, files: dict[str, bytes | os.PathLike], *,
                  chunk_size: int | None = None) -> None:
    """Write the zip of ``files`` into the store as ``row``'s archive (an ExportVersion with its id),
    chunk by chunk as it is written (:func:`curation.store.archives.write_chunks`)."""
    from curation.store.archives import CHUNK_SIZE, write_chunks

    write_chunks(session, row, lambda out: write_archive(out, version, files), chunk_size=chunk_size or CHUNK_SIZE)


def _source(data: bytes | BinaryIO) -> BinaryIO:
    return io.BytesIO(data) if isinstance(data, (bytes, bytearray, memoryview)) else data


def read_archive(data: bytes | BinaryIO) -> dict[str, bytes]:
    """The files of a version zip (bytes or a seekable file), by name (the folder prefix removed)."""
    out = {}
    with zipfile.ZipFile(_source(data)) as zf:
        for info in zf.infolist():
            out[info.filename.split("/", 1)[-1]] = zf.read(info)
    return out


def archive_openers(data: bytes | BinaryIO) -> dict[str, Callable[[], BinaryIO]]:
    """The files of a version zip (bytes or a seekable file), by name, as functions that open each
    one for reading: a file is decompressed as it is read, never held whole."""
    zf = zipfile.ZipFile(_source(data))
    return {info.filename.split("/", 1)[-1]: (lambda info=info: zf.open(info)) for info in zf.infolist()}


def archive_sizes(data: bytes | BinaryIO) -> dict[str, int]:
    """The uncompressed size of each file of a version zip, by name (read from its directory only)."""
    with zipfile.ZipFile(_source(data)) as zf:
        return {info.filename.split("/", 1)[-1]: info.file_size for info in zf.infolist()}


def stored_openers(session, row) -> dict[str, Callable[[], BinaryIO]]:
    """:func:`archive_openers` of ``row``'s stored archive, read from the store's chunks as it is
    read (the session must stay open while the files are read); {} when it has none."""
    from curation.store.archives import open_archive

    return archive_openers(open_archive(session, row)) if row.archive_bytes else {}
