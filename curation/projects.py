"""Projects: loading the query set, the judging pool, the pooled documents and the guidelines.

A project is built from the files the earlier steps write:

* ``QUERIES.jsonl`` (``golden sample``): one object per query with ``qid``, ``text``, ``stratum``
  (a dict), ``traffic``, ``users``, ``stratum_share``, ``weight`` and ``pii``;
* ``POOL.jsonl`` (``golden pool``): one object per pair with ``qid``, ``docid``, ``order`` (a seeded
  shuffle within the query) and ``systems`` (run name -> rank, the hidden provenance), and an
  optional sidecar ``POOL.meta.json`` with the pool's ``depth`` and ``runs``;
* the corpus files (:mod:`curation.corpus`): only the pooled documents' texts are stored;
* ``GUIDELINES.md``: the written definition of relevance, versioned.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

from sqlalchemy import func, insert
from sqlmodel import Session, select

from .corpus import iter_corpus
from .fileio import InputError, open_text, sha256_file
from .models import (
    Document,
    GuidelinesVersion,
    PoolPair,
    Project,
    Query,
    Run,
    User,
)


@dataclass(frozen=True)
class Grade:
    """One grade of a label scale: the number stored, a short name and what it means."""

    grade: int
    name: str
    description: str


DEFAULT_SCALES: dict[str, tuple[Grade, ...]] = {
    "binary": (
        Grade(0, "Not relevant", "The document does not help answer the query."),
        Grade(1, "Relevant", "The document helps answer the query, in whole or in part."),
    ),
    "0-2": (
        Grade(0, "Not relevant", "The document does not help answer the query."),
        Grade(1, "Partially relevant", "On topic, but answers only part of the query or needs other sources."),
        Grade(2, "Highly relevant", "Answers the query on its own; a user would be satisfied with it."),
    ),
    "0-3": (
        Grade(0, "Irrelevant", "Nothing to do with the query."),
        Grade(1, "Related", "On the query's topic, but does not answer it."),
        Grade(2, "Highly relevant", "Answers the query, perhaps with some digging or only in part."),
        Grade(3, "Perfectly relevant", "Dedicated to the query: it answers it fully and directly."),
    ),
}
SCALES = tuple(DEFAULT_SCALES)


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


def grades(project: Project) -> tuple[Grade, ...]:
    """The grades of ``project``'s scale, lowest first (for the judging page and validation)."""
    return tuple(Grade(int(g["grade"]), g["name"], g["description"]) for g in json.loads(project.grades_json))


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
    raise NotImplementedError


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
) -> LoadReport:
    """Load a new project in one transaction: the queries, the pooled pairs with their hidden
    provenance, the texts of the pooled documents only (streamed from the corpus), the label scale
    and guidelines version 1.

    Pooled docids missing from the corpus raise an :class:`~curation.fileio.InputError` naming them
    (pairs without a text cannot be judged); with ``allow_missing`` their pairs are left out and
    listed in ``LoadReport.missing_docids``. A pool pair whose qid is not in the queries file is an
    error. ValueError when ``name`` is taken."""
    raise NotImplementedError


def extend_pool(
    session: Session,
    project: Project,
    *,
    pool_path: str | os.PathLike,
    corpus_paths: Iterable[str | os.PathLike],
    allow_missing: bool = False,
) -> LoadReport:
    """Add the pairs of an extended pool (``golden pool --extend``) that the project lacks, as a new
    batch, with the texts of their new documents; the provenance of pairs already in the project is
    merged with the new runs'. Existing pairs, assignments and judgments are untouched; run
    ``golden assign`` again to hand the new pairs out."""
    raise NotImplementedError


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
    Returns the version in force and whether it is new."""
    raise NotImplementedError


def current_guidelines(session: Session, project: Project | int) -> GuidelinesVersion | None:
    """The latest guidelines version of the project (None before any was set)."""
    raise NotImplementedError


def guidelines_history(session: Session, project: Project | int) -> list[GuidelinesVersion]:
    """Every guidelines version of the project, oldest first."""
    raise NotImplementedError
