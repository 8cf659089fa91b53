"""The calibration report of a machine judge against the human labels: ``golden labels calibrate`` (text,
``--json``, ``--html``) and the lead's "Machine judges" panel are built by ONE function,
:func:`build_calibration_report` (from the store), with the defaults of this module and of
:mod:`curation.agree.settings` (1,000 query resamples, seed 0, 95 % intervals).

Compared pairs: every pair with a final human label (:func:`curation.agree.labels.final_labels`,
policy ``adjudicated``; seed-only labels are not human labels) and a label of the machine under its
current prompt version (the one imported last; the machine's label is the majority of its samples,
:func:`curation.machine.labels.machine_grades`). The report holds:

- the headline: exact and within-one-grade agreement and the mean signed difference (machine -
  human), with intervals; fewer than :data:`MIN_PAIRS` compared pairs and the report says "not
  enough pairs" instead of a figure;
- agreement (percent, Cohen's kappa unweighted and weighted by scikit-learn, Krippendorff's alpha by
  krippendorff: :func:`curation.agree.measures.compare_pair`) next to the human-human figures on
  the overlap set, and the verdict (:func:`machine_verdict`, its rule stated);
- the confusion matrix (rows: human grade, columns: machine grade) and the signed differences;
- the bias checks of :mod:`curation.machine.bias`;
- repeat consistency when the machine gave several samples (:func:`repeat_figures`);
- calibration of the stated probabilities (scikit-learn's ``calibration_curve`` and
  ``brier_score_loss``) and the confidence-band table (:func:`probability_figures`);
- the prompt versions compared on the pairs both labelled, older ones marked stale;
- the effect on the decision: the ranking of the project's runs under human and machine labels
  (:mod:`curation.machine.ranking`).

One module because it is the one report: every figure of the panel and of
``golden labels calibrate`` is computed here, with one set of defaults.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np
from sqlalchemy import func
from sqlmodel import Session, select

from curation.agree.labels import Label, latest_labels, load_judgments
from curation.agree.measures import Agreement, Estimate, compare_all, compare_pair, krippendorff_alpha
from curation.agree.settings import CONFIDENCE, RESAMPLES, SEED, default_cut
from curation.machine.bias import BiasCheck, PairFacts, bias_checks
from curation.machine.figures import Bootstrap
from curation.machine.labels import (
    MACHINE_KIND,
    MachineRow,
    human_grades,
    load_machine_rows,
    machine_grades,
    majority,
    prompt_versions,
    samples_by_pair,
)
from curation.store.lookups import join_pair_text
from curation.store.models import Document, PoolPair, Project, Query
from curation.store.projects import grades
from curation.store.provenance import RANKS, decode_ranks

MIN_PAIRS = 30  # below this many compared pairs the report says "not enough pairs"
REPEAT_TOLERANCE = 0.05  # more pairs than this changing label between samples is flagged
REPEAT_KS = (1, 3, 5)
BAND_EDGES = (0.0, 0.5, 0.7, 0.8, 0.9, 0.95)
RELIABILITY_BINS = 10
HUMAN = "humans"


@dataclass
class MachineVerdict:
    band: str  # "as consistent as a second person", "less consistent than a second person", ...
    message: str
    rule: str

    def as_dict(self) -> dict:
        return {"band": self.band, "message": self.message, "rule": self.rule}


VERDICT_RULE = (
    "the machine's exact agreement with the final human labels is compared with the humans' own exact "
    "agreement on the overlap set: at or above the lower end of the humans' 95% interval it is \"as consistent "
    "as a second person\"; with its own interval wholly below that lower end it is \"less consistent than a "
    "second person\"; in between, \"probably less consistent\" (intervals overlap). Fewer than "
    f"{MIN_PAIRS} compared pairs: \"not enough pairs\"."
)


def machine_verdict(machine: Estimate | None, humans: Estimate | None, pairs: int, min_pairs: int = MIN_PAIRS
                    ) -> MachineVerdict:
    """The verdict of :data:`VERDICT_RULE` from the machine's and the humans' exact agreement."""
    if machine is None or pairs < min_pairs or machine.value is None:
        return MachineVerdict("not enough pairs", f"not enough pairs: {pairs} compared, {min_pairs} needed",
                              VERDICT_RULE)
    if humans is None or humans.value is None:
        return MachineVerdict("no human baseline", "no human-human agreement on an overlap set to compare with; "
                              "assign an overlap set (golden judging assign --overlap N)", VERDICT_RULE)
    h_low = humans.low if humans.low is not None else humans.value
    m, mh = machine.value, machine.high if machine.high is not None else machine.value
    detail = f"machine {100 * m:.1f}% vs humans {100 * humans.value:.1f}% (interval from {100 * h_low:.1f}%)"
    if m >= h_low:
        return MachineVerdict("as consistent as a second person", detail, VERDICT_RULE)
    if mh < h_low:
        return MachineVerdict("less consistent than a second person", detail, VERDICT_RULE)
    return MachineVerdict("probably less consistent", detail, VERDICT_RULE)


@dataclass
class RepeatFigures:
    pairs: int  # pairs with two or more samples
    samples: int  # the most samples a pair has
    all_same: Estimate  # share of pairs whose samples all agree
    changed: Estimate  # share whose label changes between samples
    alpha: Estimate  # Krippendorff's alpha (nominal) between samples
    majority_of_k: list[dict]  # {"k", "pairs", "agreement": Estimate | None}
    flagged: bool
    rule: str = f"flagged when more than {100 * REPEAT_TOLERANCE:.0f}% of pairs change label between samples"

    def as_dict(self) -> dict:
        return {"pairs": self.pairs, "samples": self.samples, "all_same": self.all_same.as_dict(),
                "changed": self.changed.as_dict(), "alpha": self.alpha.as_dict(), "flagged": self.flagged,
                "rule": self.rule,
                "majority_of_k": [{"k": r["k"], "pairs": r["pairs"],
                                   "agreement": None if r["agreement"] is None else r["agreement"].as_dict()}
                                  for r in self.majority_of_k]}


@dataclass
class ProbabilityFigures:
    pairs: int
    brier: float  # confidence vs "the machine's label equals the human's"
    ece: float  # expected calibration error of the same (:func:`expected_calibration_error`)
    reliability: list[dict]  # {"predicted", "observed", "pairs"} per non-empty bin
    brier_relevant: float | None  # P(grade >= cut) vs human grade >= cut (full probabilities only)
    reliability_relevant: list[dict] | None
    bands: list[dict]  # {"low", "high", "pairs", "agreement", "accepted_pairs", "accepted_agreement", "to_people"}
    ece_relevant: float | None = None

    def as_dict(self) -> dict:
        def est(e):
            return None if e is None else e.as_dict()
        return {"pairs": self.pairs, "brier": self.brier, "ece": self.ece, "ece_relevant": self.ece_relevant,
                "reliability": self.reliability, "brier_relevant": self.brier_relevant,
                "reliability_relevant": self.reliability_relevant,
                "bands": [{**b, "agreement": est(b["agreement"]), "accepted_agreement": est(b["accepted_agreement"])}
                          for b in self.bands]}


@dataclass
class VersionFigures:
    version: str | None
    pairs: int  # pairs labelled under the version
    compared: int  # of which with a human label
    agreement: Estimate | None  # exact agreement with humans (None: not enough pairs)
    stale: bool
    shared: int = 0  # pairs labelled under this version and the current one
    same_as_current: Estimate | None = None  # share of shared pairs given the same label
    agreement_shared: Estimate | None = None  # this version's agreement with humans on shared pairs
    current_agreement_shared: Estimate | None = None  # the current version's, on the same pairs

    def as_dict(self) -> dict:
        def est(e):
            return None if e is None else e.as_dict()
        return {"version": self.version, "pairs": self.pairs, "compared": self.compared,
                "agreement": est(self.agreement), "stale": self.stale, "shared": self.shared,
                "same_as_current": est(self.same_as_current), "agreement_shared": est(self.agreement_shared),
                "current_agreement_shared": est(self.current_agreement_shared)}


@dataclass
class CalibrationReport:
    project: str
    machine: str
    scale: list[int]
    cut: int
    min_pairs: int
    resamples: int
    seed: int
    confidence: float
    prompt_version: str | None
    models: list[str]
    machine_pairs: int  # pairs the machine labelled under the current prompt version
    human_pairs: int  # pairs with a final human label
    pairs: int  # compared
    queries: int
    headline: dict[str, Estimate] | None
    agreement: Agreement | None
    human_human: Agreement | None
    human_pairwise: list[Agreement]
    verdict: MachineVerdict
    confusion: list[list[int]]
    signed: dict[int, int]
    lean: str
    bias: list[BiasCheck]
    repeats: RepeatFigures | None
    probabilities: ProbabilityFigures | None
    versions: list[VersionFigures]
    ranking: object | None = None  # curation.machine.ranking.RankingFigures
    notes: list[str] = field(default_factory=list)
    machine_vs_people: list[Agreement] = field(default_factory=list)  # each person against the machine, overlap set
    kind: str = MACHINE_KIND
    circularity: list[dict] = field(default_factory=list)  # runs built with the judge's model family
    stale_labels: int = 0  # labels made by `golden machine run` under an older prompt (guidelines, need)

    @property
    def enough(self) -> bool:
        return self.headline is not None

    @property
    def failed_checks(self) -> list[str]:
        out = [c.key for c in self.bias if c.flagged]
        if self.repeats is not None and self.repeats.flagged:
            out.append("repeats")
        return out

    @property
    def checks_run(self) -> list[str]:
        """The checks that could run (a bias check needs enough pairs in its groups; the repeats
        check needs pairs labelled more than once): "no failed check" means something only when
        this is not empty."""
        out = [c.key for c in self.bias if c.tested and any(g.contrast is not None for g in c.groups)]
        if self.repeats is not None:
            out.append("repeats")
        return out

    @property
    def checks_summary(self) -> str:
        """The checks' outcome in one sentence, as the CLI and the Machine judges page print it."""
        if self.failed_checks:
            return "failed checks: " + ", ".join(self.failed_checks)
        if self.checks_run:
            return f"failed checks: none of the {len(self.checks_run)} that could run ({', '.join(self.checks_run)})"
        return "no check could run: too few pairs with both a human and a machine label"

    def as_dict(self) -> dict:
        def est(e):
            return None if e is None else e.as_dict()
        return {
            "project": self.project, "machine": self.machine, "kind": self.kind, "scale": self.scale, "cut": self.cut,
            "prompt_version": self.prompt_version, "models": self.models,
            "bootstrap": {"resamples": self.resamples, "seed": self.seed, "confidence": self.confidence,
                          "unit": "query"},
            "min_pairs": self.min_pairs, "machine_pairs": self.machine_pairs, "human_pairs": self.human_pairs,
            "pairs": self.pairs, "queries": self.queries, "enough_pairs": self.enough,
            "headline": None if self.headline is None else {k: est(v) for k, v in self.headline.items()},
            "agreement": None if self.agreement is None else self.agreement.as_dict(),
            "human_human": None if self.human_human is None else self.human_human.as_dict(),
            "human_pairwise": [a.as_dict() for a in self.human_pairwise],
            "machine_vs_people": [a.as_dict() for a in self.machine_vs_people],
            "verdict": self.verdict.as_dict(),
            "confusion": {"rows": "human grade", "columns": "machine grade", "matrix": self.confusion},
            "signed_differences": {str(k): v for k, v in sorted(self.signed.items())},
            "lean": self.lean,
            "bias_checks": [c.as_dict() for c in self.bias],
            "repeats": None if self.repeats is None else self.repeats.as_dict(),
            "probabilities": None if self.probabilities is None else self.probabilities.as_dict(),
            "prompt_versions": [v.as_dict() for v in self.versions],
            "ranking": None if self.ranking is None else self.ranking.as_dict(),
            "failed_checks": self.failed_checks,
            "checks_run": self.checks_run,
            "checks_summary": self.checks_summary,
            "notes": self.notes,
            "figures_on": f"prompt version {self.prompt_version}" if self.prompt_version else "no prompt version",
            "circularity": self.circularity,
            "stale_labels": self.stale_labels,
        }


