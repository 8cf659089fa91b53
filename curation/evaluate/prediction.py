"""The traffic-weighted mean of a uniform draw and its variance: the tail predicted from the
queries drawn by a regression on log traffic, with the model's prediction variance.

``golden sample queries --weighting uniform`` takes each stratum's head whole (queries whose
traffic is at least half a draw's share) and draws the tail with equal probabilities. Over the tail,
traffic is still Zipf-shaped: the Horvitz-Thompson mean swings with the traffic drawn, and the usual
(linearised) variance, estimated from the few large queries a draw happens to hold, is too small in
most draws (with the head taken whole, such intervals covered 81% for a difference related to
traffic on the bench's log). Here instead, stratum by stratum:

* **The estimate** is the searches of the queries compared (the head and the tail drawn) at their
  own values, plus the searches of the tail queries not drawn at the values predicted for them by
  the model ``y_i = b0 + b1 ln t_i + e_i`` fitted by least squares on the tail drawn (the mean alone,
  ``b1 = 0``, with fewer than :data:`MIN_SLOPE_QUERIES` tail queries or one traffic value): the best
  linear unbiased predictor of the stratum's total under that model (Royall, "On finite population
  sampling theory under certain linear regression models", *Biometrika* 57, 1970; Valliant, Dorfman
  & Royall, *Finite Population Sampling and Inference: A Prediction Approach*, 2000). It needs the
  tail's totals of ``t`` and ``t ln t``, which the rows carry (``stratum_traffic``,
  ``stratum_traffic_log``). As weights: ``(t_i + x_i' (X'X)^-1 c) / T`` for a tail query, ``t_i / T``
  for the head; they sum to the stratum's known share, and may be negative.
* **Its variance** is the model's prediction variance given the draw: with ``c`` the predicted
  queries' totals of ``(t, t ln t)``, ``sigma^2 [c' (X'X)^-1 c + sum of t^2 over the tail not
  drawn] / T^2``, the squared traffic from the rows' ``stratum_traffic_sq`` minus the queries
  compared, so the large tail queries a draw missed count at their known size. ``sigma^2`` is the
  residual variance ``RSS / (m - p)``; degrees of freedom: ``m - p`` summed over the strata.

When the traffic not taken whole is concentrated in fewer queries than were drawn from it (a
uniform draw without its head: whether the head query was drawn decides the estimate), no interval
is trusted (:func:`prediction_trouble`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

MIN_SPREAD = 2.0  # queries' worth of the traffic not taken whole, per query drawn from it, below which no interval
MIN_SLOPE_QUERIES = 4  # tail queries compared (with two traffic values at least) for the slope on log traffic


@dataclass
class Part:
    """One stratum's tail: its model matrix over the tail queries compared, ``(X'X)^-1``, the
    totals ``c`` the model predicts (over the tail queries not compared) and their squared
    traffic, in searches; ``scale`` turns a variance in searches^2 into one of the mean."""

    rows: np.ndarray  # indices of the tail queries compared
    x: np.ndarray  # (m, p): 1, and log traffic when the slope is fitted
    inv: np.ndarray  # (p, p)
    c: np.ndarray  # (p,): sum of t, (sum of t log t) over the tail not compared
    unseen_sq: float  # sum of t^2 over the tail not compared
    scale: float  # 1 / T^2 (times a stated mix's factor squared)


@dataclass
class Prediction:
    """What the prediction variance needs, per stratum (:class:`Part`), and per stratum the
    spread of the traffic not taken whole (``T_U^2 / Q_U``, in queries) and the tail queries drawn."""

    parts: dict[int, Part] = field(default_factory=dict)
    spread: dict[int, float] = field(default_factory=dict)
    drawn: dict[int, int] = field(default_factory=dict)


def uniform_weights(traffic: np.ndarray, certain: np.ndarray, strata: np.ndarray, facts: dict[int, tuple]
                    ) -> tuple[np.ndarray, Prediction] | None:
    """The weights of a uniform draw's traffic-weighted mean (share units) and its :class:`Prediction`.

    ``traffic``, ``certain`` (taken whole), ``strata``: per compared query (stratum -1: not in the
    mean). ``facts[s]``: ``(pool traffic T, stratum traffic T_h, sum of t^2, sum of t log t)`` over
    the stratum. None when a stratum has traffic left to stand for but no tail query compared."""
    t = np.asarray(traffic, dtype=np.float64)
    certain = np.asarray(certain, dtype=bool)
    w = np.zeros(len(t))
    pred = Prediction()
    for s, (pool, t_h, q_h, l_h) in facts.items():
        head = (strata == s) & certain
        tail = np.flatnonzero((strata == s) & ~certain)
        w[head] = t[head] / pool
        th = t[head]
        t_u, q_u = float(t_h) - float(th.sum()), float(q_h) - float(np.sum(th**2))
        l_u = float(l_h) - float(np.sum(th * np.log(th)))
        ts = t[tail]
        if not len(tail):
            if t_u > 0.5:
                return None
            continue
        logs = np.log(ts)
        c = np.array([t_u - ts.sum(), l_u - float(np.sum(ts * logs))])
        x = np.column_stack([np.ones(len(tail)), logs])
        if len(tail) < MIN_SLOPE_QUERIES or np.ptp(logs) == 0:
            x, c = x[:, :1], c[:1]  # too few, or one traffic value: the mean alone
        inv = np.linalg.inv(x.T @ x)
        w[tail] = (ts + x @ (inv @ c)) / pool
        pred.parts[s] = Part(rows=tail, x=x, inv=inv, c=c, unseen_sq=max(0.0, q_u - float(np.sum(ts**2))),
                             scale=1.0 / pool**2)
        pred.spread[s] = t_u**2 / q_u if q_u > 0 else float("inf")
        pred.drawn[s] = len(tail)
    return w, pred


def prediction_variance(y: np.ndarray, pred: Prediction) -> tuple[dict[int, float], dict[int, int]]:
    """Per stratum: the prediction variance of its part of the mean and its degrees of freedom
    (tail queries compared minus the model's parameters; none left: no variance, no df)."""
    var: dict[int, float] = {}
    df: dict[int, int] = {}
    for s, part in pred.parts.items():
        m, p = part.x.shape
        if m <= p:
            var[s], df[s] = 0.0, 0
            continue
        ys = np.asarray(y, dtype=np.float64)[part.rows]
        resid = ys - part.x @ (part.inv @ (part.x.T @ ys))
        sigma2 = float(np.sum(resid**2)) / (m - p)
        var[s] = sigma2 * (float(part.c @ part.inv @ part.c) + part.unseen_sq) * part.scale
        df[s] = m - p
    return var, df


def prediction_trouble(pred: Prediction, shares: dict[int, float]) -> str | None:
    """Why no interval of a uniform draw's traffic-weighted mean can be trusted, or None: the
    traffic it does not take whole is spread over fewer than :data:`MIN_SPREAD` queries' worth
    (``T_U^2 / Q_U``, the effective number of queries the traffic is spread over) per query drawn
    from it, averaged over the strata by share. The sampler's head rule (``2 k' t_i < T'`` for every
    query left to the draw, unless it stopped with two draws left) guarantees ``T_U^2 / Q_U >=
    T_U / max t > 2 k'``; a uniform draw that
    left its head to chance falls far below (0.3-1.4 per stratum on the bench's Zipf log): whether
    the head query was drawn then decides the estimate, and no interval from the sample covers as
    it says."""
    ratio, mass = 0.0, 0.0
    for s, n_eff in pred.spread.items():
        m = pred.drawn.get(s, 0)
        if m >= 2:
            ratio += shares.get(s, 0.0) * min(n_eff / m, 1e6)
            mass += shares.get(s, 0.0)
    if mass <= 0:
        return None
    if ratio / mass >= MIN_SPREAD:
        return None
    return (f"the traffic the sample does not hold whole is concentrated in about {ratio / mass:.1f} queries' worth "
            f"per query drawn from it (fewer than {MIN_SPREAD:g}), so whether its largest queries were drawn decides "
            "the estimate (sample with the head taken whole: golden sample queries --weighting uniform --head certain)")
