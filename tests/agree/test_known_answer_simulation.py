"""The known-answer flag on the seeded simulation of judges of set reliability (error rates 0.05, 0.15,
0.35 and one at random; truth 50/30/20% on 0-2): the random judge is found within 40 known-answer
pairs in at least 95% of seeds, and no careful judge is flagged in at least 95% of seeds while
watched for 400 known-answer answers (the horizon: at 1 in 20, a judge's 8,000 pairs; the exact
probability has stopped growing by then). The seeded shares agree with the exact probabilities of
curation.judge.known_answer.flag_chance. On the same judges Dawid-Skene recovers the true grades
better than majority vote."""

from __future__ import annotations

import math

import pytest

from curation.agree.simulate import (
    ERROR_RATES,
    TRUTH_SHARES,
    detection,
    known_answer_records,
    plurality,
    policy_labels,
    recovery,
    simulate_judges,
)
from curation.judge.known_answer import flag_chance

SEEDS = 1000
HORIZON = 400
CAREFUL = ("careful", "steady", "sloppy")


@pytest.fixture(scope="module")
def det():
    return detection(seeds=SEEDS, answers=HORIZON)


def test_the_random_judge_is_found_within_40_pairs(det):
    assert det.share_flagged("random", 40) >= 0.95


def test_no_careful_judge_is_flagged(det):
    assert det.share_none_flagged(CAREFUL, HORIZON) >= 0.95
    assert det.share_flagged("careful", HORIZON) == det.share_flagged("steady", HORIZON) == 0


def test_the_seeds_agree_with_the_exact_probabilities(det):
    for name, by in (("random", 20), ("random", 40), ("sloppy", 100), ("sloppy", HORIZON)):
        rate = ERROR_RATES[name]
        exact = flag_chance(1 / 3 if rate is None else 1 - rate, by)[-1]
        se = math.sqrt(exact * (1 - exact) / SEEDS)
        assert abs(det.share_flagged(name, by) - exact) < 4 * se, (name, by)


def test_the_simulated_answers_have_the_set_error_rates():
    for name, rate in ERROR_RATES.items():
        recs = known_answer_records(rate, answers=6000, seed=name)
        wrong = sum(not r.exact for r in recs) / len(recs)
        assert abs(wrong - (2 / 3 if rate is None else rate)) < 0.025, name
    truths = [r.accepted[0] for r in known_answer_records(0.0, answers=6000, seed=1)]
    for grade, share in enumerate(TRUTH_SHARES):
        assert abs(truths.count(grade) / len(truths) - share) < 0.025


def test_known_answers_leave_the_pool_labels_as_they_were():
    plain = simulate_judges(pairs=50, seed=4, truth_shares=TRUTH_SHARES)
    with_known = simulate_judges(pairs=50, seed=4, truth_shares=TRUTH_SHARES, known_answers=30)
    assert plain.votes == with_known.votes and plain.known == {}
    assert sorted(with_known.known) == sorted(ERROR_RATES)
    assert with_known.known["random"] == known_answer_records(None, answers=30, seed="4:random")


def test_dawid_skene_beats_majority_vote_on_the_same_judges():
    """Five seeds of 200 pairs, 3 of the 4 judges on each, truth 50/30/20%: Dawid-Skene recovers more
    true grades than majority vote (random tie-breaks) and the strict-majority policy on every seed."""
    for seed in range(5):
        sim = simulate_judges(pairs=200, k=3, seed=seed, truth_shares=TRUTH_SHARES)
        ds = recovery(sim, policy_labels(sim.votes, "dawid_skene"))
        assert ds > recovery(sim, plurality(sim.votes, seed=seed)), seed
        assert ds > recovery(sim, policy_labels(sim.votes, "majority")), seed
