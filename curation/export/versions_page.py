"""The versions page's data: every exported version with its manifest and zip, as stored (the zip
in the store's chunks, :mod:`curation.store.archives`, read as it is read)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import BinaryIO

from sqlmodel import Session, select

from curation.export.archive import archive_openers, archive_sizes
from curation.export.manifest import iso_utc
from curation.export.versions import get_version, list_versions
from curation.store.models import Project


@dataclass(frozen=True)
class VersionInfo:
    """One exported version as the versions page lists it."""

    project: str
    name: str
    parent: str | None
    created_at: str | None
    created_by: str | None
    state_sha256: str
    manifest: dict
    zip_bytes: int
    zip_sha256: str


def versions_overview(session: Session, *, project: str | None = None) -> list[VersionInfo]:
    """Every exported version (of ``project`` when given), by project name then export order."""
    stmt = select(Project).order_by(Project.name)
    if project is not None:
        stmt = stmt.where(Project.name == project)
    out = []
    for proj in session.exec(stmt):
        for row in list_versions(session, proj):
            out.append(VersionInfo(
                proj.name, row.name, row.parent, iso_utc(row.created_at), row.created_by, row.state_sha256,
                json.loads(row.manifest_json), row.archive_bytes or 0, row.archive_sha256 or "",
            ))
    return out


class VersionFiles(Mapping):
    """A stored version's files by name: each read from the zip in the store when asked for;
    :meth:`size` from the zip's directory, without reading the file."""

    def __init__(self, open_zip: Callable[[], BinaryIO]):
        self._openers = archive_openers(open_zip())
        self._sizes = archive_sizes(open_zip())

    def __getitem__(self, name: str) -> bytes:
        with self._openers[name]() as fh:
            return fh.read()

    def __iter__(self) -> Iterator[str]:
        return iter(self._openers)

    def __len__(self) -> int:
        return len(self._openers)

    def __contains__(self, name) -> bool:  # from the directory, without reading the file
        return name in self._openers

    def size(self, name: str) -> int:
        return self._sizes[name]


def version_files(session: Session, project: str,
                  version: str) -> tuple[VersionInfo, VersionFiles, Callable[[], BinaryIO]]:
    """A frozen version's summary, its files by name (:class:`VersionFiles`) and a function opening
    its zip as stored (a seekable file read from the store as it is read, while ``session`` is
    open, or on a session of its own when given an engine); ValueError when absent."""
    from curation.store.archives import open_archive, open_archive_alone
    from curation.store.projects import get_project

    proj = get_project(session, project)
    row = get_version(session, proj, version)
    info = VersionInfo(proj.name, row.name, row.parent, iso_utc(row.created_at), row.created_by, row.state_sha256,
                       json.loads(row.manifest_json), row.archive_bytes, row.archive_sha256)

    def open_zip(engine=None) -> BinaryIO:
        if engine is not None:  # on a session of its own, closed with the file
            return open_archive_alone(engine, row.id, row.archive_bytes or 0)
        return open_archive(session, row)

    return info, VersionFiles(open_zip), open_zip
