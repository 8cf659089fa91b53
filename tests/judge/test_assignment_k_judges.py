"""k judges per pair: each overlap pair with k of the listed judges (balanced), a seeded share of
the main pool with k judges too (one owner row, k - 1 more), topping up on a later call."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest
from click.testing import CliRunner
from sqlmodel import select

from curation.cli import main
from curation.judge.assignment import assign, spread_judges
from curation.store.engine import session
from curation.store.models import Assignment, PoolPair, User
from curation.store.users import add_user
from tests.support.projects import counts_project


def _users(s, *names):
    return [add_user(s, n, role="judge", password="password1") for n in names]


def _judges_by_pair(s, project, kind):
    out = defaultdict(set)
    for pair_id, name, excl in s.exec(
        select(Assignment.pair_id, User.name, Assignment.exclusive_pair_id)
        .join(User, User.id == Assignment.judge_id)
        .where(Assignment.project_id == project.id, Assignment.kind == kind)
    ).all():
        out[pair_id].add((name, excl is not None))
    return out


def test_spread_judges_balances_and_tops_up():
    out = spread_judges(range(12), [1, 2, 3, 4], 3, seed=4)
    assert all(len(js) == 3 and len(set(js)) == 3 for js in out.values())
    # 12 pairs x 3 judges over 4 judges: 9 each.
    assert Counter(j for js in out.values() for j in js) == {1: 9, 2: 9, 3: 9, 4: 9}
    # A pair that already has two judges gets one more, never one it has.
    top = spread_judges([7], [1, 2, 3, 4], 3, have={7: {1, 2}}, seed=0)
    assert len(top[7]) == 1 and top[7][0] in (3, 4)
    assert spread_judges([7], [1, 2, 3], 2, have={7: {1, 3}}) == {}
    with pytest.raises(ValueError, match="at least 2"):
        spread_judges([1], [1, 2], 1)
    with pytest.raises(ValueError, match="only 2 judges"):
        spread_judges([1], [1, 2], 3)


def test_k_judges_on_the_overlap_set_and_a_share_of_the_pool(engine, tmp_path):
    with session(engine) as s:
        project, _ = counts_project(s, tmp_path)  # 14 pairs over 4 queries
        _users(s, "alice", "bob", "carol", "dave")
        rep = assign(s, project, ["alice", "bob", "carol", "dave"], overlap=4, seed=2, judges_per_pair=3,
                     share=0.5)
        overlap = _judges_by_pair(s, project, "overlap")
        assert len(overlap) == 4 and all(len(js) == 3 for js in overlap.values())
        # 4 pairs x 3 judges over 4 judges: 3 each.
        assert Counter(n for js in overlap.values() for n, _ in js) == {"alice": 3, "bob": 3, "carol": 3, "dave": 3}
        main_rows = _judges_by_pair(s, project, "main")
        assert len(main_rows) == 10
        shared = {p: js for p, js in main_rows.items() if len(js) > 1}
        assert len(shared) == 5 == rep.shared_main_pairs and rep.judges_per_pair == 3
        # A shared pair: its owner row (exclusive) and two more; every other main pair one owner row.
        for js in main_rows.values():
            assert sum(owner for _, owner in js) == 1
            assert len(js) in (1, 3)
        assert rep.new_overlap_rows == 12
        # The whole pool is assigned; the main pairs still wait for a release.
        assert rep.unassigned_pairs == 0 and rep.held


def test_k_judges_later_call_tops_up_and_adds_nothing_twice(sqlite_engine, tmp_path):
    with session(sqlite_engine) as s:
        project, _ = counts_project(s, tmp_path)
        _users(s, "alice", "bob", "carol")
        assign(s, project, ["alice", "bob"], overlap=4, seed=1)
        rep = assign(s, project, ["alice", "bob", "carol"], overlap=4, seed=1, judges_per_pair=3)
        overlap = _judges_by_pair(s, project, "overlap")
        assert all({n for n, _ in js} == {"alice", "bob", "carol"} for js in overlap.values())
        assert rep.new_overlap_rows == 4
        again = assign(s, project, ["alice", "bob", "carol"], overlap=4, seed=1, judges_per_pair=3)
        assert again.new_overlap_rows == 0 and again.new_main_pairs == 0
        n = len(s.exec(select(Assignment.id).join(PoolPair, PoolPair.id == Assignment.pair_id)).all())
        assert n == 4 * 3 + 10


def test_k_judges_refuses_bad_options(sqlite_engine, tmp_path):
    with session(sqlite_engine) as s:
        project, _ = counts_project(s, tmp_path)
        _users(s, "alice", "bob")
        with pytest.raises(ValueError, match="only 2 judges are listed"):
            assign(s, project, ["alice", "bob"], judges_per_pair=3)
        with pytest.raises(ValueError, match=">= 2"):
            assign(s, project, ["alice", "bob"], judges_per_pair=1)
        with pytest.raises(ValueError, match="give judges_per_pair"):
            assign(s, project, ["alice", "bob"], share=0.2)
        with pytest.raises(ValueError, match="between 0 and 1"):
            assign(s, project, ["alice", "bob"], judges_per_pair=2, share=1.5)
        assert s.exec(select(Assignment.id)).all() == []


def test_cli_judges_per_pair(engine, db_url, tmp_path):
    with session(engine) as s:
        project, _ = counts_project(s, tmp_path)
        _users(s, "alice", "bob", "carol")
    r = CliRunner().invoke(main, ["judging", "assign", "--db", db_url, "--project", project.name, "--judges",
                                  "alice,bob,carol", "--overlap", "6", "--judges-per-pair", "2", "--share", "0.25"])
    assert r.exit_code == 0, r.output
    assert "2 judges per overlap pair" in r.output and "shared main pairs: 2" in r.output
    r = CliRunner().invoke(main, ["judging", "assign", "--db", db_url, "--project", project.name, "--judges",
                                  "alice", "--share", "0.25"])
    assert r.exit_code != 0 and "--share goes with --judges-per-pair" in r.output


def test_k_judges_label_their_queues_and_every_label_counts(sqlite_engine, tmp_path):
    """Through the judging API: each judge meets the shared main pairs in their queue once released,
    and every judge's label of a shared pair reaches the final labels (median of three)."""
    from datetime import UTC, datetime

    from curation.agree.labels import final_labels
    from curation.judge.assignment import release
    from tests.support.judgments import judge_queue

    with session(sqlite_engine) as s:
        project, _ = counts_project(s, tmp_path)
        users = _users(s, "alice", "bob", "carol")
        lead = add_user(s, "lena", role="lead", password="password1")
        rep = assign(s, project, ["alice", "bob", "carol"], overlap=3, seed=3, judges_per_pair=3, share=0.5)
        release(s, project, lead, agreement=1.0)
        pid = project.id
    grade = {"alice": 0, "bob": 1, "carol": 2}
    for u in users:
        judge_queue(sqlite_engine, pid, u.name, lambda docid, g=grade[u.name]: g,
                    start=datetime(2026, 1, 1, tzinfo=UTC))
    with session(sqlite_engine) as s:
        labels = final_labels(s, pid, policy="median")
        shared = _judges_by_pair(s, s.get(type(project), pid), "main")
    three = [f for f in labels if len(f.votes) == 3]
    # 11 main pairs, half of them (round(5.5) = 6) shared: 3 overlap + 6 shared pairs with three labels.
    assert len(three) == 3 + sum(len(js) == 3 for js in shared.values()) == 3 + rep.shared_main_pairs == 9
    assert all(f.grade == 1 and f.source == "median" for f in three)
    assert all(f.source == "single" for f in labels if len(f.votes) == 1)
