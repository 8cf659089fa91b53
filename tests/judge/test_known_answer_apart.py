"""Known-answer pairs in the store (SQLite and PostgreSQL): mixed into a judge's main queue at the
project's rate, answered through the same judging operations as any pair, and kept apart from the
pool's labels: agreement, final labels, the leads' counts of work, the decisive order's labels and
the export never see a judge's answers on them, while the judge's own counter moves as for any pair;
each judge's accuracy on them, and the hold of a judge below the bar until a lead releases it."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from sqlmodel import select

from curation.agree.labels import final_labels, load_judgments
from curation.judge import gold, judging
from curation.judge.known_answer import DEFAULT_BAR, MIN_ANSWERS
from curation.store import users, workload
from curation.store.engine import session as new_session
from curation.store.lookups import pair_keys
from curation.store.models import (
    JUDGMENT_KNOWN,
    KNOWN_KIND,
    MAIN_BASE,
    Assignment,
    AuditEvent,
    Judgment,
    KnownAnswer,
    Project,
    utcnow,
)
from tests.support.known_answer import known_answer_project


def test_the_models_bar_default_is_the_rules():
    assert Project().known_answer_bar == DEFAULT_BAR


def _project(engine, folder, *, rate: int = 3, n_queries: int = 8):
    return known_answer_project(engine, folder, rate=rate, n_queries=n_queries)


def _answer_all(engine, pid, who: str, grade_of, *, start=None) -> list[tuple[str, str, int]]:
    t = start or utcnow()
    shown = []
    with new_session(engine) as s:
        user = users.get_user(s, who)
        while (task := judging.next_task(s, pid, user, now=t)) is not None:
            t += timedelta(seconds=7)
            grade = grade_of(task)
            judging.submit(s, user, task.token, grade=grade, now=t)
            shown.append((task.qid, task.docid, grade))
    return shown


def test_known_pairs_are_mixed_in_and_kept_apart(engine, tmp_path):
    pid, known_pairs = _project(engine, tmp_path)
    with new_session(engine) as s:
        carol = users.get_user(s, "carol")
        rows = s.exec(select(Assignment).where(Assignment.judge_id == carol.id)).all()
        known_rows = [a for a in rows if a.kind == KNOWN_KIND]
        main_rows = [a for a in rows if a.kind == "main"]
        assert known_rows and len(known_rows) == min(len(main_rows) // 2, 4)  # rate 3: one in three shown
        assert {a.pair_id for a in known_rows} <= set(known_pairs)
        positions = [a.position for a in rows]
        assert len(set(positions)) == len(positions) and min(positions) >= MAIN_BASE  # one place each
        # never inside another query's run of pairs: beside a pair of its own query when the judge
        # has that query, else between two runs (the main rows either side are of different queries)
        from curation.store.models import PoolPair

        query = {a.id: s.get(PoolPair, a.pair_id).query_id for a in rows}
        queue = sorted(rows, key=lambda a: a.position)
        mine = {query[b.id] for b in rows if b.kind == "main"}
        for i, a in enumerate(queue):
            if a.kind == KNOWN_KIND:
                before = next((b for b in reversed(queue[:i]) if b.kind == "main"), None)
                after = next((b for b in queue[i + 1:] if b.kind == "main"), None)
                if query[a.id] in mine:
                    assert query[a.id] in {query[b.id] for b in (before, after) if b is not None}
                else:
                    assert before is None or after is None or query[before.id] != query[after.id]
        known_keys = set(pair_keys(s, [a.pair_id for a in known_rows]).values())
        before = {(f.qid, f.docid): f for f in final_labels(s, pid)}
        lead_work_before = workload.project_work(workload.count_work(s, pid, visible=True))

    shown = _answer_all(engine, pid, "carol", lambda task: 0)  # carol answers 0 everywhere
    assert known_keys <= {(q, d) for q, d, _ in shown}  # the known-answer pairs were shown to her
    with new_session(engine) as s:
        carol = users.get_user(s, "carol")
        marked = s.exec(select(Judgment).where(Judgment.judge_id == carol.id, Judgment.purpose == JUDGMENT_KNOWN)).all()
        assert len(marked) == len(known_keys)
        # No reader of labels sees them: final labels, the judgments agreement reads, the decisive order.
        after = {(f.qid, f.docid): f for f in final_labels(s, pid)}
        for key in known_keys:
            assert before.get(key) == after.get(key)
        assert not [lab for lab in load_judgments(s, pid) if (lab.qid, lab.docid) in known_keys]
        from curation.evaluate.decisive import load_pool

        pool = load_pool(s, s.get(Project, pid))
        assert pool is not None
        # The leads' work counts: carol's known-answer rows counted apart, not as pool work.
        work = workload.count_work(s, pid, visible=True)
        lead_work = workload.project_work(work)
        assert lead_work.total == lead_work_before.total
        assert lead_work.known_total == len(known_rows) and lead_work.known_done == len(known_rows)
        # ... while carol's own counter moved on every pair she was shown.
        mine = judging.progress(s, pid, carol)
        assert mine.done == len(shown) == mine.assigned
        # Her accuracy: every known-answer answer was 0, never accepted.
        report = {j.judge: j for j in gold.accuracy_report(s, s.get(Project, pid))}
        assert report["carol"].accuracy.answered == len(known_keys)
        assert report["carol"].accuracy.exact.hits == 0
        # 0 is within one of an accepted 1 (the pairs that accept 1 or 2), not of a lone 2
        assert report["carol"].accuracy.within_one.hits == sum(1 for j in marked if 1 in _accepted(s, j.pair_id))


def test_a_known_pair_of_a_query_in_the_queue_sits_among_its_pairs(engine, tmp_path):
    """A known-answer pair of a query the judge is working on goes among that query's own pairs (so
    it counts in the query's "document i of n" like the rest), and such pairs are used first."""
    pid, _ = _project(engine, tmp_path, rate=2)
    with new_session(engine) as s:
        from curation.store.models import PoolPair

        proj = s.get(Project, pid)
        carol, alice, lena = (users.get_user(s, n) for n in ("carol", "alice", "lena"))
        query_of = dict(s.exec(select(PoolPair.id, PoolPair.query_id).where(PoolPair.project_id == pid)).all())
        carols = s.exec(select(Assignment).where(Assignment.judge_id == carol.id)).all()
        her_queries = {query_of[a.pair_id] for a in carols if a.kind == "main"}
        # alice's pairs of carol's queries (carol has none of them) become known-answer pairs
        extra = [a.pair_id for a in s.exec(select(Assignment).where(Assignment.judge_id == alice.id))
                 if query_of[a.pair_id] in her_queries]
        assert extra
        keys = pair_keys(s, extra)
        gold.add_known(s, proj, [gold.KnownEntry(*keys[p], (2,)) for p in extra], source="lead", lead=lena)
        s.commit()
        s.expire_all()  # the new places were written with one UPDATE, past the session's objects
        queue = sorted(s.exec(select(Assignment).where(Assignment.judge_id == carol.id,
                                                       Assignment.done_at.is_(None))).all(),
                       key=lambda a: a.position)
        placed = [a for a in queue if a.kind == KNOWN_KIND and a.pair_id in set(extra)]
        assert placed  # the pairs of her own queries were taken
        for a in placed:
            i = queue.index(a)
            near = [b for b in (queue[i - 1] if i else None, queue[i + 1] if i + 1 < len(queue) else None)
                    if b is not None]
            assert query_of[a.pair_id] in {query_of[b.pair_id] for b in near}


