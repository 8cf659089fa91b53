"""The agreement report: everything a lead reads before trusting the judgments, built once for
``golden labels agreement``, ``golden labels agreement --json`` and the ``/lead`` dashboard
(:func:`build_agreement_report`, from the store) or from plain label records
(:func:`agreement_report`).

It holds the measures of :mod:`curation.agree.measures` for each pair of judges and for all judges
together (with the confusion matrices), a :class:`Verdict` that reads the percent agreement
against the thresholds, each judge's label distribution, agreement per stratum of the queries and
over time (rolling, in judging order, to show drift), and each judge's median seconds per judgment
and share of decisions under 2 seconds. Its defaults (cut from the scale, thresholds, resamples)
are those of :mod:`curation.agree.settings`.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from itertools import combinations

import numpy as np
from sqlmodel import Session

from curation.agree.adjudication import QueueCounts, queue_counts
from curation.agree.labels import Label, as_seconds, latest_labels, load_judgments, overlap_only, query_strata
from curation.agree.measures import Agreement, Estimate, check_bootstrap, check_cut, compare_all, compare_pair
from curation.agree.settings import (
    CONFIDENCE,
    DEFAULT_THRESHOLDS,
    DRIFT_WINDOW,
    RESAMPLES,
    SEED,
    Thresholds,
    default_cut,
)
from curation.store import projects
from curation.store.models import Project

__all__ = [
    "Verdict",
    "StratumAgreement",
    "DriftPoint",
    "Timing",
    "Report",
    "read_verdict",
    "label_distributions",
    "per_stratum",
    "drift",
    "judge_timing",
    "agreement_report",
    "agreement_core",
    "build_agreement_report",
]


# --------------------------------------------------------------------------------------- records


@dataclass(frozen=True)
class Verdict:
    band: str  # "usable", "marginal", "not usable", "too few pairs", "undefined"
    message: str
    value: float | None  # the percent agreement read
    on: str  # which agreement was read, e.g. "binary (grade >= 1 relevant)"
    pairs: int
    thresholds: Thresholds
    caveat: str | None = None  # e.g. a high percent agreement that chance explains

    def as_dict(self) -> dict:
        d = asdict(self)
        d["thresholds"] = asdict(self.thresholds)
        return d


@dataclass(frozen=True)
class StratumAgreement:
    stratum: str
    pairs: int
    queries: int
    agreement: Estimate
    alpha_nominal: Estimate
    binary_agreement: Estimate

    def as_dict(self) -> dict:
        return {
            "stratum": self.stratum,
            "pairs": self.pairs,
            "queries": self.queries,
            "agreement": self.agreement.as_dict(),
            "alpha_nominal": self.alpha_nominal.as_dict(),
            "binary_agreement": self.binary_agreement.as_dict(),
        }


@dataclass(frozen=True)
class DriftPoint:
    """Agreement over the ``window`` pairs completed last, after ``index`` pairs were completed
    (a pair is completed when its second judge answers)."""

    index: int
    window: int
    agreement: float
    cumulative: float
    at: str | None = None  # ISO time of the index-th completion, when known


@dataclass(frozen=True)
class Timing:
    judge: str
    judgments: int  # decisions with both a shown and an answered time
    median_seconds: float | None
    share_under_2s: float | None


@dataclass
class Report:
    """Everything a lead reads before trusting the judgments; ``as_dict()`` is the JSON form."""

    scale: list[int]
    cut: int
    judges: list[str]
    pairwise: list[Agreement]
    overall: Agreement
    verdict: Verdict
    distributions: dict[str, dict[int, int]]
    strata: list[StratumAgreement]
    drift: list[DriftPoint]
    timing: list[Timing]
    resamples: int
    seed: int
    confidence: float
    notes: list[str] = field(default_factory=list)
    disagreements: QueueCounts | None = None  # the adjudication queue (from the store only)

    @property
    def graded(self) -> bool:
        return len(self.scale) > 2

    def as_dict(self) -> dict:
        return {
            "scale": self.scale,
            "graded": self.graded,
            "cut": self.cut,
            "judges": self.judges,
            "verdict": self.verdict.as_dict(),
            "overall": self.overall.as_dict(),
            "pairwise": [c.as_dict() for c in self.pairwise],
            "distributions": {j: {str(g): n for g, n in d.items()} for j, d in self.distributions.items()},
            "strata": [s.as_dict() for s in self.strata],
            "drift": [asdict(p) for p in self.drift],
            "timing": [asdict(t) for t in self.timing],
            "bootstrap": {"resamples": self.resamples, "seed": self.seed, "confidence": self.confidence,
                          "unit": "query"},
            "notes": self.notes,
            "disagreements": None if self.disagreements is None else self.disagreements._asdict(),
        }


# ------------------------------------------------------------------------------------ small helpers


def _in_seconds(judgments: Iterable[Label], memo: dict | None = None) -> list[Label]:
    """The records with both times as float seconds, converted once for everything downstream
    (``memo``, by record identity, shares the work between two lists holding the same records)."""
    out = []
    cache: dict = {}
    memo = {} if memo is None else memo
    for j in judgments:
        done = memo.get(id(j))
        if done is not None:
            out.append(done)
            continue
        a, s = j.answered_at, j.shown_at
        if (a is None or type(a) is float) and (s is None or type(s) is float):
            new = j
        else:
            if a is not None and type(a) is not float:
                a = cache[a] if a in cache else cache.setdefault(a, as_seconds(a))
            if s is not None and type(s) is not float:
                s = cache[s] if s in cache else cache.setdefault(s, as_seconds(s))
            new = Label(j.qid, j.docid, j.judge, j.grade, a, s)
        memo[id(j)] = new
        out.append(new)
    return out


def _iso(t) -> str | None:
    if t is None:
        return None
    if isinstance(t, datetime):
        return t.isoformat(timespec="seconds")
    if isinstance(t, float) and t > 1e8:  # seconds since the epoch
        return datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds")
    return str(t)


def _check_scale(scale: Sequence[int] | None, grades: Iterable[int], cut: int) -> list[int]:
    """The scale given, or every integer from the lowest to the highest grade seen, widened so
    that ``cut`` splits it."""
    grades = {int(g) for g in grades}
    if scale is None:
        lo = min(grades | {int(cut) - 1})
        hi = max(grades | {int(cut)})
        return list(range(lo, hi + 1))
    scale = sorted({int(g) for g in scale})
    if len(scale) < 2:
        raise ValueError(f"scale: needs at least two grades, got {scale}")
    outside = sorted(grades - set(scale))
    if outside:
        raise ValueError(f"judgments: grades {outside} are not on the scale {scale}")
    return scale


# ------------------------------------------------------------------------------------ verdict & co




def read_verdict(agreement: Agreement, *, thresholds: Thresholds = DEFAULT_THRESHOLDS, on: str = "binary",
                 cut: int | None = None) -> Verdict:
    """Read percent agreement (``on="binary"``: after the collapse at the cut, how the qrels are
    usually used; ``on="graded"``: on the scale as labelled) against ``thresholds``.

    Bands: ``>= usable``: usable for a paired comparison of systems; ``marginal`` in between;
    ``< marginal``: the definition of relevance is not usable and more queries will not fix it
    (tighten the guidelines and re-judge the overlap set).
    """
    if on not in ("binary", "graded"):
        raise ValueError(f"on: expected 'binary' or 'graded', got {on!r}")
    est = (agreement.binary if on == "binary" else agreement.measures)["agreement"]
    what = f"binary (grade >= {cut} relevant)" if on == "binary" and cut is not None else on
    if not est.defined:
        return Verdict("undefined", f"no verdict: {est.undefined}", None, what, agreement.pairs, thresholds)
    v = est.value
    pct = f"{100 * v:.1f}%"
    if agreement.pairs < thresholds.min_pairs:
        return Verdict("too few pairs", (
            f"{agreement.pairs} shared pairs, fewer than {thresholds.min_pairs}: agreement {pct} is not yet "
            "a reliable figure; judge more of the overlap set"), v, what, agreement.pairs, thresholds)
    if v >= thresholds.usable:
        band, msg = "usable", f"agreement {pct} >= {100 * thresholds.usable:.0f}%: usable for a paired comparison"
    elif v >= thresholds.marginal:
        band, msg = "marginal", (
            f"agreement {pct} is between {100 * thresholds.marginal:.0f}% and {100 * thresholds.usable:.0f}%: "
            "marginal; read the disagreements and consider clarifying the guidelines")
    else:
        band, msg = "not usable", (
            f"agreement {pct} < {100 * thresholds.marginal:.0f}%: the definition of relevance is not usable; "
            "more queries will not fix it: revise the guidelines and re-judge the overlap set")
    caveat = None
    alpha = (agreement.binary if on == "binary" else agreement.measures).get("alpha_nominal")
    if band != "not usable" and alpha is not None:
        if not alpha.defined:
            caveat = f"Krippendorff's alpha is undefined ({alpha.undefined}): the percent agreement says little"
        elif alpha.value < thresholds.chance_alpha:
            caveat = (f"Krippendorff's alpha is {alpha.value:.2f} (< {thresholds.chance_alpha:.2f}): beyond chance the "
                      "judges hardly agree; the percent agreement mostly reflects how common one grade is")
    return Verdict(band, msg, v, what, agreement.pairs, thresholds, caveat)


def label_distributions(labels: Mapping[tuple[str, str], Mapping[str, Label]], judges: Sequence[str],
                        scale: Sequence[int]) -> dict[str, dict[int, int]]:
    """Each judge's count of pairs per grade (latest labels), every grade of the scale present."""
    out = {j: {int(g): 0 for g in scale} for j in judges}
    for d in labels.values():
        for j, rec in d.items():
            if j in out:
                out[j][int(rec.grade)] += 1
    return out


