"""The judge's operations: queue order, one-time tokens, idempotent submits, going back and
relabelling, skip/unsure, guidelines versions, progress and pace, access checks, stale claims
moved to an idle judge, and concurrency (threads on SQLite and PostgreSQL)."""

from __future__ import annotations

import dataclasses
import threading
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from sqlalchemy import update
from sqlmodel import select

from curation.judge import judging
from curation.judge.assignment import assign, release
from curation.judge.judging import (
    AccessDenied,
    PairReassigned,
    Task,
    judge_projects,
    next_task,
    previous_task,
    progress,
    submit,
    submit_and_next,
    task_at,
)
from curation.store.engine import make_engine, session
from curation.store.models import (
    MAIN_BASE,
    Assignment,
    Document,
    GuidelinesVersion,
    Judgment,
    PairView,
    PoolPair,
    Query,
    utcnow,
)
from curation.store.projects import set_guidelines
from curation.store.users import add_user
from tests.support.projects import counts_project


def _setup(engine, tmp_path):
    with session(engine) as s:
        project, _ = counts_project(s, tmp_path)
        alice = add_user(s, "alice", password="password1")
        bob = add_user(s, "bob", password="password1")
        lena = add_user(s, "lena", role="lead", password="password1")
        assign(s, project, [alice, bob], overlap=4, seed=3)
    return engine, project, alice, bob, lena


@pytest.fixture
def setup(engine, tmp_path):
    """A 14-pair project, judges alice and bob with 4 overlap pairs each, lead lena; main held.
    On SQLite and PostgreSQL."""
    return _setup(engine, tmp_path)


@pytest.fixture
def setup_sqlite(sqlite_engine, tmp_path):
    """The same on SQLite only, for checks that do not depend on the database."""
    return _setup(sqlite_engine, tmp_path)


def _pair_of(s, task_or_token) -> tuple[str, str]:
    from curation.store.models import PairView

    token = task_or_token.token if isinstance(task_or_token, Task) else task_or_token
    view = s.exec(select(PairView).where(PairView.token == token)).one()
    pair = s.get(PoolPair, view.pair_id)
    return s.get(Query, pair.query_id).qid, s.get(Document, pair.document_id).docid


def _label_all(s, project, judge, grade=1, **kw):
    tasks = []
    while (t := next_task(s, project, judge, **kw)) is not None:
        submit(s, judge, t.token, grade=grade)
        tasks.append(t)
    return tasks


def test_overlap_first_then_held_until_release(setup):
    engine, project, alice, bob, lena = setup
    with session(engine) as s:
        seen = _label_all(s, project, alice)
        assert len(seen) == 4 and all(t.position < MAIN_BASE for t in seen)
        assert next_task(s, project, alice) is None  # main pairs are held back
        held = s.exec(select(Assignment.position).where(Assignment.judge_id == alice.id,
                                                        Assignment.kind == "main")).first()
        with pytest.raises(AccessDenied):
            task_at(s, project, alice, held)
        p = progress(s, project, alice)
        assert (p.done, p.assigned, p.held) == (4, 4, 5)
        release(s, project, lena, agreement=0.8)
        main_tasks = _label_all(s, project, alice)
        assert len(main_tasks) == 5 and all(t.position >= MAIN_BASE for t in main_tasks)
        # One query at a time, its pairs all shown before the next query.
        qids = [t.qid for t in main_tasks]
        assert len([q for i, q in enumerate(qids) if i == 0 or qids[i - 1] != q]) == len(set(qids))
        assert all(t.query_pair_count == qids.count(t.qid) for t in main_tasks)
        assert [t.query_pair_index for t in main_tasks if t.qid == qids[0]] == list(range(1, qids.count(qids[0]) + 1))
        assert [p.name for p in judge_projects(s, alice)] == ["demo"]


