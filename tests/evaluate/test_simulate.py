"""The replay of judging: at 100% judged it reproduces the fully judged verdict (per-query differences
from curation.evaluate.metrics, the trec_eval-checked code, and numpy's percentiles), the guarantee
never makes a wrong call, and the decisive order settles no later than judging everything."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from curation.cli import main
from curation.evaluate.metrics import evaluate
from curation.evaluate.settle import HIGHER, LOWER, NOT_SIGNIFICANT, resample_counts
from curation.evaluate.simulate import all_pairs, pool_from_runs, simulate


@pytest.fixture(scope="module")
def robust4():
    from curation.formats.qrels import read_qrels
    from curation.formats.runs import read_run
    from tests.conftest import shared_path

    root = shared_path("robust03")
    paths = sorted((root / "runs").glob("input.*.gz"))[:4]
    runs = [read_run(p, depth=20) for p in paths]
    qrels = read_qrels(root / "qrels" / "robust03_qrels.txt")
    return runs, qrels, paths, root / "qrels" / "robust03_qrels.txt"


def _independent_verdict(runs, qrels, pm, a, b, metric):
    pool_qrels = {q: {} for q in pm.qids}
    for q, d in zip(pm.pair_query, pm.docids):
        pool_qrels[pm.qids[q]][d] = qrels[pm.qids[q]].get(d, 0)
    member = {(pm.qids[q], d) for q, d, r in zip(pm.pair_query, pm.docids, pm.members((a, b))) if r}
    pool_qrels = {q: {d: g for d, g in v.items() if (q, d) in member} for q, v in pool_qrels.items()}
    sa = evaluate({q: runs[a].rankings.get(q, [])[:20] for q in pm.qids}, pool_qrels, [metric])[metric].as_dict()
    sb = evaluate({q: runs[b].rankings.get(q, [])[:20] for q in pm.qids}, pool_qrels, [metric])[metric].as_dict()
    d = np.array([sb.get(q, 0.0) - sa.get(q, 0.0) for q in pm.qids])  # no relevant pair: 0 for both
    reps = resample_counts(len(d), seed=0) @ d / len(d)
    lo, hi = np.percentile(reps, [2.5, 97.5])
    return HIGHER if lo > 0 else LOWER if hi < 0 else NOT_SIGNIFICANT, d.mean()


@pytest.mark.slow
@pytest.mark.parametrize("metric", ["ndcg@10", "ap@20"])
def test_full_judging_reproduces_the_full_pool_verdict(robust4, metric):
    runs, qrels, _, _ = robust4
    pm, truth = pool_from_runs({r.name: r.rankings for r in runs}, qrels, 20)
    comps = all_pairs(len(runs))
    res = simulate(pm, truth, comps, metric, order="shuffled", step=1.0)
    for (a, b), c in zip(comps, res.comparisons):
        verdict, mean = _independent_verdict(runs, qrels, pm, a, b, metric)
        assert c.full_verdict == verdict and c.full_mean == pytest.approx(mean, abs=1e-12)
        if verdict in (HIGHER, LOWER):  # everything judged: settled, on the full verdict, at 100%
            assert (c.settled_share, c.settled_verdict, c.wrong) == (1.0, verdict, False)
        else:
            assert c.settled_share is None
    # "significant k of m" is corrected for the m comparisons: Holm over each verdict's two-sided
    # bootstrap p-value (statsmodels' multipletests as the peer)
    from statsmodels.stats.multitest import multipletests

    p = [c.full_p for c in res.comparisons]
    for c, uncorrected, holm in zip(res.comparisons, p, multipletests(p, method="holm")[1]):
        assert c.full_p_adjusted == pytest.approx(holm, abs=1e-15)
        assert c.full_significant_corrected == (c.full_verdict in (HIGHER, LOWER) and holm < 0.05)
        if c.full_verdict in (HIGHER, LOWER):
            assert uncorrected <= 0.05 + 1e-3  # the percentile interval excludes 0
    s = res.summary()
    assert s["correction"] == "holm" and s["significant"] <= s["significant_uncorrected"]
    assert s["significant"] == sum(c.full_significant_corrected for c in res.comparisons)


@pytest.mark.slow
def test_orders_never_make_a_wrong_call(robust4):
    runs, qrels, _, _ = robust4
    pm, truth = pool_from_runs({r.name: r.rankings for r in runs}, qrels, 20)
    comps = all_pairs(len(runs))
    shares = {}
    for order in ("decisive", "shuffled", "depth", "oracle"):
        res = simulate(pm, truth, comps, "ndcg@10", order=order, step=0.05)
        assert res.summary()["wrong_calls"] == 0
        shares[order] = res.summary()["median_share_significant"]
    assert shares["oracle"] <= shares["decisive"] <= shares["shuffled"]
    assert shares["oracle"] < shares["shuffled"]


@pytest.mark.slow
def test_simulate_judging_cli(robust4):
    _, _, paths, qrels = robust4
    args = ["decisive", "simulate", *map(str, paths[:3]), "--qrels", str(qrels), "--step", "0.1"]
    out = CliRunner().invoke(main, args + ["--json"])
    assert out.exit_code == 0, out.output
    import json

    got = json.loads(out.output)
    assert got["summary"]["comparisons"] == 3 and got["summary"]["wrong_calls"] == 0
    out = CliRunner().invoke(main, args + ["--compare", "nope,other"])
    assert out.exit_code == 2 and "no run named 'nope'" in out.output


def test_checking_after_every_pair_settles_at_the_first_pair_that_settles(robust4):
    """``check="pair"`` (the panel reads the labels as they come): each comparison settles on the same
    verdict, within the batch where the batch check found it (the replay is otherwise the same)."""
    runs, qrels, _, _ = robust4
    pm, truth = pool_from_runs({r.name: r.rankings for r in runs}, qrels, 20)
    comps = all_pairs(len(runs))[:3]
    kw = dict(order="decisive", step=0.1, resamples=500, seed=3)
    batch = simulate(pm, truth, comps, "ndcg@10", **kw)
    pair = simulate(pm, truth, comps, "ndcg@10", check="pair", **kw)
    settled = 0
    for b, p in zip(batch.comparisons, pair.comparisons):
        assert p.settled_verdict == b.settled_verdict and not p.wrong
        if b.settled_share is not None:
            settled += 1
            assert b.settled_share - 0.12 <= p.settled_share <= b.settled_share  # a batch: 10% and a block
    assert settled and pair.summary()["wrong_calls"] == 0
    with pytest.raises(ValueError, match="check"):
        simulate(pm, truth, comps, "ndcg@10", check="sometimes", **kw)


def test_guided_batch_takes_the_plans_pairs_as_a_querys_first_block():
    """A machine-guided replay hands the batch the plan's pairs with the priorities: with blocks,
    a query's first block is its planned pairs alone and blocks go by their mean priority, so the
    query whose three planned pairs are worth most comes first, and only those three are taken;
    without the plan the other query's larger summed block would come first."""
    from types import SimpleNamespace

    from curation.evaluate.simulate import _judge_batch

    pm = SimpleNamespace(pair_query=np.repeat([0, 1], 20), qids=np.array(["q0", "q1"]), n_pairs=40)
    prio = np.r_[np.full(20, 0.5), np.zeros(20)]
    planned = np.zeros(40, dtype=bool)
    planned[[21, 27, 33]] = True
    prio[planned] = 1.0

    def batch(guided):
        judged, done = np.zeros((1, 40), dtype=bool), np.zeros(1, dtype=np.int64)
        _judge_batch(pm, np.ones((1, 40), dtype=bool), judged, done, np.array([40]), np.array([True]), None,
                     None, None, np.random.default_rng(0), share=3 / 40, granularity="block", trace=None,
                     checks=0, guided=guided)
        return set(np.flatnonzero(judged[0]))

    assert batch(lambda bounds, st, rows_comps: (prio, planned)) == {21, 27, 33}
    unplanned = batch(lambda bounds, st, rows_comps: (prio, None))
    assert unplanned <= set(range(20)) and len(unplanned) == 10  # q0's block of 10 pairs (sum 5.0 > 3.0)
