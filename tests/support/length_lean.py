"""Simulated machine judges for the length check: 40 queries of 20 pairs, document lengths drawn
log-normally and independently of the human grades (0-2), a machine that copies the human grade
with 8% one-grade errors, and, when ``step`` is given, a lean planted on the documents at or above
the ``step``-th decile edge of the pool's lengths (step 1: all but the shortest tenth; step 3: all but
the shortest 30%): an irrelevant one there is called grade 1 with probability ``lean``."""

from __future__ import annotations

import numpy as np

from curation.machine.bias import PairFacts


def simulate(seed: int, *, step: int | None = None, lean: float = 0.5, queries: int = 40, per_query: int = 20):
    """(facts, human grades, machine grades) of one simulated machine."""
    rng = np.random.default_rng(seed)
    n = queries * per_query
    lengths = (rng.lognormal(6.5, 0.8, size=n) + 20).astype(int)
    human = rng.choice([0, 1, 2], p=[0.55, 0.3, 0.15], size=n)
    machine = human.copy()
    err = rng.random(n) < 0.08
    machine[err] = np.where(human[err] == 1, rng.choice([0, 2], size=err.sum()), 1)
    if step is not None:
        edge = np.sort(lengths)[int(step * n / 10)]
        planted = (lengths >= edge) & (human == 0) & (rng.random(n) < lean)
        machine[planted] = 1
    facts = [PairFacts(f"q{i // per_query:02d}", f"d{i}", int(lengths[i]), "s", None, {}) for i in range(n)]
    return facts, human, machine
