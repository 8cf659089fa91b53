"""Simulated judges of known reliability, to check that a final-label policy recovers the truth.

:func:`simulate_judges` draws a true grade per pair (uniform on the scale) and the labels of ``k``
judges per pair, chosen at random among the judges: a careful judge with error rate ``e`` gives the
true grade with probability ``1 - e``, otherwise one of the other grades at random; a judge whose
rate is None answers at random (uniform on the scale). :func:`recovery` compares the final labels of
the policies of :mod:`curation.agree.labels` against the truth (used by tests/agree/test_policies.py
and bench/bench_policies.py). Seeded; plain Python.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from curation.agree.labels import Vote, model_estimates, resolve

ERROR_RATES: dict[str, float | None] = {"careful": 0.05, "steady": 0.15, "sloppy": 0.35, "random": None}


@dataclass(frozen=True)
class Simulation:
    truth: dict[tuple[str, str], int]
    votes: dict[tuple[str, str], dict[str, int]]  # (qid, docid) -> {judge: grade}


def simulate_judges(*, pairs: int = 300, per_query: int = 10, k: int = 3, scale: Sequence[int] = (0, 1, 2),
                    judges: Mapping[str, float | None] = ERROR_RATES, seed: int = 0) -> Simulation:
    """``pairs`` pairs (``per_query`` per query), each labelled by ``k`` of ``judges`` (name -> error
    rate, None for a judge who answers at random), seeded."""
    if not 2 <= k <= len(judges):
        raise ValueError(f"k: must be between 2 and the number of judges ({len(judges)}), got {k}")
    rng = random.Random(f"simulate:{seed}")
    names = sorted(judges)
    scale = list(scale)
    truth, votes = {}, {}
    for i in range(pairs):
        unit = (f"q{i // per_query}", f"d{i}")
        true = rng.choice(scale)
        truth[unit] = true
        votes[unit] = {}
        for name in sorted(rng.sample(names, k)):
            rate = judges[name]
            if rate is None:
                grade = rng.choice(scale)
            elif rng.random() < rate:
                grade = rng.choice([g for g in scale if g != true])
            else:
                grade = true
            votes[unit][name] = grade
    return Simulation(truth, votes)


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
