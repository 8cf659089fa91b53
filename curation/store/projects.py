"""Projects: loading the query set, the judging pool, the pooled documents and the guidelines.

A project is built from the files the earlier steps write:

* ``QUERIES.jsonl`` (``golden sample queries``): one object per query with ``qid``, ``text``, ``stratum``
  (a dict), ``traffic``, ``users``, ``stratum_share``, ``weight`` and ``pii``;
* ``POOL.jsonl`` (``golden pool``): one object per pair with ``qid``, ``docid``, ``order`` (a seeded
  shuffle within the query) and ``systems`` (run name -> rank, the hidden provenance), and an
  optional sidecar ``POOL.meta.json`` with the pool's ``depth`` and ``runs``;
* the corpus files (:mod:`curation.formats.corpus`): only the pooled documents' texts are stored;
* ``GUIDELINES.md``: the written definition of relevance, versioned.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from sqlalchemy import func, insert
from sqlmodel import Session, select
from tqdm import tqdm

from curation.formats.conflicts import Dedup
from curation.formats.corpus import fetch_docs
from curation.formats.fileio import InputError, sha256_file
from curation.formats.guidelines import find_grades_section, read_guidelines
from curation.formats.pool_file import PoolEntry, read_pool, read_pool_meta
from curation.formats.queries import iter_queries
from curation.store import scale as _scale
from curation.store.lookups import join_pair_text, project_id
from curation.store.models import (
    Document,
    GuidelinesVersion,
    PoolPair,
    Project,
    Query,
    Run,
    User,
)
from curation.store.needs import load_needs
from curation.store.provenance import RANKS, merged_ranks, ranks_row, set_ranks
from curation.store.scale import DEFAULT_SCALES, SCALES, Grade, scale_fields, set_scale


@dataclass
class LoadReport:
    """What :func:`create_project` or :func:`extend_pool` stored."""

    project_id: int
    name: str
    queries: int = 0
    pairs: int = 0
    documents: int = 0
    new_pairs: int = 0
    new_documents: int = 0
    missing_docids: list[str] = field(default_factory=list)  # pooled docids absent from the corpus
    guidelines_version: int | None = None
    repeats: list[str] = field(default_factory=list)  # lines on repeated records (curation.formats.conflicts)
    needs: int = 0  # information needs (description / narrative) recorded as a new version


@dataclass(frozen=True)
class ProjectSummary:
    """One line of ``golden project list``."""

    id: int
    name: str
    scale: str
    queries: int
    pairs: int
    documents: int
    guidelines_version: int | None
    released: bool
    created_at: object


def scale_grades(scale: str, grades: Sequence[dict | Grade] | None = None) -> tuple[Grade, ...]:
    """The grades of ``scale`` ("binary", "0-2" or "0-3"), with the defaults above, or ``grades``
    (dicts with grade/name/description) overriding them; ValueError when ``grades`` does not cover
    exactly the scale's grade numbers."""
    if scale not in DEFAULT_SCALES:
        raise ValueError(f"scale {scale!r} is not one of {', '.join(SCALES)}")
    default = DEFAULT_SCALES[scale]
    if grades is None:
        return default
    out = []
    for g in grades:
        if isinstance(g, Grade):
            out.append(g)
            continue
        if not isinstance(g, dict) or "grade" not in g:
            raise ValueError(f"grades: each entry needs a 'grade' number, got {g!r}")
        num = int(g["grade"])
        base = next((d for d in default if d.grade == num), None)
        name = str(g.get("name") or (base.name if base else ""))
        desc = str(g.get("description") or (base.description if base else ""))
        if not name:
            raise ValueError(f"grades: grade {num} needs a name")
        out.append(Grade(num, name, desc))
    out.sort(key=lambda g: g.grade)
    want = [d.grade for d in default]
    if [g.grade for g in out] != want:
        raise ValueError(
            f"grades: scale {scale} has grades {want}, got {[g.grade for g in out]}"
        )
    return tuple(out)


grades = _scale.grades  # a project's grades, lowest first (defined in curation.store.scale)