def test_tasks_reveal_no_provenance_and_no_other_labels(setup_sqlite):
    engine, project, alice, bob, lena = setup_sqlite
    with session(engine) as s:
        bob_tasks = _label_all(s, project, bob, grade=2)
        alice_first = next_task(s, project, alice)
        assert _pair_of(s, alice_first) in {_pair_of(s, t) for t in bob_tasks}  # an overlap pair bob labelled
        assert alice_first.current_grade is None and not alice_first.relabel
        names = {f.name for f in dataclasses.fields(Task)}
        assert not names & {"systems", "systems_json", "rank", "runs", "batch", "kind", "judge", "grades_of_others"}
        text = repr(alice_first)
        assert "bm25" not in text and "dense" not in text


def test_a_token_records_one_judgment(setup):
    engine, project, alice, bob, lena = setup
    with session(engine) as s:
        t = next_task(s, project, alice)
        first = submit(s, alice, t.token, grade=2)
        again = submit(s, alice, t.token, grade=0)  # a double click / resubmitted form
        assert not first.duplicate and again.duplicate and again.judgment_id == first.judgment_id
        rows = s.exec(select(Judgment).where(Judgment.judge_id == alice.id)).all()
        assert [(r.grade, r.client_token) for r in rows] == [(2, t.token)]


def test_tokens_and_positions_of_other_judges_are_refused(setup):
    engine, project, alice, bob, lena = setup
    with session(engine) as s:
        release(s, project, lena)
        t_bob = next_task(s, project, bob)
        with pytest.raises(AccessDenied):
            submit(s, alice, t_bob.token, grade=1)
        with pytest.raises(AccessDenied):
            submit(s, alice, "made-up-token", grade=1)
        assert s.exec(select(Judgment)).all() == []
        # task_at only ever opens the judge's own pairs, whatever position is asked for.
        alice_pairs = set(s.exec(select(Assignment.pair_id).where(Assignment.judge_id == alice.id)).all())
        bob_positions = s.exec(select(Assignment.position).where(Assignment.judge_id == bob.id)).all()
        for pos in bob_positions:
            try:
                t = task_at(s, project, alice, pos)
            except AccessDenied:
                continue
            from curation.store.models import PairView

            view = s.exec(select(PairView).where(PairView.token == t.token)).one()
            assert view.pair_id in alice_pairs and view.judge_id == alice.id
        with pytest.raises(AccessDenied):
            task_at(s, project, alice, 999)


def test_back_and_relabel_appends_and_the_latest_counts(setup):
    engine, project, alice, bob, lena = setup
    with session(engine) as s:
        t1 = next_task(s, project, alice)
        submit(s, alice, t1.token, grade=0)
        t2 = next_task(s, project, alice)
        submit(s, alice, t2.token, grade=1)
        t3 = next_task(s, project, alice)
        back = previous_task(s, project, alice, before=t3.position)
        assert back.position == t2.position and back.current_grade == 1 and back.relabel
        back2 = previous_task(s, project, alice, before=back.position)
        assert back2.position == t1.position and back2.current_grade == 0
        assert previous_task(s, project, alice, before=t1.position) is None
        submit(s, alice, back.token, grade=2)  # relabel t2
        history = s.exec(select(Judgment.grade).where(Judgment.judge_id == alice.id).order_by(Judgment.id)).all()
        assert history == [0, 1, 2]
        assert task_at(s, project, alice, t2.position).current_grade == 2
        # The queue carries on where it was: the first pair not answered yet.
        assert next_task(s, project, alice).position == t3.position


def test_skip_comes_back_last_and_unsure_counts_as_answered(setup):
    engine, project, alice, bob, lena = setup
    with session(engine) as s:
        t1 = next_task(s, project, alice)
        submit(s, alice, t1.token, skip=True)
        t2 = next_task(s, project, alice)
        assert t2.position != t1.position
        with pytest.raises(ValueError, match="unsure answer needs your best grade"):
            submit(s, alice, t2.token, unsure=True, note="no grade")
        submit(s, alice, t2.token, unsure=True, grade=1, note="  is a forum post an answer?  ")
        rows = _label_all(s, project, alice)
        assert rows[-1].position == t1.position  # the skipped pair, offered once the others are done
        j = s.exec(select(Judgment).where(Judgment.client_token == t2.token)).one()
        assert (j.grade, j.unsure, j.note) == (1, True, "is a forum post an answer?")
        p = progress(s, project, alice)
        assert (p.done, p.assigned, p.skipped) == (4, 4, 0)


