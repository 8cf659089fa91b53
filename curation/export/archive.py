"""A version's files as one deterministic zip (what the store keeps and the versions page serves)."""

from __future__ import annotations

import io
import os
import shutil
import zipfile
from collections.abc import Callable
from typing import BinaryIO

from curation.export.manifest import ALL_FILES

_ZIP_TIME = (1980, 1, 1, 0, 0, 0)


def build_archive(version: str, files: dict[str, bytes | os.PathLike]) -> bytes:
    """A deterministic zip of a version: entries ``<version>/<name>`` in :data:`ALL_FILES` order,
    a fixed timestamp (1980-01-01) and permissions, deflate level 6 (Python's ``zipfile``). A file
    is given as its bytes or as a path, which is compressed as it is read (the same bytes)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name in ALL_FILES:
            if name not in files:
                continue
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
    return buf.getvalue()


def read_archive(data: bytes) -> dict[str, bytes]:
    """The files of a version zip, by name (the folder prefix removed)."""
    out = {}
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        for info in zf.infolist():
            out[info.filename.split("/", 1)[-1]] = zf.read(info)
    return out


def archive_openers(data: bytes) -> dict[str, Callable[[], BinaryIO]]:
    """The files of a version zip, by name, as functions that open each one for reading: a file is
    decompressed as it is read, never held whole."""
    zf = zipfile.ZipFile(io.BytesIO(data))
    return {info.filename.split("/", 1)[-1]: (lambda info=info: zf.open(info)) for info in zf.infolist()}