def get_project(session: Session, name: str | None = None) -> Project:
    """The project called ``name``; with ``name`` None, the only project in the store.
    ValueError saying what to do when there is none, or several and no name."""
    if name is not None:
        project = session.exec(select(Project).where(Project.name == name)).first()
        if project is None:
            names = [p.name for p in session.exec(select(Project).order_by(Project.name))]
            known = f" (projects: {', '.join(names)})" if names else ""
            raise ValueError(f"no project {name!r}{known}: create it with `golden project create {name} ...`")
        return project
    projects = list(session.exec(select(Project).order_by(Project.name)).all())
    if not projects:
        raise ValueError("no project in the store: create one with `golden project create NAME ...`")
    if len(projects) > 1:
        raise ValueError(
            "project: the store holds several projects ("
            + ", ".join(p.name for p in projects)
            + "): say which with --project NAME"
        )
    return projects[0]


def list_projects(session: Session) -> list[ProjectSummary]:
    """A summary of each project, by name."""
    def counts(model):
        rows = session.exec(select(model.project_id, func.count()).group_by(model.project_id))
        return dict(rows.all())

    nq, npairs, ndocs = counts(Query), counts(PoolPair), counts(Document)
    gv = dict(
        session.exec(
            select(GuidelinesVersion.project_id, func.max(GuidelinesVersion.version)).group_by(
                GuidelinesVersion.project_id
            )
        ).all()
    )
    out = []
    for p in session.exec(select(Project).order_by(Project.name)):
        out.append(
            ProjectSummary(
                id=p.id, name=p.name, scale=p.scale, queries=nq.get(p.id, 0), pairs=npairs.get(p.id, 0),
                documents=ndocs.get(p.id, 0), guidelines_version=gv.get(p.id),
                released=(not p.hold_main) or p.released_at is not None, created_at=p.created_at,
            )
        )
    return out


# --- reading the input files -------------------------------------------------------------------

def _one_scale(scale: str, grades: Sequence[dict | Grade] | None, text: str, path=None) -> tuple[Grade, ...]:
    """The project's one definition of its grades: the guidelines' "Grades" section
    (:func:`curation.formats.guidelines.find_grades_section`) when they have one, else ``grades``
    (a grades file), else the scale's defaults. Guidelines and a grades file that both define the
    grades must say the same thing; a section whose numbers are not the scale's is refused, naming
    the guidelines file and the section's line."""
    section = find_grades_section(text, path)
    if section is None:
        return scale_grades(scale, grades)
    where = path or "guidelines"
    try:
        written = scale_grades(scale, section.grades)
    except ValueError as exc:
        raise InputError(where, section.start + 1, "the Grades section does not match the scale: "
                         + str(exc).split(": ", 1)[-1]) from None
    if grades is not None and scale_grades(scale, grades) != written:
        given = "; ".join(f"{g.grade}: {g.name}" for g in scale_grades(scale, grades))
        raise InputError(where, section.start + 1, "the Grades section defines the grades differently from the "
                         f"grades file ({given}); define them once, in one of the two")
    return written


def stratum_key(stratum: dict) -> str:
    """A stable, readable form of a stratum for grouping: ``dim=value`` pairs sorted by dimension,
    joined by ``; `` (``""`` for no stratum)."""
    return "; ".join(f"{k}={stratum[k]}" for k in sorted(stratum))


def _query_row(q) -> dict:
    """A line of a queries file (read by curation.formats.queries) as Query column values."""
    return dict(
        qid=q.qid,
        text=q.text,
        stratum_json=json.dumps(q.stratum, ensure_ascii=False, sort_keys=True),
        stratum_key=stratum_key(q.stratum),
        traffic=float(q.traffic or 0.0),
        users=q.users or 0,
        weight=float(q.weight or 0.0),
        stratum_share=float(q.stratum_share or 0.0),
        pii_json=json.dumps(q.pii) if q.pii else None,
        split=q.split,
    )


def _meta_runs(meta: dict) -> list[dict]:
    """Run records from pool metadata: a list of names, of objects, or an object name -> info."""
    runs = meta.get("runs") or []
    out = []
    if isinstance(runs, dict):
        runs = [dict(info, name=name) if isinstance(info, dict) else {"name": name} for name, info in runs.items()]
    for r in runs:
        if isinstance(r, str):
            r = {"name": r}
        if not isinstance(r, dict) or not r.get("name"):
            continue
        depth = r.get("depth", meta.get("depth"))
        out.append(dict(name=str(r["name"]), sha256=str(r.get("sha256") or r.get("file_sha256") or ""),
                        depth=int(depth) if isinstance(depth, int) else 0))
    return out