def test_submit_and_next_records_the_answer_and_gives_the_next_pair_and_the_progress(setup):
    """The judging page's answer (the answer and the next pair's token in one transaction; on
    PostgreSQL in two round trips with the progress read in it, on SQLite the page and the progress
    read after its commit): the same judgment, next pair and progress as submit, next_task and
    progress called one by one; a skipped pair comes back last through next_task (progress then
    left to the caller), then None."""
    engine, project, alice, bob, lena = setup
    with session(engine) as s:
        t = next_task(s, project, alice)
        first = t.position
        seen = []
        for i in range(4):
            answered = submit_and_next(s, project, alice, t.token, **({"skip": True} if i == 0 else {"grade": i % 3}))
            j = s.exec(select(Judgment).where(Judgment.client_token == t.token)).one()
            assert (j.judge_id, j.grade, j.skipped) == (alice.id, None if i == 0 else i % 3, i == 0)
            assert not answered.result.duplicate and answered.result.judgment_id == j.id
            seen.append(t.position)
            t = answered.task
            if i < 3:
                open_rows = s.exec(select(Assignment.position).where(
                    Assignment.judge_id == alice.id, Assignment.done_at.is_(None), Assignment.skipped.is_(False),
                    Assignment.kind == "overlap").order_by(Assignment.position)).all()
                assert t.position == open_rows[0] and _pair_of(s, t)  # its token was issued to alice
                assert answered.progress == progress(s, project, alice)
        assert t.position == first and answered.progress is None  # the skipped pair, from next_task
        assert sorted(seen) == sorted(set(seen))
        again = submit_and_next(s, project, alice, t.token, grade=0)
        assert again.task is None and again.progress is None  # the overlap set is done
        assert submit_and_next(s, project, alice, t.token, grade=2).result.duplicate
        assert progress(s, project, alice).done == 4


def test_submit_and_next_of_a_pair_moved_meanwhile_records_nothing(setup):
    engine, project, alice, bob, lena = setup
    with session(engine) as s:
        t = next_task(s, project, alice)
        row = s.exec(select(Assignment).where(Assignment.judge_id == alice.id,
                                              Assignment.position == t.position)).one()
        row.judge_id = lena.id  # as a stale move would (lena has no row of this pair)
        s.commit()
        before = s.exec(select(Judgment)).all(), s.exec(select(PairView)).all()
        with pytest.raises(PairReassigned):
            submit_and_next(s, project, alice, t.token, grade=1)
        # no judgment, and no token for a next pair either (on PostgreSQL it is sent with the answer)
        assert (s.exec(select(Judgment)).all(), s.exec(select(PairView)).all()) == before
        nxt = next_task(s, project, alice)
        assert nxt is not None and nxt.position != t.position


def test_a_pair_moved_before_it_is_shown_gets_no_token_and_no_page(setup):
    """Showing a pair writes its token only while the pair is still the judge's, and the page is
    read from that token (on PostgreSQL in one statement, from the row the INSERT returned): a pair
    moved between the look-up and the show gives no page and leaves no token behind."""
    engine, project, alice, bob, lena = setup
    with session(engine) as s:
        a = judging._operations._first_open(s, project, alice.id)
        s.exec(update(Assignment).where(Assignment.id == a.id).values(judge_id=lena.id))
        s.commit()
        assert judging._operations._show(s, project, alice.id, a, utcnow()) is None
        assert s.exec(select(PairView).where(PairView.assignment_id == a.id)).all() == []
        s.exec(update(Assignment).where(Assignment.id == a.id).values(judge_id=alice.id))
        s.commit()
        shown = judging._operations._show(s, project, alice.id, a, utcnow())
        view = s.exec(select(PairView).where(PairView.assignment_id == a.id)).one()
        assert (shown.token, shown.position) == (view.token, a.position) and view.judge_id == alice.id
        assert task_at(s, project, alice, a.position).qid == shown.qid


