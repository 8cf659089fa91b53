"""Where the judging stands: per judge and for the project, built once for ``golden judging progress`` and
the lead's progress page (``/lead/<project>/progress``), with one set of defaults.

The counts of work (done, assigned, held, to go) come from the one count every page and command
uses, :func:`curation.store.workload.count_work`: pairs a lead retired (a dropped query, a document
excluded by a leak decision) leave every count.

Per judge (every user with pairs assigned in the project):

- ``done`` / ``assigned`` / ``held``: assignment rows of live pairs labelled (the judge's latest
  answer is a grade, not a skip), all rows, and main rows still held back until a lead releases them;
- ``per_hour_hour`` / ``per_hour_day``: answers (labels and skips given in the app) in the hour
  and the 24 hours before ``now``, per hour;
- ``median_seconds``: median time from a pair being shown to its answer, over the judge's answers
  in the app (imported judgments have no timing and count for nothing here);
- ``last_active``: the judge's latest answer in the app;
- ``unsure_share``: unsure labels over labels; ``skipped_share``: skips over answers;
- ``state``: "done" when nothing is left (held work included), "waiting" when all that is left is
  held, "idle" when the judge has pairs they could judge now and has not answered for
  ``idle_after`` (never answered counts as idle), else "active"; ``idle`` is ``state == "idle"``.

For the project: pool pairs (of queries not dropped), assigned and unassigned; a pair is ``done``
when every judge it is assigned to has labelled it. The pace is measured over two recent windows of
the team's answers, never averaged over a day: ``pace`` over the last hour with answers (the hour
up to the latest answer, or since the first answer when that is later), and ``pace_session`` over
the session (the run of answers up to the latest with no gap longer than ``idle_after``); each is
(answers - 1) / the time from the first to the last answer of its window. ``eta`` is the time the
remaining assignment rows (held ones included) would take at ``pace`` from ``now``, and
``eta_note`` says how it was made (none before two answers). The overlap set's state: its pairs,
how many every judge has labelled, and whether the rest is held or released.

Known-answer pairs mixed into the queues (:mod:`curation.judge.gold`) are not pool work: their rows
and answers are left out of every figure above and shown apart (``known_done`` and
``known_remaining``), with each judge's accuracy on them (``accuracy``:
:func:`curation.judge.gold.accuracy_report`). When the project asks for qualification (or a judge
ever took it): each judge's qualification state, attempt and score
(:func:`curation.judge.qualification.qualification_report`).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

from sqlalchemy import case, distinct, func
from sqlmodel import Session, select

from curation.judge import gold
from curation.judge.assignment import main_visible
from curation.judge.gold import JudgeAccuracy
from curation.judge.qualification import qualification_report
from curation.store import workload
from curation.store.direct import EPOCH, ONE_MICROSECOND, from_micros, micros_to_seconds, utc_micros
from curation.store.lookups import plain_rows
from curation.store.models import (
    KNOWN_KIND,
    Assignment,
    Document,
    Judgment,
    PoolPair,
    Project,
    Query,
    User,
    pool_labels,
    utcnow,
)

IDLE_AFTER = timedelta(minutes=30)  # the default: a judge with work and no answer for this long is idle
HOURS = 24  # the hourly chart covers the last day


@dataclass
class JudgeProgress:
    judge: str
    done: int
    assigned: int
    held: int
    remaining: int  # assigned - done (held rows included)
    overlap_done: int
    overlap_assigned: int
    answers: int  # labels and skips given in the app, all time
    per_hour_hour: float
    per_hour_day: float
    median_seconds: float | None
    last_active: datetime | None
    unsure_share: float | None
    skipped_share: float | None
    idle: bool
    state: str  # "done", "waiting" (only held work left), "idle" or "active"
    idle_for: timedelta | None  # since the last answer (None: never answered)


@dataclass
class ProgressReport:
    project: str
    now: datetime
    idle_after: timedelta
    pairs: int  # pool pairs of queries not dropped
    assigned_pairs: int
    unassigned_pairs: int
    done_pairs: int  # every judge the pair is assigned to has labelled it
    remaining_pairs: int  # assigned pairs not yet done
    done_rows: int  # assignment rows of live pairs labelled (the work done, in answers)
    remaining_rows: int  # assignment rows not yet labelled (the work left, in answers)
    held_rows: int
    released: bool  # main pairs visible to judges (released, or never held)
    pace: float  # the team's answers per hour over the last hour with answers
    pace_session: float  # ... over the current session (no gap over idle_after)
    eta: datetime | None
    eta_note: str
    overlap_pairs: int
    overlap_complete: int  # overlap pairs labelled by every judge they are assigned to
    overlap_judges: int
    judges: list[JudgeProgress] = field(default_factory=list)
    hourly: list[int] = field(default_factory=list)  # team answers per hour, oldest first, the last is the current hour
    # Known-answer pairs mixed into the queues: not pool work, so counted apart from every figure above.
    known_rate: int = 0  # one known-answer pair in every N shown (0: none)
    known_done: int = 0  # known-answer rows answered
    known_remaining: int = 0
    accuracy: list[JudgeAccuracy] = field(default_factory=list)  # each judge's accuracy on them (by name)
    # each judge's qualification (curation.judge.qualification.qualification_report); empty when not asked for
    qualification: list = field(default_factory=list)

    def as_dict(self) -> dict:
        def plain(v):
            if isinstance(v, datetime):
                return v.isoformat()
            if isinstance(v, timedelta):
                return v.total_seconds()
            if isinstance(v, dict):
                return {k: plain(x) for k, x in v.items()}
            if isinstance(v, list):
                return [plain(x) for x in v]
            return v

        return plain(asdict(self))


def format_duration(duration: timedelta | float | None, *, estimate: bool = False) -> str | None:
    """A duration (a timedelta, or seconds) in words a person reads at a glance; None stays None.

    A time that has passed in whole minutes, days past 48 hours: "4 min", "3 h 20 min", "2 d 5 h".
    With ``estimate``, a time still to come, rounded to the minute and said to be an estimate:
    "under a minute", "about 25 min", "about 1 h 20 min" (the judging page's time left)."""
    if duration is None:
        return None
    seconds = duration.total_seconds() if isinstance(duration, timedelta) else float(duration)
    if estimate:
        minutes = int(round(seconds / 60))
        if minutes < 1:
            return "under a minute"
        if minutes < 60:
            return f"about {minutes} min"
        hours, minutes = divmod(minutes, 60)
        return f"about {hours} h {minutes} min" if minutes else f"about {hours} h"
    minutes = int(seconds // 60)
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h" if hours else f"{days} d"


def _aware(t: datetime | None) -> datetime | None:
    """``t`` as an aware UTC datetime (a naive one is taken as UTC, as the store writes them)."""
    if t is None:
        return None
    return t if t.tzinfo is not None else t.replace(tzinfo=UTC)


def build_progress(
    session: Session, project: Project, *, now: datetime | None = None, idle_after: timedelta = IDLE_AFTER
) -> ProgressReport:
    """The progress report of ``project`` at ``now`` (default: the current time): see the module."""
    if idle_after.total_seconds() <= 0:
        raise ValueError(f"idle_after must be positive, got {idle_after}")
    now = _aware(now) or utcnow()
    pid = project.id
    visible = main_visible(project)
    work = workload.count_work(session, pid, visible=visible)
    counted = _pair_counts(session, pid)
    pairs = session.exec(
        select(func.count()).select_from(PoolPair).join(Query, Query.id == PoolPair.query_id)
        .join(Document, Document.id == PoolPair.document_id)
        .where(PoolPair.project_id == pid, workload.live_pair_condition())
    ).one()
    by_judge, hourly, times = _answer_counts(session, pid, now)
    accuracy = gold.accuracy_report(session, project)
    judges = _judge_rows(session, work, by_judge, now=now, idle_after=idle_after)

    team = workload.project_work(work)
    remaining_rows = team.remaining
    pace, pace_session, eta, eta_note = _pace(times, remaining_rows, now=now, idle_after=idle_after)
    return ProgressReport(
        project=project.name, now=now, idle_after=idle_after, pairs=int(pairs), assigned_pairs=counted.assigned,
        unassigned_pairs=int(pairs) - counted.assigned, done_pairs=counted.done,
        remaining_pairs=counted.assigned - counted.done,
        done_rows=team.done, remaining_rows=remaining_rows, held_rows=sum(j.held for j in judges), released=visible,
        pace=pace, pace_session=pace_session, eta=eta,
        eta_note=eta_note, overlap_pairs=counted.overlap,
        overlap_complete=counted.overlap_complete, overlap_judges=counted.overlap_judges,
        judges=judges, hourly=hourly, known_rate=int(project.known_answer_rate or 0), known_done=team.known_done,
        known_remaining=team.known_total - team.known_done, accuracy=accuracy,
        qualification=qualification_report(session, project, sorted(work)),
    )


HOUR_US = 3_600_000_000  # an hour in microseconds, the unit of the answer times below


def _rate(times) -> float:
    """Answers per hour over ``times`` (sorted microseconds): (n - 1) over the first-to-last span
    (in seconds, as ``timedelta.total_seconds`` gives it); 0 below two."""
    span = int(times[-1] - times[0]) / 1_000_000 if len(times) > 1 else 0.0
    return (len(times) - 1) * 3600.0 / span if span > 0 else 0.0


def _pace(times, remaining: int, *, now: datetime, idle_after: timedelta):
    """(pace over the last hour with answers, pace over the session, eta, how the eta was made);
    ``times``: the team's answer times up to ``now``, sorted, in microseconds since 1970 (numpy)."""
    import numpy as np

    pace = pace_session = 0.0
    if len(times):
        last = int(times[-1])
        gaps = np.flatnonzero(np.diff(times) > idle_after // ONE_MICROSECOND)
        session = times[gaps[-1] + 1 if len(gaps) else 0:]  # the run of answers up to the last, no long gap
        window = times[times > last - HOUR_US]
        pace, pace_session = _rate(window), _rate(session)
    if remaining == 0:
        return pace, pace_session, now, "all assigned pairs are judged"
    if len(times) < 2:
        return 0.0, 0.0, None, "no estimate: the team has given fewer than two answers"
    if pace <= 0:
        return 0.0, pace_session, None, "no estimate: the last hour with answers has only one"
    last_at = from_micros(last)
    note = (f"{remaining} answers left at {pace:.1f} an hour, the team's pace over the last hour with answers "
            f"({from_micros(window[0]):%H:%M}-{last_at:%H:%M} UTC, {len(window)} answers); "
            + (f"{pace_session:.1f} an hour over the session since {from_micros(session[0]):%H:%M} UTC"
               if pace_session else "the session has one answer"))
    if now - last_at > idle_after:
        note += f"; nobody has answered since {last_at:%Y-%m-%d %H:%M} UTC, so it assumes judging resumes now"
    return pace, pace_session, now + timedelta(hours=remaining / pace), note


class PairCounts(NamedTuple):
    """The live pairs' assignment rows, counted: pairs assigned, pairs all of whose rows are done,
    overlap pairs, overlap pairs all of whose overlap rows are done, judges with overlap rows."""

    assigned: int
    done: int
    overlap: int
    overlap_complete: int
    overlap_judges: int


def _pair_counts(session: Session, pid: int) -> PairCounts:
    """:class:`PairCounts` of ``pid``, counted by the database (two statements, one row each: a
    project's 200,000 assignment rows are not read)."""
    done = Assignment.done_at.is_not(None)
    overlap = Assignment.kind == "overlap"

    def live(stmt):
        return (stmt.join(PoolPair, PoolPair.id == Assignment.pair_id)
                .join(Query, Query.id == PoolPair.query_id)
                .join(Document, Document.id == PoolPair.document_id)
                .where(Assignment.project_id == pid, workload.live_pair_condition(), Assignment.kind != KNOWN_KIND))

    def ones(condition):
        return func.sum(case((condition, 1), else_=0))

    per_pair = live(select(Assignment.pair_id, func.count().label("rows"), ones(done).label("done"),
                           ones(overlap).label("overlap"), ones(overlap & done).label("overlap_done"))
                    .select_from(Assignment)).group_by(Assignment.pair_id).subquery()
    pairs, all_done, overlap_pairs, overlap_complete = session.exec(select(
        func.count(), ones(per_pair.c.rows == per_pair.c.done), ones(per_pair.c.overlap > 0),
        ones((per_pair.c.overlap > 0) & (per_pair.c.overlap == per_pair.c.overlap_done)),
    ).select_from(per_pair)).one()
    judges = session.exec(live(select(func.count(distinct(Assignment.judge_id))).select_from(Assignment))
                          .where(overlap)).one()
    return PairCounts(int(pairs), int(all_done or 0), int(overlap_pairs or 0), int(overlap_complete or 0), int(judges))


def _answer_counts(session: Session, pid: int, now: datetime):
    """The answers given in the app (imports have no timing) counted per judge, and per hour of the
    last :data:`HOURS`; with the times of the team's answers up to ``now``, sorted, in microseconds
    since 1970 (a numpy array, as :func:`_pace` takes them). Counted with numpy over the times of
    every answer (:func:`curation.store.direct.utc_micros`), exactly as a loop over the rows would:
    integer microseconds, and seconds as ``timedelta.total_seconds`` gives them."""
    import numpy as np

    answers = plain_rows(session,  # the driver's values: times are converted below (utc_micros)
        select(Judgment.judge_id, Judgment.answered_at, Judgment.shown_at, Judgment.skipped, Judgment.unsure)
        .where(Judgment.project_id == pid, Judgment.source == "human", pool_labels())
    )
    by_judge: dict[int, dict] = defaultdict(lambda: dict(n=0, hour=0, day=0, labels=0, unsure=0, skips=0,
                                                         seconds=[], last=None))
    hourly = [0] * HOURS
    if not answers:
        return by_judge, hourly, np.zeros(0, dtype=np.int64)
    judge_ids, answered, shown, skipped, unsure = zip(*answers)
    answered, _ = utc_micros(answered)  # never None (a column NOT NULL)
    shown, not_shown = utc_micros(shown)
    skipped = np.array(skipped, dtype=bool)
    unsure = np.array(unsure, dtype=bool) & ~skipped
    judges, which = np.unique(np.array(judge_ids, dtype=np.int64), return_inverse=True)
    now_us = (now - EPOCH) // ONE_MICROSECOND
    timed = ~not_shown & (answered >= shown)
    seconds = (answered - shown)[timed]
    in_hour = (answered > now_us - HOUR_US) & (answered <= now_us)
    in_day = (answered > now_us - HOURS * HOUR_US) & (answered <= now_us)
    latest = np.full(len(judges), np.iinfo(np.int64).min)
    np.maximum.at(latest, which, answered)

    def per_judge(mask):
        return np.bincount(which[mask], minlength=len(judges)).tolist()

    everyone = np.ones(len(which), dtype=bool)
    counts = zip(per_judge(everyone), per_judge(skipped), per_judge(unsure), per_judge(in_hour), per_judge(in_day))
    timed_which = which[timed]
    order = np.argsort(timed_which, kind="stable")
    bounds = np.searchsorted(timed_which[order], np.arange(len(judges) + 1))
    seconds = seconds[order]
    for k, (judge_id, (n, skips, unsure_n, hour, day)) in enumerate(zip(judges.tolist(), counts)):
        by_judge[judge_id].update(n=n, skips=skips, labels=n - skips, unsure=unsure_n, hour=hour, day=day,
                                  seconds=micros_to_seconds(seconds[bounds[k]:bounds[k + 1]]),
                                  last=from_micros(latest[k]))
    slots = HOURS - 1 - (now_us - answered[in_day]) // HOUR_US
    hourly = np.bincount(slots, minlength=HOURS).tolist()
    times = np.sort(answered[answered <= now_us])
    return by_judge, hourly, times


def _judge_rows(session: Session, work: dict[int, workload.Work], by_judge: dict[int, dict], *, now: datetime,
                idle_after: timedelta) -> list[JudgeProgress]:
    """Each judge's line of the report, by name."""
    names = dict(session.exec(select(User.id, User.name).where(User.id.in_(list(work) or [-1]))).all())
    judges = []
    for judge_id in sorted(work, key=lambda j: names.get(j, "")):
        w, a = work[judge_id], by_judge[judge_id]
        idle_for = (now - a["last"]) if a["last"] is not None else None
        if w.finished:
            state = "done"
        elif w.open_now == 0:
            state = "waiting"
        elif idle_for is None or idle_for > idle_after:
            state = "idle"
        else:
            state = "active"
        judges.append(JudgeProgress(
            judge=names.get(judge_id, f"#{judge_id}"), done=w.done, assigned=w.total, held=w.held,
            remaining=w.remaining, overlap_done=w.overlap_done, overlap_assigned=w.overlap_total,
            answers=a["n"], per_hour_hour=float(a["hour"]), per_hour_day=a["day"] / HOURS,
            median_seconds=statistics.median(a["seconds"]) if a["seconds"] else None,
            last_active=a["last"], unsure_share=(a["unsure"] / a["labels"]) if a["labels"] else None,
            skipped_share=(a["skips"] / a["n"]) if a["n"] else None,
            idle=state == "idle", state=state, idle_for=idle_for,
        ))
    return judges
