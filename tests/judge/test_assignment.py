"""Assigning judges: the overlap set drawn across strata and queries, the balanced split keeping a
query with one judge, overlap first in every queue, re-assigning after the pool grows, holding
main work back until a lead releases it."""

from __future__ import annotations

import random
from collections import Counter, defaultdict

import pytest
from click.testing import CliRunner
from sqlmodel import select

from curation.cli import main
from curation.judge.assignment import PairRef, _apportion, assign, draw_overlap, main_visible, release, split_main
from curation.store.engine import session
from curation.store.models import MAIN_BASE, Assignment, Document, PoolPair, Project, Query, User
from curation.store.projects import extend_pool
from curation.store.users import add_user
from tests.support.projects import counts_project, write_inputs


def _users(s, *names, role="judge"):
    return [add_user(s, n, role=role, password="password1") for n in names]


def _rows(s, project):
    """(qid, docid, judge name, kind, position) for every assignment of the project."""
    return sorted(
        s.exec(
            select(Query.qid, Document.docid, User.name, Assignment.kind, Assignment.position)
            .join(PoolPair, PoolPair.id == Assignment.pair_id)
            .join(Query, Query.id == PoolPair.query_id)
            .join(Document, Document.id == PoolPair.document_id)
            .join(User, User.id == Assignment.judge_id)
            .where(Assignment.project_id == project.id)
        ).all()
    )


def test_apportion_by_hand():
    rng = random.Random(0)
    # One each, then 7 left over spare sizes 10, 4, 0 (of 14): 5 and 2 exactly.
    assert _apportion(10, {"a": 11, "b": 5, "c": 1}, rng) == {"a": 6, "b": 3, "c": 1}
    # Fewer pairs than strata: the largest strata get one.
    assert _apportion(2, {"a": 11, "b": 5, "c": 1}, rng) == {"a": 1, "b": 1, "c": 0}
    # 7 over three equal strata: 1 each, then 4/3 each, one largest remainder: 3, 2, 2 in some order.
    q = _apportion(7, {"a": 4, "b": 4, "c": 4}, rng)
    assert sorted(q.values()) == [2, 2, 3]


def test_overlap_spreads_across_strata_and_queries():
    pairs = [PairRef(100 * q + i, q, "us" if q <= 3 else "uk") for q in range(1, 7) for i in range(5)]
    chosen = draw_overlap(pairs, 6, seed=3)
    by_id = {p.pair_id: p for p in pairs}
    assert len(chosen) == 6
    # 6 over two strata of 15 pairs each: 3 each; 3 queries per stratum: one pair from each query.
    assert Counter(by_id[c].stratum for c in chosen) == {"us": 3, "uk": 3}
    assert sorted(by_id[c].query_id for c in chosen) == [1, 2, 3, 4, 5, 6]
    # Reproducible and independent of the input order; the seed matters.
    shuffled = pairs[:]
    random.Random(9).shuffle(shuffled)
    assert draw_overlap(shuffled, 6, seed=3) == chosen
    assert len({tuple(draw_overlap(pairs, 6, seed=s)) for s in range(5)}) > 1
    # Asking for more than the pool gives the whole pool.
    assert draw_overlap(pairs, 1000, seed=3) == sorted(p.pair_id for p in pairs)
    with pytest.raises(ValueError, match="overlap"):
        draw_overlap(pairs, -1)


def test_split_is_longest_processing_time_by_hand():
    out = split_main({1: 7, 2: 5, 3: 4, 4: 3, 5: 3}, [10, 20], seed=0)
    # 7 -> 10; 5 -> 20; 4 -> 20 (5 < 7); 3 -> 10 (7 < 9); 3 -> 20 (9 < 10).
    assert (out[1], out[2], out[3]) == (10, 20, 20)
    assert sorted([out[4], out[5]]) == [10, 20]
    load = Counter()
    for q, j in out.items():
        load[j] += {1: 7, 2: 5, 3: 4, 4: 3, 5: 3}[q]
    assert load == {10: 10, 20: 12}
    # Existing loads count: a judge with 20 pairs already gets nothing while others catch up.
    assert set(split_main({1: 2, 2: 2}, [10, 20], loads={10: 20}).values()) == {20}