def per_stratum(labels: Mapping[tuple[str, str], Mapping[str, Label]], judges: Sequence[str], *,
                strata: Mapping[str, str], scale: Sequence[int], cut: int) -> list[StratumAgreement]:
    """All-judges agreement within each stratum of the queries (``strata``: qid -> stratum key;
    queries not in it fall in ``"(none)"``); no bootstrap here (strata are small)."""
    groups: dict[str, dict] = defaultdict(dict)
    for u, d in labels.items():
        groups[strata.get(u[0], "(none)")][u] = d
    out = []
    for name in sorted(groups):
        c = compare_all(groups[name], judges, scale=scale, cut=cut, resamples=0)
        out.append(StratumAgreement(name, c.pairs, c.queries, c.measures["agreement"], c.measures["alpha_nominal"],
                                    c.binary["agreement"]))
    return out


def drift(labels: Mapping[tuple[str, str], Mapping[str, Label]], judges: Sequence[str], *, window: int = DRIFT_WINDOW,
          max_points: int = 200) -> list[DriftPoint]:
    """Rolling percent agreement (all judges) over the last ``window`` pairs, in the order the pairs
    were completed (the time their last label was given), so a drop shows when judges drifted apart.
    At most ``max_points`` evenly spaced points (always including the last)."""
    if window < 1:
        raise ValueError(f"window: must be at least 1, got {window}")
    if max_points < 1:
        raise ValueError(f"max_points: must be at least 1, got {max_points}")
    done = []
    for pos, d in enumerate(labels.values()):
        recs = [d[j] for j in judges if j in d]
        if len(recs) < 2:
            continue
        t, last, unknown = float("-inf"), recs[0], False
        for r in recs:
            x = as_seconds(r.answered_at)
            if x is None:
                unknown = True
            elif x >= t:
                t, last = x, r
        done.append((float("inf") if unknown else t, pos, len({r.grade for r in recs}) == 1, last.answered_at))
    if not done:
        return []
    done.sort(key=lambda x: (x[0], x[1]))
    agree = np.array([x[2] for x in done], dtype=np.float64)
    cs = np.concatenate([[0.0], np.cumsum(agree)])
    n = len(done)
    idx = sorted(set(np.linspace(0, n - 1, num=min(n, max_points)).round().astype(int).tolist()))
    points = []
    for i in idx:
        lo = max(0, i + 1 - window)
        size = i + 1 - lo
        points.append(DriftPoint(i + 1, size, float((cs[i + 1] - cs[lo]) / size), float(cs[i + 1] / (i + 1)),
                                 _iso(done[i][3])))
    return points


