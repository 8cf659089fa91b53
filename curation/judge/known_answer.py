"""A judge's accuracy on known-answer pairs, and the rule that flags a judge who is not reading.

Known-answer ("gold") pairs are pool pairs whose accepted grade(s) a lead has fixed, mixed blind
into each judge's queue. This module is the one home of what is computed from a judge's answers on
them: exact and within-one accuracy with 95% Wilson score intervals, the same over a recent window,
and the flag.

The flag: a judge is *below the bar* when the whole 95% Wilson interval of their exact accuracy over
all their known-answer answers lies under the project's bar (its upper end is below it), once they
have answered at least ``MIN_ANSWERS``. Evidence that the judge is worse than the bar, not merely a
short unlucky run. Measured by the seeded simulation of :mod:`curation.agree.simulate` and exactly
by :func:`flag_chance` (``bench/bench_known_answer.py`` prints both): on the 0-2 scale a judge who
answers at random (accuracy 1/3) is flagged within 40 known-answer answers with probability 0.961;
a judge with error rate 0.35 (accuracy 0.65, just above the bar) is ever flagged with probability
0.037, nearly all of it in their first 100 answers (the same at 400 and at 1,000); a judge with
error 0.15 with probability 1.1e-5, and one with error 0.05 3e-10. ``MIN_ANSWERS`` is 15, not 10: the early answers are
where a sloppy-but-reading judge is flagged by bad luck, and 15 takes that from 0.043 to 0.037 while
costing the random judge's detection by 40 answers 0.001. A judge whose interval straddles the bar is
on *watch*: shown, never held.

The interval is Wilson's score interval written out (the same numbers as scipy's
``binomtest(...).proportion_ci(method="wilson")`` and statsmodels' ``proportion_confint(method=
"wilson")``, tested to 1e-9): no scipy import on the Progress page, and :func:`first_flag` can walk a
long answer sequence with a table of the largest number of hits that is still below the bar.

Pure functions, no SQL: the store reads the answers, the judging page and Progress show this.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from statistics import NormalDist

DEFAULT_BAR = 0.6  # exact accuracy a judge must be shown to fall below before being flagged
DEFAULT_WINDOW = 20  # the recent window: this many latest known-answer answers
MIN_ANSWERS = 15  # no flag before this many answers
CONFIDENCE = 0.95


@dataclass(frozen=True)
class KnownAnswerRecord:
    """One answer of a judge on a known-answer pair, in the order given (oldest first)."""

    grade: int
    accepted: Collection[int]
    answered_at: datetime | None = None

    @property
    def exact(self) -> bool:
        return self.grade in self.accepted

    @property
    def within_one(self) -> bool:
        return any(abs(self.grade - a) <= 1 for a in self.accepted)


def accepted_grades(stored: str) -> tuple[int, ...]:
    """A known-answer pair's accepted grades from their stored form (a JSON list of grades)."""
    return tuple(int(g) for g in json.loads(stored))


@dataclass(frozen=True)
class Rate:
    """A proportion with its 95% Wilson interval (``low``/``high`` are None when ``n`` is 0)."""

    hits: int
    n: int
    low: float | None
    high: float | None

    @property
    def value(self) -> float | None:
        return self.hits / self.n if self.n else None


@dataclass(frozen=True)
class Accuracy:
    answered: int
    exact: Rate
    within_one: Rate
    recent: Rate  # exact accuracy over the latest ``window`` answers
    bar: float
    state: str  # "too few", "ok", "watch" or "below bar"

    @property
    def flagged(self) -> bool:
        return self.state == "below bar"


def wilson(hits: int, n: int) -> Rate:
    """``hits`` of ``n`` with Wilson's score interval at ``CONFIDENCE``."""
    if n == 0:
        return Rate(0, 0, None, None)
    low, high = _wilson_bounds(hits, n, _z(CONFIDENCE))
    return Rate(hits, n, low, high)


@lru_cache(maxsize=8)
def _z(confidence: float) -> float:
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def _wilson_bounds(hits: int, n: int, z: float) -> tuple[float, float]:
    """Wilson's score interval: centre (p + z²/2n) / (1 + z²/n), half-width
    z·sqrt(p(1-p)/n + z²/4n²) / (1 + z²/n); its ends are exactly 0 at no hits and 1 at all hits
    (where rounding would leave them a hair inside)."""
    p = hits / n
    z2 = z * z
    scale = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / scale
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / scale
    return (0.0 if hits == 0 else centre - half), (1.0 if hits == n else centre + half)


def judge_accuracy(
    records: Sequence[KnownAnswerRecord],
    *,
    bar: float = DEFAULT_BAR,
    window: int = DEFAULT_WINDOW,
    min_answers: int = MIN_ANSWERS,
) -> Accuracy:
    """A judge's accuracy on known-answer pairs and their state against ``bar``."""
    n = len(records)
    exact = wilson(sum(r.exact for r in records), n)
    within = wilson(sum(r.within_one for r in records), n)
    latest = records[-window:] if window > 0 else records
    recent = wilson(sum(r.exact for r in latest), len(latest))
    if n < min_answers:
        state = "too few"
    elif exact.high is not None and exact.high < bar:
        state = "below bar"
    elif exact.low is not None and exact.low < bar:
        state = "watch"
    else:
        state = "ok"
    return Accuracy(n, exact, within, recent, bar, state)


@lru_cache(maxsize=65536)
def flag_limit(n: int, bar: float = DEFAULT_BAR) -> int:
    """The largest number of exact answers out of ``n`` whose interval still lies wholly under
    ``bar`` (-1 when none does): the flag at ``n`` answers is ``hits <= flag_limit(n, bar)``, the
    same test as :func:`judge_accuracy`'s (the upper end grows with the hits)."""
    z = _z(CONFIDENCE)
    hits = min(n, max(-1, math.floor(bar * n)))  # the upper end is above the share itself
    while hits >= 0 and _wilson_bounds(hits, n, z)[1] >= bar:
        hits -= 1
    return hits


def first_flag(records: Sequence[KnownAnswerRecord], *, bar: float = DEFAULT_BAR,
               window: int = DEFAULT_WINDOW, min_answers: int = MIN_ANSWERS) -> int | None:
    """After how many answers the rule first flags this sequence (None: never): what a lead
    watching Progress after every answer would see; used by the detection simulation. Equal to
    asking :func:`judge_accuracy` of every prefix, in one pass (``window`` is taken for the same
    call and does not change the flag)."""
    hits = 0
    for i, record in enumerate(records, start=1):
        hits += record.exact
        if i >= min_answers and hits <= flag_limit(i, bar):
            return i
    return None


def flag_chance(accuracy: float, answers: int, *, bar: float = DEFAULT_BAR,
                min_answers: int = MIN_ANSWERS) -> list[float]:
    """The exact probability that a judge whose every known-answer answer is right with probability
    ``accuracy`` (independently) has been flagged after 1, 2, ..., ``answers`` answers: the
    distribution of their hits, step by step, with the flagged ones taken out at each step."""
    alive = [1.0]  # alive[h]: probability of h hits so far and never flagged
    flagged, out = 0.0, []
    for n in range(1, answers + 1):
        step = [0.0] * (n + 1)
        for h, q in enumerate(alive):
            step[h] += q * (1 - accuracy)
            step[h + 1] += q * accuracy
        if n >= min_answers:
            for h in range(flag_limit(n, bar) + 1):
                flagged += step[h]
                step[h] = 0.0
        alive = step
        out.append(flagged)
    return out