# ----------------------------------------------------------------------------------- the parts


def _labels(units, human: Mapping, machine: Mapping) -> dict:
    return {u: {HUMAN: Label(u[0], u[1], HUMAN, human[u]), MACHINE_KIND: Label(u[0], u[1], MACHINE_KIND, machine[u])}
            for u in units}


def _exact(units, human, machine, boot_args: dict, min_pairs: int) -> Estimate | None:
    units = list(units)
    if len(units) < min_pairs:
        return None
    b = Bootstrap([u[0] for u in units], **boot_args)
    return b.mean(np.array([human[u] == machine[u] for u in units], dtype=float))


def repeat_figures(rows: Sequence[MachineRow], version: str | None, human: Mapping, *, boot_args: dict,
                   scale: Sequence[int], min_pairs: int) -> RepeatFigures | None:
    """Agreement between samples, the share of pairs whose label changes, and the majority of k
    samples against the humans, for k in :data:`REPEAT_KS`; None with fewer than two samples."""
    by_pair = samples_by_pair(rows, version)
    multi = {u: s for u, s in by_pair.items() if len(s) >= 2}
    if not multi:
        return None
    units = sorted(multi)
    boot = Bootstrap([u[0] for u in units], **boot_args)
    same = np.array([len({r.grade for r in multi[u]}) == 1 for u in units], dtype=float)
    most = max(len(s) for s in multi.values())
    rel = np.full((most, len(units)), np.nan)
    for j, u in enumerate(units):
        for i, r in enumerate(multi[u]):
            rel[i, j] = r.grade
    alpha = krippendorff_alpha(rel, scale=scale, level="nominal")
    all_same = boot.mean(same)
    changed = boot.mean(1.0 - same)
    by_k = []
    for k in REPEAT_KS:
        eligible = [u for u, s in by_pair.items() if len(s) >= k and u in human]
        m_k = {u: majority([(r.sample, r.grade) for r in by_pair[u][:k]]) for u in eligible}
        by_k.append({"k": k, "pairs": len(eligible), "agreement": _exact(sorted(eligible), human, m_k, boot_args,
                                                                           min_pairs)})
    return RepeatFigures(len(units), most, all_same, changed, alpha, by_k,
                         bool(changed.value is not None and changed.value > REPEAT_TOLERANCE))


