"""Exact tests on paired per-query values: the sign test on the differences and McNemar's test on
a binary metric (both two-sided binomial tests through ``scipy.stats.binomtest``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

TIED = 1e-12  # |B_i - A_i| at or below this is a tie (float noise of equal rankings)


@dataclass(frozen=True)
class SignTest:
    """Queries where B beat A, lost, tied; exact two-sided binomial p on the non-tied ones."""

    better: int
    worse: int
    tied: int
    pvalue: float


def sign_test(diff: np.ndarray) -> SignTest:
    """Exact two-sided sign test on the non-zero differences (scipy.stats.binomtest, p = 1/2)."""
    diff = np.asarray(diff, dtype=np.float64)
    better = int((diff > TIED).sum())
    worse = int((diff < -TIED).sum())
    tied = len(diff) - better - worse
    p = 1.0 if better + worse == 0 else float(sps.binomtest(better, better + worse, 0.5).pvalue)
    return SignTest(better, worse, tied, p)


@dataclass(frozen=True)
class McNemar:
    """2x2 table of a binary metric (1 = success) and the exact McNemar p-value."""

    both: int
    a_only: int
    b_only: int
    neither: int
    pvalue: float


def mcnemar(a: np.ndarray, b: np.ndarray) -> McNemar:
    """Exact McNemar test for paired binary outcomes: a binomial test on the discordant pairs
    (``a_only`` vs ``b_only``, p = 1/2), two-sided (McNemar 1947; scipy.stats.binomtest)."""
    a = np.asarray(a)
    b = np.asarray(b)
    if not (np.isin(a, (0, 1)).all() and np.isin(b, (0, 1)).all()):
        raise ValueError("a, b: McNemar's test needs binary (0/1) values")
    a, b = a.astype(bool), b.astype(bool)
    a_only, b_only = int((a & ~b).sum()), int((b & ~a).sum())
    n = a_only + b_only
    p = 1.0 if n == 0 else float(sps.binomtest(b_only, n, 0.5).pvalue)
    return McNemar(int((a & b).sum()), a_only, b_only, int((~a & ~b).sum()), p)
