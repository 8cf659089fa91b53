"""The decisive order: priorities against hand-computed weights, blindness of the displayed order
within a query, the recorded comparisons, and `golden decisive settle` on a small project."""

from __future__ import annotations

import json
import math
from collections import defaultdict

import numpy as np
import pytest
from click.testing import CliRunner
from scipy import stats
from sqlmodel import select

from curation.cli import main
from curation.evaluate.decisive import assign_decisive, pair_priorities, settlement_report
from curation.evaluate.settle import PoolMatrix, query_bounds, resample_counts, settle
from curation.judge.assignment import BLOCK, decisive_queue_order
from curation.store.engine import session
from curation.store.models import Assignment, DecisiveComparison, PoolPair, Query
from curation.store.users import add_user
from tests.support.projects import counts_project


def test_priorities_match_hand_computed_weights():
    # q1: A = d1 d2 d3, B = d3 d1 d4 (nDCG@3, grades 0-2, nothing judged); q2: both rank e1 e2 alike
    rankings = {"A": {"q1": ["d1", "d2", "d3"], "q2": ["e1", "e2"]},
                "B": {"q1": ["d3", "d1", "d4"], "q2": ["e1", "e2"]}}
    pm = PoolMatrix.from_rankings(rankings, depth=3)
    grades = np.full(pm.n_pairs, np.nan)
    b = query_bounds(pm, grades, [(0, 1)], "ndcg@3", max_grade=2)
    st = settle(b, resample_counts(2, resamples=200, seed=0))
    disc = {1: 1.0, 2: 1 / math.log2(3), 3: 0.5}
    c = {"d1": disc[2] - disc[1], "d2": -disc[2], "d3": disc[1] - disc[3], "d4": disc[3]}
    # weight = max_grade * |disc_B - disc_A| / max(judged ideal DCG, 1): nothing judged -> / 1
    urgency = 1 / max(st.gap[0], 1e-3)
    prio = pair_priorities(b, st, None, pm.n_pairs)
    for p, doc in enumerate(pm.docids):
        want = urgency * 2 * abs(c[doc]) if doc.startswith("d") else 0.0
        assert prio[p] == pytest.approx(want), doc
    order = [pm.docids[p] for p in np.argsort(-prio, kind="stable")][:4]
    assert order[0] == "d2" and order[-1] == "d1" and set(order[1:3]) == {"d3", "d4"}
    # once judged, a pair weighs nothing; a settled comparison gives every pair priority 0
    grades[pm.docids.index("d2")] = 1
    b2 = query_bounds(pm, grades, [(0, 1)], "ndcg@3", max_grade=2)
    assert b2.weight[0, pm.docids.index("d2")] == 0
    st.status[0] = "B higher"
    assert not pair_priorities(b, st, None, pm.n_pairs).any()


