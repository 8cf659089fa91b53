"""Handing the pool out to judges: a shared overlap (calibration) set, then the rest split.

``assign`` draws an overlap set of pairs that every listed judge labels, spread across strata (in
proportion to their pairs, largest remainder) and within a stratum across as many queries as it can
(round robin over the queries in a seeded order). The other pairs ("main") are split between the
judges keeping each query's pairs with one judge, balanced by greedy longest-processing-time
(largest query first to the judge with the fewest main pairs). Each judge's queue starts with the
overlap pairs; main pairs are held back until a lead releases them when the project holds them.

Queue positions: overlap rows take positions below :data:`~curation.models.MAIN_BASE`, main rows
positions from it, so a judge always meets the calibration pairs first. Within a block the pairs of
one query are consecutive (one query at a time) in a per-judge seeded shuffle.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from sqlmodel import Session

from .models import Project, User


@dataclass
class AssignReport:
    """What :func:`assign` added: pair counts per judge, and the overlap set's size and spread."""

    overlap_pairs: int = 0  # size of the overlap set (existing or new)
    overlap_queries: int = 0
    overlap_strata: int = 0
    new_overlap_rows: int = 0  # overlap assignment rows added (judges x pairs)
    new_main_pairs: int = 0
    per_judge: dict[str, dict[str, int]] = field(default_factory=dict)  # name -> {"overlap", "main", "queries"}
    held: bool = False  # main pairs wait for a lead's release
    unassigned_pairs: int = 0  # pairs of the pool still without a judge after this call


@dataclass(frozen=True)
class ReleaseRecord:
    """Who released the held-back main pairs, when, and at what agreement."""

    project: str
    lead: str
    agreement: float | None
    released_at: object
    main_pairs: int


def assign(
    session: Session,
    project: Project,
    judges: Sequence[User | str],
    *,
    overlap: int = 100,
    seed: int = 0,
    hold: bool | None = None,
) -> AssignReport:
    """Assign the project's pairs that no judge has yet, and commit.

    The first call draws ``overlap`` pairs (all pairs when the pool is smaller) for every listed
    judge; later calls (after ``extend_pool``) add only new pairs, as main work, keeping a query's
    new pairs with the judge who already has that query when they are listed, and give a listed
    judge who lacks the existing overlap set their calibration rows. ``hold`` (default: hold when
    there is an overlap set and the project was not released) keeps main pairs hidden until
    :func:`release`. Deterministic for a given ``seed`` and store contents.
    ValueError when ``judges`` is empty, names an unknown user, or ``overlap`` < 0."""
    raise NotImplementedError


def release(session: Session, project: Project, lead: User, *, agreement: float | None = None) -> ReleaseRecord:
    """Release the held-back main pairs to their judges, recording who released them, when, and at
    what agreement (e.g. Krippendorff's alpha on the overlap set), and commit. ValueError when
    ``lead`` is not a lead or admin, or ``agreement`` is outside [-1, 1]."""
    raise NotImplementedError


def hold(session: Session, project: Project) -> None:
    """Hold main pairs back again (until the next :func:`release`) and commit."""
    raise NotImplementedError


def queue_summary(session: Session, project: Project) -> dict[str, dict[str, int]]:
    """Per judge name: overlap, main, done and remaining assignment counts (for leads and the CLI)."""
    raise NotImplementedError