def judge_timing(judgments: Iterable[Label], *, fast: float = 2.0) -> list[Timing]:
    """Each judge's median seconds from showing a pair to answering it, and the share of decisions
    taken in under ``fast`` seconds (every non-skipped record with both times, label changes too)."""
    secs: dict[str, list[float]] = defaultdict(list)
    judges: list[str] = []
    for j in judgments:
        if j.judge not in secs:
            judges.append(j.judge)
            secs[j.judge] = []
        if j.grade is None:
            continue
        a, s = as_seconds(j.answered_at), as_seconds(j.shown_at)
        if a is None or s is None or a < s:
            continue
        secs[j.judge].append(a - s)
    out = []
    for judge in sorted(judges):
        xs = secs[judge]
        if not xs:
            out.append(Timing(judge, 0, None, None))
        else:
            out.append(Timing(judge, len(xs), float(statistics.median(xs)), sum(x < fast for x in xs) / len(xs)))
    return out


def agreement_report(
    judgments: Iterable[Label],
    *,
    scale: Sequence[int] | None = None,
    cut: int | None = None,
    strata: Mapping[str, str] | None = None,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
    verdict_on: str = "binary",
    resamples: int = RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
    window: int = DRIFT_WINDOW,
    timing_judgments: Iterable[Label] | None = None,
) -> Report:
    """The lead's whole agreement picture from judgment records.

    ``scale``: the grades of the label scale (default: every integer from the lowest to the highest
    grade seen); ``cut``: grade >= cut is relevant for the binary figures (as ``trec_eval -l``; default:
    :func:`default_cut` of the scale);
    ``strata``: qid -> stratum for the per-stratum table; ``timing_judgments``: the records to time
    the judges on (default: ``judgments``). Bootstrap: ``resamples`` query resamples, ``seed``.
    """
    memo: dict = {}
    judgments = _in_seconds(judgments, memo)
    labels = latest_labels(judgments)
    core = agreement_core(labels, scale=scale, cut=cut, thresholds=thresholds, verdict_on=verdict_on,
                          resamples=resamples, seed=seed, confidence=confidence)
    scale, cut, judges = core.scale, core.cut, core.judges
    return Report(
        scale=scale,
        cut=cut,
        judges=judges,
        pairwise=core.pairwise,
        overall=core.overall,
        verdict=core.verdict,
        distributions=label_distributions(labels, judges, scale),
        strata=per_stratum(labels, judges, strata=strata or {}, scale=scale, cut=cut) if strata is not None else [],
        drift=drift(labels, judges, window=window),
        timing=judge_timing(judgments if timing_judgments is None else _in_seconds(timing_judgments, memo)),
        resamples=resamples,
        seed=seed,
        confidence=confidence,
        notes=core.notes,
    )