def test_invalid_answers_are_refused(setup_sqlite):
    engine, project, alice, bob, lena = setup_sqlite
    with session(engine) as s:
        t = next_task(s, project, alice)
        with pytest.raises(ValueError, match=r"^grade: 3 is not a grade of the scale 0-2 \(0, 1, 2\)$"):
            submit(s, alice, t.token, grade=3)
        with pytest.raises(ValueError, match="give a grade"):
            submit(s, alice, t.token)
        with pytest.raises(ValueError, match="skipped pair has no grade"):
            submit(s, alice, t.token, grade=1, skip=True)
        with pytest.raises(ValueError, match="note is"):
            submit(s, alice, t.token, grade=1, note="x" * 3000)
        assert s.exec(select(Judgment)).all() == []
        assert not submit(s, alice, t.token, grade="2").duplicate  # form values arrive as text


def test_judgments_record_guidelines_version_and_times(setup):
    engine, project, alice, bob, lena = setup
    with session(engine) as s:
        t0 = utcnow()
        t = next_task(s, project, alice, now=t0)
        assert t.guidelines_version == 1
        set_guidelines(s, project, "# Relevance v2\nStricter.\n")
        submit(s, alice, t.token, grade=1, now=t0 + timedelta(seconds=12))
        t_next = next_task(s, project, alice, now=t0 + timedelta(seconds=12))
        assert t_next.guidelines_version == 2
        submit(s, alice, t_next.token, grade=1, now=t0 + timedelta(seconds=20))
        rows = s.exec(select(Judgment).where(Judgment.judge_id == alice.id).order_by(Judgment.id)).all()
        versions = [s.get(GuidelinesVersion, r.guidelines_version_id).version for r in rows]
        assert versions == [1, 2]  # the version in view when the pair was shown
        assert rows[0].shown_at == t0 and rows[0].answered_at == t0 + timedelta(seconds=12)
        assert (rows[1].answered_at - rows[1].shown_at).total_seconds() == 8


def test_progress_time_left_at_the_judges_median_pace(setup):
    engine, project, alice, bob, lena = setup
    with session(engine) as s:
        now = utcnow()
        for secs in (10, 30, 5):  # shown -> answered times; median 10 s
            t = next_task(s, project, alice, now=now)
            now += timedelta(seconds=secs)
            submit(s, alice, t.token, grade=1, now=now)
        p = progress(s, project, alice)
        assert (p.done, p.assigned, p.held) == (3, 4, 5)
        # Durations are computed by the database (SQLite: julianday, a double: ~50 µs resolution).
        assert p.median_seconds == pytest.approx(10, abs=1e-3)
        assert p.seconds_left == pytest.approx(10 * (4 - 3), abs=1e-3)
        assert p.fraction == 0.75
        release(s, project, lena)
        p = progress(s, project, alice)
        assert (p.done, p.assigned, p.held) == (3, 9, 0) and p.seconds_left == pytest.approx(60, abs=1e-2)
        assert progress(s, project, bob).median_seconds is None


