"""The effect of machine labels on the decision.

- :func:`qrels_from` yields the project's qrels from ``human`` labels (the final human labels),
  ``machine:NAME`` (the machine's labels, current prompt version) or ``filled:NAME`` (human labels
  where they exist, the machine's elsewhere): ``golden stats metrics`` and ``golden stats compare --qrels-from``.
- :func:`ranking_figures` ranks the project's runs under human and under machine (and filled)
  labels, on the runs' rankings as pooled (:mod:`curation.store.provenance`: run -> rank, to the pool depth)
  and on the queries with human labels: Kendall's tau between the two rankings of the runs
  (scipy.stats.kendalltau), the pairs of runs whose order swaps (and how many of those the human
  labels call significant: :func:`curation.evaluate.stats.compare` for every pair, corrected as one
  family by :func:`curation.evaluate.multiple.compare_many`, Holm by default), and each pair of runs'
  verdict under both.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import combinations

from sqlmodel import Session

from curation.store.models import Project

SPEC_HELP = "human, machine:NAME or filled:NAME"


def parse_spec(spec: str) -> tuple[str, str | None]:
    """``human`` -> ("human", None); ``machine:NAME`` / ``filled:NAME`` -> (kind, NAME)."""
    kind, _, name = (spec or "").partition(":")
    if kind == "human" and not name:
        return kind, None
    if kind in ("machine", "filled") and name:
        return kind, name
    raise ValueError(f"qrels-from: {spec!r} is not {SPEC_HELP}")


def labels_from(session: Session, project: Project, spec: str) -> dict[tuple[str, str], int]:
    """``{(qid, docid): grade}`` of ``spec`` (see :func:`qrels_from`)."""
    from curation.machine.labels import human_grades, load_machine_rows, machine_grades

    kind, name = parse_spec(spec)
    human = human_grades(session, project) if kind in ("human", "filled") else {}
    if kind == "human":
        return human
    machine = machine_grades(load_machine_rows(session, project, name))
    if kind == "machine":
        return machine
    return {**machine, **human}


def qrels_from(session: Session, project: Project, spec: str) -> dict[str, dict[str, int]]:
    """The qrels ``{qid: {docid: grade}}`` of ``spec``: ``human`` (final human labels, policy
    adjudicated), ``machine:NAME`` or ``filled:NAME`` (human where there is one, else the machine's)."""
    out: dict[str, dict[str, int]] = {}
    for (q, d), g in sorted(labels_from(session, project, spec).items()):
        out.setdefault(q, {})[d] = g
    return out


@dataclass
class PairVerdict:
    a: str
    b: str
    human_delta: float
    human_verdict: str
    other_delta: float
    other_verdict: str

    @property
    def swapped(self) -> bool:
        """The two labels order the runs the opposite way (a tie under either is not a swap)."""
        return self.human_delta * self.other_delta < 0

    @property
    def changed(self) -> bool:
        return self.human_verdict != self.other_verdict

    def as_dict(self) -> dict:
        return {"a": self.a, "b": self.b, "human_delta": self.human_delta, "human_verdict": self.human_verdict,
                "other_delta": self.other_delta, "other_verdict": self.other_verdict, "swapped": self.swapped,
                "verdict_changed": self.changed}


@dataclass
class RankingComparison:
    labels: str  # "machine" or "filled"
    means: dict[str, float]  # run -> mean metric under these labels
    kendall_tau: float | None
    kendall_p: float | None
    pairs: list[PairVerdict] = field(default_factory=list)
    correction: str = "holm"  # how the pairs' verdicts are corrected for their number (curation.evaluate.multiple)

    @property
    def swapped(self) -> int:
        return sum(p.swapped for p in self.pairs)

    @property
    def swapped_significant(self) -> int:
        from curation.evaluate.stats import VERDICT_A, VERDICT_B

        return sum(p.swapped and p.human_verdict in (VERDICT_A, VERDICT_B) for p in self.pairs)

    @property
    def verdicts_changed(self) -> int:
        return sum(p.changed for p in self.pairs)

    def as_dict(self) -> dict:
        return {"labels": self.labels, "means": self.means, "kendall_tau": self.kendall_tau,
                "kendall_p": self.kendall_p, "correction": self.correction, "swapped_pairs": self.swapped,
                "swapped_significant_pairs": self.swapped_significant, "verdicts_changed": self.verdicts_changed,
                "pairs": [p.as_dict() for p in self.pairs]}


@dataclass
class RankingFigures:
    metric: str
    queries: int
    runs: list[str]
    human_means: dict[str, float]
    comparisons: list[RankingComparison]
    note: str | None = None

    def as_dict(self) -> dict:
        return {"metric": self.metric, "queries": self.queries, "runs": self.runs, "human_means": self.human_means,
                "comparisons": [c.as_dict() for c in self.comparisons], "note": self.note}


def pooled_runs(facts: Mapping) -> dict[str, dict[str, list[str]]]:
    """``{run: {qid: [docid by rank]}}`` from the pairs' stored provenance (ranks to the pool depth)."""
    ranked: dict[str, dict[str, list[tuple[int, str]]]] = {}
    for (q, d), f in facts.items():
        for run, rank in f.systems.items():
            ranked.setdefault(run, {}).setdefault(q, []).append((int(rank), d))
    return {run: {q: [d for _, d in sorted(v)] for q, v in per.items()} for run, per in sorted(ranked.items())}


def _scores(runs, qrels, qids, metric, rel_level):
    from curation.evaluate.metrics import evaluate

    full = {q: dict(qrels.get(q, {})) for q in qids}
    return {name: evaluate(r, full, [metric], rel_level=rel_level, name=name)[metric] for name, r in runs.items()}


def kendall(a: Mapping[str, float], b: Mapping[str, float]) -> tuple[float | None, float | None]:
    """Kendall's tau (tau-b, scipy.stats.kendalltau) between two scorings of the same runs."""
    from scipy.stats import kendalltau

    names = sorted(a)
    if len(names) < 2:
        return None, None
    res = kendalltau([a[n] for n in names], [b[n] for n in names])
    tau, p = float(res.statistic), float(res.pvalue)
    return (None if tau != tau else tau), (None if p != p else p)


def ranking_figures(facts: Mapping, human: Mapping[tuple[str, str], int], machine: Mapping[tuple[str, str], int], *,
                    metric: str = "ndcg@10", resamples: int = 1000, seed: int = 0, rel_level: int = 1,
                    correction: str = "holm") -> RankingFigures | None:
    """The runs ranked under the human labels, the machine's and the filled ones (see the module's
    docstring); None when the pool holds fewer than two runs or no query has a human label. Each
    labelling's verdicts over all pairs are corrected as one family (``correction``)."""
    from curation.evaluate.multiple import compare_many

    runs = pooled_runs(facts)
    qids = sorted({q for q, _ in human})
    if len(runs) < 2 or not qids:
        return None
    def as_qrels(labels):
        out: dict[str, dict[str, int]] = {}
        for (q, d), g in labels.items():
            out.setdefault(q, {})[d] = g
        return out
    human_q = as_qrels(human)
    h_scores = _scores(runs, human_q, qids, metric, rel_level)
    h_means = {n: s.mean for n, s in h_scores.items()}
    names = sorted(runs)

    def family(scores):
        fam = compare_many([scores[n] for n in names], correction=correction, resamples=resamples, seed=seed)
        return {(r.comparison.name_a, r.comparison.name_b): r for r in fam.rows}

    human_family = family(h_scores)
    comparisons = []
    for label, other in (("machine", as_qrels(machine)), ("filled", as_qrels({**machine, **human}))):
        o_scores = _scores(runs, other, qids, metric, rel_level)
        o_means = {n: s.mean for n, s in o_scores.items()}
        tau, p = kendall(h_means, o_means)
        comp = RankingComparison(label, o_means, tau, p, correction=correction)
        other_family = family(o_scores)
        for a, b in combinations(names, 2):
            ch, co = human_family[(a, b)], other_family[(a, b)]
            comp.pairs.append(PairVerdict(a, b, ch.comparison.delta, ch.verdict, co.comparison.delta, co.verdict))
        comparisons.append(comp)
    return RankingFigures(metric, len(qids), sorted(runs), h_means, comparisons,
                          "runs as pooled (their rankings to the pool depth), on the queries with human labels")
