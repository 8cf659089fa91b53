"""More than two judges on a pair: Fleiss' kappa against statsmodels' (the oracle), in the report
the CLI and the lead's page share."""

from __future__ import annotations

import random

import numpy as np
import pytest
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from curation.agree.agreement import agreement_report
from curation.agree.labels import Label, latest_labels
from curation.agree.measures import _resample_counts, compare_all, fleiss_kappa


def k_judge_labels(seed=0, *, queries=12, per_query=10, judges=("a", "b", "c", "d"), k=3, scale=(0, 1, 2),
                   right=0.7):
    """Each pair labelled by ``k`` of ``judges`` (a seeded draw), each right with probability ``right``."""
    rng = random.Random(seed)
    out = []
    for q in range(queries):
        for d in range(per_query):
            truth = rng.choice(scale)
            for j in rng.sample(judges, k):
                out.append(Label(f"q{q}", f"d{d}", j, truth if rng.random() < right else rng.choice(scale)))
    return out


def _table(labels, scale):
    """statsmodels' input: pairs x grades counts, from the labels directly."""
    by_unit = {}
    for lab in labels:
        by_unit.setdefault((lab.qid, lab.docid), {})[lab.judge] = lab.grade
    units = sorted(by_unit)
    return units, np.array([[list(by_unit[u].values()).count(g) for g in scale] for u in units])


@pytest.mark.parametrize("seed,k,scale", [(0, 3, (0, 1, 2)), (1, 4, (0, 1, 2, 3)), (2, 5, (0, 1))])
def test_fleiss_kappa_equals_statsmodels(seed, k, scale):
    labels = k_judge_labels(seed, k=k, judges=tuple("abcdefg"), scale=scale)
    _, table = _table(labels, scale)
    expected = sm_fleiss_kappa(table, method="fleiss")
    c = compare_all(latest_labels(labels), list("abcdefg"), scale=list(scale), cut=1, resamples=0)
    assert abs(c.measures["fleiss_kappa"].value - expected) < 1e-9
    assert c.measures["fleiss_kappa"].note is None
    binary = np.stack([table[:, : list(scale).index(1)].sum(axis=1), table[:, list(scale).index(1):].sum(axis=1)], 1)
    assert abs(c.binary["fleiss_kappa"].value - sm_fleiss_kappa(binary, method="fleiss")) < 1e-9


def test_fleiss_kappa_on_the_most_common_number_of_judges():
    labels = k_judge_labels(3, k=3)
    # Two more judges on the first five pairs: those pairs are left out, and a note says so.
    extra = [Label(lab.qid, lab.docid, j, 2) for lab in labels[:15:3] for j in ("x", "y")]
    c = compare_all(latest_labels(labels + extra), list("abcdxy"), scale=[0, 1, 2], cut=1, resamples=0)
    units, table = _table(labels, (0, 1, 2))
    keep = [i for i, u in enumerate(units) if u not in {(lab.qid, lab.docid) for lab in labels[:15:3]}]
    assert abs(c.measures["fleiss_kappa"].value - sm_fleiss_kappa(table[keep], method="fleiss")) < 1e-9
    assert "left out" in c.measures["fleiss_kappa"].note


def test_fleiss_kappa_bootstrap_replicate_equals_statsmodels_on_resampled_queries():
    labels = k_judge_labels(4, queries=6, per_query=5)
    units, table = _table(labels, (0, 1, 2))
    qids = sorted({u[0] for u in units})
    counts = _resample_counts(len(qids), 3, 0)
    from curation.agree.measures import _fleiss_replicates

    qi = np.array([qids.index(u[0]) for u in units])
    reps = _fleiss_replicates(table.astype(float), qi, len(qids), counts)
    for b in range(3):
        rows = np.concatenate([np.repeat(table[qi == q], int(counts[b, q]), axis=0) for q in range(len(qids))])
        assert abs(reps[b] - sm_fleiss_kappa(rows, method="fleiss")) < 1e-9


def test_fleiss_kappa_undefined_cases():
    assert fleiss_kappa(np.zeros((0, 3))).undefined
    assert "same grade" in fleiss_kappa(np.array([[3, 0], [3, 0]])).undefined


def test_report_shows_fleiss_and_alpha_over_all_judges():
    from curation.cli.agreement import print_report

    report = agreement_report(k_judge_labels(5), scale=[0, 1, 2], resamples=50)
    assert report.overall.judges == ("a", "b", "c", "d")
    assert report.overall.measures["fleiss_kappa"].low is not None
    assert report.as_dict()["overall"]["measures"]["fleiss_kappa"]["value"] == report.overall.measures[
        "fleiss_kappa"].value
    import io
    from contextlib import redirect_stdout

    buf = io.StringIO()
    with redirect_stdout(buf):
        print_report("demo", report)
    text = buf.getvalue()
    assert "all 4 judges" in text and "Fleiss' kappa" in text and "Krippendorff's alpha, nominal" in text
