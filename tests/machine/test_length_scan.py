"""The length check finds a lean wherever it starts: a lenient step planted at the pool's first or
third decile of document length is flagged by the scan over the decile cut points, and a clean
machine is flagged in at most 5% of seeded simulations (the scan's max-T band counts the nine cuts
as one test). Figures over more seeds: bench/bench_length_scan.py."""

from __future__ import annotations

import pytest

from curation.machine.bias import bias_checks
from curation.machine.figures import Bootstrap
from tests.support.length_lean import simulate


def length_of(facts, h, m, resamples: int = 1000):
    boot = Bootstrap([f.qid for f in facts], resamples=resamples, seed=0)
    return next(c for c in bias_checks(facts, h, m, boot=boot, min_pairs=30) if c.key == "length")


@pytest.mark.parametrize("step", [1, 3])
def test_a_lean_that_starts_early_is_flagged(step):
    flagged = [length_of(*simulate(seed, step=step)).flagged for seed in range(10)]
    assert sum(flagged) >= 9, flagged
    check = length_of(*simulate(0, step=step))
    assert "more lenient on longer documents" in check.finding


def test_the_scan_sees_more_than_the_half_against_half_contrast():
    # what the issue measured: the half contrast is diluted when the step is far from the median
    facts, h, m = simulate(0, step=1)
    check = length_of(facts, h, m)
    half = next(g for g in check.groups if g.name == "longer half - shorter half").contrast
    scan = next(g for g in check.groups if g.name.startswith("from decile")).contrast
    assert check.flagged and abs(scan.value) > 2 * abs(half.value)


def test_a_clean_machine_is_not_flagged_in_95_percent_of_simulations():
    flagged = [length_of(*simulate(seed), resamples=500).flagged for seed in range(100, 200)]
    assert sum(flagged) <= 5, sum(flagged)
