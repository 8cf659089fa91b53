"""The run, stratum and shape contrasts are taken within document length deciles
(:data:`curation.machine.bias.LENGTH_ADJUSTMENT`): a machine with a pure lean towards long documents,
whose runs retrieve documents of different lengths, is flagged by the length check and not as a
lean towards a run; a real lean towards a run, as strong as the length lean, is still flagged by the
run check. (The adjustment costs power when a run's documents are mostly of one length: half as
strong a lean towards ``terse`` below is flagged for about half the seeds.)"""

from __future__ import annotations

import numpy as np

from curation.machine.bias import bias_checks, excess_difference
from curation.machine.figures import Bootstrap
from tests.support.length_lean import simulate

SEEDS = range(10)


def with_runs(seed: int, *, run_lean: float = 0.0):
    """The length-lean machine of :func:`simulate` (an irrelevant document of the longer half called
    grade 1 with probability 0.8), its pairs split between two runs: ``terse`` retrieves 4 in 5 of
    the shorter half's documents and 1 in 5 of the longer half's, ``verbose`` the others. With
    ``run_lean``, an irrelevant document of ``terse`` is also called grade 1 with that probability (a
    real lean towards the run)."""
    facts, h, m = simulate(seed, step=5, lean=0.8)
    rng = np.random.default_rng(1000 + seed)
    lengths = np.array([f.length for f in facts])
    short = lengths < np.median(lengths)
    terse = rng.random(len(facts)) < np.where(short, 0.8, 0.2)
    m = m.copy()
    m[terse & (h == 0) & (rng.random(len(facts)) < run_lean)] = 1
    facts = [f._replace(systems={"terse" if t else "verbose": 1}) for f, t in zip(facts, terse)]
    return facts, h, m, terse


def checks(facts, h, m):
    boot = Bootstrap([f.qid for f in facts], resamples=500, seed=0)
    return {c.key: c for c in bias_checks(facts, h, m, boot=boot, min_pairs=30)}


def test_a_pure_length_lean_is_not_flagged_as_a_run_whose_documents_are_shorter():
    flagged = []
    for seed in SEEDS:
        facts, h, m, terse = with_runs(seed)
        found = checks(facts, h, m)
        assert found["length"].flagged
        # the confounding is there: the run's raw excess contrast is material (the shorter run looks stricter)
        raw = excess_difference(h, m)
        assert raw[terse].mean() - raw[~terse].mean() <= -0.10
        flagged.append(found["run"].flagged)
    assert sum(flagged) <= 1, flagged


def test_a_real_lean_towards_a_run_is_still_flagged_beside_the_length_lean():
    flagged = []
    for seed in SEEDS:
        found = checks(*with_runs(seed, run_lean=0.8)[:3])
        flagged.append(found["run"].flagged and "more lenient on run terse" in found["run"].finding)
        assert "within document length deciles" in found["run"].rule
    assert sum(flagged) >= 9, flagged