def _reliability(y: np.ndarray, p: np.ndarray) -> list[dict]:
    from sklearn.calibration import calibration_curve

    prob_true, prob_pred = calibration_curve(y, p, n_bins=RELIABILITY_BINS, strategy="uniform")
    bins = np.linspace(0.0, 1.0, RELIABILITY_BINS + 1)
    counts = np.bincount(np.searchsorted(bins[1:-1], p), minlength=RELIABILITY_BINS)  # as calibration_curve bins
    counts = counts[counts > 0]
    return [{"predicted": float(a), "observed": float(b), "pairs": int(n)}
            for a, b, n in zip(prob_pred, prob_true, counts)]


def expected_calibration_error(y: np.ndarray, p: np.ndarray, bins: int = RELIABILITY_BINS) -> float:
    """Expected calibration error (Naeini et al., AAAI 2015; Guo et al., ICML 2017): over ``bins``
    equal-width bins of the stated probability (binned as scikit-learn's ``calibration_curve``
    bins), the pairs' share of each bin times |mean stated probability - observed rate|, summed."""
    y = np.asarray(y, dtype=float)
    p = np.asarray(p, dtype=float)
    if not len(p):
        return float("nan")
    edges = np.linspace(0.0, 1.0, bins + 1)
    which = np.searchsorted(edges[1:-1], p)
    total = 0.0
    for b in np.unique(which):
        sel = which == b
        total += sel.sum() / len(p) * abs(p[sel].mean() - y[sel].mean())
    return float(total)


