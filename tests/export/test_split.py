"""The held-out split: stratified proportions, stability when queries arrive, the store and the
export. Expected counts are floor/ceil of share x stratum size, worked out independently of the
rule's code; the marginal probability is checked with scipy's binomial test."""

from __future__ import annotations

import json
import math
from collections import Counter

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest
from sqlmodel import select

from curation.cli import main
from curation.export import versions as export
from curation.export.split import SplitQuery, assign_splits, split_project
from curation.store.engine import session as new_session
from curation.store.models import Query
from curation.store.projects import get_project
from tests.support.judgments import judge
from tests.support.projects import pairs_project


def _queries(n: int, strata: dict[str, int] | None = None, start: int = 0) -> list[SplitQuery]:
    """``strata``: name -> share weight; queries dealt to strata round-robin by weight."""
    strata = strata or {"head": 1}
    cycle = [s for s, w in strata.items() for _ in range(w)]
    return [SplitQuery(f"q{i:04d}", cycle[i % len(cycle)]) for i in range(start, start + n)]


def _within_floor_ceil(assigned: dict[str, str], queries: list[SplitQuery], holdout: float) -> None:
    by = Counter()
    held = Counter()
    for q in queries:
        by[q.stratum] += 1
        held[q.stratum] += assigned[q.qid] == "holdout"
    for s, n in by.items():
        assert math.floor(holdout * n) <= held[s] <= math.ceil(holdout * n), (s, n, held[s])


def test_each_stratum_holds_out_its_share():
    qs = _queries(301, {"head": 3, "torso": 2, "tail": 1, "rare": 1})
    assigned = assign_splits(qs, holdout=0.35, seed=7)
    assert set(assigned) == {q.qid for q in qs} and set(assigned.values()) == {"tune", "holdout"}
    _within_floor_ceil(assigned, qs, 0.35)
    # Tiny strata too: 1 query of 0.35 is 0 or 1 held out, never more.
    tiny = [SplitQuery(f"t{i}", f"s{i}") for i in range(40)]
    _within_floor_ceil(assign_splits(tiny, holdout=0.35, seed=1), tiny, 0.35)


def test_the_same_seed_gives_the_same_split_and_another_seed_another():
    qs = _queries(200, {"a": 1, "b": 1})
    assert assign_splits(qs, holdout=0.3, seed=5) == assign_splits(list(reversed(qs)), holdout=0.3, seed=5)
    assert assign_splits(qs, holdout=0.3, seed=5) != assign_splits(qs, holdout=0.3, seed=6)


def test_queries_arriving_later_never_move_the_earlier_ones():
    holdout, seed = 0.35, 11
    known: dict[str, SplitQuery] = {}
    history: dict[str, str] = {}
    for batch, size in enumerate((40, 7, 1, 25, 13)):
        arriving = _queries(size, {"head": 2, "tail": 1}, start=len(known))
        pool = list(known.values()) + arriving
        new = assign_splits(pool, holdout=holdout, seed=seed)
        assert set(new) == {q.qid for q in arriving}, batch  # only the newcomers are assigned
        for q in arriving:
            known[q.qid] = SplitQuery(q.qid, q.stratum, new[q.qid])
        history.update(new)
        for qid, split in history.items():
            assert known[qid].split == split
        # After every arrival, each stratum still holds out floor or ceil of its share.
        _within_floor_ceil({q: s.split for q, s in known.items()}, list(known.values()), holdout)


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(min_value=0, max_value=12), min_size=1, max_size=6),
    batches=st.integers(min_value=1, max_value=4),
    holdout=st.floats(min_value=0.05, max_value=0.95),
    seed=st.integers(min_value=0, max_value=2**31),
)
def test_any_arrival_order_keeps_splits_and_proportions(sizes, batches, holdout, seed):
    """Strata of any size, queries arriving in any number of batches: nobody moves, and every
    stratum holds out floor or ceil of its share after each batch."""
    everyone = [SplitQuery(f"s{k}-{i}", f"s{k}") for k, n in enumerate(sizes) for i in range(n)]
    known: dict[str, SplitQuery] = {}
    for b in range(batches):
        arriving = everyone[b::batches]
        new = assign_splits(list(known.values()) + arriving, holdout=holdout, seed=seed)
        assert set(new) == {q.qid for q in arriving}
        for q in arriving:
            known[q.qid] = SplitQuery(q.qid, q.stratum, new[q.qid])
        _within_floor_ceil({q: s.split for q, s in known.items()}, list(known.values()), holdout)


