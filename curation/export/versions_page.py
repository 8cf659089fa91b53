"""The versions page's data: every exported version with its manifest and zip, as stored."""

from __future__ import annotations

import json
from dataclasses import dataclass

from sqlmodel import Session, select

from curation.export.archive import read_archive
from curation.export.manifest import iso_utc, sha256_bytes
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
            archive = row.archive or b""
            out.append(VersionInfo(
                proj.name, row.name, row.parent, iso_utc(row.created_at), row.created_by, row.state_sha256,
                json.loads(row.manifest_json), len(archive), sha256_bytes(archive),
            ))
    return out


def version_files(session: Session, project: str, version: str) -> tuple[VersionInfo, dict[str, bytes], bytes]:
    """A frozen version's summary, its files by name and its zip, as stored; ValueError when absent."""
    from curation.store.projects import get_project

    proj = get_project(session, project)
    row = get_version(session, proj, version)
    archive = row.archive
    info = VersionInfo(proj.name, row.name, row.parent, iso_utc(row.created_at), row.created_by, row.state_sha256,
                       json.loads(row.manifest_json), len(archive), sha256_bytes(archive))
    return info, read_archive(archive), archive