def test_queue_blocks_by_priority_shuffled_within():
    import random

    query_of = {p: p // 12 for p in range(24)}  # two queries of 12 pairs
    priority = {p: (5.0 if p >= 12 else 1.0) * (12 - p % 12) for p in range(24)}
    out = decisive_queue_order(list(range(24)), query_of, priority, random.Random(1))
    assert sorted(out) == list(range(24))
    first = out[:BLOCK]
    # the first block: query 2's ten most decisive pairs (priorities 5*12 .. 5*3), in a shuffled order
    assert set(first) == {12 + i for i in range(10)}
    assert first != sorted(first, key=lambda p: -priority[p])
    # then query 1's first block (priority 12+...+3 = 75 > query 2's rest 5*(2+1) = 15)
    assert set(out[BLOCK:2 * BLOCK]) == set(range(10))


def test_guided_queue_puts_the_plans_pairs_alone_in_a_first_block():
    """With a machine-guided plan (a Priorities with planned pairs), a query's first block is its
    planned pairs alone and blocks go by their mean priority: query 1's 3 planned pairs (priority 9
    each) come before query 2's 10 (4 each, though their sum is larger); without the plan, blocks of
    10 by their sum, as before (query 2 first)."""
    import random

    from curation.judge.assignment import Priorities

    query_of = {p: p // 12 for p in range(24)}
    raw = {p: (9.0 if p < 3 else 0.1) if p < 12 else (4.0 if p < 22 else 0.1) for p in range(24)}
    blind = decisive_queue_order(list(range(24)), query_of, dict(raw), random.Random(1))
    assert set(blind[:BLOCK]) == set(range(12, 22))
    guided = decisive_queue_order(list(range(24)), query_of, Priorities(raw, planned=[0, 1, 2, *range(12, 22)]),
                                  random.Random(1))
    assert sorted(guided) == list(range(24))
    assert set(guided[:3]) == {0, 1, 2} and set(guided[3:13]) == set(range(12, 22))
    # an empty plan (trust 0) is the blind queue exactly
    assert decisive_queue_order(list(range(24)), query_of, Priorities(raw), random.Random(1)) == blind


def _judge_rows(s, project):
    rows = s.exec(select(Assignment.judge_id, Assignment.position, Query.qid, PoolPair.systems_json)
                  .join(PoolPair, PoolPair.id == Assignment.pair_id).join(Query, Query.id == PoolPair.query_id)
                  .where(Assignment.project_id == project.id, Assignment.kind == "main")).all()
    by_judge = defaultdict(list)
    for j, pos, qid, systems in rows:
        by_judge[j].append((pos, qid, json.loads(systems)))
    return {j: sorted(v) for j, v in by_judge.items()}


def test_displayed_order_within_a_query_is_independent_of_rank(sqlite_engine, tmp_path):
    """Over 30 seeds, the place of a pair among its query's pairs in the queue does not follow its
    rank in either run (Spearman), and every rank shows up first about as often."""
    queries = {f"q{i}": 8 for i in range(6)}  # 8 pairs a query: one block each
    places, ranks = [], []
    first_rank = defaultdict(int)
    for seed in range(30):
        folder = tmp_path / f"s{seed}"
        folder.mkdir()
        with session(sqlite_engine) as s:
            proj, _ = counts_project(s, folder, name=f"p{seed}", queries=queries)
            if seed == 0:
                add_user(s, "alice", role="judge", password="password1")
            assign_decisive(s, proj, ["alice"], overlap=0, seed=seed, compare=["bm25,dense"])
            for rows in _judge_rows(s, proj).values():
                seen = defaultdict(int)
                for _, qid, systems in rows:
                    places.append(seen[qid])
                    ranks.append(systems["bm25"])
                    if seen[qid] == 0:
                        first_rank[systems["bm25"]] += 1
                    seen[qid] += 1
    rho, p = stats.spearmanr(places, ranks)
    assert abs(rho) < 0.1 and p > 0.001, (rho, p)
    # every rank 1..8 comes first in 6 x 30 = 180 queries, ~22 times each (chi-square: uniform)
    assert stats.chisquare([first_rank[r] for r in range(1, 9)]).pvalue > 0.001


def test_assign_decisive_records_comparisons_and_orders_queries(engine, tmp_path):
    with session(engine) as s:
        proj, _ = counts_project(s, tmp_path, queries={"q1": 3, "q2": 9, "q3": 5})
        add_user(s, "alice", role="judge", password="password1")
        with pytest.raises(ValueError, match="no run named 'bogus'"):
            assign_decisive(s, proj, ["alice"], overlap=0, compare=["bm25,bogus"])
        s.rollback()
        assign_decisive(s, proj, ["alice"], overlap=0, compare=["bm25,dense"], metric="ndcg@5")
        rows = s.exec(select(DecisiveComparison)).all()
        assert [(r.run_a, r.run_b, r.metric) for r in rows] == [("bm25", "dense", "ndcg@5")]
        queue = next(iter(_judge_rows(s, proj).values()))
        # the largest reversal (q2, 9 pairs) carries the most weight: its first block comes first
        assert [q for _, q, _ in queue[:5]] == ["q2"] * 5
        rep = settlement_report(s, proj)
        c = rep["comparisons"][0]
        assert c["status"] == "open" and c["judged_pairs"] == 0 and c["pairs_can_change"] > 0
        assert "not a guarantee" in c["estimate"]["note"]


def test_settle_cli_json_and_settling_when_judged(sqlite_engine, tmp_path):
    """`golden decisive settle --json` is settlement_report; judging every pair settles or leaves it open
    exactly as the fully judged verdict says."""
    from curation.store.models import Judgment

    db = str(sqlite_engine.url)
    queries = {f"q{i}": 6 for i in range(12)}
    with session(sqlite_engine) as s:
        proj, _ = counts_project(s, tmp_path, queries=queries)
        judge = add_user(s, "alice", role="judge", password="password1")
        add_user(s, "lena", role="lead", password="password1")
        assign_decisive(s, proj, ["alice"], overlap=0, compare=["bm25,dense"], hold=False)
        want = settlement_report(s, proj, record=False)
    out = CliRunner().invoke(main, ["decisive", "settle", "--project", "demo", "--db", db, "--json"])
    assert out.exit_code == 0, out.output
    got = json.loads(out.output)
    assert got["comparisons"][0]["status"] == want["comparisons"][0]["status"] == "open"
    assert got["comparisons"][0]["pairs_can_change"] == want["comparisons"][0]["pairs_can_change"]
    # dense puts each query's last document first: make it the only relevant one -> dense higher
    with session(sqlite_engine) as s:
        pairs = s.exec(select(PoolPair.id, PoolPair.systems_json).where(PoolPair.project_id == proj.id)).all()
        for pid, systems in pairs:
            grade = 2 if json.loads(systems)["dense"] == 1 else 0
            s.add(Judgment(project_id=proj.id, pair_id=pid, judge_id=judge.id, grade=grade))
        s.commit()
    out = CliRunner().invoke(main, ["decisive", "settle", "--project", "demo", "--db", db])
    assert out.exit_code == 0, out.output
    assert "settled" in out.output and "B higher" in out.output
    with session(sqlite_engine) as s:
        row = s.exec(select(DecisiveComparison)).one()
        assert row.settled_verdict == "B higher" and row.settled_share == 1.0
        # the export's manifest records the order and the settlement, outside the state hash
        from curation.export.gather import gather_state

        state = gather_state(s, s.get(type(proj), proj.id), policy="adjudicated", spool=tmp_path / "spool")
        rec = state.body["judging_order"]
        assert rec["order"] == "decisive" and rec["comparisons"][0]["settled_share"] == 1.0
        assert rec["comparisons"][0]["verdict"] == "B higher" and rec["comparisons"][0]["settled_at"]
    out = CliRunner().invoke(main, ["decisive", "settle", "--project", "demo", "--db", db, "--release", "bm25,dense",
                                    "--lead", "lena"])
    assert out.exit_code == 0, out.output
    with session(sqlite_engine) as s:
        # the labels above were stored directly, so all 72 queue rows were still open: released, recorded
        row = s.exec(select(DecisiveComparison)).one()
        assert row.released_pairs == 72 and row.released_by_id is not None
        assert not s.exec(select(Assignment).where(Assignment.done_at.is_(None))).all()
