"""The effect of machine labels on the decision: qrels from human, machine or filled labels
(``--qrels-from`` of ``golden stats metrics`` and ``golden stats compare``), and the runs' ranking under each:
Kendall's tau against scipy's, swapped significant pairs against a hand count."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from scipy.stats import kendalltau

from curation.cli import main
from curation.machine.bias import PairFacts
from curation.machine.labels import import_machine_labels
from curation.machine.ranking import parse_spec, qrels_from, ranking_figures
from curation.store.engine import session as new_session
from curation.store.projects import get_project
from tests.support.judgments import judge
from tests.support.machine import write_machine
from tests.support.projects import pairs_project

PAIRS = [("q1", "d1"), ("q1", "d2"), ("q2", "d1"), ("q2", "d3")]
HUMAN = {("q1", "d1"): 2, ("q1", "d2"): 0, ("q2", "d1"): 1}
MACHINE = {("q1", "d1"): 1, ("q1", "d2"): 2, ("q2", "d1"): 0, ("q2", "d3"): 2}


@pytest.fixture
def labelled(engine, tmp_path):
    pairs_project(engine, tmp_path / "in", PAIRS)
    judge(engine, tmp_path, "alice", HUMAN)
    path = write_machine(tmp_path / "m.jsonl", [{"qid": q, "docid": d, "grade": g} for (q, d), g in MACHINE.items()])
    with new_session(engine) as s:
        import_machine_labels(s, path, machine="llm", project="p")
    return engine


def test_qrels_from_human_machine_and_filled(labelled):
    with new_session(labelled) as s:
        proj = get_project(s, "p")
        assert qrels_from(s, proj, "human") == {"q1": {"d1": 2, "d2": 0}, "q2": {"d1": 1}}
        assert qrels_from(s, proj, "machine:llm") == {"q1": {"d1": 1, "d2": 2}, "q2": {"d1": 0, "d3": 2}}
        assert qrels_from(s, proj, "filled:llm") == {"q1": {"d1": 2, "d2": 0}, "q2": {"d1": 1, "d3": 2}}
        with pytest.raises(ValueError, match="no machine judge 'gpt'"):
            qrels_from(s, proj, "machine:gpt")
    for bad in ("", "machine", "humans", "filled:", "human:x"):
        with pytest.raises(ValueError, match="qrels-from"):
            parse_spec(bad)


def test_metrics_and_compare_read_the_same_qrels_from_the_store_as_from_a_file(labelled, db_url, tmp_path):
    run_a = tmp_path / "a.trec"
    run_a.write_text("q1 Q0 d1 1 3.0 a\nq1 Q0 d2 2 2.0 a\nq2 Q0 d3 1 3.0 a\nq2 Q0 d1 2 2.0 a\n")
    run_b = tmp_path / "b.trec"
    run_b.write_text("q1 Q0 d2 1 3.0 b\nq1 Q0 d1 2 2.0 b\nq2 Q0 d1 1 3.0 b\nq2 Q0 d3 2 2.0 b\n")
    filled = tmp_path / "filled.qrels"
    filled.write_text("q1 0 d1 2\nq1 0 d2 0\nq2 0 d1 1\nq2 0 d3 2\n")
    runner = CliRunner()
    for cmd in (["stats", "metrics", str(run_a), str(run_b), "--json"],
                ["stats", "compare", str(run_a), str(run_b), "--json", "--resamples", "200"]):
        from_store = runner.invoke(main, [*cmd, "--qrels-from", "filled:llm", "--db", db_url])
        from_file = runner.invoke(main, [*cmd, "--qrels", str(filled)])
        assert from_store.exit_code == 0, from_store.output
        assert json.loads(from_store.stdout) == json.loads(from_file.stdout)
    both = runner.invoke(main, ["stats", "metrics", str(run_a), "--qrels", str(filled), "--qrels-from", "human",
                                "--db", db_url])
    assert both.exit_code == 2 and "not both" in both.output


def test_swapped_significant_pairs_and_tau_against_a_hand_count():
    """Runs A-D put the relevant document r at ranks 1-4 of every query; the machine calls r not
    relevant and f1 (rank 1 for B, C and D, rank 2 for A) relevant. Under the humans A > B > C > D,
    every difference significant (each query agrees); under the machine A is last and B = C = D.
    By hand: the pairs A-B, A-C, A-D swap (3, all significant); B-C, B-D, C-D tie under the machine
    (not swaps); tau = scipy's on the orders (4, 3, 2, 1) vs (1, 2, 2, 2)."""
    order = {"A": ["r", "f1", "f2", "f3"], "B": ["f1", "r", "f2", "f3"], "C": ["f1", "f2", "r", "f3"],
             "D": ["f1", "f2", "f3", "r"]}
    facts, human, machine = {}, {}, {}
    for i in range(30):
        q = f"q{i:02d}"
        for d in ("r", "f1", "f2", "f3"):
            facts[(q, d)] = PairFacts(q, d, 100, "s", None, {run: docs.index(d) + 1 for run, docs in order.items()})
            human[(q, d)] = 2 if d == "r" else 0
            machine[(q, d)] = 2 if d == "f1" else 0
    fig = ranking_figures(facts, human, machine, resamples=500)
    comp = fig.comparisons[0]
    assert fig.runs == ["A", "B", "C", "D"]
    assert [(p.a, p.b) for p in comp.pairs if p.swapped] == [("A", "B"), ("A", "C"), ("A", "D")]
    assert comp.swapped == 3 and comp.swapped_significant == 3
    assert all(p.human_verdict == "A better" for p in comp.pairs)
    assert comp.verdicts_changed == 6  # 3 now "B better", 3 now indistinguishable
    assert comp.kendall_tau == pytest.approx(kendalltau([4, 3, 2, 1], [1, 2, 2, 2]).statistic)
    filled = fig.comparisons[1]  # the humans labelled every pair: filled = human
    assert filled.labels == "filled" and filled.kendall_tau == pytest.approx(1.0) and filled.swapped == 0


def test_swapped_pairs_count_verdicts_corrected_for_the_number_of_pairs():
    """The human verdicts behind "significant" are the Holm-corrected family of every pair (the
    same as golden stats compare of all the runs), not each pair at 5% on its own."""
    import numpy as np

    from curation.evaluate.metrics import evaluate
    from curation.evaluate.multiple import compare_many

    rng = np.random.default_rng(4)
    runs = {name: {f"q{i:02d}": [f"d{j}" for j in rng.permutation(6)] for i in range(25)} for name in "ABCDE"}
    facts, human, machine = {}, {}, {}
    for i in range(25):
        q = f"q{i:02d}"
        for j in range(6):
            d = f"d{j}"
            facts[(q, d)] = PairFacts(q, d, 10, "s", None, {r: runs[r][q].index(d) + 1 for r in runs})
            human[(q, d)] = int(rng.random() < 0.3)
            machine[(q, d)] = int(rng.random() < 0.3)
    fig = ranking_figures(facts, human, machine, resamples=200)
    comp = fig.comparisons[0]
    assert comp.correction == "holm" and comp.as_dict()["correction"] == "holm"
    qrels = {}
    for (q, d), g in human.items():
        qrels.setdefault(q, {})[d] = g
    scores = [evaluate(runs[n], qrels, ["ndcg@10"], name=n)["ndcg@10"] for n in "ABCDE"]
    fam = compare_many(scores, resamples=200)
    assert [p.human_verdict for p in comp.pairs] == [r.verdict for r in fam.rows]
    assert [p.human_delta for p in comp.pairs] == pytest.approx([r.comparison.delta for r in fam.rows])