def test_assign_overlap_first_then_balanced_main(engine, tmp_path):
    with session(engine) as s:
        project, _ = counts_project(s, tmp_path)
        alice, bob = _users(s, "alice", "bob")
        rep = assign(s, project, ["alice", "bob"], overlap=4, seed=5)
        rows = _rows(s, project)
        overlap = [r for r in rows if r[3] == "overlap"]
        main_rows = [r for r in rows if r[3] == "main"]
        # Every judge labels the same 4 overlap pairs, spread over the 4 queries and both strata.
        ov_pairs = {(r[0], r[1]) for r in overlap}
        assert len(ov_pairs) == 4 and {r[0] for r in overlap} == {"q1", "q2", "q3", "q4"}
        assert {(r[0], r[1]) for r in overlap if r[2] == "alice"} == ov_pairs
        assert {(r[0], r[1]) for r in overlap if r[2] == "bob"} == ov_pairs
        assert (rep.overlap_pairs, rep.overlap_queries, rep.overlap_strata) == (4, 4, 2)
        # Overlap rows come first in each queue.
        for name in ("alice", "bob"):
            assert (max(r[4] for r in overlap if r[2] == name) < MAIN_BASE
                    <= min(r[4] for r in main_rows if r[2] == name))
        # Main pairs: all the others, each once, a query's pairs with one judge.
        assert len(main_rows) == 14 - 4 and len({(r[0], r[1]) for r in main_rows}) == 10
        assert not ({(r[0], r[1]) for r in main_rows} & ov_pairs)
        judges_of_query = defaultdict(set)
        for r in main_rows:
            judges_of_query[r[0]].add(r[2])
        assert all(len(v) == 1 for v in judges_of_query.values())
        # Main groups are q1:3 q2:2 q3:4 q4:1 -> LPT gives 4+1 and 3+2.
        assert sorted(Counter(r[2] for r in main_rows).values()) == [5, 5]
        # One query at a time: in each queue, a query's pairs are consecutive.
        for name in ("alice", "bob"):
            for kind in ("overlap", "main"):
                seq = [r[0] for r in sorted((r for r in rows if r[2] == name and r[3] == kind), key=lambda r: r[4])]
                runs = [q for i, q in enumerate(seq) if i == 0 or seq[i - 1] != q]
                assert len(runs) == len(set(runs))
        # The database holds each main pair once: exclusive_pair_id is set for main rows only.
        excl = s.exec(select(Assignment.kind, Assignment.exclusive_pair_id, Assignment.pair_id)).all()
        assert all((e == p) if k == "main" else e is None for k, e, p in excl)
        assert rep.held and not main_visible(s.get(Project, project.id))


def test_assign_is_reproducible(sqlite_engine, tmp_path):
    with session(sqlite_engine) as s:
        a, _ = counts_project(s, tmp_path / "a", name="a")
        b, _ = counts_project(s, tmp_path / "b", name="b")
        _users(s, "alice", "bob", "carol")
        assign(s, a, ["alice", "bob", "carol"], overlap=5, seed=11)
        assign(s, b, ["alice", "bob", "carol"], overlap=5, seed=11)
        assert _rows(s, a) == _rows(s, b)


def test_the_database_refuses_a_main_pair_for_two_judges(engine, tmp_path):
    from sqlalchemy.exc import IntegrityError

    with session(engine) as s:
        project, _ = counts_project(s, tmp_path)
        alice, bob = _users(s, "alice", "bob")
        assign(s, project, ["alice"], overlap=0)
        row = s.exec(select(Assignment).where(Assignment.kind == "main")).first()
        s.add(Assignment(project_id=project.id, pair_id=row.pair_id, judge_id=bob.id, kind="main",
                         exclusive_pair_id=row.pair_id, position=MAIN_BASE))
        with pytest.raises(IntegrityError):
            s.commit()


def test_reassign_after_extension_adds_only_new_pairs(engine, tmp_path):
    with session(engine) as s:
        project, _ = counts_project(s, tmp_path / "v1")
        _users(s, "alice", "bob", "carol")
        assign(s, project, ["alice", "bob"], overlap=4, seed=1)
        before = _rows(s, project)
        owner_q1 = {r[2] for r in before if r[0] == "q1" and r[3] == "main"}
        assert len(owner_q1) == 1
        bigger = write_inputs(tmp_path / "v2", queries={"q1": 6, "q2": 3, "q3": 5, "q4": 2})
        extend_pool(s, project, pool_path=bigger["pool.jsonl"], corpus_paths=[bigger["corpus.jsonl"]])
        rep = assign(s, project, ["alice", "bob", "carol"], overlap=4, seed=1)
        after = _rows(s, project)
        assert set(before) <= set(after)  # nothing moved or lost
        added = sorted(set(after) - set(before))
        new_main = [r for r in added if r[3] == "main"]
        # The two new q1 pairs go to the judge who already has q1; carol gets the overlap set.
        assert [(r[1], r[2]) for r in new_main] == [("q1-d4", owner_q1.pop()), ("q1-d5", new_main[0][2])]
        assert {(r[0], r[1]) for r in added if r[3] == "overlap"} == {(r[0], r[1]) for r in before if r[3] == "overlap"}
        assert {r[2] for r in added if r[3] == "overlap"} == {"carol"}
        assert all(r[4] < MAIN_BASE for r in added if r[3] == "overlap")
        assert (rep.new_main_pairs, rep.new_overlap_rows, rep.unassigned_pairs) == (2, 4, 0)
        assert assign(s, project, ["alice", "bob", "carol"], seed=1).new_main_pairs == 0


