"""Simulated judges of known reliability: the one home of the judges that the policy and known-answer
checks run against.

:func:`simulate_judges` draws a true grade per pair (uniform on the scale, or in ``truth_shares``)
and the labels of ``k`` judges per pair, chosen at random among the judges: a careful judge with
error rate ``e`` gives the true grade with probability ``1 - e``, otherwise one of the other grades
at random; a judge whose rate is None answers at random (uniform on the scale). With
``known_answers`` each judge also answers that many known-answer pairs (their own stream, so the
pool's labels are the same with or without them). :func:`recovery` compares the final labels of
the policies of :mod:`curation.agree.labels` against the truth, :func:`detection` runs the
known-answer flag of :mod:`curation.judge.known_answer` over many seeds (used by
tests/agree/test_policies.py, tests/agree/test_known_answer_simulation.py, bench/bench_policies.py
and bench/bench_known_answer.py). Seeded; plain Python.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from curation.agree.labels import Vote, model_estimates, resolve
from curation.judge.known_answer import DEFAULT_BAR, MIN_ANSWERS, KnownAnswerRecord, first_flag

ERROR_RATES: dict[str, float | None] = {"careful": 0.05, "steady": 0.15, "sloppy": 0.35, "random": None}
# the known-answer simulation's true grades on 0-2: most pairs not relevant, as in a real pool
TRUTH_SHARES = (0.5, 0.3, 0.2)


@dataclass(frozen=True)
class Simulation:
    truth: dict[tuple[str, str], int]
    votes: dict[tuple[str, str], dict[str, int]]  # (qid, docid) -> {judge: grade}
    known: dict[str, list[KnownAnswerRecord]] = field(default_factory=dict)  # judge -> answers, in order


def judge_answer(rng: random.Random, rate: float | None, true: int, scale: Sequence[int]) -> int:
    """One simulated judge's grade for a pair whose true grade is ``true``: the truth with probability
    ``1 - rate``, else another grade at random; uniform on the scale when ``rate`` is None."""
    if rate is None:
        return rng.choice(scale)
    if rng.random() < rate:
        return rng.choice([g for g in scale if g != true])
    return true


def _true_grade(rng: random.Random, scale: Sequence[int], shares: Sequence[float] | None) -> int:
    return rng.choice(scale) if shares is None else rng.choices(scale, weights=shares)[0]


def known_answer_records(rate: float | None, *, answers: int, scale: Sequence[int] = (0, 1, 2),
                         truth_shares: Sequence[float] | None = TRUTH_SHARES,
                         seed: int | str = 0) -> list[KnownAnswerRecord]:
    """A judge of error ``rate`` answering ``answers`` known-answer pairs (one accepted grade each,
    drawn in ``truth_shares``), oldest first."""
    rng = random.Random(f"known:{seed}")
    scale = list(scale)
    out = []
    for _ in range(answers):
        true = _true_grade(rng, scale, truth_shares)
        out.append(KnownAnswerRecord(judge_answer(rng, rate, true, scale), (true,)))
    return out


def simulate_judges(*, pairs: int = 300, per_query: int = 10, k: int = 3, scale: Sequence[int] = (0, 1, 2),
                    judges: Mapping[str, float | None] = ERROR_RATES, seed: int = 0,
                    truth_shares: Sequence[float] | None = None, known_answers: int = 0) -> Simulation:
    """``pairs`` pairs (``per_query`` per query), each labelled by ``k`` of ``judges`` (name -> error
    rate, None for a judge who answers at random), true grades uniform or in ``truth_shares``; each
    judge also answers ``known_answers`` known-answer pairs drawn the same way. Seeded."""
    if not 2 <= k <= len(judges):
        raise ValueError(f"k: must be between 2 and the number of judges ({len(judges)}), got {k}")
    rng = random.Random(f"simulate:{seed}")
    names = sorted(judges)
    scale = list(scale)
    truth, votes = {}, {}
    for i in range(pairs):
        unit = (f"q{i // per_query}", f"d{i}")
        true = _true_grade(rng, scale, truth_shares)
        truth[unit] = true
        votes[unit] = {name: judge_answer(rng, judges[name], true, scale) for name in sorted(rng.sample(names, k))}
    known = {name: known_answer_records(judges[name], answers=known_answers, scale=scale,
                                        truth_shares=truth_shares, seed=f"{seed}:{name}")
             for name in names} if known_answers else {}
    return Simulation(truth, votes, known)


def plurality(votes: Mapping[tuple[str, str], Mapping[str, int]], *, seed: int = 0) -> dict[tuple[str, str], int]:
    """Majority vote as the usual baseline: the most common grade, ties broken at random (seeded)."""
    rng = random.Random(f"plurality:{seed}")
    out = {}
    for unit in sorted(votes):
        counts = Counter(votes[unit].values())
        top = max(counts.values())
        out[unit] = rng.choice(sorted(g for g, n in counts.items() if n == top))
    return out


def policy_labels(votes: Mapping[tuple[str, str], Mapping[str, int]], policy: str) -> dict[tuple[str, str], int | None]:
    """Each pair's final label under ``policy`` (:func:`curation.agree.labels.resolve`, with the
    model's labels for a model policy), None when unresolved."""
    est = model_estimates(votes, policy) if policy in ("dawid_skene", "mace") else {}
    out = {}
    for unit, d in votes.items():
        e = est.get(unit)
        out[unit] = resolve([Vote(j, g) for j, g in sorted(d.items())], policy=policy,
                            estimate=None if e is None else e.grade)[0]
    return out


def recovery(sim: Simulation, labels: Mapping[tuple[str, str], int | None]) -> float:
    """The share of pairs whose label is the true grade (an unresolved pair counts as a miss)."""
    return sum(labels.get(u) == t for u, t in sim.truth.items()) / len(sim.truth)


@dataclass(frozen=True)
class Detection:
    """When the known-answer flag first caught each judge, seed by seed (None: never within
    ``answers``)."""

    answers: int
    flagged_at: dict[str, list[int | None]]  # judge -> first flag per seed

    def share_flagged(self, judge: str, by: int) -> float:
        """The share of seeds in which ``judge`` was flagged within ``by`` known-answer answers."""
        at = self.flagged_at[judge]
        return sum(f is not None and f <= by for f in at) / len(at)

    def share_none_flagged(self, judges: Sequence[str], by: int) -> float:
        """The share of seeds in which none of ``judges`` was flagged within ``by`` answers."""
        seeds = len(self.flagged_at[judges[0]])
        return sum(all(not (self.flagged_at[j][s] is not None and self.flagged_at[j][s] <= by) for j in judges)
                   for s in range(seeds)) / seeds


def detection(*, seeds: int, answers: int, judges: Mapping[str, float | None] = ERROR_RATES,
              scale: Sequence[int] = (0, 1, 2), truth_shares: Sequence[float] | None = TRUTH_SHARES,
              bar: float = DEFAULT_BAR, min_answers: int = MIN_ANSWERS) -> Detection:
    """Each of ``judges`` answers ``answers`` known-answer pairs in each of ``seeds`` seeds (the
    same streams as :func:`simulate_judges`' ``known``); when :func:`first_flag` first flags them."""
    flagged_at = {
        name: [first_flag(known_answer_records(rate, answers=answers, scale=scale, truth_shares=truth_shares,
                                               seed=f"{seed}:{name}"), bar=bar, min_answers=min_answers)
               for seed in range(seeds)]
        for name, rate in judges.items()
    }
    return Detection(answers, flagged_at)
