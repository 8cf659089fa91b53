"""Versioned, immutable qrels: ``golden export create`` writes ``DIR/<version>/`` and freezes it in the store.

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
* Whole or nothing, and the store and the folders agree: the version is recorded in the store as
  *pending* (with its zip and the folder's path) before its folder appears; the files are written
  to a temporary folder beside the target and renamed into place; then the version is marked
  complete. An export interrupted in between settles it on its way out, or the next export of the
  project does (:func:`settle_pending`): completed when the folder is in place, removed when it
  never appeared. An existing folder is never replaced: one holding exactly the version's files is
  left as it is, any other (a folder the store has no version for, a damaged one) is refused.

This module owns the export itself (``export_version``, ``write_frozen``) and the stored versions
(``list_versions``, ``get_version``). The state is gathered in ``curation.export.gather``, CHANGES.md
is written by ``curation.export.changes``, the zip by ``curation.export.archive``, the folder by
``curation.export.write``, the manifest's hashes are in ``curation.export.manifest``; ``golden export verify``
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
from curation.export.write import check_in_place, export_of, write_folder
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
    ``allow_incomplete`` is off. Queries that arrived since ``golden export split`` are assigned first.
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

def result_lines(res: ExportResult, *, where: str | None = None) -> list[str]:
    """What an export did, in lines a person reads: the version, where it went (``where``, default
    its folder), its counts, sources, machine fill, what is incomplete or undecided, the other
    formats and the files with their checksums. Printed by ``golden export create`` and shown by the
    lead's Export button (one summary for both)."""
    from curation.export.formats import summary_lines

    m = res.manifest
    c = m["counts"]
    how = "new version" if res.new else "frozen version written again"
    parent = f", parent {m['parent']}" if m.get("parent") else ", no parent"
    lines = [f"{res.version} of project {m['project']} -> {where or res.path} ({how}{parent}; "
             f"created {m['created_at']})"]
    split = m.get("split")
    split_txt = (f" ({split['counts']['tune']} tune, {split['counts']['holdout']} holdout)" if split else " (no split)")
    grades = ", ".join(f"{g}: {n}" for g, n in c["grades"].items())
    lines.append(f"  {c['queries']} queries{split_txt}; {c['pairs']} judged pairs (grades {grades})")
    lines.append("  sources: " + ", ".join(f"{k} {v}" for k, v in c["sources"].items() if v)
                 + f"; policy {m['policy']}")
    mf = m.get("machine_fill")
    if mf:
        cal = mf["calibration"]
        exact = cal["exact_agreement"]
        agree = "not enough pairs" if exact is None else f"{100 * exact['value']:.1f}% exact agreement with people"
        lines.append(f"  MACHINE-FILLED: {mf['pairs_filled']} pairs labelled by machine judge {mf['judge']} ({agree}; "
                     f"verdict {cal['verdict']}; failed checks: {', '.join(cal['failed_checks']) or 'none'})")
    inc = m["incomplete"]
    if inc["unjudged_pooled_pairs"] or inc["unresolved_disagreements"]:
        lines.append(f"  INCOMPLETE: {inc['unjudged_pooled_pairs']} pooled pairs unjudged, "
                     f"{inc['unresolved_disagreements']} disagreements unresolved (left out of qrels.txt)")
    undecided = m.get("leak_check", {}).get("undecided") or {}
    if undecided.get("findings"):
        lines.append(f"  LEAK CHECK UNDECIDED: {undecided['findings']} findings on {undecided['chunks']} chunks of "
                     f"{undecided['queries']} queries have no lead's decision (the Leak check page decides them)")
    lines.extend(summary_lines(m.get("formats")))
    for name, info in m["files"].items():
        lines.append(f"  {name:<14} {info['bytes']:>10} bytes  sha256 {info['sha256'][:16]}")
    return lines