def test_new_queries_pairs_without_a_listed_owner_are_balanced(sqlite_engine, tmp_path):
    with session(sqlite_engine) as s:
        project, _ = counts_project(s, tmp_path)
        _users(s, "alice", "bob")
        rep = assign(s, project, ["alice"], overlap=0)
        assert rep.per_judge["alice"]["main"] == 14 and not rep.held
        assert main_visible(s.get(Project, project.id))  # nothing to review: not held


def test_overlap_larger_than_pool_and_dropped_queries(sqlite_engine, tmp_path):
    with session(sqlite_engine) as s:
        project, _ = counts_project(s, tmp_path)
        _users(s, "alice", "bob")
        q4 = s.exec(select(Query).where(Query.qid == "q4")).one()
        q4.status = "dropped"
        s.commit()
        rep = assign(s, project, ["alice", "bob"], overlap=1000)
        assert rep.overlap_pairs == 12 and rep.new_main_pairs == 0  # q4's 2 pairs are not handed out
        assert {r[0] for r in _rows(s, project)} == {"q1", "q2", "q3"}


def test_assign_validates_its_inputs(sqlite_engine, tmp_path):
    with session(sqlite_engine) as s:
        project, _ = counts_project(s, tmp_path)
        _users(s, "alice")
        with pytest.raises(ValueError, match="no user 'zed'.*golden admin user add zed"):
            assign(s, project, ["alice", "zed"])
        with pytest.raises(ValueError, match="listed twice"):
            assign(s, project, ["alice", "alice"])
        with pytest.raises(ValueError, match="at least one judge"):
            assign(s, project, [])
        with pytest.raises(ValueError, match="overlap must be"):
            assign(s, project, ["alice"], overlap=-3)
        assert s.exec(select(Assignment)).first() is None


def test_release_is_recorded_and_needs_a_lead(engine, tmp_path):
    with session(engine) as s:
        project, _ = counts_project(s, tmp_path)
        _users(s, "alice", "bob")
        (lena,) = _users(s, "lena", role="lead")
        alice = s.exec(select(User).where(User.name == "alice")).one()
        assign(s, project, ["alice", "bob"], overlap=4)
        with pytest.raises(ValueError, match="only a lead or admin"):
            release(s, project, alice, agreement=0.8)
        with pytest.raises(ValueError, match="agreement must be"):
            release(s, project, lena, agreement=1.5)
        with pytest.raises(ValueError, match="agreement must be"):
            release(s, project, lena, agreement=float("nan"))
        assert not main_visible(s.get(Project, project.id))
        rec = release(s, project, lena, agreement=0.72)
        proj = s.get(Project, project.id)
        assert (rec.lead, rec.agreement, rec.main_pairs) == ("lena", 0.72, 10)
        assert proj.released_by_id == lena.id and proj.released_agreement == 0.72 and proj.released_at is not None
        assert main_visible(proj)


def test_cli_assign_and_release(engine, db_url, tmp_path):
    with session(engine) as s:
        counts_project(s, tmp_path, name="news")
        _users(s, "alice", "bob")
        _users(s, "lena", role="lead")
    runner = CliRunner()
    res = runner.invoke(main, ["judging", "assign", "--judges", "alice,bob", "--overlap", "4", "--seed", "2", "--db",
                               db_url])
    assert res.exit_code == 0, res.output
    assert "overlap set of 4 pairs over 4 queries and 2 strata; 10 new main pairs" in res.output
    assert "alice" in res.output and "held back" in res.output
    res = runner.invoke(main, ["judging", "assign", "--judges", "alice,bob", "--overlap", "4", "--seed", "2", "--db",
                               db_url])
    assert res.exit_code == 0, res.output
    assert "overlap set of 4 pairs over 4 queries and 2 strata (assigned before" in res.output
    assert "0 new main pairs" in res.output
    res = runner.invoke(main, ["judging", "assign", "--judges", "alice,zed", "--db", db_url])
    assert res.exit_code == 1 and "no user 'zed'" in res.output
    res = runner.invoke(main, ["judging", "release", "--lead", "alice", "--db", db_url])
    assert res.exit_code == 1 and "only a lead or admin" in res.output
    res = runner.invoke(main, ["judging", "release", "--lead", "lena", "--agreement", "0.7", "--db", db_url])
    assert res.exit_code == 1 and "no agreement can be measured" in res.output  # nobody has judged yet
    res = runner.invoke(main, ["judging", "release", "--lead", "lena", "--force", "--reason", "trial", "--db", db_url])
    assert res.exit_code == 0 and "10 main pairs released by lena (forced: trial)" in res.output


