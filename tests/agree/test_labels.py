"""Final labels under each policy, and the adjudication queue, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections import Counter

import pytest

from curation.agree.adjudication import adjudicate, disagreements, open_guidelines_version, queue_counts
from curation.agree.labels import FinalLabel, Vote, final_labels, resolve
from curation.judge.importing import import_judgments
from curation.store.engine import session as new_session
from curation.store.models import Judgment, SeedJudgment
from curation.store.projects import current_guidelines, get_project
from curation.store.users import get_user
from tests.support.judgments import write_qrels
from tests.support.projects import add_users, pairs_project

PAIRS = [("q1", "d1"), ("q1", "d2"), ("q1", "d3"), ("q2", "d4"), ("q2", "d5"), ("q2", "d6"), ("q3", "d7")]


@pytest.fixture
def store(engine, tmp_path):
    """Three judges and a lead label the pool through qrels imports:
    d1: 2,2,2 unanimous   d2: 0,2 (distance 2)   d3: 1,2,2 (majority 2)   d4: 0,1 tie
    d5: alice only        d6: alice 0, lena (lead) 2    d7: nobody (a seed says 1)"""
    pairs_project(engine, tmp_path / "p", PAIRS, scale="0-2")
    add_users(engine, alice="judge", bob="judge", carol="judge", lena="lead")
    rows = {
        "alice": [("q1", "d1", 2), ("q1", "d2", 0), ("q1", "d3", 1), ("q2", "d4", 0), ("q2", "d5", 1), ("q2", "d6", 0)],
        "bob": [("q1", "d1", 2), ("q1", "d2", 2), ("q1", "d3", 2), ("q2", "d4", 1)],
        "carol": [("q1", "d1", 2), ("q1", "d3", 2)],
        "lena": [("q2", "d6", 2)],
    }
    with new_session(engine) as s:
        for judge, labels in rows.items():
            path = write_qrels(tmp_path / f"{judge}.qrels", [(q, 0, d, g) for q, d, g in labels])
            import_judgments(s, path, judge=judge)
        project = get_project(s, "p")
        s.add(SeedJudgment(project_id=project.id, qid="q3", docid="d7", source="click", grade=1))
        s.commit()
    return engine


def _by_pair(labels: list[FinalLabel]) -> dict[str, tuple]:
    return {f.docid: (f.grade, f.source) for f in labels}


def test_policies(store):
    with new_session(store) as s:
        project = get_project(s, "p")
        adj = _by_pair(final_labels(s, project))
        maj = _by_pair(final_labels(s, project, policy="majority"))
        lead = _by_pair(final_labels(s, project, policy="lead"))
    assert adj == {"d1": (2, "unanimous"), "d2": (None, "unresolved"), "d3": (None, "unresolved"),
                   "d4": (None, "unresolved"), "d5": (1, "single"), "d6": (None, "unresolved"), "d7": (1, "seed")}
    assert maj["d3"] == (2, "majority") and maj["d4"] == (None, "unresolved") and maj["d2"] == (None, "unresolved")
    assert lead["d6"] == (2, "lead") and lead["d2"] == (None, "unresolved")


def test_adjudication_queue_and_final_label_change(store):
    with new_session(store) as s:
        project = get_project(s, "p")
        queue = disagreements(s, project)
        # Largest grade distance first: d2 (0 vs 2) and d6 (0 vs 2), then d3 and d4 (distance 1).
        assert [(d.docid, d.distance) for d in queue] == [("d2", 2), ("d6", 2), ("d3", 1), ("d4", 1)]
        assert [(lab.judge, lab.grade) for lab in queue[0].labels] == [("alice", 0), ("bob", 2)]
        assert queue[0].labels[0].source == "import"
        lena, alice = get_user(s, "lena"), get_user(s, "alice")
        with pytest.raises(ValueError, match="^lead"):
            adjudicate(s, project, pair_id=queue[0].pair_id, lead=alice, grade=2, reason="x")
        with pytest.raises(ValueError, match="^grade"):
            adjudicate(s, project, pair_id=queue[0].pair_id, lead=lena, grade=7, reason="x")
        # The reason is optional (a lead deciding by keyboard alone): kept as "" and replaced below.
        bare = adjudicate(s, project, pair_id=queue[0].pair_id, lead=lena, grade=0, reason="  ")
        assert (bare.grade, bare.reason) == (0, "")
        assert _by_pair(final_labels(s, project))["d2"] == (0, "adjudicated")
        row = adjudicate(s, project, pair_id=queue[0].pair_id, lead=lena, grade=1, reason="partly answers",
                         guidelines_issue=True)
        twice = adjudicate(s, project, pair_id=queue[0].pair_id, lead=lena, grade=1, reason="partly answers",
                           guidelines_issue=True)
        assert twice.id == row.id  # a double submit records once
        assert row.guidelines_version_id == current_guidelines(s, project).id
        assert [d.docid for d in disagreements(s, project)] == ["d6", "d3", "d4"]
        assert queue_counts(s, project) == (3, 1)
        labels = {f.docid: f for f in final_labels(s, project, policy="majority")}
        assert (labels["d2"].grade, labels["d2"].source) == (1, "adjudicated")
        assert labels["d2"].adjudicated_by == "lena" and labels["d2"].reason == "partly answers"
        assert labels["d2"].votes == (("alice", 0), ("bob", 2))
        # A later adjudication replaces the earlier one.
        adjudicate(s, project, pair_id=queue[0].pair_id, lead=lena, grade=2, reason="on reflection, fully")
        assert _by_pair(final_labels(s, project))["d2"] == (2, "adjudicated")
        counts = Counter(f.source for f in final_labels(s, project))
        assert counts["adjudicated"] == 1 and counts["unresolved"] == 3 and counts["seed"] == 1


def test_latest_judgment_counts_and_skips_are_ignored(store):
    with new_session(store) as s:
        project = get_project(s, "p")
        bob = get_user(s, "bob")
        pair_d4 = [d for d in disagreements(s, project) if d.docid == "d4"][0].pair_id
        # bob changes his mind on d4 (1 -> 0): the pair becomes unanimous; then a skip changes nothing.
        s.add(Judgment(project_id=project.id, pair_id=pair_d4, judge_id=bob.id, grade=0))
        s.add(Judgment(project_id=project.id, pair_id=pair_d4, judge_id=bob.id, grade=None, skipped=True))
        s.commit()
        assert _by_pair(final_labels(s, project))["d4"] == (0, "unanimous")
        assert "d4" not in [d.docid for d in disagreements(s, project)]


def test_include_unjudged_and_new_guidelines_version(store):
    with new_session(store) as s:
        project = get_project(s, "p")
        all_labels = final_labels(s, project, include_unjudged=True)
        assert len(all_labels) == len(PAIRS)
        assert [f.source for f in all_labels if f.docid == "d7"] == ["seed"]
        lena = get_user(s, "lena")
        before = current_guidelines(s, project).version
        version, new = open_guidelines_version(s, project, lead=lena, text="# Relevance\n\nPartial answers are 1.\n",
                                               note="after d2")
        assert new and version.version == before + 1 and current_guidelines(s, project).version == before + 1
        with pytest.raises(ValueError, match="^lead"):
            open_guidelines_version(s, project, lead=get_user(s, "bob"), text="x")


def test_resolve_on_plain_votes():
    assert resolve([Vote("a", 1)]) == (1, "single")
    assert resolve([Vote("a", 1), Vote("b", 1)], policy="majority") == (1, "unanimous")
    assert resolve([Vote("a", 0), Vote("b", 1)], policy="majority") == (None, "unresolved")
    assert resolve([Vote("a", 0), Vote("b", 1)], adjudication=1) == (1, "adjudicated")
    assert resolve([Vote("a", 0), Vote("l", 2, True, 1.0), Vote("m", 1, True, 2.0)], policy="lead") == (1, "lead")
    assert resolve([], seed=2) == (2, "seed")
    assert resolve([Vote("a", 0)], seed=2) == (0, "single")  # a human label wins over a seed
    with pytest.raises(ValueError, match="^policy"):
        resolve([], policy="vote")


def test_adjudicate_command_lists_and_decides(store):
    from click.testing import CliRunner

    from curation.cli import main

    db = ["--db", store.url.render_as_string(hide_password=False)]
    runner = CliRunner()
    res = runner.invoke(main, ["labels", "adjudicate", *db])
    assert res.exit_code == 0, res.output
    assert res.output.splitlines()[0] == "q1/d2  distance 2  alice=0, bob=2"
    res = runner.invoke(main, ["labels", "adjudicate", "--lead", "lena", "--pair", "q1/d2", "--grade", "1",
                               "--reason", "partly answers", *db])
    assert res.exit_code == 0 and "final grade 1 (adjudicated by lena)" in res.output
    res = runner.invoke(main, ["labels", "adjudicate", "--json", *db])
    assert [d["docid"] for d in __import__("json").loads(res.output)] == ["d6", "d3", "d4"]
    res = runner.invoke(main, ["labels", "adjudicate", "--lead", "alice", "--pair", "q1/d3", "--grade", "1",
                               "--reason", "x",
                               *db])
    assert res.exit_code == 1 and "only a lead or admin" in res.output
    res = runner.invoke(main, ["labels", "adjudicate", "--lead", "lena", "--pair", "q9/d1", "--grade", "1",
                               "--reason", "x", *db])
    assert res.exit_code == 1 and "is not a pair of project p" in res.output
    with new_session(store) as s:
        assert _by_pair(final_labels(s, get_project(s, "p")))["d2"] == (1, "adjudicated")


@pytest.mark.parametrize("overlap_only", [False, True])
def test_load_judgments_in_seconds_is_the_records_times_as_seconds(engine, tmp_path, overlap_only):
    """``seconds=True`` (all times converted at once: curation.store.direct.utc_micros) gives the
    records ``seconds=False`` gives, each time as ``as_seconds`` makes it of the datetime, on
    SQLite's text and PostgreSQL's datetimes alike; skips too."""
    from datetime import timedelta

    from sqlmodel import select

    from curation.agree.labels import Label, as_seconds, load_judgments
    from tests.support.rich_store import rich_project

    rich_project(engine, tmp_path / "in", n_queries=8, docs=6, seed=5)
    with new_session(engine) as s:
        for j in s.exec(select(Judgment)).all():  # times shown, to the microsecond, on two rows in three
            if j.id % 3:
                j.shown_at = j.answered_at - timedelta(seconds=j.id % 7, microseconds=123_457 * j.id % 10**6)
        s.commit()
        proj = get_project(s, "p")
        for skips in (False, True):
            plain = load_judgments(s, proj, overlap_only=overlap_only, include_skips=skips)
            fast = load_judgments(s, proj, overlap_only=overlap_only, include_skips=skips, seconds=True)
            assert len(plain) > 10 and any(j.shown_at is not None for j in plain)
            assert fast == [Label(j.qid, j.docid, j.judge, j.grade, as_seconds(j.answered_at), as_seconds(j.shown_at))
                            for j in plain]
            assert all(type(j.answered_at) is float for j in fast)
