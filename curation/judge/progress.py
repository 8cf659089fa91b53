"""Where the judging stands: per judge and for the project, built once for ``golden judging progress`` and
the lead's progress page (``/lead/<project>/progress``), with one set of defaults.

Per judge (every user with pairs assigned in the project):

- ``done`` / ``assigned`` / ``held``: assignment rows labelled (the judge's latest answer is a
  grade, not a skip), all rows, and main rows still held back until a lead releases them;
- ``per_hour_hour`` / ``per_hour_day``: answers (labels and skips given in the app) in the hour
  and the 24 hours before ``now``, per hour;
- ``median_seconds``: median time from a pair being shown to its answer, over the judge's answers
  in the app (imported judgments have no timing and count for nothing here);
- ``last_active``: the judge's latest answer in the app;
- ``unsure_share``: unsure labels over labels; ``skipped_share``: skips over answers;
- ``idle``: the judge has pairs they could judge now (not held) and has not answered for
  ``idle_after`` (never answered counts as idle).

For the project: pool pairs (of queries not dropped), assigned and unassigned; a pair is ``done``
when every judge it is assigned to has labelled it. ``pace`` is the team's answers per hour over
the last 24 hours, and ``eta`` the time the remaining assignment rows (held ones included) would
take at that pace: none when nobody answered in the last day. The overlap set's state: its pairs,
how many every judge has labelled, and whether the rest is held or released.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta

from sqlalchemy import func
from sqlmodel import Session, select

from curation.judge.assignment import main_visible
from curation.store.models import Assignment, Judgment, PoolPair, Project, Query, User, utcnow

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
    remaining_rows: int  # assignment rows not yet labelled (the work left, in answers)
    held_rows: int
    released: bool  # main pairs visible to judges (released, or never held)
    pace: float  # the team's answers per hour over the last 24 hours
    eta: datetime | None
    eta_note: str
    overlap_pairs: int
    overlap_complete: int  # overlap pairs labelled by every judge they are assigned to
    overlap_judges: int
    judges: list[JudgeProgress] = field(default_factory=list)
    hourly: list[int] = field(default_factory=list)  # team answers per hour, oldest first, the last is the current hour

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
    per_judge, pair_rows, overlap_rows, overlap_judges = _assignment_counts(session, pid, visible)
    pairs = session.exec(
        select(func.count()).select_from(PoolPair).join(Query, Query.id == PoolPair.query_id)
        .where(PoolPair.project_id == pid, Query.status != "dropped")
    ).one()
    by_judge, hourly = _answer_counts(session, pid, now)
    judges = _judge_rows(session, per_judge, by_judge, now=now, idle_after=idle_after)

    done_pairs = sum(1 for flags in pair_rows.values() if all(flags))
    remaining_rows = sum(j.remaining for j in judges)
    pace = sum(j.per_hour_day for j in judges)
    if remaining_rows == 0:
        eta, eta_note = now, "all assigned pairs are judged"
    elif pace > 0:
        eta = now + timedelta(hours=remaining_rows / pace)
        eta_note = f"{remaining_rows} answers left at {pace:.1f} an hour"
    else:
        eta, eta_note = None, f"no estimate: nobody answered in the last {HOURS} hours"
    return ProgressReport(
        project=project.name, now=now, idle_after=idle_after, pairs=int(pairs), assigned_pairs=len(pair_rows),
        unassigned_pairs=int(pairs) - len(pair_rows), done_pairs=done_pairs,
        remaining_pairs=len(pair_rows) - done_pairs,
        remaining_rows=remaining_rows, held_rows=sum(j.held for j in judges), released=visible, pace=pace, eta=eta,
        eta_note=eta_note, overlap_pairs=len(overlap_rows),
        overlap_complete=sum(1 for flags in overlap_rows.values() if all(flags)), overlap_judges=len(overlap_judges),
        judges=judges, hourly=hourly,
    )


def _assignment_counts(session: Session, pid: int, visible: bool):
    """The assignment rows of the active queries counted per judge, and each pair's (and overlap
    pair's) rows as done flags; with the judges who have overlap rows."""
    rows = session.exec(
        select(Assignment.pair_id, Assignment.judge_id, Assignment.kind, Assignment.done_at.is_not(None))
        .join(PoolPair, PoolPair.id == Assignment.pair_id)
        .join(Query, Query.id == PoolPair.query_id)
        .where(Assignment.project_id == pid, Query.status != "dropped")
    ).all()
    per_judge: dict[int, Counter] = defaultdict(Counter)
    pair_rows: dict[int, list[bool]] = defaultdict(list)
    overlap_rows: dict[int, list[bool]] = defaultdict(list)
    overlap_judges: set[int] = set()
    for pair_id, judge_id, kind, done in rows:
        c = per_judge[judge_id]
        c["assigned"] += 1
        c["done"] += bool(done)
        if kind == "overlap":
            c["overlap_assigned"] += 1
            c["overlap_done"] += bool(done)
            overlap_rows[pair_id].append(bool(done))
            overlap_judges.add(judge_id)
        elif not visible and not done:
            c["held"] += 1
        pair_rows[pair_id].append(bool(done))
    return per_judge, pair_rows, overlap_rows, overlap_judges


