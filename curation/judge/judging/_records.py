"""The judging operations' records: what a judge is shown and what an answer returns (no
provenance, no other judge's label), and the errors they raise."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from curation.store.models import (
    Project,
)

DEFAULT_STALE_AFTER = timedelta(minutes=30)
MAX_NOTE = 2000


class AccessDenied(LookupError):
    """The pair or token is not this judge's (the web layer answers 404 and shows nothing)."""


class PairReassigned(RuntimeError):
    """The pair was moved to another judge after this judge left it idle past the timeout."""


class TooSoon(RuntimeError):
    """The answer came sooner after its pair was shown than the minimum (``min_seconds``): a key
    pressed for the pair before, not for this one. Nothing was recorded; ``seconds`` is how long
    the pair had been shown."""

    def __init__(self, seconds: float, minimum: float):
        super().__init__(f"answered {seconds * 1000:.0f} ms after the pair was shown, under the "
                         f"minimum of {minimum * 1000:.0f} ms; nothing was recorded")
        self.seconds = seconds
        self.minimum = minimum


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
    need_version: int | None  # the query's information need in force when shown (recorded with the answer)
    need_description: str | None  # untrusted text: render escaped
    need_narrative: str | None
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


@dataclass(frozen=True)
class Answered:
    """The outcome of :func:`submit_and_next`: the answer recorded, the next pair (None when the
    judge's queue is done) and the judge's progress after the answer (None when not read with it)."""

    result: SubmitResult
    task: Task | None
    progress: Progress | None
    project: Project | JudgeProject


@dataclass(frozen=True)
class JudgeProject:
    """What the judging pages need of a project (:func:`judge_project`): read with one Core
    statement, no ORM object. The functions of this module take it where they take a Project."""

    id: int
    name: str
    scale: str
    stored_scale: str  # its grades as stored (curation.store.scale)
    hold_main: bool
    released_at: datetime | None
    held: bool = False  # the judge's queue is held: known-answer accuracy below the bar (curation.judge.gold)
    known_answer_hold: bool = False  # the project holds a judge found below the known-answer bar
    min_answer_ms: int | None = None  # the project's minimum answer time; None: the server's
