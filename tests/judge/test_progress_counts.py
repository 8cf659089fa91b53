"""The progress report's counts of answers (curation.judge.progress._answer_counts and _pace), done
with numpy over every answer's time, against the loop over the rows they replaced (kept here as the
reference): the same counts, medians, hourly chart, times, paces and notes, to the microsecond."""

from __future__ import annotations

import random
import statistics
from collections import defaultdict
from datetime import UTC, datetime, timedelta

import pytest

from curation.judge import progress
from curation.store.direct import from_micros, sqlite_datetime, to_datetime

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
HOURS = progress.HOURS


def reference_counts(rows, now):
    """The per-row loop the numpy version replaced."""
    hour_ago, day_ago = now - timedelta(hours=1), now - timedelta(hours=HOURS)
    hourly = [0] * HOURS
    times = []
    by_judge = defaultdict(lambda: dict(n=0, hour=0, day=0, labels=0, unsure=0, skips=0, seconds=[], last=None))
    for judge_id, answered, shown, skipped, unsure in rows:
        answered, shown = to_datetime(answered), to_datetime(shown)
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
        if answered <= now:
            times.append(answered)
        if hour_ago < answered <= now:
            a["hour"] += 1
        if day_ago < answered <= now:
            a["day"] += 1
            slot = HOURS - 1 - int((now - answered).total_seconds() // 3600)
            hourly[max(slot, 0)] += 1
    times.sort()
    return by_judge, hourly, times


def reference_rate(times):
    span = (times[-1] - times[0]).total_seconds() if len(times) > 1 else 0.0
    return (len(times) - 1) * 3600.0 / span if span > 0 else 0.0


def reference_pace(times, remaining, *, now, idle_after):
    pace = pace_session = 0.0
    if times:
        last = times[-1]
        start = len(times) - 1
        while start > 0 and times[start] - times[start - 1] <= idle_after:
            start -= 1
        session = times[start:]
        window = [t for t in times if t > last - timedelta(hours=1)]
        pace, pace_session = reference_rate(window), reference_rate(session)
    if remaining == 0:
        return pace, pace_session, now, "all assigned pairs are judged"
    if len(times) < 2:
        return 0.0, 0.0, None, "no estimate: the team has given fewer than two answers"
    if pace <= 0:
        return 0.0, pace_session, None, "no estimate: the last hour with answers has only one"
    note = (f"{remaining} answers left at {pace:.1f} an hour, the team's pace over the last hour with answers "
            f"({window[0]:%H:%M}-{last:%H:%M} UTC, {len(window)} answers); "
            + (f"{pace_session:.1f} an hour over the session since {session[0]:%H:%M} UTC" if pace_session
               else "the session has one answer"))
    if now - last > idle_after:
        note += f"; nobody has answered since {last:%Y-%m-%d %H:%M} UTC, so it assumes judging resumes now"
    return pace, pace_session, now + timedelta(hours=remaining / pace), note


def random_rows(rng, n, *, as_text=True):
    """Answers of a few judges around NOW: bursts and gaps, answers in the future, exactly on the
    hour boundaries, shown after answered, never shown, skips and unsure labels."""
    rows = []
    t = NOW - timedelta(hours=rng.choice([2, 30, 80]))
    for _ in range(n):
        t += timedelta(microseconds=rng.choice([0, 1, rng.randrange(10**8), rng.randrange(10**10)]))
        answered = rng.choice([t, t, t, NOW, NOW - timedelta(hours=1), NOW - timedelta(hours=HOURS),
                               NOW + timedelta(seconds=rng.randrange(1, 99)), NOW - timedelta(hours=rng.randrange(30))])
        shown = rng.choice([None, answered - timedelta(microseconds=rng.randrange(10**9)), answered,
                            answered + timedelta(seconds=1)])
        value = sqlite_datetime if as_text else (lambda d: d)
        rows.append((rng.randrange(1, 6), value(answered), None if shown is None else value(shown),
                     rng.random() < 0.2, rng.choice([0, 1, None])))
    return rows


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("as_text", [True, False], ids=["sqlite-text", "postgresql-datetimes"])
def test_counts_and_pace_match_the_loop_over_rows(monkeypatch, seed, as_text):
    rng = random.Random(seed)
    rows = random_rows(rng, rng.choice([0, 1, 2, 3, 50, 2000]), as_text=as_text)
    monkeypatch.setattr(progress, "plain_rows", lambda session, stmt: rows)
    by_judge, hourly, times = progress._answer_counts(None, 1, NOW)
    ref_judge, ref_hourly, ref_times = reference_counts(rows, NOW)
    assert hourly == ref_hourly
    assert [from_micros(t) for t in times] == ref_times
    assert set(by_judge) == set(ref_judge)
    for judge_id, ref in ref_judge.items():
        got = by_judge[judge_id]
        assert {k: v for k, v in got.items() if k != "seconds"} == {k: v for k, v in ref.items() if k != "seconds"}
        assert sorted(got["seconds"]) == sorted(ref["seconds"])
        if ref["seconds"]:
            assert statistics.median(got["seconds"]) == statistics.median(ref["seconds"])
    assert by_judge[99] == reference_counts([], NOW)[0][99]  # a judge with no answers still has a line
    for remaining in (0, 1, 37):
        for idle in (timedelta(minutes=5), timedelta(hours=3)):
            assert progress._pace(times, remaining, now=NOW, idle_after=idle) == \
                reference_pace(ref_times, remaining, now=NOW, idle_after=idle)
