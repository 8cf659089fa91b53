"""Exports under the aggregating policies (median, dawid_skene, mace): the labels equal
final_labels' under the same policy (the policy is defined once), every qrels.jsonl record says
how it was aggregated and from how many judges, the manifest records the policy and the model, and
an export under another policy carries none of the new keys."""

from __future__ import annotations

import json

import pytest

from curation.agree.labels import final_labels
from curation.export import versions as export
from curation.store.engine import session as new_session
from curation.store.projects import get_project
from tests.support.judgments import judge
from tests.support.projects import pairs_project

PAIRS = [(f"q{q}", f"d{q}{d}") for q in range(4) for d in range(5)]
STAFF = {"alice": "judge", "bob": "judge", "carol": "judge", "dave": "judge", "lena": "lead"}


def _labels(who: str) -> dict:
    """Three judges per pair (each leaves out a different quarter); carol errs often, dave sometimes."""
    out = {}
    for i, (q, d) in enumerate(PAIRS):
        if i % 4 == "abcd".index(who[0]):
            continue
        true = i % 3
        wrong = (who == "carol" and i % 2) or (who == "dave" and i % 5 == 0)
        out[(q, d)] = (true + 1) % 3 if wrong else true
    return out


@pytest.fixture
def k_judges(engine, tmp_path):
    pairs_project(engine, tmp_path / "in", PAIRS, staff=STAFF)
    for who in ("alice", "bob", "carol", "dave"):
        judge(engine, tmp_path, who, _labels(who))
    return engine


def _export(engine, out, version, policy):
    with new_session(engine) as s:
        return export.export_version(s, get_project(s, "p"), version, out_dir=out, policy=policy,
                                     created_by="tester", allow_incomplete=True)


@pytest.mark.parametrize("policy", ["median", "dawid_skene", "mace"])
def test_export_under_an_aggregating_policy_equals_final_labels(k_judges, tmp_path, policy):
    res = _export(k_judges, tmp_path / "out", "v1", policy)
    folder = tmp_path / "out" / "v1"
    records = [json.loads(line) for line in (folder / "qrels.jsonl").read_text().splitlines()]
    with new_session(k_judges) as s:
        expected = {(f.qid, f.docid): f for f in final_labels(s, get_project(s, "p"), policy=policy)
                    if f.grade is not None}
    assert {(r["qid"], r["docid"]): (r["grade"], r["source"]) for r in records} == {
        u: (f.grade, f.source) for u, f in expected.items()}
    assert all(r["aggregation"] == policy and r["judges"] == len(r["judgments"]) == 3 for r in records)
    assert any(r["source"] == policy for r in records)  # some disagreement was decided by the policy
    m = res.manifest
    assert m["policy"] == policy and m["aggregation"]["policy"] == policy
    assert m["counts"]["sources"][policy] == sum(r["source"] == policy for r in records)
    if policy != "median":
        assert m["aggregation"]["crowd-kit"] and "crowdkit.aggregation" in m["aggregation"]["method"]
    from curation.export.verify import verify

    assert verify(folder).ok


def test_the_default_policies_write_no_aggregation_keys(k_judges, tmp_path):
    res = _export(k_judges, tmp_path / "out", "v1", "majority")
    text = (tmp_path / "out" / "v1" / "qrels.jsonl").read_text()
    assert '"aggregation"' not in text and '"judges":' not in text
    assert "aggregation" not in res.manifest
    assert not set(res.manifest["counts"]["sources"]) & {"median", "dawid_skene", "mace"}