def _answer_counts(session: Session, pid: int, now: datetime) -> tuple[dict[int, dict], list[int]]:
    """The answers given in the app (imports have no timing) counted per judge, and per hour of the
    last :data:`HOURS`."""
    answers = session.exec(
        select(Judgment.judge_id, Judgment.answered_at, Judgment.shown_at, Judgment.skipped, Judgment.unsure)
        .where(Judgment.project_id == pid, Judgment.source == "human")
    ).all()
    hour_ago, day_ago = now - timedelta(hours=1), now - timedelta(hours=HOURS)
    hourly = [0] * HOURS
    by_judge: dict[int, dict] = defaultdict(lambda: dict(n=0, hour=0, day=0, labels=0, unsure=0, skips=0,
                                                         seconds=[], last=None))
    for judge_id, answered, shown, skipped, unsure in answers:
        answered, shown = _aware(answered), _aware(shown)
        a = by_judge[judge_id]
        a["n"] += 1
        if skipped:
            a["skips"] += 1
        else:
            a["labels"] += 1
            a["unsure"] += bool(unsure)
        if shown is not None and answered >= shown:
            a["seconds"].append((answered - shown).total_seconds())
        if a["last"] is None or answered > a["last"]:
            a["last"] = answered
        if hour_ago < answered <= now:
            a["hour"] += 1
        if day_ago < answered <= now:
            a["day"] += 1
            slot = HOURS - 1 - int((now - answered).total_seconds() // 3600)
            hourly[max(slot, 0)] += 1
    return by_judge, hourly


def _judge_rows(session: Session, per_judge: dict[int, Counter], by_judge: dict[int, dict], *, now: datetime,
                idle_after: timedelta) -> list[JudgeProgress]:
    """Each judge's line of the report, by name."""
    names = dict(session.exec(select(User.id, User.name).where(User.id.in_(list(per_judge) or [-1]))).all())
    judges = []
    for judge_id in sorted(per_judge, key=lambda j: names.get(j, "")):
        c, a = per_judge[judge_id], by_judge[judge_id]
        remaining = c["assigned"] - c["done"]
        workable = remaining - c["held"]  # pairs the judge could judge now
        idle_for = (now - a["last"]) if a["last"] is not None else None
        judges.append(JudgeProgress(
            judge=names.get(judge_id, f"#{judge_id}"), done=c["done"], assigned=c["assigned"], held=c["held"],
            remaining=remaining, overlap_done=c["overlap_done"], overlap_assigned=c["overlap_assigned"],
            answers=a["n"], per_hour_hour=float(a["hour"]), per_hour_day=a["day"] / HOURS,
            median_seconds=statistics.median(a["seconds"]) if a["seconds"] else None,
            last_active=a["last"], unsure_share=(a["unsure"] / a["labels"]) if a["labels"] else None,
            skipped_share=(a["skips"] / a["n"]) if a["n"] else None,
            idle=workable > 0 and (idle_for is None or idle_for > idle_after), idle_for=idle_for,
        ))
    return judges
