"""How much of a difference is noise: the noise floor of repeated runs of one configuration
(``golden stats noise``) and the optimism of picking the best of N configurations on a tune split,
re-measured on the holdout split (``golden stats sweep``)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
from scipy import stats as sps

from curation.evaluate.bootstrap import bootstrap_replicates, interval
from curation.evaluate.choices import FEW_QUERIES, FEW_REPEATS, NOISE_RULES
from curation.evaluate.metrics import QueryScores
from curation.evaluate.stats import align_scores
from curation.formats.queries import QueryRecord

TOP_CAP = 3  # the method re-scores at most the top three configurations on the holdout


@dataclass
class Noise:
    """Repeated runs of one configuration."""

    metric: str
    runs: list[str]
    means: list[float]
    sd: float
    range: float
    threshold: float  # the floor under ``rule``
    null_low: float
    null_high: float
    null_delta: float
    null_ok: bool
    n: int
    rule: str = "3sd"
    thresholds: dict[str, float] = field(default_factory=dict)  # the floor under every rule
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def noise(scores: Sequence[QueryScores], *, resamples: int = 10_000, seed: int = 0, level: float = 0.95,
          rule: str = "3sd") -> Noise:
    """Noise floor of repeated runs of one configuration: a change whose delta is below it has
    not been shown to move the metric.

    ``sd`` and ``range`` of the runs' means, and the floor under each rule:

    * ``3sd`` (the default): three standard deviations of the repeated runs' means, the rule of
      the method golden follows (a delta within 3 sd of run-to-run scatter is not a change);
    * ``range``: the observed range (max - min) of the means, the method's other reading;
    * ``paired``: ``z_(level) * sqrt(2) * sd`` (1.96 x sqrt(2) x sd at 95%), the difference two
      single runs of one configuration stay within 95% of the time if their means are normal.
      It is lower than the other two (0.0111 against 0.0120 and 0.0130 on the method's ten runs)
      because it covers one pair of runs, not the spread of many; it was golden's only rule.

    The null arm (the first two runs, paired bootstrap) must have an interval containing 0;
    ``null_ok`` is False, with a note, when it does not. Fewer than five runs give a loose sd: said
    in a note.
    """
    if rule not in NOISE_RULES:
        raise ValueError(f"rule must be one of {', '.join(NOISE_RULES)}, not {rule!r}")
    if len(scores) < 2:
        raise ValueError("scores: the noise floor needs at least 2 repeated runs")
    metric = str(scores[0].metric)
    if any(str(s.metric) != metric for s in scores):
        raise ValueError("scores: every run must be scored with the same metric")
    qids, x = align_scores(scores)
    if len(qids) < 2:
        raise ValueError("scores: the runs share fewer than 2 scored queries")
    means = x.mean(axis=0)
    sd = float(np.std(means, ddof=1))
    rng_ = float(means.max() - means.min())
    thresholds = {"3sd": 3.0 * sd, "range": rng_, "paired": float(sps.norm.ppf(0.5 + level / 2) * math.sqrt(2) * sd)}
    d = x[:, 1] - x[:, 0]
    reps = bootstrap_replicates(d, resamples=resamples, seed=seed)
    lo, hi = interval(reps, level=level)
    ok = lo <= 0 <= hi
    notes = []
    if len(scores) < FEW_REPEATS:
        notes.append(
            f"only {len(scores)} repeated runs: the sd and range of their means are loose estimates (with fewer "
            f"than {FEW_REPEATS} the floor can easily be half or twice the true one); repeat the run more times"
        )
    if len(qids) < FEW_QUERIES:
        notes.append(f"only {len(qids)} queries: the null arm's bootstrap interval is rough")
    if not ok:
        notes.append(
            f"NULL ARM FAILED: two runs of one configuration ({scores[0].run}, {scores[1].run}) differ "
            f"beyond chance (interval [{lo:+.4f}, {hi:+.4f}] excludes 0). Comparisons of this system "
            "are not trustworthy until the cause (non-determinism, index rebuilds, caching) is found."
        )
    return Noise(metric=metric, runs=[s.run for s in scores], means=means.tolist(), sd=sd, range=rng_,
                 threshold=thresholds[rule], null_low=lo, null_high=hi, null_delta=float(d.mean()), null_ok=ok,
                 n=len(qids), rule=rule, thresholds=thresholds, notes=notes)


@dataclass
class SweepRow:
    run: str
    rank: int
    tune: float
    holdout: float | None = None
    gap: float | None = None


@dataclass
class Sweep:
    metric: str
    n_tune: int
    n_holdout: int
    configs: int
    noise_se: float  # standard error of one configuration's tune mean around the others
    optimism: float  # expected excess of the best-of-N tune mean over its true value
    rows: list[SweepRow]
    simulations: int
    top: int = 3
    winner_gap: float = math.nan  # tune - holdout of the winner
    mean_gap: float = math.nan  # tune - holdout averaged over every configuration: the splits' difficulty
    winner_excess: float = math.nan  # winner_gap - mean_gap: the winner's own optimism
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def sweep(
    scores: Sequence[QueryScores],
    *,
    queries: Mapping[str, QueryRecord],
    tune: str = "tune",
    holdout: str = "holdout",
    top: int = 3,
    simulations: int = 2_000,
    seed: int = 0,
) -> Sweep:
    """Rank configurations by their mean on the ``tune`` split, estimate the optimism of picking
    the best of N, and re-measure only the ``top`` best on the ``holdout`` split.

    Optimism: under the null that all N configurations are equally good, the tune means scatter
    around their true values by query sampling alone. Each configuration's per-query values are
    centred on its own mean; bootstrap resamples of the tune queries (keeping the configurations'
    correlation) give N noisy means, of which the largest is taken; the average of that maximum
    over ``simulations`` is the expected optimism of the winner (Cawley & Talbot, "On over-fitting
    in model selection", JMLR 2010, for the phenomenon).

    The winner's held-out gap (tune - holdout) mixes its optimism with any difference in
    difficulty between the two splits. That difference is the gap averaged over EVERY
    configuration (``mean_gap``; the holdout means of the configurations outside the top are used
    for this average only, never shown or ranked); ``winner_excess = winner_gap - mean_gap`` is the
    winner's own optimism. The method re-scores at most the top three on held-out queries: a
    larger ``top`` is allowed, with a note, because every extra look at the holdout makes it less
    of a holdout.
    """
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise ValueError(f"top must be a whole number >= 1, not {top!r}")
    if len(scores) < 2:
        raise ValueError("scores: a sweep needs at least 2 configurations")
    if not any(r.split for r in queries.values()):
        raise ValueError("queries: the queries file has no 'split' field; run `golden export split` and export again")
    tune_q = [q for q, r in queries.items() if r.split == tune]
    hold_q = [q for q, r in queries.items() if r.split == holdout]
    qt, xt = align_scores(scores, tune_q)
    qh, xh = align_scores(scores, hold_q)
    if len(qt) < 2:
        raise ValueError(f"queries: fewer than 2 scored queries in the {tune!r} split")
    if len(qh) < 2:
        raise ValueError(f"queries: fewer than 2 scored queries in the {holdout!r} split")
    means = xt.mean(axis=0)
    order = np.argsort(-means, kind="stable")
    centred = xt - means
    se = float(np.sqrt(np.mean(np.var(centred - centred.mean(axis=1, keepdims=True), axis=0, ddof=1)) / len(qt)))
    reps = bootstrap_replicates(centred, resamples=max(100, simulations), seed=seed)
    optimism = float(reps.max(axis=1).mean())
    hmeans = xh.mean(axis=0)
    rows = []
    for rank, i in enumerate(order, 1):
        row = SweepRow(run=scores[i].run, rank=rank, tune=float(means[i]))
        if rank <= top:
            row.holdout = float(hmeans[i])
            row.gap = row.tune - row.holdout
        rows.append(row)
    notes = [
        f"the best of {len(scores)} configurations is expected to look {optimism:.4f} better on the tune "
        "split than it is, from query noise alone"
    ]
    if top > TOP_CAP:
        notes.append(
            f"--top {top}: the method re-scores at most the top {TOP_CAP} on held-out queries; each further "
            "configuration looked at on the holdout makes the holdout a second tune split, and picking among "
            "them there brings the winner's curse back"
        )
    for name, count in (("tune", len(qt)), ("holdout", len(qh))):
        if count < FEW_QUERIES:
            notes.append(f"only {count} {name} queries: its means, and so the gaps, are rough")
    winner = int(order[0])
    gaps = means - hmeans
    winner_gap = float(gaps[winner])
    mean_gap = float(gaps.mean())
    return Sweep(metric=str(scores[0].metric), n_tune=len(qt), n_holdout=len(qh), configs=len(scores),
                 noise_se=se, optimism=optimism, rows=rows, simulations=max(100, simulations), top=top,
                 winner_gap=winner_gap, mean_gap=mean_gap, winner_excess=winner_gap - mean_gap, notes=notes)