def probability_figures(rows: Sequence[MachineRow], version: str | None, human: Mapping, machine: Mapping,
                        pool_size: int, *, cut: int, boot_args: dict, min_pairs: int) -> ProbabilityFigures | None:
    """Reliability and Brier score of the machine's stated confidence (the probability it gave its own
    label, averaged over samples) against "its label equals the human's", of P(relevant) against
    the human's relevance when full probabilities were given, and the confidence-band table."""
    from sklearn.metrics import brier_score_loss

    by_pair = samples_by_pair(rows, version)
    conf: dict = {}
    p_rel: dict = {}
    for u, samples in by_pair.items():
        cs = [r.confidence for r in samples if r.confidence is not None]
        if cs:
            conf[u] = round(float(np.mean(cs)), 9)  # 0.95 averaged stays 0.95 for the bands
        ps = [sum(p for g, p in r.probabilities.items() if g >= cut) for r in samples if r.probabilities]
        if ps:
            p_rel[u] = min(1.0, float(np.mean(ps)))
    units = sorted(u for u in conf if u in human and u in machine)
    if not units:
        return None
    y = np.array([human[u] == machine[u] for u in units], dtype=int)
    p = np.array([conf[u] for u in units])
    brier = float(brier_score_loss(y, p, labels=[0, 1]))
    rel_units = sorted(u for u in p_rel if u in human)
    brier_rel = rel_table = ece_rel = None
    if rel_units:
        yr = np.array([human[u] >= cut for u in rel_units], dtype=int)
        pr = np.array([p_rel[u] for u in rel_units])
        brier_rel = float(brier_score_loss(yr, pr, labels=[0, 1]))
        ece_rel = expected_calibration_error(yr, pr)
        rel_table = _reliability(yr, pr)
    bands = []
    all_conf = np.array(list(conf.values()))
    for i, lo in enumerate(BAND_EDGES):
        hi = BAND_EDGES[i + 1] if i + 1 < len(BAND_EDGES) else 1.0
        last = i + 1 == len(BAND_EDGES)
        in_band = [u for u in units if lo <= conf[u] < hi or (last and conf[u] == 1.0)]
        accepted = [u for u in units if conf[u] >= lo]
        bands.append({
            "low": lo, "high": hi, "pairs": len(in_band),
            "agreement": _exact(in_band, human, machine, boot_args, min_pairs),
            "accepted_pairs": len(accepted),
            "accepted_agreement": _exact(accepted, human, machine, boot_args, min_pairs),
            # every pool pair whose machine confidence is below the edge, or that has none, goes to people
            "to_people": int(pool_size - (all_conf >= lo).sum()),
        })
    return ProbabilityFigures(len(units), brier, expected_calibration_error(y, p), _reliability(y, p), brier_rel,
                              rel_table, bands, ece_rel)


