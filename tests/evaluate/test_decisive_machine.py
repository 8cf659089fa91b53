"""The machine-guided decisive order, replayed (curation.evaluate.simulate with a machine judge): a
good machine settles with fewer pairs than the blind order, a random one is within 2 points of it,
a machine that points nowhere gives the blind order exactly, the simulated machine's flips, the
calibration, and `golden decisive simulate --machine-from-qrels / --machine FILE`."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from curation.cli import main
from curation.evaluate.decisive import calibrated_relevance, pair_priorities
from curation.evaluate.plan import (
    blend,
    machine_kappa,
    machine_trust,
    plan_draws,
    plan_priorities,
    sampled_grades,
    sampled_plan_priorities,
)
from curation.evaluate.settle import query_bounds, resample_counts, settle
from curation.evaluate.simulate import machine_from_qrels, pool_from_runs, simulate

COMPS = [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]


def synthetic(seed=0, n=40, docs=30, runs=4):
    """``runs`` runs over ``n`` queries of ``docs`` documents (grades 0,0,0,0,1,2 drawn per document);
    run j scores a document by 0.3 j times its grade plus noise (later runs are better)."""
    rng = np.random.default_rng(seed)
    rankings = {f"r{j}": {} for j in range(runs)}
    qrels = {}
    for q in range(n):
        grade = rng.choice([0, 0, 0, 0, 1, 2], size=docs)
        qrels[f"q{q}"] = {f"d{q}_{i}": int(grade[i]) for i in range(docs)}
        for j in range(runs):
            order = np.argsort(-(grade * 0.3 * j + rng.normal(size=docs)))
            rankings[f"r{j}"][f"q{q}"] = [f"d{q}_{i}" for i in order]
    return rankings, qrels


@pytest.fixture(scope="module")
def pool():
    rankings, qrels = synthetic()
    return pool_from_runs(rankings, qrels, 20)


def _machine(truth, agreement, seed, random=False):
    mg = machine_from_qrels(truth, agreement, lean=0.2, seed=seed, random=random)
    return dict(machine=(mg >= 1).astype(float), machine_top=(mg >= 2).astype(float), machine_key=mg.astype(int))


def _replay(pm, truth, seed, **machine):
    res = simulate(pm, truth, COMPS, "ndcg@10", step=0.02, resamples=1000, seed=seed, **machine)
    s = res.summary()
    assert s["wrong_calls"] == 0
    return s


def test_good_machine_settles_with_fewer_pairs(pool):
    pm, truth = pool
    for seed in (0, 1):
        blind = _replay(pm, truth, seed)
        guided = _replay(pm, truth, seed, **_machine(truth, 0.9, seed))
        assert blind["significant"] == guided["significant"] == 6
        assert guided["settled_of_significant"] == 6
        # blind about 50%, guided about 37%
        assert guided["median_share_significant"] < blind["median_share_significant"] - 0.05


def test_random_machine_is_within_two_points_of_the_blind_order(pool):
    pm, truth = pool
    for seed in (0, 1, 2):
        blind = _replay(pm, truth, seed)
        rand = _replay(pm, truth, seed, **_machine(truth, 0.0, seed, random=True))
        assert rand["median_share_significant"] <= blind["median_share_significant"] + 0.02


def test_an_untrusted_machine_gives_the_blind_order(pool):
    """Trust 0 (a machine the human labels do not confirm): the priorities are the blind ones
    scaled, so the order (a sort by priority) is the blind order exactly."""
    pm, truth = pool
    rng = np.random.default_rng(3)
    grades = np.where(rng.random(pm.n_pairs) < 0.3, truth, np.nan)
    b = query_bounds(pm, grades, COMPS, "ndcg@10", max_grade=2)
    st = settle(b, resample_counts(len(pm.qids), resamples=500))
    blind = pair_priorities(b, st, None, pm.n_pairs)
    assert blind.max() > 0
    got = blend(rng.random(pm.n_pairs), blind, 0.0)
    np.testing.assert_array_equal(np.argsort(-got, kind="stable"), np.argsort(-blind, kind="stable"))


def test_trust_is_the_machines_kappa_at_a_lower_bound(pool):
    """Trust is an effect size, not a significance: a random machine gets 0, a machine at 70% exact
    agreement 0 or near however many pairs are judged, one at 80% 1, a perfect one 1; too few
    labels give 0. (The pool's relevant share, a third, is near that of the pairs the decisive order
    judges on robust03, where the thresholds were chosen.)"""
    from sklearn.metrics import cohen_kappa_score

    pm, truth = pool
    judged = np.random.default_rng(99).random(pm.n_pairs) < 0.3  # not the machines' seeds: their flips
    rel = truth >= 1
    assert machine_trust(rel.astype(float), judged, rel) == 1.0  # a perfect machine
    shuffled = [machine_trust(np.random.default_rng(s).permutation(rel).astype(float), judged, rel) for s in range(20)]
    assert max(shuffled) == 0.0  # a random machine
    assert machine_trust(rel.astype(float), judged & (np.arange(pm.n_pairs) < 10), rel) == 0.0  # too few labels
    everything = np.ones(pm.n_pairs, dtype=bool)
    at70 = []
    for seed in range(8):
        calls = {a: (machine_from_qrels(truth, a, lean=0.2, max_grade=2, seed=seed) >= 1).astype(float)
                 for a in (0.7, 0.8)}
        kappa, se, n = machine_kappa(calls[0.7], judged, rel)
        assert kappa == pytest.approx(cohen_kappa_score(rel[judged], calls[0.7][judged] >= 0.5))
        assert n == judged.sum() and 0 < se < 0.1
        at70.append(machine_trust(calls[0.7], everything, rel))  # every label: still not trusted
        assert machine_trust(calls[0.8], everything, rel) == 1.0
    assert max(at70) <= 0.25 and np.mean(at70) < 0.1


def test_plan_asks_first_for_the_pairs_that_move_the_settling_end(pool):
    """Proving "B higher" with a machine that knows the labels: the pairs the plan asks for are
    B's relevant ones, A's below the top grade, and those that only tighten the ideal DCG; never
    B's non-relevant pairs ahead of them, nor A's top-grade pairs."""
    pm, truth = pool
    comp = (0, 3)
    member = pm.members(comp)
    counts = resample_counts(len(pm.qids), resamples=500)
    prio = plan_priorities(pm, np.where(member, np.nan, 0.0), member, comp, "ndcg@10", counts,
                           (truth >= 1).astype(float), (truth >= 2).astype(float), G=2)
    rA, rB = pm.ranks[0], pm.ranks[3]
    inA, inB = (rA >= 1) & (rA <= 10), (rB >= 1) & (rB <= 10)
    b_pair = inB & (~inA | (rB < rA))
    a_pair = inA & ~inB
    assert (prio[~member] == 0).all()
    assert prio[b_pair & (truth >= 1)].mean() > 0 and prio[a_pair & (truth == 0)].mean() > 0
    assert (prio[a_pair & (truth == 2)] == 0).all()
    planned = prio > 0
    assert (planned & b_pair & (truth == 0)).sum() < 0.1 * planned.sum()


def test_plan_asks_only_for_what_it_needs_and_that_settles_when_the_belief_is_right(pool):
    """With a machine that knows the labels, the plan gives a priority only to the pairs it takes
    before it expects the comparison to settle: far fewer than the pool, and judging exactly those
    (at their true labels, nothing else) settles it on the fully judged verdict."""
    pm, truth = pool
    comp = (0, 3)
    member = pm.members(comp)
    counts = resample_counts(len(pm.qids), resamples=500)
    full = settle(query_bounds(pm, np.where(member, truth, 0.0), [comp], "ndcg@10", max_grade=2), counts).status[0]
    assert full in ("B higher", "B lower")
    prio = plan_priorities(pm, np.where(member, np.nan, 0.0), member, comp, "ndcg@10", counts,
                           (truth >= 1).astype(float), (truth >= 2).astype(float), G=2)
    planned = prio > 0
    assert 0 < planned.sum() < 0.6 * member.sum()
    judged = np.where(planned | ~member, np.where(member, truth, 0.0), np.nan)
    assert settle(query_bounds(pm, judged, [comp], "ndcg@10", max_grade=2), counts).status[0] == full


def test_sampled_labellings_follow_the_belief_and_the_plan_over_them_asks_for_likely_pairs(pool):
    """Labellings drawn from P(grade >= 1) and P(top grade) have those rates; the plan over them
    asks for a pair of B's that is relevant one time in three (the most likely labelling, grade 0,
    never plans it), and gives nothing to judged pairs or pairs outside the pool."""
    pm, truth = pool
    draws = plan_draws(pm.n_pairs, seed=3, samples=400)
    p = np.linspace(0, 1, pm.n_pairs)
    t = p / 2
    got = np.stack([sampled_grades(p, t, row, 2) for row in draws])
    assert np.abs((got >= 1).mean(axis=0) - p).max() < 0.12 and np.abs((got >= 2).mean(axis=0) - t).max() < 0.12
    assert set(np.unique(got)) == {0.0, 1.0, 2.0}
    comp = (0, 3)
    member = pm.members(comp)
    counts = resample_counts(len(pm.qids), resamples=500)
    rB, rA = pm.ranks[3], pm.ranks[0]
    b_top = member & (rB >= 1) & (rB <= 3) & ((rA < 1) | (rA > 10))  # B's top 3 that A lacks
    p_rel = np.where(b_top, 1 / 3, 0.02)
    grades = np.where(member, np.nan, 0.0)
    grades[np.flatnonzero(member)[:5]] = 0.0
    likely = plan_priorities(pm, grades, member, comp, "ndcg@10", counts, p_rel, p_rel / 2, G=2)
    sampled = sampled_plan_priorities(pm, grades, member, comp, "ndcg@10", counts, p_rel, p_rel / 2, G=2,
                                      draws=plan_draws(pm.n_pairs, samples=8))
    assert likely[b_top].max() == 0 and sampled[b_top].mean() > 0
    assert (sampled[~member] == 0).all() and (sampled[np.flatnonzero(member)[:5]] == 0).all()
    assert (sampled_plan_priorities(pm, grades, member, comp, "ndcg@10", counts, p_rel, p_rel / 2, G=2,
                                    draws=plan_draws(pm.n_pairs, samples=0)) == likely).all()  # no draws: as before


def test_machine_from_qrels_flips_to_neighbours_leaning_up():
    truth = np.repeat([0.0, 1.0, 2.0], 20_000)
    mg = machine_from_qrels(truth, 0.8, lean=0.2, seed=4)
    assert abs((mg == truth).mean() - 0.8) < 0.01
    assert (np.abs(mg - truth) <= 1).all() and mg.min() == 0 and mg.max() == 2
    mid = (truth == 1) & (mg != truth)
    assert abs((mg[mid] == 2).mean() - 0.7) < 0.02  # up with probability 0.5 + lean
    np.testing.assert_array_equal(mg, machine_from_qrels(truth, 0.8, lean=0.2, seed=4))  # seeded
    rand = machine_from_qrels(truth, 0.8, seed=4, random=True)
    assert sorted(rand) == sorted(truth) and abs((rand == truth).mean() - 1 / 3) < 0.02
    with pytest.raises(ValueError, match="agreement"):
        machine_from_qrels(truth, 1.5)


def test_calibration_starts_at_the_vote_share_and_ends_at_the_humans_rate():
    raw = np.array([1.0] * 100 + [0.0] * 100 + [np.nan] * 10)
    judged = np.zeros(210, dtype=bool)
    rel = np.zeros(210, dtype=bool)
    p = calibrated_relevance(raw, None, judged, rel)
    assert (p[:100] == 1).all() and (p[100:200] == 0).all() and np.allclose(p[200:], 0.5)
    # the humans say the machine's "relevant" class is relevant 30% of the time
    judged[:100] = judged[100:200] = True
    rel[:30] = True
    p = calibrated_relevance(raw, None, judged, rel)
    assert p[0] == pytest.approx((30 + 5 * 1.0) / (100 + 5))
    assert p[150] == pytest.approx(0.0)
    assert p[205] == pytest.approx(31 / 202)


def _write(tmp_path, rankings, qrels):
    paths = []
    for name, by_q in rankings.items():
        path = tmp_path / f"{name}.trec"
        path.write_text("".join(f"{q} Q0 {d} {i + 1} {100 - i} {name}\n" for q, docs in by_q.items()
                                for i, d in enumerate(docs)))
        paths.append(str(path))
    qpath = tmp_path / "qrels.txt"
    qpath.write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items()))
    return paths, str(qpath)


def test_simulate_judging_cli_with_a_machine(tmp_path):
    rankings, qrels = synthetic(n=20, runs=2)
    runs, qpath = _write(tmp_path, rankings, qrels)
    base = ["decisive", "simulate", *runs, "--qrels", qpath, "--depth", "20", "--compare", "r0,r1", "--json"]
    blind = CliRunner().invoke(main, base)
    assert blind.exit_code == 0, blind.output
    out = CliRunner().invoke(main, [*base, "--machine-from-qrels", "--agreement", "0.9", "--seed", "1"])
    assert out.exit_code == 0, out.output
    got = json.loads(out.stdout)
    assert "90% agreement" in got["machine"] and got["summary"]["wrong_calls"] == 0
    assert json.loads(blind.stdout)["machine"] is None
    # a real machine label file: the qrels themselves as a perfect machine
    out = CliRunner().invoke(main, [*base, "--machine", qpath])
    assert out.exit_code == 0, out.output
    perfect = json.loads(out.stdout)
    assert perfect["machine"].endswith(f"{perfect['pool_pairs']} of {perfect['pool_pairs']} pool pairs labelled")
    assert perfect["comparisons"][0]["settled_share"] <= json.loads(blind.stdout)["comparisons"][0]["settled_share"]
    bad = CliRunner().invoke(main, [*base, "--random-machine"])
    assert bad.exit_code == 2 and "--random-machine goes with --machine-from-qrels" in bad.output
