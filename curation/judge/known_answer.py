"""A judge's accuracy on known-answer pairs, and the rule that flags a judge who is not reading.

Known-answer ("gold") pairs are pool pairs whose accepted grade(s) a lead has fixed, mixed blind
into each judge's queue. This module is the one home of what is computed from a judge's answers on
them: exact and within-one accuracy with 95% Wilson intervals (scipy's ``binomtest(...).proportion_ci``),
the same over a recent window, and the flag.

The flag: a judge is *below the bar* when the whole 95% Wilson interval of their exact accuracy over
all their known-answer answers lies under the project's bar (its upper end is below it), once they
have answered at least ``MIN_ANSWERS``. Evidence that the judge is worse than the bar, not merely a
short unlucky run: a careful judge whose accuracy sits above the bar is rarely flagged however long
the project runs, and one who answers at random on a three-grade scale (accuracy about 1/3) is found
within about 40 known-answer pairs (``bench/bench_known_answer.py`` measures both). A judge whose
interval straddles the bar is on *watch*: shown, never held.

Pure functions, no SQL: the store reads the answers, the judging page and Progress show this.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime

DEFAULT_BAR = 0.6  # exact accuracy a judge must be shown to fall below before being flagged
DEFAULT_WINDOW = 20  # the recent window: this many latest known-answer answers
MIN_ANSWERS = 10  # no flag before this many answers
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
    """``hits`` of ``n`` with scipy's Wilson score interval at ``CONFIDENCE``."""
    if n == 0:
        return Rate(0, 0, None, None)
    from scipy.stats import binomtest

    ci = binomtest(hits, n).proportion_ci(confidence_level=CONFIDENCE, method="wilson")
    return Rate(hits, n, float(ci.low), float(ci.high))


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


def first_flag(records: Sequence[KnownAnswerRecord], **rule: float) -> int | None:
    """After how many answers the rule first flags this sequence (None: never): what a lead
    watching Progress after every answer would see; used by the detection simulation."""
    for i in range(1, len(records) + 1):
        if judge_accuracy(records[:i], **rule).flagged:  # type: ignore[arg-type]
            return i
    return None
