"""Versioned, immutable qrels: ``golden export`` writes ``DIR/<version>/`` and freezes it in the store.

A version folder holds five files:

* ``qrels.txt``: TREC qrels, ``qid 0 docid grade``, sorted by qid then docid (as strings), one
  space between fields, integer grades: what trec_eval, ir_measures and ranx read as is;
* ``qrels.jsonl``: the same pairs in the same order, with provenance: each judge's counted label
  (and the guidelines version it was made under), the adjudication, the seed judgments, and the
  final-label source (``single``, ``unanimous``, ``majority``, ``lead``, ``adjudicated``, ``seed``;
  see :mod:`curation.agree.labels`);
* ``queries.jsonl``: every query of the set, sorted by qid: text, stratum, traffic, weight, split
  and leak status;
* ``CHANGES.md``: what changed against the parent version, for a person;
* ``manifest.json``: where the version came from (corpus fingerprint, query set and pool hashes,
  pool depth and runs, label scale, guidelines, judges, agreement, leak check, split, policy) and
  the sha256 and size of every other file.

Rules:

* Deterministic: every file is a function of the store's content; dict keys and lists are in a
  fixed order; the creation time is the one stored when the version was first exported.
* Immutable: the first export of a version stores its *state* hash and the files themselves (a
  deterministic zip, :class:`~curation.store.models.ExportVersion` and its chunks). Exporting the same name again from
  the same state rewrites those very bytes; from a different state it is refused
  (:class:`VersionFrozen`). ``write_frozen`` writes a frozen version whatever the store holds now.
* Complete or counted: pooled pairs without a human label and unresolved disagreements refuse the
  export (:class:`ExportBlocked`) unless ``allow_incomplete``; the manifest counts them either way.
* Whole or nothing: the files are written to a temporary folder beside the target and renamed
  into place once all are written and the version is committed in the store.

This module owns the export itself (``export_version``, ``write_frozen``) and the stored versions
(``list_versions``, ``get_version``). The state is gathered in ``curation.export.gather``, CHANGES.md
is written by ``curation.export.changes``, the zip by ``curation.export.archive``, the folder by
``curation.export.write``, the manifest's hashes are in ``curation.export.manifest``; ``golden verify``
is ``curation.export.verify`` and the versions page's data ``curation.export.versions_page``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select
from tqdm import tqdm

from curation import __version__
from curation.agree.labels import POLICIES
from curation.export.archive import store_archive, stored_openers
from curation.export.changes import changes_md, diff_label_files, version_queries
from curation.export.gather import VersionState, gather_state, progress_step
from curation.export.manifest import DATA_FILES, MANIFEST, iso_utc, sealed_manifest, sha256_bytes
from curation.export.split import assign_pending
from curation.export.write import write_folder
from curation.store.audit import record_audit
from curation.store.lookups import lock_project
from curation.store.models import ExportVersion, Project

_VERSION_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$")


class ExportBlocked(ValueError):
    """Pooled pairs are unjudged or disagreements unresolved, and ``allow_incomplete`` is off."""

    def __init__(self, message: str, *, unjudged: int, unresolved: int):
        super().__init__(message)
        self.unjudged = unjudged
        self.unresolved = unresolved


class VersionFrozen(ValueError):
    """The version name is taken by an export of a different state."""


@dataclass
class ExportResult:
    """What :func:`export_version` did. ``new`` is False when a frozen version was written again."""

    version: str
    path: Path
    new: bool
    manifest: dict
    state_sha256: str
    files: dict[str, str] = field(default_factory=dict)  # name -> sha256


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _check_version(version: str) -> str:
    if not isinstance(version, str) or not _VERSION_RE.match(version) or version in (".", ".."):
        raise ValueError(
            f"version: {version!r} is not a usable version name; use letters, digits, '.', '_', '-' "
            "or '+', starting with a letter or digit (e.g. v5)"
        )
    return version


def _next_name(session: Session, project: Project, version: str) -> str:
    m = re.match(r"^(.*?)(\d+)$", version)
    if not m:
        return f"{version}.1"
    prefix = m.group(1)
    taken = [
        int(n[len(prefix):])
        for n in session.exec(select(ExportVersion.name).where(ExportVersion.project_id == project.id))
        if n.startswith(prefix) and n[len(prefix):].isdigit()
    ]
    return f"{prefix}{max(taken + [int(m.group(2))]) + 1}"


def _frozen_message(session: Session, project: Project, row: ExportVersion, state: VersionState) -> str:
    files = stored_openers(session, row)
    detail = ""
    if "qrels.jsonl" in files:
        old_queries = version_queries(files["queries.jsonl"]().read())
        pairs = diff_label_files(files["qrels.jsonl"], lambda: state.files["qrels.jsonl"].path.open("rb"))
        d = {**pairs.counts, "queries_added": len(set(state.queries) - set(old_queries)),
             "queries_dropped": len(set(old_queries) - set(state.queries))}
        parts = [_count(v, k.replace("_", " ").replace("pairs", "pair").replace("queries", "query"),
                        k.replace("_", " ")) for k, v in d.items() if v]
        old_policy = json.loads(row.manifest_json).get("policy")
        if old_policy != state.body["policy"]:
            parts.append(f"policy {old_policy} -> {state.body['policy']}")
        detail = f" (since then: {', '.join(parts) or 'the manifest facts changed'})"
    return (
        f"version {row.name!r} of project {project.name!r} is frozen: it was exported on {iso_utc(row.created_at)}"
        f"{' by ' + row.created_by if row.created_by else ''} from a different state{detail}. "
        f"Export the current state under a new name, e.g. --version {_next_name(session, project, row.name)}; "
        f"write the frozen {row.name} again with --frozen."
    )


def export_version(
    session: Session,
    project: Project,
    version: str,
    *,
    policy: str = "adjudicated",
    out_dir: str | os.PathLike,
    allow_incomplete: bool = False,
    created_by: str | None = None,
    progress: bool = False,
    fill_unjudged: str | None = None,
    formats: tuple[str, ...] | list[str] = (),
    relevance_level: int = 1,
) -> ExportResult:
    """Export ``project``'s golden set as ``version`` into ``out_dir/version`` and freeze it.

    New name: the files are built from the store under ``policy``, the version is stored
    (:class:`~curation.store.models.ExportVersion` with the state hash and the files) and the folder
    is written. Existing name: from the same state the frozen files are written again (byte for
    byte); from another state :class:`VersionFrozen` is raised and nothing is written.
    :class:`ExportBlocked` when pooled pairs are unjudged or disagreements unresolved and
    ``allow_incomplete`` is off. Queries that arrived since ``golden split`` are assigned first.
    ``progress``: show the steps as a tqdm bar on stderr. ``fill_unjudged`` (``machine:NAME``): pooled
    pairs no person labelled take that machine judge's labels, flagged per pair and counted in the
    manifest with its calibration figures (:mod:`curation.machine.fill`). ``formats``: other tools'
    formats written beside the qrels (:mod:`curation.export.formats`: quepid, rre, ltr, hf), recording
    ``relevance_level`` (the lowest grade binary metrics count as relevant, a grade of the scale); a
    frozen version is written again only with the formats it was exported with.
    """
    from curation.export.formats import check_formats
    from curation.store.projects import grades

    _check_version(version)
    if policy not in POLICIES:
        raise ValueError(f"policy: {policy!r} is not one of {', '.join(POLICIES)}")
    chosen = check_formats(formats, relevance_level, [g.grade for g in grades(project)])
    out_dir = Path(out_dir)

    # The data files are written as they are computed into a spool folder beside the target when
    # it exists (then linked into place), else in the system's temporary folder.
    spool = Path(tempfile.mkdtemp(prefix=f".{version}.", suffix=".spool", dir=out_dir if out_dir.is_dir() else None))
    try:
        with tqdm(
            total=5, desc=f"export {version}", unit="step", disable=not progress, file=sys.stderr, leave=False
        ) as bar:
            progress_step(bar, "split")
            assign_pending(session, project)
            state = gather_state(session, project, policy=policy, spool=spool, bar=bar, fill=fill_unjudged)
            state_sha = state.sha256
            progress_step(bar, "write")
            return _store_and_write(session, project, version, state, state_sha, out_dir=out_dir,
                                    allow_incomplete=allow_incomplete, created_by=created_by,
                                    formats=chosen, relevance_level=relevance_level, spool=spool)
    finally:
        shutil.rmtree(spool, ignore_errors=True)


def _store_and_write(session: Session, project: Project, version: str, state: VersionState, state_sha: str, *,
                     out_dir: Path, allow_incomplete: bool, created_by: str | None, formats: tuple[str, ...] = (),
                     relevance_level: int = 1, spool: Path | None = None) -> ExportResult:
    """The second half of :func:`export_version`: compare with a stored version, or freeze a new one.
    Under the project's write lock, so that exports run one after the other and the history is
    linear: a concurrent export of another new version waits, then takes this one as its parent."""
    lock_project(session, project)
    row = session.exec(
        select(ExportVersion).where(ExportVersion.project_id == project.id, ExportVersion.name == version)
    ).first()
    if row is not None:
        if row.state_sha256 != state_sha:
            raise VersionFrozen(_frozen_message(session, project, row, state))
        manifest = json.loads(row.manifest_json)
        _same_formats(row, manifest, formats, relevance_level)
        path = write_folder(out_dir, version, stored_openers(session, row))
        session.commit()  # ends the transaction, and with it the lock
        return ExportResult(version, path, False, manifest, state_sha,
                            {n: manifest["files"][n]["sha256"] for n in DATA_FILES})

    if (state.n_unjudged or state.n_unresolved) and not allow_incomplete:
        raise ExportBlocked(_blocked_message(state), unjudged=state.n_unjudged, unresolved=state.n_unresolved)

    parent_row = session.exec(
        select(ExportVersion).where(ExportVersion.project_id == project.id).order_by(ExportVersion.id.desc())
    ).first()
    parent = parent_row.name if parent_row is not None else None
    parent_files = stored_openers(session, parent_row) if parent_row is not None and parent_row.archive_bytes else None
    created_at = datetime.now(UTC).replace(microsecond=0)

    files: dict = {n: f.path for n, f in state.files.items()}
    hashes = {n: (f.sha256, f.size) for n, f in state.files.items()}
    files["CHANGES.md"] = changes_md(version, parent, parent_files, state).encode("utf-8")
    hashes["CHANGES.md"] = (sha256_bytes(files["CHANGES.md"]), len(files["CHANGES.md"]))
    extra: dict = {}
    listed = list(DATA_FILES)
    if formats:
        from curation.export.formats import formats_entry, write_formats
        from curation.formats.fileio import sha256_file

        written, names = write_formats(
            formats, qrels_txt=state.files["qrels.txt"].path, qrels_jsonl=state.files["qrels.jsonl"].path,
            queries=state.queries,
            spool=spool / "formats", version=version, project=project.name,
            scale=state.body["label_scale"]["scale"], relevance_level=relevance_level,
            agreement=state.body.get("agreement"))
        extra["formats"] = formats_entry(formats, relevance_level, names)
        for name, fpath in written.items():
            files[name] = fpath
            hashes[name] = (sha256_file(fpath), fpath.stat().st_size)
        listed += [n for f in formats for n in names[f]]
    manifest = {
        "version": version,
        "parent": parent,
        "created_at": iso_utc(created_at),
        "created_by": created_by,
        "generator": f"golden {__version__}",
        **state.body,
        **extra,
        "state_sha256": state_sha,
        "files": {n: {"sha256": hashes[n][0], "bytes": hashes[n][1]} for n in listed},
    }
    files[MANIFEST] = sealed_manifest(manifest)
    manifest = json.loads(files[MANIFEST])

    row = ExportVersion(
        project_id=project.id, name=version, parent=parent, state_sha256=state_sha,
        manifest_json=files[MANIFEST].decode("utf-8"),
        created_by=created_by, created_at=created_at,
    )
    session.add(row)
    record_audit(session, "export", actor=created_by, target=f"{project.name} {version}", project=project,
                 detail={"policy": state.body["policy"], "state_sha256": state_sha})
    try:
        session.flush()
    except IntegrityError:
        session.rollback()
        raise VersionFrozen(
            f"version {version!r} of project {project.name!r} was exported by someone else at the same time; "
            "run the export again to compare states"
        ) from None
    try:
        store_archive(session, row, version, files)  # the zip, into the store's chunks as it is written
        path = write_folder(out_dir, version, files)
    except BaseException:
        session.rollback()
        raise
    session.commit()
    return ExportResult(version, path, True, manifest, state_sha, {n: hashes[n][0] for n in DATA_FILES})


def _same_formats(row: ExportVersion, manifest: dict, formats: tuple[str, ...], relevance_level: int) -> None:
    """Refuse to write a frozen version again with other formats (or another relevance level) than
    it was exported with: its manifest, stored and sealed, lists them. No formats asked: written as
    it was."""
    if not formats:
        return
    stored = manifest.get("formats") or {}
    had = tuple(f for f in stored if f != "relevance_level")
    if had == tuple(formats) and stored.get("relevance_level") == relevance_level:
        return
    was = (f"with formats {', '.join(had)} (relevance level {stored.get('relevance_level')})" if had
           else "without other formats")
    raise VersionFrozen(
        f"version {row.name!r} is frozen and was exported {was}; write it again with those (or with no "
        f"--format), or export the current state with --format {' --format '.join(formats)} under a new name"
    )


def _blocked_message(state: VersionState) -> str:
    parts = []
    if state.n_unjudged:
        eg = ", ".join(f"{q}/{d}" for q, d in state.unjudged[:3])
        n = state.n_unjudged
        parts.append(f"{_count(n, 'pooled pair has', 'pooled pairs have')} no human label yet (e.g. {eg})")
    if state.n_unresolved:
        eg = ", ".join(f"{q}/{d}" for q, d in state.unresolved[:3])
        n = state.n_unresolved
        parts.append(f"{_count(n, 'disagreement is', 'disagreements are')} unresolved (e.g. {eg})")
    return (
        "export blocked: " + "; ".join(parts) + ". Finish judging and adjudicate the disagreements (or choose "
        "--policy majority), or pass --allow-incomplete to export what is labelled; the manifest counts the gaps."
    )


def write_frozen(session: Session, project: Project, version: str, *, out_dir: str | os.PathLike) -> ExportResult:
    """Write the files of an already exported ``version`` as frozen in the store, whatever the
    store holds now (ValueError when the project has no such version)."""
    row = get_version(session, project, version)
    manifest = json.loads(row.manifest_json)
    path = write_folder(Path(out_dir), version, stored_openers(session, row))
    return ExportResult(version, path, False, manifest, row.state_sha256,
                        {n: manifest["files"][n]["sha256"] for n in DATA_FILES})


def list_versions(session: Session, project: Project) -> list[ExportVersion]:
    """The project's exported versions, oldest first."""
    return list(session.exec(
        select(ExportVersion).where(ExportVersion.project_id == project.id).order_by(ExportVersion.id)
    ))


def get_version(session: Session, project: Project, version: str) -> ExportVersion:
    """The stored version ``version`` of ``project``; ValueError listing the versions when absent."""
    row = session.exec(
        select(ExportVersion).where(ExportVersion.project_id == project.id, ExportVersion.name == version)
    ).first()
    if row is None or row.archive_bytes is None:
        names = [v.name for v in list_versions(session, project)]
        known = f" (versions: {', '.join(names)})" if names else " (none exported yet)"
        raise ValueError(f"version: project {project.name!r} has no version {version!r}{known}")
    return row