def _load_documents(corpus_paths, wanted: set[str], on_conflict: str = "error"):
    """Stream the corpus once (curation.formats.corpus.fetch_docs), keeping the records of ``wanted``
    docids and computing the snapshot fingerprint `golden sample corpus` also prints."""
    # tqdm progress on stderr, shown only on a terminal (disable=None).
    with tqdm(desc="reading corpus", unit=" docs", disable=None, leave=False, file=sys.stderr) as bar:
        return fetch_docs(corpus_paths, wanted, progress=bar.update, on_conflict=on_conflict)


def _repeat_lines(corpus_paths, fetched, policy: str, *dedups) -> list[str]:
    """The summary lines on repeated records: of the queries (``dedups``) and of the corpus."""
    out = [line for d in dedups if (line := d.summary())]
    parts = []
    if fetched.repeats:
        parts.append(f"{fetched.repeats} identical duplicate document line(s) dropped")
    if fetched.conflicts:
        parts.append(f"{fetched.conflicts} conflicting repeat(s) resolved by --on-conflict {policy}")
    if parts:
        out.append(", ".join(str(c) for c in corpus_paths) + ": " + "; ".join(parts))
    return out


def _missing_error(corpus_paths, missing: list[str]) -> InputError:
    shown = ", ".join(repr(d) for d in missing[:10]) + (f" and {len(missing) - 10} more" if len(missing) > 10 else "")
    where = corpus_paths[0] if len(corpus_paths) == 1 else ", ".join(str(c) for c in corpus_paths)
    return InputError(
        where, None,
        f"{len(missing)} pooled documents are not in the corpus: {shown}; pass the corpus they come from "
        "with --corpus, or --allow-missing to leave their pairs out",
    )


def _insert_pairs(session: Session, project_id: int, pairs: list[PoolEntry], qids: dict[str, int],
                  docs: dict[str, int], batch: int) -> int:
    rows = [
        dict(project_id=project_id, query_id=qids[p.qid], document_id=docs[p.docid], shuffle_order=p.order,
             **ranks_row(p.systems), batch=batch, seed_source=p.seed_source)
        for p in pairs
    ]
    if rows:
        session.execute(insert(PoolPair), rows)
    return len(rows)


def _insert_documents(session: Session, project_id: int, found: dict) -> dict[str, int]:
    rows = [dict(project_id=project_id, docid=d.id, title=d.title, url=d.url, text=d.text) for d in found.values()]
    if rows:
        session.execute(insert(Document), rows)
    return dict(session.exec(select(Document.docid, Document.id).where(Document.project_id == project_id)).all())


# --- operations -----------------------------------------------------------------------------------

PROJECT_NAME_MAX = 100