def _store_and_write(session: Session, project: Project, version: str, state: VersionState, state_sha: str, *,
                     out_dir: Path, allow_incomplete: bool, created_by: str | None, formats: tuple[str, ...] = (),
                     relevance_level: int = 1, spool: Path | None = None) -> ExportResult:
    """The second half of :func:`export_version`: compare with a stored version, or freeze a new one.
    Under the project's write lock, so that exports run one after the other and the history is
    linear: a concurrent export of another new version waits, then takes this one as its parent."""
    _lock_settled(session, project)
    row = session.exec(
        select(ExportVersion).where(ExportVersion.project_id == project.id, ExportVersion.name == version)
    ).first()
    if row is not None:
        return _write_stored(session, project, row, version, state, state_sha, out_dir=out_dir, formats=formats,
                             relevance_level=relevance_level, created_by=created_by)

    target = _new_target(state, project, version, out_dir=out_dir, allow_incomplete=allow_incomplete)

    parent_row = session.exec(
        select(ExportVersion).where(ExportVersion.project_id == project.id, ExportVersion.pending_folder.is_(None))
        .order_by(ExportVersion.id.desc())
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
        extra["formats"] = _add_formats(files, hashes, listed, state, project, version, formats=formats,
                                        relevance_level=relevance_level, spool=spool)
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

    # First the version is recorded, pending, with its zip; then its folder appears (under the lock
    # again); then it is marked complete. An interruption at any point leaves no version, or a pending
    # one that settle_pending completes (its folder is there) or removes (it never appeared).
    row = ExportVersion(
        project_id=project.id, name=version, parent=parent, state_sha256=state_sha,
        manifest_json=files[MANIFEST].decode("utf-8"),
        created_by=created_by, created_at=created_at, pending_folder=str(target.resolve()),
        pending_owner=_owner(),
    )
    session.add(row)
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
    except BaseException:
        session.rollback()
        raise
    row_id = row.id
    session.commit()  # recorded, pending, before the folder exists
    path = _write_pending(session, project, row_id, version, files, state, state_sha, out_dir=out_dir,
                          created_by=created_by)
    return ExportResult(version, path, True, manifest, state_sha, {n: hashes[n][0] for n in DATA_FILES})


def _new_target(state: VersionState, project: Project, version: str, *, out_dir: Path, allow_incomplete: bool) -> Path:
    """The folder a new version is written to, once the state may be exported (ExportBlocked while
    pairs are unjudged or unresolved, unless allowed) and nothing is in the folder's way."""
    if (state.n_unjudged or state.n_unresolved) and not allow_incomplete:
        raise ExportBlocked(_blocked_message(state), unjudged=state.n_unjudged, unresolved=state.n_unresolved)
    target = out_dir / version
    if os.path.lexists(target):
        if target.is_dir() and export_of(target) == (version, project.name):
            raise ValueError(_orphan_message(target, project, version))
        check_in_place(target, version, {})  # what is in the way, and how to go on
    return target


def _write_stored(session: Session, project: Project, row: ExportVersion, version: str, state: VersionState,
                  state_sha: str, *, out_dir: Path, formats: tuple[str, ...], relevance_level: int,
                  created_by: str | None) -> ExportResult:
    """An export of a version already stored: refused when it is pending or its state has changed
    (or its formats differ), else its folder written again from the stored files."""
    if row.pending_folder is not None:
        raise ValueError(
            f"version {version!r} of project {project.name!r} is pending: an interrupted export was writing "
            f"it to {row.pending_folder}, which now holds other files; move that folder away and export again"
        )
    if row.state_sha256 != state_sha:
        raise VersionFrozen(_frozen_message(session, project, row, state))
    manifest = json.loads(row.manifest_json)
    _same_formats(row, manifest, formats, relevance_level)
    path = write_folder(out_dir, version, stored_openers(session, row))
    _audit_again(session, project, version, created_by, state_sha, path)
    session.commit()  # ends the transaction, and with it the lock
    return ExportResult(version, path, False, manifest, state_sha,
                        {n: manifest["files"][n]["sha256"] for n in DATA_FILES})


def _add_formats(files: dict, hashes: dict, listed: list[str], state: VersionState, project: Project, version: str,
                 *, formats: tuple[str, ...], relevance_level: int, spool: Path) -> dict:
    """Write the chosen other formats into the spool, add their files to ``files``, ``hashes`` and
    ``listed`` (the manifest's order), and return the manifest's ``formats`` entry."""
    from curation.export.formats import formats_entry, write_formats
    from curation.formats.fileio import sha256_file

    written, names = write_formats(
        formats, qrels_txt=state.files["qrels.txt"].path, qrels_jsonl=state.files["qrels.jsonl"].path,
        queries=state.queries,
        spool=spool / "formats", version=version, project=project.name,
        scale=state.body["label_scale"]["scale"], relevance_level=relevance_level,
        agreement=state.body.get("agreement"))
    for name, fpath in written.items():
        files[name] = fpath
        hashes[name] = (sha256_file(fpath), fpath.stat().st_size)
    listed += [n for f in formats for n in names[f]]
    return formats_entry(formats, relevance_level, names)


def _write_pending(session: Session, project: Project, row_id: int, version: str, files: dict, state: VersionState,
                   state_sha: str, *, out_dir: Path, created_by: str | None) -> Path:
    """The recorded, pending version's folder written under the lock again, then the version marked
    complete and audited; on any failure the pending row is settled (completed or removed)."""
    try:
        lock_project(session, project)
        row = session.get(ExportVersion, row_id, populate_existing=True)
        if row is None or row.pending_folder is None:
            raise VersionFrozen(
                f"version {version!r} of project {project.name!r} was settled by another export while this one "
                "was writing it; run the export again"
            )
        path = write_folder(out_dir, version, files)
        row.pending_folder = row.pending_owner = None
        record_audit(session, "export", actor=created_by, target=f"{project.name} {version}", project=project,
                     detail={"policy": state.body["policy"], "state_sha256": state_sha})
        session.commit()
    except BaseException:
        _settle_after_failure(session, project, row_id)
        raise
    return path


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


def _orphan_message(target: Path, project: Project, version: str) -> str:
    return (
        f"out_dir: {target} exists, but the store holds no version {version!r} of project {project.name!r}: "
        "it was left by an export interrupted before this store recorded it, or comes from another store. "
        "golden never replaces an export folder: move it away (e.g. `mv "
        f"{target} {target}.orphan`) and export again; `golden export verify {target} --db ...` checks it"
    )


def _settle_after_failure(session: Session, project: Project, row_id: int) -> None:
    """After this export failed or was interrupted between recording its version ``row_id`` and
    completing it: roll back, then settle that version (:func:`settle_pending`) so that the store and
    the folders agree. Best effort: when the store cannot be reached, the next export settles it."""
    import contextlib

    with contextlib.suppress(Exception):
        session.rollback()
        lock_project(session, project)
        settle_pending(session, project, own=row_id)
        session.commit()
    with contextlib.suppress(Exception):
        session.rollback()


#: How long an export waits for another one that is writing a pending version of the same project.
PENDING_WAIT_SECONDS = 600.0


def _owner() -> str:
    import socket

    return f"{socket.gethostname()}:{os.getpid()}"


def _writer_alive(owner: str | None) -> bool:
    """Whether the export that recorded a pending version may still be running: its process exists on
    this host (``os.kill(pid, 0)``), or it runs on another host (which cannot be asked)."""
    import socket

    host, _, pid = (owner or "").rpartition(":")
    if host != socket.gethostname():
        return bool(owner)
    try:
        os.kill(int(pid), 0)
    except (ProcessLookupError, ValueError, OverflowError):
        return False
    except PermissionError:
        return True
    return True


def _lock_settled(session: Session, project: Project) -> None:
    """Take the project's write lock with no pending version left by an export that has stopped
    (:func:`settle_pending`); while another export is still writing one, wait for it (so the history
    stays linear), up to :data:`PENDING_WAIT_SECONDS`."""
    import time

    waited = 0.0
    while True:
        lock_project(session, project)
        live, settled = settle_pending(session, project)
        if not live and not settled:
            return
        session.commit()  # what was settled (kept whatever this export then does), the lock released
        if not live:
            continue
        if waited >= PENDING_WAIT_SECONDS:
            name, owner, folder = live[0]
            raise ValueError(
                f"version {name!r} of project {project.name!r} has been pending for over {waited:.0f} s: the export "
                f"{owner} is writing it to {folder}. Wait for it to finish; if that export is gone, run any export "
                "of this project on that host to settle it"
            )
        time.sleep(0.1)
        waited += 0.1


def settle_pending(session: Session, project: Project, *,
                   own: int | None = None) -> tuple[list[tuple[str, str, str]], int]:
    """Settle the project's pending versions left by exports that stopped (their process is gone, or
    ``own``: this process's version id), under the project's lock: a version whose folder is in place
    holding exactly its stored files is marked complete (its folder was published); one whose folder
    never appeared is removed with its zip (nothing of it was published). A folder there with other
    content is left alone and the version stays pending (``golden export verify`` reports it). Returns the
    pending versions still being written, as (name, owner, folder), and how many were settled."""
    from sqlalchemy import delete

    from curation.export.write import same_files
    from curation.store.models import ExportChunk

    live, settled = [], 0
    pending = session.exec(select(ExportVersion).where(
        ExportVersion.project_id == project.id, ExportVersion.pending_folder.is_not(None))).all()
    for row in pending:
        folder = Path(row.pending_folder)
        if row.id != own and _writer_alive(row.pending_owner):
            live.append((row.name, row.pending_owner, row.pending_folder))
            continue
        if os.path.lexists(folder):
            if row.archive_bytes and same_files(folder, stored_openers(session, row)):
                row.pending_folder = row.pending_owner = None
                record_audit(session, "export", actor=row.created_by, target=f"{project.name} {row.name}",
                             project=project, detail={"state_sha256": row.state_sha256, "completed": "after an "
                                                      "interruption"})
                settled += 1
            continue
        session.execute(delete(ExportChunk).where(ExportChunk.version_id == row.id))
        session.delete(row)
        settled += 1
    session.flush()
    return live, settled


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


def _audit_again(session: Session, project: Project, version: str, created_by: str | None, state_sha: str,
                 path: Path, **more) -> None:
    """An export that wrote a stored version's files again (same state, or ``--frozen``) is audited too."""
    record_audit(session, "export", actor=created_by, target=f"{project.name} {version}", project=project,
                 detail={"state_sha256": state_sha, "written_again": str(path), **more})


def write_frozen(session: Session, project: Project, version: str, *, out_dir: str | os.PathLike,
                 created_by: str | None = None) -> ExportResult:
    """Write the files of an already exported ``version`` as frozen in the store, whatever the
    store holds now (ValueError when the project has no such version). Audited as an export."""
    row = get_version(session, project, version)
    manifest = json.loads(row.manifest_json)
    path = write_folder(Path(out_dir), version, stored_openers(session, row))
    _audit_again(session, project, version, created_by, row.state_sha256, path, frozen=True)
    session.commit()
    return ExportResult(version, path, False, manifest, row.state_sha256,
                        {n: manifest["files"][n]["sha256"] for n in DATA_FILES})


def list_versions(session: Session, project: Project) -> list[ExportVersion]:
    """The project's exported versions, oldest first."""
    return list(session.exec(
        select(ExportVersion).where(ExportVersion.project_id == project.id, ExportVersion.pending_folder.is_(None))
        .order_by(ExportVersion.id)
    ))


def get_version(session: Session, project: Project, version: str) -> ExportVersion:
    """The stored version ``version`` of ``project``; ValueError listing the versions when absent."""
    row = session.exec(
        select(ExportVersion).where(ExportVersion.project_id == project.id, ExportVersion.name == version)
    ).first()
    if row is None or row.archive_bytes is None or row.pending_folder is not None:
        names = [v.name for v in list_versions(session, project)]
        known = f" (versions: {', '.join(names)})" if names else " (none exported yet)"
        raise ValueError(f"version: project {project.name!r} has no version {version!r}{known}")
    return row


def store_problems(session: Session, folder: Path) -> list[str]:
    """What ``golden export verify --db`` reports about a version folder against the store: the store has no
    such version (a folder left by an export interrupted before the store recorded it, or from
    another store), the version is still pending, or the folder's manifest is not the stored one."""
    from curation.export.write import export_of

    found = export_of(Path(folder))
    if found is None:
        return []  # no readable manifest: verify reports that
    version, project_name = found
    project = session.exec(select(Project).where(Project.name == project_name)).first() \
        if isinstance(project_name, str) else None
    if project is None:
        return [f"the store has no project {project_name!r}: this folder comes from another store"]
    row = session.exec(
        select(ExportVersion).where(ExportVersion.project_id == project.id, ExportVersion.name == version)
    ).first()
    if row is None:
        return [f"the store holds no version {version!r} of project {project_name!r}: this folder was left by an "
                "export interrupted before the store recorded it, or comes from another store; move it away and "
                "export again"]
    if row.pending_folder is not None:
        return [f"version {version!r} is still pending in the store (an export of it was interrupted); the next "
                "`golden export create` of the project settles it"]
    if (Path(folder) / MANIFEST).read_bytes() != row.manifest_json.encode("utf-8"):
        return [f"manifest.json is not the one the store froze for version {version!r}"]
    return []