def test_walked_away_judges_main_pairs_move_to_a_judge_with_an_empty_queue(setup):
    engine, project, alice, bob, lena = setup
    with session(engine) as s:
        release(s, project, lena)
        t_alice = next_task(s, project, alice)  # alice looks at a pair, then walks away
        _label_all(s, project, bob, take_stale=False)
        assert next_task(s, project, bob) is None  # alice is still fresh: nothing to take
        assert next_task(s, project, bob, now=utcnow() + timedelta(minutes=10)) is None
        alice_main_before = s.exec(select(Assignment).where(Assignment.judge_id == alice.id,
                                                            Assignment.kind == "main")).all()
        later = utcnow() + timedelta(minutes=31)
        t_bob = next_task(s, project, bob, now=later)
        assert t_bob is not None
        moved = s.exec(select(Assignment).where(Assignment.judge_id == bob.id, Assignment.kind == "main",
                                                Assignment.done_at.is_(None))).all()
        # One whole query moved: the one at the end of alice's queue.
        last_query = max(alice_main_before, key=lambda a: a.position)

        def q_of(a):
            return s.get(PoolPair, a.pair_id).query_id

        assert {q_of(a) for a in moved} == {q_of(last_query)}
        assert len(moved) == sum(1 for a in alice_main_before if q_of(a) == q_of(last_query))
        assert all(a.position >= MAIN_BASE for a in moved)
        # Overlap pairs never move; each main pair still has exactly one row.
        assert len(s.exec(select(Assignment).where(Assignment.judge_id == alice.id,
                                                   Assignment.kind == "overlap")).all()) == 4
        main_pairs = s.exec(select(Assignment.pair_id).where(Assignment.kind == "main")).all()
        assert len(main_pairs) == len(set(main_pairs)) == 10
        # alice comes back and answers a pair that moved: refused, nothing recorded.
        moved_token = task_for_moved = None
        for a in alice_main_before:
            if q_of(a) == q_of(last_query):
                task_for_moved = a
        assert task_for_moved is not None
        from curation.store.models import PairView

        s.add(PairView(token="old-tab-token", project_id=project.id, assignment_id=task_for_moved.id,
                       pair_id=task_for_moved.pair_id, judge_id=alice.id))
        s.commit()
        moved_token = "old-tab-token"
        with pytest.raises(PairReassigned):
            submit(s, alice, moved_token, grade=1)
        assert s.exec(select(Judgment).where(Judgment.client_token == moved_token)).first() is None
        # Her overlap pair, shown before she left, can still be answered.
        assert not submit(s, alice, t_alice.token, grade=1).duplicate


def _concurrency_engine(db_url):
    return make_engine(db_url, pool_size=24, max_overflow=8)


def _big_project(engine, tmp_path, judges, *, overlap):
    with session(engine) as s:
        project, _ = counts_project(s, tmp_path, queries={f"q{i:02d}": 4 + i % 3 for i in range(12)})
        users = [add_user(s, n, password="password1") for n in judges]
        lead = add_user(s, "lead", role="lead", password="password1")
        assign(s, project, users, overlap=overlap, seed=1)
        release(s, project, lead)
    return project, users


def _run_judges(eng, project, users, *, stale_after, take_stale, seconds=60):
    """Each judge's thread labels until their queue is empty, sending every answer twice at once
    from two threads (a double click). Returns what each judge was shown and got back."""
    shown = defaultdict(list)  # judge name -> tokens
    results = []  # (judge id, token, grade, SubmitResult)
    reassigned = Counter()
    errors = []
    lock = threading.Lock()
    deadline = utcnow() + timedelta(seconds=seconds)

    def double_submit(judge_id, token, grade):
        with session(eng) as s:
            try:
                r = submit(s, judge_id, token, grade=grade)
            except PairReassigned:
                with lock:
                    reassigned[judge_id] += 1
                return
            with lock:
                results.append((judge_id, token, grade, r))

    def work(user):
        try:
            grade = user.id % 3
            with ThreadPoolExecutor(2) as clicks, session(eng) as s:
                while utcnow() < deadline:
                    t = next_task(s, project, user.id, stale_after=stale_after, take_stale=take_stale)
                    if t is None:
                        break
                    shown[user.name].append(t.token)
                    futures = [clicks.submit(double_submit, user.id, t.token, grade) for _ in range(2)]
                    for f in futures:
                        f.result()
        except Exception as exc:  # any failure is reported by the test
            errors.append(repr(exc))

    threads = [threading.Thread(target=work, args=(u,)) for u in users]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    return shown, results, reassigned