def version_figures(rows: Sequence[MachineRow], human: Mapping, *, boot_args: dict, min_pairs: int
                    ) -> list[VersionFigures]:
    """Each prompt version's agreement with the humans, oldest first; every version but the newest
    is stale, and each is compared with the newest on the pairs both labelled."""
    versions = prompt_versions(rows)
    if not versions:
        return []
    current = versions[-1]
    cur = machine_grades(rows, current)
    out = []
    for v in versions:
        g = machine_grades(rows, v)
        compared = sorted(u for u in g if u in human)
        vf = VersionFigures(v, len(g), len(compared), _exact(compared, human, g, boot_args, min_pairs), v != current)
        if v != current:
            shared = sorted(u for u in g if u in cur)
            vf.shared = len(shared)
            if len(shared) >= min_pairs:
                b = Bootstrap([u[0] for u in shared], **boot_args)
                vf.same_as_current = b.mean(np.array([g[u] == cur[u] for u in shared], dtype=float))
            both = [u for u in shared if u in human]
            vf.agreement_shared = _exact(both, human, g, boot_args, min_pairs)
            vf.current_agreement_shared = _exact(both, human, cur, boot_args, min_pairs)
        out.append(vf)
    return out


def human_human(records: Sequence[Label], *, scale: Sequence[int], cut: int, boot_args: dict
                ) -> tuple[Agreement | None, list[Agreement]]:
    """The humans' agreement on the overlap set: all judges together, and each pair of judges."""
    if not records:
        return None, []
    labels = latest_labels(records)
    judges = sorted({j for d in labels.values() for j in d})
    if len(judges) < 2:
        return None, []
    overall = compare_all(labels, judges, scale=scale, cut=cut, **boot_args)
    pairwise = [compare_pair(labels, a, b, scale=scale, cut=cut, **boot_args) for a, b in combinations(judges, 2)]
    return overall, [p for p in pairwise if p.pairs]


