"""Bias checks of a machine judge against the human labels, each with query-bootstrap intervals.

Each check groups the compared pairs (human label and machine label both present) and shows, per
group, the pairs, the exact agreement and the signed difference (machine - human grade). A machine
that makes more errors on relevant documents than on others will look stricter wherever relevant
documents are common, whatever its lean; so the checks test the **excess** signed difference: a
pair's signed difference minus the machine's mean signed difference at that pair's human grade
(the lean the human grade does not explain). The rule each check states:

- ``length``: document length deciles (characters of the text), and a scan over the nine decile
  cut points, so that a lean is found wherever it starts (not only at the median): for each cut c
  (deciles 1..c against c+1..10) the excess contrast (longer side - shorter side) is divided by its
  query-bootstrap standard error; the critical value is the 95th percentile, over the same
  bootstrap resamples, of the largest |centred contrast| / SE across the cuts (a simultaneous 95 %
  band, "max-T": the nine correlated tests count as one). Flagged when the cut with the largest
  |t| is beyond it and its contrast is at least :data:`MATERIAL` grades. The longer-minus-shorter
  half is shown beside it. Cuts with fewer than ``min_pairs`` pairs on a side are not scanned.
- ``stratum``, ``shape`` (the query shape dimension of the strata, when there is one) and ``run``
  (the pairs a run retrieved, whatever the others did): each group against the rest; flagged when
  one group's contrast has a Bonferroni interval (1 - 0.05/m for m groups) that excludes 0 and is
  at least :data:`MATERIAL` grades in size. These contrasts are of the excess **within length
  deciles** (:data:`LENGTH_ADJUSTMENT`): a lean by length would otherwise show again as a lean
  towards whichever group holds more long (or short) documents.
- ``rank`` (the best rank at which any run retrieved the pair), ``prompt_version`` and ``model``:
  shown, not tested (a rank band or a prompt version changes which documents are in the group).

Groups of fewer than ``min_pairs`` pairs show "not enough pairs" and are not tested.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from curation.agree.measures import Estimate
from curation.machine.figures import Bootstrap, contrast_replicates, excludes_zero

MATERIAL = 0.10  # grades: a smaller lean is not flagged, however certain
FAMILY_ALPHA = 0.05
RANK_BANDS = ((1, 1), (2, 3), (4, 10), (11, 20), (21, None))


class PairFacts(NamedTuple):
    """What the checks group a compared pair by."""

    qid: str
    docid: str
    length: int  # characters of the document's text
    stratum: str
    shape: str | None
    systems: dict  # run -> rank
    model: str | None = None
    prompt_version: str | None = None


@dataclass
class GroupFigures:
    name: str
    pairs: int
    queries: int
    agreement: Estimate | None  # None: not enough pairs
    signed: Estimate | None
    excess: Estimate | None
    contrast: Estimate | None = None  # the tested contrast (group - rest, or long - short half)
    flagged: bool = False
    stale: bool = False  # prompt versions older than the newest

    def as_dict(self) -> dict:
        d = {"name": self.name, "pairs": self.pairs, "queries": self.queries,
             "enough_pairs": self.agreement is not None}
        for k in ("agreement", "signed", "excess", "contrast"):
            v = getattr(self, k)
            d[k] = None if v is None else v.as_dict()
        d["flagged"] = self.flagged
        if self.stale:
            d["stale"] = True
        return d


@dataclass
class BiasCheck:
    key: str
    title: str
    rule: str
    tested: bool
    groups: list[GroupFigures] = field(default_factory=list)
    flagged: bool = False
    finding: str = ""

    def as_dict(self) -> dict:
        return {"key": self.key, "title": self.title, "rule": self.rule, "tested": self.tested,
                "flagged": self.flagged, "finding": self.finding, "groups": [g.as_dict() for g in self.groups]}


def excess_difference(h: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Each pair's signed difference minus the mean signed difference at its human grade."""
    d = (m - h).astype(np.float64)
    out = d.copy()
    for g in np.unique(h):
        sel = h == g
        out[sel] = d[sel] - d[sel].mean()
    return out


LENGTH_ADJUSTMENT = (
    "the excess is taken within document length deciles (each pair's excess minus the mean excess of its "
    "length decile), so a lean by length is not counted again as a lean towards a group with longer or "
    "shorter documents"
)


def length_deciles(lengths: np.ndarray) -> np.ndarray:
    """Each pair's document length decile, 0..9, equal-sized by rank (ties in input order)."""
    n = len(lengths)
    decile = np.empty(n, dtype=np.int64)
    decile[np.argsort(lengths, kind="stable")] = np.arange(n) * 10 // max(n, 1)
    return decile


def within_deciles(excess: np.ndarray, decile: np.ndarray) -> np.ndarray:
    """:data:`LENGTH_ADJUSTMENT`: each pair's excess minus the mean excess of its length decile."""
    out = excess.copy()
    for d in np.unique(decile):
        sel = decile == d
        out[sel] = excess[sel] - excess[sel].mean()
    return out