def _check_nothing_lost_or_duplicated(eng, project, results):
    with session(eng) as s:
        rows = {j.id: j for j in s.exec(select(Judgment).where(Judgment.project_id == project.id))}
        # Every answer acknowledged is in the store, with its grade; the twin of a double click
        # got the same row back.
        by_token = defaultdict(set)
        for judge_id, token, grade, r in results:
            assert r.judgment_id in rows
            assert (rows[r.judgment_id].judge_id, rows[r.judgment_id].grade) == (judge_id, grade)
            by_token[token].add(r.judgment_id)
        assert all(len(ids) == 1 for ids in by_token.values())
        assert sum(not r.duplicate for *_, r in results) == len(rows)  # one row per first submit
        assert len({j.client_token for j in rows.values()}) == len(rows)
        # No main pair judged by two judges, and every pair judged: overlap by all, main by one.
        kinds = dict(s.exec(select(Assignment.pair_id, Assignment.kind).where(
            Assignment.project_id == project.id)).all())
        judges_of = defaultdict(set)
        for j in rows.values():
            judges_of[j.pair_id].add(j.judge_id)
        main_pairs = [p for p, k in kinds.items() if k == "main"]
        assert main_pairs and all(len(judges_of[p]) == 1 for p in main_pairs)
        assert s.exec(select(Assignment).where(Assignment.project_id == project.id,
                                               Assignment.done_at.is_(None))).all() == []


def test_concurrent_claims_and_double_submits(db_url, engine, tmp_path):
    """Six judges at once, each answer sent twice simultaneously: main pairs are never shown to two
    judges, and every answer is recorded exactly once."""
    eng = _concurrency_engine(db_url)
    try:
        judges = [f"j{i}" for i in range(6)]
        project, users = _big_project(eng, tmp_path, judges, overlap=8)
        shown, results, reassigned = _run_judges(eng, project, users, stale_after=None, take_stale=False)
        assert sum(reassigned.values()) == 0
        _check_nothing_lost_or_duplicated(eng, project, results)
        with session(eng) as s:
            main_shown = defaultdict(set)
            for name, tokens in shown.items():
                for token in tokens:
                    qid_docid = _pair_of(s, token)
                    main_shown[qid_docid].add(name)
            kinds = {_pair_of_assignment(s, a): a.kind for a in s.exec(select(Assignment))}
            for pair, names in main_shown.items():
                if kinds[pair] == "main":
                    assert len(names) == 1, f"main pair {pair} shown to {names}"
            assert len(results) == 2 * sum(len(t) for t in shown.values())
    finally:
        eng.dispose()


def _pair_of_assignment(s, a):
    pair = s.get(PoolPair, a.pair_id)
    return s.get(Query, pair.query_id).qid, s.get(Document, pair.document_id).docid


def test_concurrent_stale_moves_never_split_a_main_pair(db_url, engine, tmp_path):
    """With a zero timeout every judge whose queue empties takes others' unanswered work while they
    label it: a pair is either answered by its owner or moved, never both; nothing is lost."""
    eng = _concurrency_engine(db_url)
    try:
        project, users = _big_project(eng, tmp_path, [f"j{i}" for i in range(6)], overlap=4)
        # Unbalance the queues so judges run dry early and start taking work.
        with session(eng) as s:
            rows = s.exec(select(Assignment).where(Assignment.kind == "main",
                                                   Assignment.judge_id.in_([u.id for u in users[:3]]))).all()
            pos = MAIN_BASE + 1000
            for a in rows:
                a.judge_id, a.position = users[0].id, pos
                pos += 1
            s.commit()
        shown, results, reassigned = _run_judges(eng, project, users, stale_after=timedelta(0), take_stale=True)
        _check_nothing_lost_or_duplicated(eng, project, results)
        with session(eng) as s:
            main_owners = Counter(s.exec(select(Assignment.judge_id).where(Assignment.kind == "main")).all())
        assert len(main_owners) > 1  # work did move between judges
    finally:
        eng.dispose()