def machine_vs_people(records: Sequence[Label], machine: Mapping, *, scale: Sequence[int], cut: int,
                      boot_args: dict) -> list[Agreement]:
    """Each person who labelled the overlap set against the machine on the pairs both labelled: the
    like-for-like figure beside the humans' pairwise agreement (person vs person)."""
    if not records:
        return []
    labels = {u: dict(d) for u, d in latest_labels(records).items()}
    judges = sorted({j for d in labels.values() for j in d})
    for u, d in labels.items():
        if u in machine:
            d[MACHINE_KIND] = Label(u[0], u[1], MACHINE_KIND, machine[u])
    out = [compare_pair(labels, j, MACHINE_KIND, scale=scale, cut=cut, **boot_args) for j in judges]
    return [a for a in out if a.pairs]


def calibration_report(
    *,
    project: str,
    machine: str,
    rows: Sequence[MachineRow],
    human: Mapping[tuple[str, str], int],
    facts: Mapping[tuple[str, str], PairFacts],
    scale: Sequence[int],
    overlap_records: Sequence[Label] = (),
    pool_size: int | None = None,
    cut: int | None = None,
    min_pairs: int = MIN_PAIRS,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
) -> CalibrationReport:
    """The report from plain data: the machine's stored ``rows``, the final human grade of each pair,
    each pair's ``facts`` (length, stratum, shape, runs), the overlap set's human labels."""
    scale = sorted(scale)
    cut = default_cut(scale) if cut is None else cut
    boot_args = {"resamples": resamples, "seed": seed, "confidence": confidence}
    rows = list(rows)
    versions = prompt_versions(rows)
    current = versions[-1] if versions else None
    machine_g = machine_grades(rows, current) if versions else {}
    units = sorted(u for u in machine_g if u in human)
    h = np.array([human[u] for u in units], dtype=np.int64)
    m = np.array([machine_g[u] for u in units], dtype=np.int64)
    enough = len(units) >= min_pairs
    boot = Bootstrap([u[0] for u in units], **boot_args)
    headline = agreement = None
    if enough:
        diff = (m - h).astype(float)
        headline = {"exact": boot.mean(diff == 0), "within_one": boot.mean(np.abs(diff) <= 1),
                    "signed": boot.mean(diff)}
        agreement = compare_pair(_labels(units, human, machine_g), HUMAN, MACHINE_KIND, scale=scale, cut=cut,
                                 **boot_args)
    hh, pairwise = human_human(overlap_records, scale=scale, cut=cut, boot_args=boot_args)
    verdict = machine_verdict(headline["exact"] if headline else None,
                              hh.measures.get("agreement") if hh is not None else None, len(units), min_pairs)
    index = {g: i for i, g in enumerate(scale)}
    confusion = np.zeros((len(scale), len(scale)), dtype=np.int64)
    for a, b in zip(h, m):
        confusion[index[int(a)], index[int(b)]] += 1
    signed = dict(sorted(Counter(int(x) for x in (m - h)).items()))
    lean = "not enough pairs"
    if headline is not None:
        s = headline["signed"]
        if s.low is not None and s.low > 0:
            lean = "more lenient than the humans"
        elif s.high is not None and s.high < 0:
            lean = "stricter than the humans"
        else:
            lean = "neither more lenient nor stricter (the interval holds 0)"
    first_model = {}
    for r in rows:
        if r.prompt_version == current:
            first_model.setdefault((r.qid, r.docid), r.model)
    pf = [facts[u]._replace(model=first_model.get(u)) for u in units]
    bias = bias_checks(pf, h, m, boot=boot, min_pairs=min_pairs, current_version=current) if units else []
    repeats = repeat_figures(rows, current, human, boot_args=boot_args, scale=scale, min_pairs=min_pairs)
    probs = probability_figures(rows, current, human, machine_g, pool_size if pool_size is not None else len(facts),
                                cut=cut, boot_args=boot_args, min_pairs=min_pairs)
    vfs = version_figures(rows, human, boot_args=boot_args, min_pairs=min_pairs)
    models = sorted({r.model for r in rows if r.model is not None})
    notes = []
    if len(versions) > 1:
        notes.append(f"prompt version {current!r} is the newest; figures under older versions are stale")
    return CalibrationReport(
        project, machine, scale, cut, min_pairs, resamples, seed, confidence, current, models, len(machine_g),
        len(human), len(units), len({u[0] for u in units}), headline, agreement, hh, pairwise, verdict,
        confusion.tolist(), signed, lean, bias, repeats, probs, vfs, notes=notes,
        machine_vs_people=machine_vs_people(overlap_records, machine_g, scale=scale, cut=cut, boot_args=boot_args),
    )


