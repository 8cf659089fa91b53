"""The known-answer accuracy and its flag (curation.judge.known_answer): the Wilson interval equal to
statsmodels' and scipy's to 1e-9, the states a judge moves through, the one-pass first flag equal to
asking every prefix, and the exact flag probability equal to enumerating every answer sequence."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest
from statsmodels.stats.proportion import proportion_confint

from curation.judge.known_answer import (
    DEFAULT_BAR,
    MIN_ANSWERS,
    KnownAnswerRecord,
    first_flag,
    flag_chance,
    flag_limit,
    judge_accuracy,
    wilson,
)


def _records(hits_misses, accepted=(1,)):
    """A judge's answers from a string of 1 (right) and 0 (wrong), on pairs whose accepted grade is 1."""
    return [KnownAnswerRecord(1 if c == "1" else 0, accepted) for c in hits_misses]


@pytest.mark.parametrize("n", [*range(1, 41), 57, 100, 399, 1000, 12345])
def test_wilson_equals_statsmodels_and_scipy(n):
    for hits in sorted({*range(0, min(n, 40) + 1), n // 3, n // 2, n - 1, n}):
        ours = wilson(hits, n)
        low, high = proportion_confint(hits, n, alpha=0.05, method="wilson")
        assert abs(ours.low - low) < 1e-9 and abs(ours.high - high) < 1e-9, (hits, n)
        ci = binomtest(hits, n).proportion_ci(confidence_level=0.95, method="wilson")
        assert abs(ours.low - ci.low) < 1e-9 and abs(ours.high - ci.high) < 1e-9, (hits, n)
        assert 0 <= ours.low <= hits / n <= ours.high <= 1


def test_no_answers_no_interval():
    acc = judge_accuracy([])
    assert acc.answered == 0 and acc.exact.low is None and acc.exact.value is None
    assert acc.state == "too few" and not acc.flagged


def test_the_states_of_a_judge():
    # before MIN_ANSWERS: never judged, even all wrong
    assert judge_accuracy(_records("0" * (MIN_ANSWERS - 1))).state == "too few"
    assert judge_accuracy(_records("0" * MIN_ANSWERS)).state == "below bar"
    # 12 of 20 right: 0.6 itself is inside the interval, and so is everything to 0.78
    acc = judge_accuracy(_records("1" * 12 + "0" * 8))
    assert acc.state == "watch" and acc.exact.low < DEFAULT_BAR < acc.exact.high
    assert judge_accuracy(_records("1" * 40)).state == "ok"
    # 5 of 20: the whole interval (0.11-0.47) under the bar
    acc = judge_accuracy(_records("1" * 5 + "0" * 15))
    assert acc.flagged and acc.exact.high < DEFAULT_BAR
    # a lower bar: the same answers only watched
    assert judge_accuracy(_records("1" * 5 + "0" * 15), bar=0.3).state == "watch"


def test_within_one_and_accepted_grades():
    recs = [KnownAnswerRecord(0, (2,)), KnownAnswerRecord(1, (2,)), KnownAnswerRecord(3, (2, 3)),
            KnownAnswerRecord(0, (1, 3))]
    assert [r.exact for r in recs] == [False, False, True, False]
    assert [r.within_one for r in recs] == [False, True, True, True]
    acc = judge_accuracy(recs)
    assert (acc.exact.hits, acc.within_one.hits, acc.answered) == (1, 3, 4)


def test_the_recent_window_is_the_latest_answers():
    acc = judge_accuracy(_records("1" * 30 + "0" * 20), window=20)
    assert (acc.recent.hits, acc.recent.n) == (0, 20)
    assert (acc.exact.hits, acc.exact.n) == (30, 50)
    assert acc.state == "watch"  # the flag reads all the answers; the window is shown beside it
    assert judge_accuracy(_records("10" * 10), window=0).recent.n == 20


def test_flag_limit_is_the_edge_of_the_interval():
    for bar in (0.3, 0.5, DEFAULT_BAR, 0.7, 0.9):
        for n in range(1, 300):
            limit = flag_limit(n, bar)
            if limit >= 0:
                assert wilson(limit, n).high < bar, (n, bar)
            if limit < n:
                assert wilson(limit + 1, n).high >= bar, (n, bar)
    assert flag_limit(40) == 17 and flag_limit(15) == 5


@settings(max_examples=300, deadline=None)
@given(st.lists(st.booleans(), max_size=120), st.sampled_from([0.5, DEFAULT_BAR, 0.7]), st.integers(1, 30))
def test_first_flag_equals_asking_every_prefix(answers, bar, min_answers):
    recs = [KnownAnswerRecord(1 if a else 0, (1,)) for a in answers]
    expected = next((i for i in range(1, len(recs) + 1)
                     if judge_accuracy(recs[:i], bar=bar, min_answers=min_answers).flagged), None)
    assert first_flag(recs, bar=bar, min_answers=min_answers) == expected


def test_first_flag_on_a_random_judge_and_a_careful_one():
    rng = random.Random(7)
    careless = [KnownAnswerRecord(rng.choice((0, 1, 2)), (0,)) for _ in range(200)]
    flagged = first_flag(careless)
    assert flagged is not None and MIN_ANSWERS <= flagged <= 60
    assert first_flag(_records("1" * 200)) is None
    assert first_flag(_records("0" * 30), min_answers=25) == 25


@pytest.mark.parametrize("accuracy,bar,min_answers", [(1 / 3, DEFAULT_BAR, 4), (0.65, DEFAULT_BAR, 3),
                                                      (0.5, 0.7, 1), (0.9, 0.5, 6)])
def test_flag_chance_equals_enumerating_every_sequence(accuracy, bar, min_answers):
    n = 14
    by = [0.0] * n
    for seq in itertools.product((0, 1), repeat=n):
        p = 1.0
        for a in seq:
            p *= accuracy if a else 1 - accuracy
        at = first_flag(_records("".join(map(str, seq))), bar=bar, min_answers=min_answers)
        if at is not None:
            for i in range(at - 1, n):
                by[i] += p
    exact = flag_chance(accuracy, n, bar=bar, min_answers=min_answers)
    assert max(abs(a - b) for a, b in zip(exact, by, strict=True)) < 1e-12
    assert exact[-1] > 0


def test_the_rule_meets_its_targets_exactly():
    """The probabilities the module's docstring states: a judge at random on 0-2 flagged within 40
    answers with probability >= 0.95; a judge with error 0.35 ever flagged (400 answers: the horizon
    at which the probability has stopped growing) with probability < 0.05, those with 0.15 and 0.05
    almost never."""
    assert flag_chance(1 / 3, 40)[-1] >= 0.96
    sloppy = flag_chance(0.65, 1000)
    assert sloppy[399] < 0.04 and sloppy[999] - sloppy[399] < 1e-4
    assert flag_chance(0.85, 400)[-1] < 2e-5 and flag_chance(0.95, 400)[-1] < 1e-9