def test_queue_summary_and_holding_again(setup):
    from curation.judge.assignment import hold, queue_summary

    engine, project, alice, bob, lena = setup
    with session(engine) as s:
        release(s, project, lena)
        for _ in range(6):  # 4 overlap + 2 main
            t = next_task(s, project, alice)
            submit(s, alice, t.token, grade=1)
        t = next_task(s, project, bob)
        submit(s, bob, t.token, skip=True)
        summary = queue_summary(s, project)
        assert summary["alice"] == {"overlap": 4, "main": 5, "done": 6, "remaining": 3}
        assert summary["bob"] == {"overlap": 4, "main": 5, "done": 0, "remaining": 9}
        hold(s, project)
        assert next_task(s, project, alice) is None  # main work hidden again
        # One count of work (curation.store.workload): held is the main work not done (3 of 5), and
        # the two main pairs alice labelled before the hold stay done and hers.
        assert (progress(s, project, alice).assigned, progress(s, project, alice).held) == (6, 3)
        assert progress(s, project, alice).done == 6


def test_pairs_of_dropped_queries_and_excluded_documents_are_retired(setup):
    engine, project, alice, bob, lena = setup
    with session(engine) as s:
        release(s, project, lena)
        mine = s.exec(
            select(Query.qid, Document.docid)
            .join(PoolPair, PoolPair.query_id == Query.id)
            .join(Document, Document.id == PoolPair.document_id)
            .join(Assignment, Assignment.pair_id == PoolPair.id)
            .where(Assignment.judge_id == alice.id)
        ).all()
        dropped_qid = next(q for q, _ in mine if sum(1 for x, _ in mine if x == q) >= 2)
        excluded_docid = next(d for q, d in mine if q != dropped_qid)
        s.exec(select(Query).where(Query.qid == dropped_qid)).one().status = "dropped"
        s.exec(select(Document).where(Document.docid == excluded_docid)).one().excluded = True
        s.commit()
        retired = sum(1 for q, d in mine if q == dropped_qid or d == excluded_docid)
        p = progress(s, project, alice)
        assert (p.done, p.assigned) == (0, len(mine) - retired)
        seen = [(t.qid, t.docid) for t in _label_all(s, project, alice)]
        assert len(seen) == len(mine) - retired
        assert dropped_qid not in {q for q, _ in seen} and excluded_docid not in {d for _, d in seen}
        p = progress(s, project, alice)
        assert p.done == p.assigned == len(mine) - retired


def test_progress_counts_skips_and_forgets_the_open_pairs_of_a_dropped_query(setup):
    engine, project, alice, bob, lena = setup
    with session(engine) as s:
        release(s, project, lena)
        assigned = progress(s, project, alice).assigned
        first = next_task(s, project, alice)
        submit(s, alice, first.token, skip=True)
        submit(s, alice, next_task(s, project, alice).token, skip=True)
        submit(s, alice, next_task(s, project, alice).token, grade=1)
        p = progress(s, project, alice)
        assert (p.done, p.skipped, p.assigned) == (1, 2, assigned)  # a skip is not done

        s.exec(select(Query).where(Query.qid == first.qid)).one().status = "dropped"
        s.commit()
        # Counted here without progress(): alice's rows of the dropped query, by state.
        rows = s.exec(
            select(Assignment.done_at, Assignment.skipped)
            .join(PoolPair, PoolPair.id == Assignment.pair_id).join(Query, Query.id == PoolPair.query_id)
            .where(Assignment.judge_id == alice.id, Query.qid == first.qid)
        ).all()
        open_skipped = sum(1 for done_at, skipped in rows if done_at is None and skipped)
        open_plain = sum(1 for done_at, skipped in rows if done_at is None and not skipped)
        assert open_skipped >= 1  # the first skip is in that query
        p = progress(s, project, alice)
        assert p.skipped == 2 - open_skipped
        assert p.assigned == assigned - open_skipped - open_plain
        assert p.done == 1  # an answered pair stays answered when its query is dropped