class _Data:
    def __init__(self, facts: Sequence[PairFacts], h, m, boot: Bootstrap, min_pairs: int):
        self.facts = list(facts)
        self.h = np.asarray(h, dtype=np.int64)
        self.m = np.asarray(m, dtype=np.int64)
        self.same = (self.h == self.m).astype(np.float64)
        self.signed = (self.m - self.h).astype(np.float64)
        self.excess = excess_difference(self.h, self.m)
        self.decile = length_deciles(np.array([f.length for f in self.facts], dtype=np.float64))
        self.group_excess = within_deciles(self.excess, self.decile)
        self.boot = boot
        self.min_pairs = min_pairs
        self.qids = np.array([f.qid for f in self.facts], dtype=object)

    def group(self, name: str, mask: np.ndarray, *, contrast: Estimate | None = None) -> GroupFigures:
        n = int(mask.sum())
        queries = len(set(self.qids[mask].tolist())) if n else 0
        if n < self.min_pairs:
            return GroupFigures(name, n, queries, None, None, None, None)
        return GroupFigures(name, n, queries, self.boot.mean(self.same, mask), self.boot.mean(self.signed, mask),
                            self.boot.mean(self.excess, mask), contrast)


def _fmt(e: Estimate) -> str:
    return f"{e.value:+.2f} ({e.low:+.2f} to {e.high:+.2f})" if e.low is not None else f"{e.value:+.2f}"


def _material(e: Estimate | None) -> bool:
    return e is not None and e.value is not None and excludes_zero(e) and abs(e.value) >= MATERIAL


LENGTH_RULE = (
    "scan over the nine decile cut points (deciles 1..c against c+1..10): each cut's excess signed difference "
    "(longer side - shorter side) over its query-bootstrap standard error; flagged when the largest |t| is "
    "beyond the 95th percentile of the bootstrap's largest |centred contrast|/SE over the cuts (a simultaneous "
    f"95% band, max-T) and that cut's contrast is at least {MATERIAL:.2f} grades; the longer half minus the "
    "shorter half is shown beside it"
)


def length_scan(data: _Data, decile: np.ndarray, confidence: float = 1.0 - FAMILY_ALPHA) -> dict | None:
    """The max-T scan of :data:`LENGTH_RULE`: ``{"cut", "contrast": Estimate (simultaneous
    interval), "t", "critical", "cuts": [(cut, value, t)]}``; None when no cut has ``min_pairs``
    pairs on each side."""
    cuts, values, reps = [], [], []
    for c in range(1, 10):
        longer = decile >= c
        if longer.sum() < data.min_pairs or (~longer).sum() < data.min_pairs:
            continue
        r = contrast_replicates(data.boot, data.excess, longer)
        if r is None:
            continue
        cuts.append(c)
        values.append(r[0])
        reps.append(r[1])
    if not cuts:
        return None
    v = np.array(values)
    rep = np.vstack(reps)  # cuts x resamples
    ok = ~np.isnan(rep).any(axis=0)
    rep = rep[:, ok]
    if rep.shape[1] < 2:
        return None
    se = rep.std(axis=1, ddof=1)
    keep = se > 0  # a cut whose contrast never varies (e.g. every excess 0) cannot be studentised
    if not keep.any():
        return None
    cuts, v, rep, se = [c for c, k in zip(cuts, keep) if k], v[keep], rep[keep], se[keep]
    t = v / se
    centred = np.abs(rep - v[:, None]) / se[:, None]
    crit = float(np.quantile(centred.max(axis=0), confidence))
    best = int(np.argmax(np.abs(t)))
    est = Estimate(float(v[best]), float(v[best] - crit * se[best]), float(v[best] + crit * se[best]))
    return {"cut": cuts[best], "contrast": est, "t": float(t[best]), "critical": crit,
            "cuts": [(c, float(x), float(y)) for c, x, y in zip(cuts, v, t)]}


def length_check(data: _Data) -> BiasCheck:
    lengths = np.array([f.length for f in data.facts], dtype=np.float64)
    n = len(lengths)
    check = BiasCheck("length", "Document length (deciles of the text's length)", LENGTH_RULE, True)
    if n == 0:
        check.finding = "no pairs"
        return check
    decile = data.decile
    for d in range(10):
        mask = decile == d
        if mask.any():
            lo, hi = int(lengths[mask].min()), int(lengths[mask].max())
            check.groups.append(data.group(f"decile {d + 1} ({lo:,}-{hi:,} chars)", mask))
    long_half = decile >= 5
    half = None
    if long_half.sum() >= data.min_pairs and (~long_half).sum() >= data.min_pairs:
        half = data.boot.contrast(data.excess, long_half)
        check.groups.append(GroupFigures("longer half - shorter half", int(n), len(set(data.qids.tolist())), None,
                                         None, None, half, False))
    scan = length_scan(data, decile)
    if scan is None:
        check.finding = (f"no scan: not enough pairs (each side of a cut needs {data.min_pairs}) or no variation "
                         "in the excess")
        return check
    c = scan["contrast"]
    check.flagged = bool(abs(scan["t"]) > scan["critical"] and abs(c.value) >= MATERIAL)
    edge = int(lengths[decile == scan["cut"]].min()) if (decile == scan["cut"]).any() else 0
    check.groups.append(GroupFigures(f"from decile {scan['cut'] + 1} on (>= {edge:,} chars) - below it", int(n),
                                     len(set(data.qids.tolist())), None, None, None, c, check.flagged))
    half_note = f"; longer - shorter half {_fmt(half)}" if half is not None else ""
    if check.flagged:
        way = "more lenient" if c.value > 0 else "stricter"
        check.finding = (f"the machine is {way} on longer documents, from decile {scan['cut'] + 1} on "
                         f"(>= {edge:,} chars): "
                         f"excess {_fmt(c)} grades, simultaneous 95% band over the cuts{half_note}")
    else:
        check.finding = (f"no lean by length at any decile cut: largest at decile {scan['cut'] + 1}, excess "
                         f"{_fmt(c)} grades (simultaneous 95% band){half_note}")
    return check