def test_every_query_is_held_out_with_the_stated_probability():
    """Over seeds, a fixed query is held out with probability `holdout` (the random start makes the
    systematic rule unbiased for every position)."""
    qs = _queries(9, {"head": 1})
    seeds = range(1500)
    for target in ("q0000", "q0004", "q0008"):
        hits = sum(assign_splits(qs, holdout=0.35, seed=s)[target] == "holdout" for s in seeds)
        assert binomtest(hits, len(seeds), 0.35).pvalue > 1e-4, (target, hits)


def test_bad_parameters_are_refused():
    qs = _queries(3)
    for bad in (0, 1, 1.5, -0.1, "0.3", True):
        with pytest.raises(ValueError, match="holdout"):
            assign_splits(qs, holdout=bad, seed=0)
    with pytest.raises(ValueError, match="seed"):
        assign_splits(qs, holdout=0.3, seed=1.5)
    with pytest.raises(ValueError, match="twice"):
        assign_splits(qs + qs[:1], holdout=0.3, seed=0)


# ------------------------------------------------------------------------------------------ store

PAIRS = [(f"q{i:02d}", f"d{i % 5}") for i in range(20)]


def _splits(engine) -> dict[str, str | None]:
    with new_session(engine) as s:
        return {q.qid: q.split for q in s.exec(select(Query))}


def test_split_is_stored_fixed_and_extended_to_new_queries(engine, tmp_path):
    pairs_project(engine, tmp_path / "in", PAIRS)
    with new_session(engine) as s:
        rep = split_project(s, get_project(s, "p"), holdout=0.35, seed=3)
    assert len(rep.assigned) == 20
    assert {k: 3 <= c["holdout"] <= 4 for k, c in rep.totals.items()} == {"freq=head": True, "freq=tail": True}
    first = _splits(engine)
    assert set(first.values()) == {"tune", "holdout"}

    with new_session(engine) as s:
        with pytest.raises(ValueError, match="already split with holdout 0.35"):
            split_project(s, get_project(s, "p"), holdout=0.5)
        with pytest.raises(ValueError, match="seed"):
            split_project(s, get_project(s, "p"), seed=4)
        proj = get_project(s, "p")
        for i in range(20, 31):  # eleven queries arrive
            s.add(Query(project_id=proj.id, qid=f"q{i:02d}", text=f"query {i}", stratum_key="freq=head"))
        s.commit()
        rep = split_project(s, get_project(s, "p"))
    assert sorted(rep.assigned) == [f"q{i:02d}" for i in range(20, 31)]
    after = _splits(engine)
    assert {q: after[q] for q in first} == first
    head = [q for q in after if q in {f"q{i:02d}" for i in range(0, 20, 2)} or int(q[1:]) >= 20]
    held = sum(after[q] == "holdout" for q in head)
    assert math.floor(0.35 * 21) <= held <= math.ceil(0.35 * 21)


def test_every_export_carries_the_split_and_assigns_late_queries(engine, tmp_path):
    pairs_project(engine, tmp_path / "in", PAIRS)
    judge(engine, tmp_path, "alice", {p: 1 for p in PAIRS})
    with new_session(engine) as s:
        split_project(s, get_project(s, "p"), holdout=0.35, seed=3)
        proj = get_project(s, "p")
        s.add(Query(project_id=proj.id, qid="q99", text="late", stratum_key="freq=tail"))
        s.commit()
        res = export.export_version(s, get_project(s, "p"), "v1", out_dir=tmp_path / "out", created_by="t")
    stored = _splits(engine)
    assert stored["q99"] in ("tune", "holdout")
    lines = [json.loads(x) for x in (tmp_path / "out" / "v1" / "queries.jsonl").read_text().splitlines()]
    assert {r["qid"]: r["split"] for r in lines} == stored
    split = res.manifest["split"]
    assert split["holdout"] == 0.35 and split["seed"] == 3
    assert split["counts"] == dict(Counter(stored.values()))


def test_cli_split(engine, tmp_path):
    pairs_project(engine, tmp_path / "in", PAIRS)
    url = engine.url.render_as_string(hide_password=False)
    runner = CliRunner()
    res = runner.invoke(main, ["export", "split", "--db", url])
    assert res.exit_code == 1 and "give the share to hold out" in res.output
    res = runner.invoke(main, ["export", "split", "--db", url, "--holdout", "0.35", "--seed", "3"])
    assert res.exit_code == 0, res.output
    held = Counter(_splits(engine).values())["holdout"]
    assert f"assigned 20 new queries ({20 - held} tune, {held} holdout)" in res.output
    assert "freq=head" in res.output and "freq=tail" in res.output
    res = runner.invoke(main, ["export", "split", "--db", url, "--holdout", "0.4"])
    assert res.exit_code == 1 and "never changes" in res.output
    res = runner.invoke(main, ["export", "split", "--db", url])
    assert res.exit_code == 0 and "assigned 0 new queries" in res.output