@dataclass
class Core:
    """The figures of the report that the export's manifest carries too (:func:`agreement_core`)."""

    scale: list[int]
    cut: int
    judges: list[str]
    pairwise: list[Agreement]
    overall: Agreement
    verdict: Verdict
    notes: list[str]


def agreement_core(
    labels: Mapping[tuple[str, str], Mapping[str, Label]],
    *,
    scale: Sequence[int] | None = None,
    cut: int | None = None,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
    verdict_on: str = "binary",
    resamples: int = RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
) -> Core:
    """The scale and cut, the judges, each pair of judges' agreement, all judges' agreement, the
    verdict and the notes of :func:`agreement_report`, from latest labels (``labels`` as
    :func:`curation.agree.labels.latest_labels` gives them): what the export's manifest summarises,
    without the drift, timing and distributions it does not carry. With two judges the all-judges
    figures are that pair's (as :func:`compare_all` gives them), computed once."""
    scale = _check_scale(scale, (r.grade for d in labels.values() for r in d.values()), 1 if cut is None else cut)
    cut = check_cut(default_cut(scale) if cut is None else cut, scale)
    check_bootstrap(confidence, resamples)
    if verdict_on not in ("binary", "graded"):
        raise ValueError(f"verdict_on: expected 'binary' or 'graded', got {verdict_on!r}")
    judges = sorted({r.judge for d in labels.values() for r in d.values()})
    notes = []
    if len(judges) < 2:
        notes.append("fewer than two judges have labels: agreement needs two" if judges else "no labels yet")
    pairwise = [
        compare_pair(labels, a, b, scale=scale, cut=cut, resamples=resamples, seed=seed, confidence=confidence)
        for a, b in combinations(judges, 2)
    ]
    if len(pairwise) == 1:  # what compare_all returns for two judges, without computing it again
        pc = pairwise[0]
        overall = Agreement(pc.judges, pc.pairs, pc.queries, pc.measures, pc.binary)
    else:
        overall = compare_all(labels, judges, scale=scale, cut=cut, resamples=resamples, seed=seed,
                              confidence=confidence)
    if judges and len(judges) >= 2 and overall.pairs == 0:
        notes.append("no pair was labelled by two judges: assign an overlap set (golden judging assign --overlap)")
    on = verdict_on if len(scale) > 2 else "graded"
    return Core(scale, cut, judges, pairwise, overall,
                read_verdict(overall, thresholds=thresholds, on=on, cut=cut), notes)


def build_agreement_report(
    session: Session,
    project: Project,
    *,
    cut: int | None = None,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
    verdict_on: str = "binary",
    resamples: int = RESAMPLES,
    seed: int = SEED,
    window: int = DRIFT_WINDOW,
    disagreements: QueueCounts | None = None,
) -> Report:
    """The agreement report of ``project``, as ``golden labels agreement`` (text and ``--json``) and the
    ``/lead`` dashboard show it: the overlap set's labels (the overlap assignments and every pair two
    judges labelled) on the project's scale, per stratum of the queries, the judges timed on all their
    judgments, with the disagreements waiting for a lead and those adjudicated.
    ``cut`` None: :func:`curation.agree.settings.default_cut` of the scale. ``disagreements``: the
    queue's counts when the caller has read them already (:func:`curation.agree.adjudication.open_queues`
    in the same transaction), else they are read here."""
    every = load_judgments(session, project, seconds=True)  # times as seconds: agreement_report wants them so
    report = agreement_report(
        overlap_only(session, project, every), scale=[g.grade for g in projects.grades(project)], cut=cut,
        strata=query_strata(session, project), thresholds=thresholds, verdict_on=verdict_on, resamples=resamples,
        seed=seed, window=window, timing_judgments=every,
    )
    report.disagreements = queue_counts(session, project) if disagreements is None else disagreements
    return report
