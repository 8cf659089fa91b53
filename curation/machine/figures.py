"""Means, shares and contrasts over pairs with 95 % query-bootstrap intervals: the figures of the
machine judge's report that are not agreement measures (those come from
:func:`curation.agree.measures.compare_pair`, whose interval is the same query bootstrap).

QUERIES are resampled with replacement, not pairs (a pair's neighbours in its query are not
independent; Efron & Tibshirani 1993, ch. 13 percentile interval), seeded, vectorised: per-query
sums and counts are multiplied by a (resamples x queries) matrix of multiplicities.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from curation.agree.measures import Estimate
from curation.agree.settings import CONFIDENCE, RESAMPLES, SEED


class Bootstrap:
    """The query bootstrap of one set of pairs: ``qids[i]`` is pair i's query."""

    def __init__(self, qids: Sequence[str], *, resamples: int = RESAMPLES, seed: int = SEED,
                 confidence: float = CONFIDENCE):
        self.queries = sorted(set(qids))
        index = {q: i for i, q in enumerate(self.queries)}
        self.qi = np.array([index[q] for q in qids], dtype=np.int64)
        self.resamples, self.seed, self.confidence = resamples, seed, confidence
        self._counts: np.ndarray | None = None

    @property
    def counts(self) -> np.ndarray:
        if self._counts is None:
            n = len(self.queries)
            rng = np.random.default_rng(self.seed)
            draws = rng.integers(0, n, size=(self.resamples, n))
            counts = np.zeros((self.resamples, n))
            np.add.at(counts, (np.repeat(np.arange(self.resamples), n), draws.ravel()), 1.0)
            self._counts = counts
        return self._counts

    def _per_query(self, values: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n = len(self.queries)
        sums = np.bincount(self.qi[mask], weights=values[mask], minlength=n).astype(np.float64)
        cnts = np.bincount(self.qi[mask], minlength=n).astype(np.float64)
        return sums, cnts

    def _interval(self, reps: np.ndarray, confidence: float | None = None) -> tuple:
        ok = reps[~np.isnan(reps)]
        if ok.size == 0:
            return None, None, "undefined in every resample"
        tail = (1.0 - (confidence or self.confidence)) / 2.0
        low, high = np.quantile(ok, [tail, 1.0 - tail])
        return float(low), float(high), None

    def mean(self, values, mask=None, *, confidence: float | None = None) -> Estimate:
        """The mean of ``values`` over the pairs in ``mask`` (all pairs by default), with its interval."""
        values = np.asarray(values, dtype=np.float64)
        mask = np.ones(len(values), dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
        if not mask.any():
            return Estimate(None, undefined="no pairs")
        value = float(values[mask].mean())
        sums, cnts = self._per_query(values, mask)
        if (cnts > 0).sum() < 2:
            return Estimate(value, interval_note="one query: no interval")
        with np.errstate(invalid="ignore", divide="ignore"):
            reps = (self.counts @ sums) / (self.counts @ cnts)
        low, high, note = self._interval(reps, confidence)
        return Estimate(value, low, high, interval_note=note)

    def contrast(self, values, group, base=None, *, confidence: float | None = None) -> Estimate:
        """mean(values in ``group``) - mean(values in ``base``, default: every other pair), with its
        interval (``confidence``: e.g. Bonferroni's 1 - 0.05/m when m groups are each tested)."""
        values = np.asarray(values, dtype=np.float64)
        group = np.asarray(group, dtype=bool)
        base = ~group if base is None else np.asarray(base, dtype=bool)
        if not group.any() or not base.any():
            return Estimate(None, undefined="no pairs on one side")
        value = float(values[group].mean() - values[base].mean())
        gs, gc = self._per_query(values, group)
        bs, bc = self._per_query(values, base)
        if len(self.queries) < 2:
            return Estimate(value, interval_note="one query: no interval")
        c = self.counts
        with np.errstate(invalid="ignore", divide="ignore"):
            reps = (c @ gs) / (c @ gc) - (c @ bs) / (c @ bc)
        low, high, note = self._interval(reps, confidence)
        return Estimate(value, low, high, interval_note=note)


def contrast_replicates(boot: Bootstrap, values, group) -> tuple[float, np.ndarray] | None:
    """``boot.contrast``'s value and its bootstrap replicates (NaN where a resample lacks a side),
    for a scan that needs them together (:func:`curation.machine.bias.length_check`); None when a
    side is empty or there is one query."""
    values = np.asarray(values, dtype=np.float64)
    group = np.asarray(group, dtype=bool)
    if not group.any() or group.all() or len(boot.queries) < 2:
        return None
    gs, gc = boot._per_query(values, group)
    bs, bc = boot._per_query(values, ~group)
    c = boot.counts
    with np.errstate(invalid="ignore", divide="ignore"):
        reps = (c @ gs) / (c @ gc) - (c @ bs) / (c @ bc)
    return float(values[group].mean() - values[~group].mean()), reps


def excludes_zero(est: Estimate) -> bool:
    """The interval lies wholly above or wholly below 0."""
    return est.low is not None and est.high is not None and (est.low > 0 or est.high < 0)