# ----------------------------------------------------------------------------------- the store


def pair_facts(session: Session, project: Project) -> dict[tuple[str, str], PairFacts]:
    """Each pool pair's document length, stratum, query shape and runs (with ranks)."""
    rows = session.exec(
        join_pair_text(select(Query.qid, Document.docid, func.length(Document.text), Query.stratum_key,
                              Query.stratum_json, RANKS))
        .where(PoolPair.project_id == project.id)
    ).all()
    out = {}
    for qid, docid, length, key, stratum_json, ranks in rows:
        try:
            stratum = json.loads(stratum_json or "{}")
        except json.JSONDecodeError:
            stratum = {}
        shape = stratum.get("shape") if isinstance(stratum, dict) else None
        try:
            systems = decode_ranks(ranks)
        except json.JSONDecodeError:
            systems = {}
        out[(qid, docid)] = PairFacts(qid, docid, int(length or 0), key or "(none)",
                                      None if shape is None else str(shape), systems)
    return out


def build_calibration_report(
    session: Session,
    project: Project,
    machine: str,
    *,
    min_pairs: int = MIN_PAIRS,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    ranking: bool = True,
    metric: str = "ndcg@10",
) -> CalibrationReport:
    """The calibration report of machine judge ``machine`` in ``project``, as ``golden labels calibrate``
    (text, ``--json``, ``--html``), the lead's panel and the export's manifest show it."""
    scale = [g.grade for g in grades(project)]
    rows = load_machine_rows(session, project, machine)
    human = human_grades(session, project)
    facts = pair_facts(session, project)
    report = calibration_report(
        project=project.name, machine=machine, rows=rows, human=human, facts=facts, scale=scale,
        overlap_records=load_judgments(session, project, overlap_only=True), pool_size=len(facts),
        min_pairs=min_pairs, resamples=resamples, seed=seed,
    )
    _run_notes(session, project, machine, report)
    if ranking:
        from curation.machine.ranking import ranking_figures

        report.ranking = ranking_figures(facts, human, machine_grades(rows), metric=metric, resamples=resamples,
                                         seed=seed, rel_level=report.cut)
    return report


def _run_notes(session: Session, project: Project, machine: str, report: CalibrationReport) -> None:
    """The circularity warning (system runs declared with the judge's model family) and the count
    of stale labels made by runs, as notes of the report."""
    from curation.machine.family import circularity
    from curation.machine.labels import require_machine
    from curation.machine.runs import current_prompt_version, run_models, stale_labels

    report.circularity = circularity(report.models, run_models(session, project))
    for c in report.circularity:
        report.notes.append(f"circularity: run {c['run']} was built with {c['run_model']}, of the judge's own model "
                            f"family ({c['family']}: {c['judge_model']}); its ranking under this judge's labels may "
                            "favour it (Clarke & Dietz)")
    mj = require_machine(session, machine)
    pv = current_prompt_version(session, project, mj)
    if pv is not None:
        report.stale_labels = len(stale_labels(session, project, mj, pv))
        if report.stale_labels:
            report.notes.append(f"{report.stale_labels} labels were made under an older prompt than {pv} (guidelines "
                                f"or information need changed): golden machine run --project {project.name} "
                                f"--machine {machine} --stale ... re-judges them")