# ------------------------------------------------------------------------------- concurrent assigns


def _race_assign(engine, project_id: int, judges: list[str], monkeypatch, n: int = 3):
    """``n`` assigns of one project at once, each on its own engine, all held at one point after
    their reads (a barrier in split_main) so that, unless something serialises them, they all read
    the same unassigned pairs. Returns (reports, errors)."""
    import contextlib
    import threading

    import curation.judge.assignment as assignment
    from curation.store.engine import make_engine

    barrier = threading.Barrier(n)
    real = assignment.split_main

    def racing(*args, **kwargs):
        with contextlib.suppress(threading.BrokenBarrierError):
            barrier.wait(timeout=3)
        return real(*args, **kwargs)

    monkeypatch.setattr(assignment, "split_main", racing)
    reports, errors = [], []

    def one():
        eng = make_engine(engine.url.render_as_string(hide_password=False))
        try:
            with session(eng) as s:
                reports.append(assign(s, s.get(Project, project_id), judges, overlap=3, seed=1))
        except Exception as exc:  # collected: the test asserts what they are
            errors.append(exc)
        finally:
            eng.dispose()

    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return reports, errors


def test_three_concurrent_assigns_keep_the_store_intact(engine, tmp_path, monkeypatch):
    with session(engine) as s:
        proj, _ = counts_project(s, tmp_path)  # 14 pairs over 4 queries
        _users(s, "ann", "ben", "cid")
        pid = proj.id
    reports, errors = _race_assign(engine, pid, ["ann", "ben", "cid"], monkeypatch)
    # Either they wait for each other (all succeed, the later ones add nothing) or the losers are
    # refused with the documented message; never a database error.
    assert all(isinstance(e, ValueError) and "was assigned while this command ran" in str(e) for e in errors), errors
    assert len(reports) + len(errors) == 3 and reports
    assert sorted(r.new_main_pairs for r in reports) == [0] * (len(reports) - 1) + [11]  # one won
    with session(engine) as s:
        rows = _rows(s, s.get(Project, pid))
    main_pairs = Counter((q, d) for q, d, _, kind, _ in rows if kind == "main")
    overlap = defaultdict(set)
    for q, d, who, kind, _ in rows:
        if kind == "overlap":
            overlap[who].add((q, d))
    assert set(main_pairs.values()) == {1}  # each main pair with exactly one judge
    assert len(overlap) == 3 and all(v == overlap["ann"] for v in overlap.values()) and len(overlap["ann"]) == 3
    assert len(main_pairs) + 3 == 14 and not set(main_pairs) & overlap["ann"]
    assert len(rows) == 11 + 9


def test_three_concurrent_assign_commands_exit_cleanly(engine, tmp_path):
    """Three `golden judging assign` processes at once: every one exits 0 (it waited for the lock) or 1 with
    the documented message, none with a traceback, and the pairs are handed out once."""
    import os
    import subprocess
    import sys

    with session(engine) as s:
        proj, _ = counts_project(s, tmp_path)
        _users(s, "ann", "ben", "cid")
        pid = proj.id
    url = engine.url.render_as_string(hide_password=False)
    code = "import sys; from curation.cli import main; main(sys.argv[1:], prog_name='golden')"
    args = ["judging", "assign", "--judges", "ann,ben,cid", "--overlap", "3", "--seed", "1", "--db", url]
    procs = [subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=dict(os.environ)) for _ in range(3)]
    results = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
    for rc, err in results:
        assert "Traceback" not in err
        assert rc == 0 or (rc == 1 and "was assigned while this command ran" in err), err
    with session(engine) as s:
        rows = _rows(s, s.get(Project, pid))
    assert len(rows) == 11 + 9 and len({(q, d, who) for q, d, who, _, _ in rows}) == 20


def test_an_assign_that_cannot_get_the_sqlite_store_says_so_and_adds_nothing(tmp_path):
    import sqlite3

    from tests.support.projects import sqlite_store

    with sqlite_store(tmp_path) as (_url, engine):
        with session(engine) as s:
            proj, _ = counts_project(s, tmp_path / "in")
            _users(s, "ann")
            pid = proj.id
        blocker = sqlite3.connect(tmp_path / "golden.db")
        blocker.execute("BEGIN IMMEDIATE")  # another command holds the write lock
        try:
            with session(engine) as s:
                s.connection().exec_driver_sql("PRAGMA busy_timeout=100")
                with pytest.raises(ValueError, match="kept the store locked .* run it again"):
                    assign(s, s.get(Project, pid), ["ann"], overlap=1)
        finally:
            blocker.rollback()
            blocker.close()
        with session(engine) as s:
            assert _rows(s, s.get(Project, pid)) == []
