"""The judge's operations, atomic under concurrency: show a pair, record a label, go back.

Every function here takes the judge's identity and only ever reads or writes that judge's own
assignments; what it returns (:class:`Task`, :class:`Progress`, :class:`SubmitResult`) carries no
provenance (which system retrieved a document, its rank) and no other judge's label.

How it stays correct with many judges at once, on SQLite and PostgreSQL alike:

* Showing a pair issues a one-time token (a :class:`~curation.models.PairView` row). A judgment is
  recorded with its token under the unique constraint ``(judge_id, client_token)``, so a double
  click or a resubmitted form records one judgment and returns it again.
* Recording a label first updates the judge's own assignment row (``WHERE judge_id = me``); that
  update takes the row's write lock, so it serialises with the compare-and-set that moves a stale
  pair to another judge (``WHERE judge_id = old AND done_at IS NULL``): a main pair is either
  labelled by its owner or moved, never both. A main pair has one assignment row in all
  (``exclusive_pair_id`` unique), so two judges can never both be given it.
* The history is append-only: relabelling adds a row; the latest row of (pair, judge) counts.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlmodel import Session

from .models import Project, User

DEFAULT_STALE_AFTER = timedelta(minutes=30)
MAX_NOTE = 2000


class AccessDenied(LookupError):
    """The pair or token is not this judge's (the web layer answers 404 and shows nothing)."""


class PairReassigned(RuntimeError):
    """The pair was moved to another judge after this judge left it idle past the timeout."""


@dataclass(frozen=True)
class Task:
    """A pair as shown to its judge. Deliberately free of provenance and of other judges' labels."""

    token: str  # one-time token the answer must carry
    position: int  # the pair's place in this judge's queue (for "back" and direct links)
    qid: str
    query_text: str
    docid: str
    doc_title: str | None
    doc_text: str
    doc_url: str | None
    guidelines_version: int | None  # the version in force when shown (recorded with the answer)
    query_pair_index: int  # 1-based place of this pair among the judge's pairs of this query
    query_pair_count: int
    current_grade: int | None  # this judge's own latest label of the pair, when relabelling
    current_unsure: bool
    current_note: str | None
    relabel: bool  # the judge already answered this pair (came back to it)


@dataclass(frozen=True)
class Progress:
    """A judge's progress in a project: done / assigned, and time left at their own median pace."""

    done: int
    assigned: int  # pairs the judge can work on now (overlap, and main once released)
    held: int  # main pairs assigned but held back until a lead releases them
    skipped: int  # pairs whose latest answer is a skip
    median_seconds: float | None  # median time from shown to answered, over recent labels
    seconds_left: float | None  # median_seconds x (assigned - done); None before any label

    @property
    def fraction(self) -> float:
        return self.done / self.assigned if self.assigned else 1.0


@dataclass(frozen=True)
class SubmitResult:
    """The outcome of :func:`submit`: the judgment row's id, and whether the token had already been
    used (a double click / resubmission, so nothing new was recorded)."""

    judgment_id: int
    duplicate: bool
    position: int


def judge_projects(session: Session, judge: User | int) -> list[Project]:
    """The projects in which ``judge`` has assignments, by name."""
    raise NotImplementedError


def next_task(
    session: Session,
    project: Project | int,
    judge: User | int,
    *,
    now: datetime | None = None,
    stale_after: timedelta | None = DEFAULT_STALE_AFTER,
    take_stale: bool = True,
) -> Task | None:
    """The next pair for ``judge`` to label, with a fresh one-time token, or None when their queue
    is done. Order: the lowest queue position not yet answered (overlap pairs first, then released
    main pairs), then pairs the judge skipped. When nothing is left and ``take_stale``, main pairs
    of a judge idle for ``stale_after`` are moved to this judge (a query's unanswered pairs at a
    time, atomically) and the first of them is returned."""
    raise NotImplementedError


def task_at(
    session: Session, project: Project | int, judge: User | int, position: int, *, now: datetime | None = None
) -> Task:
    """The judge's pair at queue ``position`` (to go back or follow a link), with a fresh token.
    :class:`AccessDenied` when the judge has no visible pair there (another judge's pair, a held-back
    pair, or nothing)."""
    raise NotImplementedError


def previous_task(
    session: Session,
    project: Project | int,
    judge: User | int,
    *,
    before: int | None = None,
    now: datetime | None = None,
) -> Task | None:
    """The pair the judge answered just before queue position ``before`` (default: their last
    answered pair in queue order), to relabel it; None when there is none."""
    raise NotImplementedError


def submit(
    session: Session,
    judge: User | int,
    token: str,
    *,
    grade: int | None = None,
    unsure: bool = False,
    note: str | None = None,
    skip: bool = False,
    now: datetime | None = None,
) -> SubmitResult:
    """Record the judge's answer to the pair shown with ``token``: a grade of the project's scale,
    "unsure" (with or without a grade, with an optional note), or a skip; append-only, with the
    guidelines version and time the pair was shown, and the time answered.

    Idempotent on the token: a second submit with it records nothing and returns the first
    judgment (``duplicate=True``). :class:`AccessDenied` when the token is not one issued to this
    judge; :class:`PairReassigned` when the pair was moved to another judge meanwhile; ValueError
    for a grade outside the scale, a note longer than ``MAX_NOTE``, or no answer at all."""
    raise NotImplementedError


def progress(session: Session, project: Project | int, judge: User | int, *, recent: int = 200) -> Progress:
    """Done / assigned for the judge, and the time left at the median of their last ``recent``
    shown-to-answered times (the median resists the long gaps of a coffee break)."""
    raise NotImplementedError


def release_stale(
    session: Session,
    project: Project | int,
    judge: User | int,
    *,
    stale_after: timedelta = DEFAULT_STALE_AFTER,
    now: datetime | None = None,
) -> int:
    """Move to ``judge`` the unanswered released main pairs of one query whose owner has been idle
    (nothing shown or answered) for ``stale_after``, with one compare-and-set update per query so
    no pair can go to two judges; returns the number of pairs moved (0 when none is stale)."""
    raise NotImplementedError