def _group_vs_rest(data: _Data, key: str, title: str, groups: dict[str, np.ndarray], what: str) -> BiasCheck:
    m = sum(1 for mask in groups.values() if mask.sum() >= data.min_pairs and (~mask).sum() >= data.min_pairs)
    conf = 1.0 - FAMILY_ALPHA / max(m, 1)
    check = BiasCheck(key, title, f"each {what} against the rest (excess signed difference): flagged when one "
                      f"contrast's Bonferroni interval ({100 * conf:.1f}% for {m} groups) excludes 0 and it is at "
                      f"least {MATERIAL:.2f} grades; {LENGTH_ADJUSTMENT}", True)
    worst = None
    for name, mask in sorted(groups.items()):
        contrast = None
        if mask.sum() >= data.min_pairs and (~mask).sum() >= data.min_pairs:
            contrast = data.boot.contrast(data.group_excess, mask, confidence=conf)
        g = data.group(name, mask, contrast=contrast)
        g.flagged = _material(contrast)
        check.groups.append(g)
        if g.flagged and (worst is None or abs(contrast.value) > abs(worst.contrast.value)):
            worst = g
    check.flagged = worst is not None
    if worst is not None:
        way = "more lenient" if worst.contrast.value > 0 else "stricter"
        check.finding = (f"the machine is {way} on {what} {worst.name}: excess {_fmt(worst.contrast)} grades "
                         "against the rest, within length deciles")
    elif m == 0:
        check.finding = f"not enough pairs to test a {what} (each side needs {data.min_pairs})"
    else:
        check.finding = f"no {what} stands out"
    return check


def _described(data: _Data, key: str, title: str, groups: dict[str, np.ndarray], *,
               stale: Callable[[str], bool] | None = None) -> BiasCheck:
    check = BiasCheck(key, title, "shown, not tested", False)
    for name, mask in groups.items():
        g = data.group(name, mask)
        g.stale = bool(stale and stale(name))
        check.groups.append(g)
    return check


def bias_checks(facts: Sequence[PairFacts], human: Sequence[int], machine: Sequence[int], *, boot: Bootstrap,
                min_pairs: int, current_version: str | None = None) -> list[BiasCheck]:
    """Every bias check on the compared pairs (``facts[i]``, human grade ``human[i]``, machine grade
    ``machine[i]``), in a fixed order: length, stratum, shape, run, rank, model."""
    data = _Data(facts, human, machine, boot, min_pairs)
    n = len(data.facts)
    out = [length_check(data)]
    strata = sorted({f.stratum for f in data.facts})
    out.append(_group_vs_rest(data, "stratum", "Stratum", {
        s: np.array([f.stratum == s for f in data.facts], dtype=bool) for s in strata}, "stratum"))
    shapes = sorted({f.shape for f in data.facts if f.shape is not None})
    if shapes:
        out.append(_group_vs_rest(data, "shape", "Query shape", {
            s: np.array([f.shape == s for f in data.facts], dtype=bool) for s in shapes}, "query shape"))
    runs = sorted({r for f in data.facts for r in f.systems})
    out.append(_group_vs_rest(data, "run", "Run that retrieved the document", {
        r: np.array([r in f.systems for f in data.facts], dtype=bool) for r in runs}, "run"))
    best = np.array([min(f.systems.values()) if f.systems else 0 for f in data.facts])
    bands = {}
    for lo, hi in RANK_BANDS:
        name = f"rank {lo}" if lo == hi else (f"rank {lo}-{hi}" if hi else f"rank {lo}+")
        mask = (best >= lo) & (best <= (hi if hi else 10**9))
        if mask.any():
            bands[name] = mask
    if n and (best == 0).any():
        bands["not retrieved (seed)"] = best == 0
    out.append(_described(data, "rank", "Best rank at which a run retrieved the document", bands))
    models = sorted({f.model or "(none)" for f in data.facts})
    out.append(_described(data, "model", "Model", {
        md: np.array([(f.model or "(none)") == md for f in data.facts], dtype=bool) for md in models}))
    return out