def _accepted(s, pair_id) -> tuple[int, ...]:
    return gold.accepted_grades(s.exec(select(KnownAnswer).where(KnownAnswer.pair_id == pair_id)).one())


def test_the_export_never_holds_known_answer_answers(engine, tmp_path):
    pid, _ = _project(engine, tmp_path)
    _answer_all(engine, pid, "carol", lambda task: 0)
    _answer_all(engine, pid, "alice", lambda task: 2)
    from curation.export.versions import export_version

    with new_session(engine) as s:
        proj = s.get(Project, pid)
        carol = users.get_user(s, "carol")
        known_keys = set(pair_keys(s, [j.pair_id for j in s.exec(select(Judgment).where(
            Judgment.judge_id == carol.id, Judgment.purpose == JUDGMENT_KNOWN))]).values())
        res = export_version(s, proj, "v1", out_dir=tmp_path / "exports", allow_incomplete=True)
    folder = tmp_path / "exports" / "v1"
    for line in (folder / "qrels.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if (rec["qid"], rec["docid"]) in known_keys:
            assert rec["grade"] == 2  # alice's own label of the pair, not carol's 0
            assert "carol" not in json.dumps(rec)
    manifest = json.loads((folder / "manifest.json").read_text())
    known = manifest["known_answer"]
    assert known["pairs"] == 4 and len(known["sha256"]) == 64 and known["rate"] == 3
    by_name = {j["name"]: j for j in known["judges"]}
    assert by_name["carol"]["answered"] == len(known_keys) and by_name["carol"]["exact"]["value"] == 0.0
    assert by_name["carol"]["exact"]["high"] < 1
    # The manifest's count of carol's labels is of her pool labels only.
    with new_session(engine) as s:
        carol = users.get_user(s, "carol")
        pool_labels = len(s.exec(select(Judgment).where(Judgment.judge_id == carol.id,
                                                        Judgment.purpose == "pool")).all())
    assert {j["name"]: j["labels"] for j in manifest["judges"]}["carol"] == pool_labels
    assert res is not None


def test_a_judge_below_the_bar_is_held_until_a_lead_releases(engine, tmp_path):
    pid, _ = _project(engine, tmp_path, rate=2, n_queries=10)
    with new_session(engine) as s:
        proj = s.get(Project, pid)
        proj.known_answer_rate = 2
        s.add(proj)
        s.commit()
        # carol needs more known-answer pairs to be judged: give every pair of alice's as known (2).
        alice = users.get_user(s, "alice")
        keys = pair_keys(s, sorted(s.exec(select(Assignment.pair_id).where(Assignment.judge_id == alice.id)).all()))
        gold.add_known(s, proj, [gold.KnownEntry(q, d, (2,)) for q, d in keys.values()], source="lead")
        carol = users.get_user(s, "carol")
        n_known = len(s.exec(select(Assignment).where(Assignment.judge_id == carol.id,
                                                      Assignment.kind == KNOWN_KIND)).all())
    assert n_known >= MIN_ANSWERS  # enough to be flagged
    _answer_all(engine, pid, "carol", lambda task: 0)
    with new_session(engine) as s:
        proj = s.get(Project, pid)
        carol, lena = users.get_user(s, "carol"), users.get_user(s, "lena")
        assert gold.apply_holds(s, proj) == [carol.id]
        assert gold.apply_holds(s, proj) == []  # held once
        assert judging.judge_project(s, carol, pid).held
        assert gold.is_held(s, pid, carol.id)
        # A held judge gets no new pair; add one open pair to see it.
        hold = gold.release_hold(s, proj, carol, lena)
        assert hold.released_by_id == lena.id and hold.released_answers == n_known
        assert not gold.is_held(s, pid, carol.id)
        assert gold.apply_holds(s, proj) == []  # not held again on the same answers
        actions = {e.action for e in s.exec(select(AuditEvent))}
        assert {"judge_held", "hold_released", "known_answer_added", "known_answer_settings"} <= actions


def test_a_held_judge_is_shown_nothing(engine, tmp_path):
    pid, _ = _project(engine, tmp_path)
    with new_session(engine) as s:
        carol = users.get_user(s, "carol")
        from curation.store.models import KnownAnswerHold

        s.add(KnownAnswerHold(project_id=pid, judge_id=carol.id, answers=12, exact=0.1))
        s.commit()
        assert judging.next_task(s, pid, carol) is None
        jp = judging.judge_project(s, carol, pid)
        assert jp.held and judging.next_task(s, jp, carol) is None


def test_add_checks_grades_and_pairs(engine, tmp_path):
    pid, _ = _project(engine, tmp_path)
    with new_session(engine) as s:
        proj = s.get(Project, pid)
        with pytest.raises(ValueError, match="grade"):
            gold.add_known(s, proj, [gold.KnownEntry("q000", "d000_00", (7,))], source="lead")
        with pytest.raises(ValueError, match="not in the pool"):
            gold.add_known(s, proj, [gold.KnownEntry("nope", "d000_00", (1,))], source="lead")
        listed = gold.list_known(s, proj)
        assert len(listed) == 4 and all(k.source == "lead" for k in listed)
        n = gold.retire_known(s, proj, [(listed[0].qid, listed[0].docid)])
        assert n == 1
        assert len(gold.list_known(s, proj, include_retired=False)) == 3


def test_a_skipped_known_answer_pair_comes_back_like_any_skip(engine, tmp_path):
    pid, known_pairs = _project(engine, tmp_path)
    with new_session(engine) as s:
        carol = users.get_user(s, "carol")
        known_keys = set(pair_keys(s, known_pairs).values())
        t = utcnow()
        skipped, order = None, []
        while (task := judging.next_task(s, pid, carol, now=t)) is not None:
            t += timedelta(seconds=7)
            key = (task.qid, task.docid)
            order.append(key)
            if skipped is None and key in known_keys:
                skipped = key
                judging.submit(s, carol, task.token, skip=True, now=t)
            else:
                judging.submit(s, carol, task.token, grade=1, now=t)
        assert skipped is not None and order.count(skipped) == 2 and order[-1] == skipped
        assert judging.progress(s, pid, carol).skipped == 0