def check_project_name(name: str) -> str:
    """A new project's name: 1-100 characters, not blank, no "/" or "\\" (it is part of the
    versions' addresses and of file names) and no control or invisible format characters (a
    newline cannot go in a download's header). Checked at creation only: a store made before
    keeps its names and they keep working."""
    if not isinstance(name, str) or not name.strip() or len(name) > PROJECT_NAME_MAX:
        raise ValueError(f"name {name!r}: give the project a name of 1-{PROJECT_NAME_MAX} characters")
    bad = next((ch for ch in name if ch in "/\\" or unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zl", "Zp")), None)
    if bad is not None:
        raise ValueError(f"name {name!r}: a project name cannot hold {bad!r} (no '/', '\\' or control characters)")
    return name


def create_project(
    session: Session,
    name: str,
    *,
    queries_path: str | os.PathLike,
    pool_path: str | os.PathLike,
    corpus_paths: Iterable[str | os.PathLike],
    guidelines_path: str | os.PathLike | None = None,
    guidelines_text: str | None = None,
    scale: str = "0-2",
    grades: Sequence[dict | Grade] | None = None,
    allow_missing: bool = False,
    created_by: User | None = None,
    on_conflict: str = "error",
) -> LoadReport:
    """Load a new project in one transaction: the queries, the pooled pairs with their hidden
    provenance, the texts of the pooled documents only (streamed from the corpus), the label scale
    and guidelines version 1.

    Pooled docids missing from the corpus raise an :class:`~curation.formats.fileio.InputError` naming them
    (pairs without a text cannot be judged); with ``allow_missing`` their pairs are left out and
    listed in ``LoadReport.missing_docids``. A pool pair whose qid is not in the queries file is an
    error. ValueError when ``name`` is taken. ``on_conflict``: a qid or docid repeated with another
    text (:mod:`curation.formats.conflicts`); identical repeats are listed in ``LoadReport.repeats``."""
    check_project_name(name)
    corpus_paths = [str(c) for c in corpus_paths]
    if not corpus_paths:
        raise ValueError("corpus_paths: give at least one corpus file")
    scale_grades(scale, grades)  # the scale and a grades file's numbers, checked before any file is read
    guidelines_text = _guidelines_text(guidelines_path, guidelines_text)
    scale_def = _one_scale(scale, grades, guidelines_text, guidelines_path)
    if session.exec(select(Project.id).where(Project.name == name)).first() is not None:
        raise ValueError(
            f"name: a project called {name!r} exists; choose another name or `golden project extend {name}`"
        )
    files = _read_files(queries_path, pool_path, corpus_paths, on_conflict=on_conflict, allow_missing=allow_missing)
    queries, pool, meta, fetched = files.queries, files.pool, files.meta, files.fetched
    found, missing = fetched.docs, fetched.missing

    try:
        project = Project(
            name=name, scale=scale,
            **scale_fields(scale_def),
            corpus_fingerprint=fetched.fingerprint.sha256, queries_sha256=sha256_file(queries_path),
            pool_sha256=sha256_file(pool_path),
            pool_depth=meta.get("depth") if isinstance(meta.get("depth"), int) else None,
        )
        session.add(project)
        session.flush()
        pid = project.id
        session.execute(insert(Query), [dict(q, project_id=pid) for q in queries])
        qids = dict(session.exec(select(Query.qid, Query.id).where(Query.project_id == pid)).all())
        nneeds = load_needs(session, pid, files.query_records, created_by=created_by)
        docs = _insert_documents(session, pid, found)
        npairs = _insert_pairs(session, pid, pool, qids, docs, batch=0)
        for r in _meta_runs(meta):
            session.add(Run(project_id=pid, **r))
        text_hash = hashlib.sha256(guidelines_text.encode("utf-8")).hexdigest()
        session.add(GuidelinesVersion(project_id=pid, version=1, text=guidelines_text, sha256=text_hash,
                                      created_by_id=created_by.id if created_by else None, note="initial"))
        session.commit()
    except Exception:
        session.rollback()
        raise
    return LoadReport(project_id=pid, name=name, queries=len(queries), pairs=npairs, documents=len(found),
                      new_pairs=npairs, new_documents=len(found), missing_docids=missing, guidelines_version=1,
                      repeats=_repeat_lines(corpus_paths, fetched, on_conflict, files.query_dedup, files.pool_dedup),
                      needs=nneeds)


def _guidelines_text(path, text: str | None) -> str:
    """The guidelines from exactly one of a file and a text; ValueError when both or neither is
    given, or they are empty."""
    if (path is None) == (text is None):
        raise ValueError("guidelines: give exactly one of guidelines_path and guidelines_text")
    if path is not None:
        text = read_guidelines(path)
    if not text.strip():
        raise ValueError(f"guidelines: {path or 'the text'} is empty; write the definition of relevance")
    return text


@dataclass
class _Files:
    """A new project's input files, read and checked: the queries, the pool (without the pairs
    whose document is missing, when that is allowed) and the pooled documents' texts."""

    query_records: list
    queries: list[dict]
    query_dedup: Dedup
    pool: list
    pool_dedup: Dedup
    meta: dict
    fetched: object


def _read_files(queries_path, pool_path, corpus_paths: list[str], *, on_conflict: str, allow_missing: bool) -> _Files:
    query_dedup = Dedup(queries_path, policy=on_conflict, what="qid")
    query_records = list(iter_queries(queries_path, dedup=query_dedup))
    queries = [_query_row(q) for q in query_records]
    pool_dedup = Dedup(pool_path, what="pair")
    pool = read_pool(pool_path, dedup=pool_dedup)
    known = {q["qid"] for q in queries}
    for p in pool:
        if p.qid not in known:
            raise InputError(pool_path, p.line,
                             f"qid {p.qid!r} is not in {queries_path}: was the pool built from this query set?")
    meta = read_pool_meta(pool_path)
    fetched = _load_documents(corpus_paths, {p.docid for p in pool}, on_conflict)
    if fetched.missing and not allow_missing:
        raise _missing_error(corpus_paths, fetched.missing)
    missing_set = set(fetched.missing)
    pool = [p for p in pool if p.docid not in missing_set]
    return _Files(query_records, queries, query_dedup, pool, pool_dedup, meta, fetched)


def extend_pool(
    session: Session,
    project: Project,
    *,
    pool_path: str | os.PathLike,
    corpus_paths: Iterable[str | os.PathLike],
    allow_missing: bool = False,
    on_conflict: str = "error",
    queries_path: str | os.PathLike | None = None,
) -> LoadReport:
    """Add the pairs of an extended pool (``golden pool --extend``) that the project lacks, as a new
    batch, with the texts of their new documents; the provenance of pairs already in the project is
    merged with the new runs'. Existing pairs, assignments and judgments are untouched; run
    ``golden judging assign`` again to hand the new pairs out. ``on_conflict``: as in :func:`create_project`.
    ``queries_path``: a queries.jsonl whose ``description`` / ``narrative`` of the project's queries
    are recorded as their information need's next version where they differ (other queries in it
    are ignored: a pool extension adds no query)."""
    need_records = list(iter_queries(queries_path, on_conflict=on_conflict)) if queries_path is not None else []
    corpus_paths = [str(c) for c in corpus_paths]
    pid = project.id
    pool_dedup = Dedup(pool_path, what="pair")
    pool = read_pool(pool_path, dedup=pool_dedup)
    qids = dict(session.exec(select(Query.qid, Query.id).where(Query.project_id == pid)).all())
    for p in pool:
        if p.qid not in qids:
            raise InputError(pool_path, p.line, f"qid {p.qid!r} is not in project {project.name!r}: "
                             "an extended pool adds documents to the project's queries, not new queries")
    docs = dict(session.exec(select(Document.docid, Document.id).where(Document.project_id == pid)).all())
    existing = {
        (qid, docid): (pair_id, systems)
        for pair_id, qid, docid, systems in session.exec(
            join_pair_text(select(PoolPair.id, Query.qid, Document.docid, RANKS))
            .where(PoolPair.project_id == pid)
        ).all()
    }
    new = [p for p in pool if (p.qid, p.docid) not in existing]
    fetched = _load_documents(corpus_paths, {p.docid for p in new} - docs.keys(), on_conflict)
    found, missing = fetched.docs, fetched.missing
    if missing and not allow_missing:
        raise _missing_error(corpus_paths, missing)
    missing_set = set(missing)
    new = [p for p in new if p.docid not in missing_set]
    meta = read_pool_meta(pool_path)
    try:
        # Provenance of pairs already pooled: add what the new runs say (run -> rank).
        for p in pool:
            old = existing.get((p.qid, p.docid))
            if old is not None:
                text = merged_ranks(old[1], p.systems)
                if text != old[1]:
                    set_ranks(session.get(PoolPair, old[0]), text)
        docs = _insert_documents(session, pid, found)
        batch = (session.exec(select(func.max(PoolPair.batch)).where(PoolPair.project_id == pid)).one() or 0) + 1
        added = _insert_pairs(session, pid, new, qids, docs, batch=batch)
        known_runs = set(session.exec(select(Run.name).where(Run.project_id == pid)).all())
        for r in _meta_runs(meta):
            if r["name"] not in known_runs:
                session.add(Run(project_id=pid, **r))
        nneeds = load_needs(session, pid, need_records, note="from " + os.path.basename(str(queries_path))
                            ) if need_records else 0
        proj = session.get(Project, pid)
        proj.pool_sha256 = sha256_file(pool_path)
        if isinstance(meta.get("depth"), int):
            proj.pool_depth = meta["depth"]
        session.commit()
    except Exception:
        session.rollback()
        raise
    total = session.exec(select(func.count()).select_from(PoolPair).where(PoolPair.project_id == pid)).one()
    return LoadReport(project_id=pid, name=project.name, queries=len(qids), pairs=total, documents=len(docs),
                      new_pairs=added, new_documents=len(found), missing_docids=missing,
                      guidelines_version=None, repeats=_repeat_lines(corpus_paths, fetched, on_conflict, pool_dedup),
                      needs=nneeds)


def set_guidelines(
    session: Session,
    project: Project,
    text: str,
    *,
    created_by: User | None = None,
    note: str | None = None,
) -> tuple[GuidelinesVersion, bool]:
    """Record ``text`` as the project's guidelines and commit. A text that differs from the
    current version makes a new version (number + 1); the same text keeps the current one.
    When the text has a "Grades" section, the project's grade names and descriptions become the
    section's (one definition; ValueError when its numbers are not the scale's).
    Returns the version in force and whether it is new."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("text: the guidelines are empty; write the definition of relevance")
    from curation.formats.limits import check_size

    check_size(text, "GOLDEN_MAX_GUIDELINES_BYTES", "text", None, "the guidelines")  # as the CLI's reader
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    current = current_guidelines(session, project)
    if current is not None and current.sha256 == digest:
        return current, False
    proj = project if isinstance(project, Project) else session.get(Project, project_id(project))
    if find_grades_section(text) is not None:
        try:
            scale_def = _one_scale(proj.scale, None, text)
        except InputError as exc:
            raise ValueError(f"text: line {exc.line}: {exc.message}") from None
        set_scale(proj, scale_def)
        session.add(proj)
    version = GuidelinesVersion(
        project_id=project_id(project), version=(current.version + 1) if current else 1, text=text, sha256=digest,
        note=note, created_by_id=created_by.id if created_by else None,
    )
    session.add(version)
    from curation.store.audit import record_audit

    record_audit(session, "guidelines", actor=created_by, target=f"{proj.name} guidelines v{version.version}",
                 project=proj, detail={"version": version.version, "sha256": digest, "note": note})
    try:
        session.commit()
    except Exception:
        session.rollback()
        raise
    session.refresh(version)
    return version, True


def current_guidelines(session: Session, project: Project | int) -> GuidelinesVersion | None:
    """The latest guidelines version of the project (None before any was set)."""
    return session.exec(
        select(GuidelinesVersion)
        .where(GuidelinesVersion.project_id == project_id(project))
        .order_by(GuidelinesVersion.version.desc())
    ).first()


def guidelines_history(session: Session, project: Project | int) -> list[GuidelinesVersion]:
    """Every guidelines version of the project, oldest first."""
    return list(
        session.exec(
            select(GuidelinesVersion)
            .where(GuidelinesVersion.project_id == project_id(project))
            .order_by(GuidelinesVersion.version)
        )
    )


# --- a project's settings ----------------------------------------------------------------------

MIN_ANSWER_MS_MAX = 60_000  # a minute: the same bound as GOLDEN_MIN_ANSWER_MS


def check_min_answer_ms(value: int | None) -> int | None:
    """``value`` when it is a minimum answer time a project can have: None (the server's own) or a
    whole number of milliseconds from 0 (no minimum) to :data:`MIN_ANSWER_MS_MAX`; else ValueError
    saying what is allowed."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MIN_ANSWER_MS_MAX:
        raise ValueError(f"minimum answer time {value!r}: give a whole number of milliseconds from 0 to "
                         f"{MIN_ANSWER_MS_MAX}, or none for the server's default")
    return value


def set_min_answer_ms(
    session: Session, project: Project, value: int | None, *, actor: User | str | None = None
) -> bool:
    """Set the project's minimum time between showing a pair and accepting its answer (ms; None:
    the server's ``GOLDEN_MIN_ANSWER_MS``), record the change in the audit trail and commit.
    Returns whether it changed (setting the value it has records nothing)."""
    value = check_min_answer_ms(value)
    old = project.min_answer_ms
    if old == value:
        return False
    project.min_answer_ms = value
    session.add(project)
    from curation.store.audit import record_audit

    record_audit(session, "project_settings", actor=actor, target=f"{project.name} minimum answer time",
                 project=project, detail={"min_answer_ms": {"from": old, "to": value}})
    try:
        session.commit()
    except Exception:
        session.rollback()
        raise
    return True
