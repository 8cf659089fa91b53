"""A version's files as one deterministic zip (what the store keeps and the versions page serves)."""

from __future__ import annotations

import io
import zipfile

from curation.export.manifest import ALL_FILES

_ZIP_TIME = (1980, 1, 1, 0, 0, 0)


def build_archive(version: str, files: dict[str, bytes]) -> bytes:
    """A deterministic zip of a version: entries ``<version>/<name>`` in :data:`ALL_FILES` order,
    a fixed timestamp (1980-01-01) and permissions, deflate level 6 (Python's ``zipfile``)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name in ALL_FILES:
            if name not in files:
                continue
            info = zipfile.ZipInfo(f"{version}/{name}", date_time=_ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3
            info.external_attr = 0o100644 << 16
            zf.writestr(info, files[name], compress_type=zipfile.ZIP_DEFLATED, compresslevel=6)
    return buf.getvalue()


def read_archive(data: bytes) -> dict[str, bytes]:
    """The files of a version zip, by name (the folder prefix removed)."""
    out = {}
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        for info in zf.infolist():
            out[info.filename.split("/", 1)[-1]] = zf.read(info)
    return out
