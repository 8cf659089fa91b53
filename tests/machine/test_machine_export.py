"""``golden export create --fill-unjudged machine:NAME``: the pooled pairs no person labelled take the
machine's labels, flagged per pair in qrels.jsonl and counted in the manifest with the calibration
figures; human labels are never replaced; without the flag the same store exports no machine label."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from curation.cli import main
from curation.export.versions import ExportBlocked, export_version
from curation.machine.labels import import_machine_labels
from curation.store.engine import session as new_session
from curation.store.projects import get_project
from tests.support.judgments import judge
from tests.support.machine import write_machine
from tests.support.projects import pairs_project

# 12 queries x 5 documents; people labelled the first three documents of each query (36 pairs,
# enough for calibration figures); the machine labelled all 60, wrongly on d0 (2 for a 1).
PAIRS = [(f"q{i:02d}", f"d{j}") for i in range(12) for j in range(5)]
HUMAN = {(q, d): (1 if d == "d0" else 0) for q, d in PAIRS if d in ("d0", "d1", "d2")}
MACHINE = {(q, d): (2 if d == "d0" else (1 if d == "d4" else 0)) for q, d in PAIRS}


@pytest.fixture
def store(engine, tmp_path):
    pairs_project(engine, tmp_path / "in", PAIRS)
    judge(engine, tmp_path, "alice", HUMAN)
    rows = [{"qid": q, "docid": d, "grade": g, "confidence": 0.8, "model": "m1", "prompt_version": "v1"}
            for (q, d), g in MACHINE.items()]
    with new_session(engine) as s:
        import_machine_labels(s, write_machine(tmp_path / "m.jsonl", rows), machine="llm", project="p")
    return engine


def test_fill_flags_each_machine_label_and_counts_it_with_calibration(store, tmp_path):
    with new_session(store) as s:
        proj = get_project(s, "p")
        with pytest.raises(ExportBlocked, match="24 pooled pairs have no human label"):
            export_version(s, proj, "v1", out_dir=tmp_path / "ex")
        res = export_version(s, proj, "v1", out_dir=tmp_path / "ex", fill_unjudged="machine:llm", created_by="t")
    qrels = (res.path / "qrels.txt").read_text().splitlines()
    expected = {**{u: g for u, g in MACHINE.items() if u not in HUMAN}, **HUMAN}
    assert sorted(qrels) == sorted(f"{q} 0 {d} {g}" for (q, d), g in expected.items())
    records = {(r["qid"], r["docid"]): r for r in map(json.loads, (res.path / "qrels.jsonl").read_text().splitlines())}
    for u in PAIRS:
        r = records[u]
        if u in HUMAN:
            assert r["source"] == "single" and r["grade"] == HUMAN[u] and r["machine"] is None
        else:
            assert r["source"] == "machine" and r["judgments"] == []
            assert r["machine"] == {"judge": "llm", "kind": "machine", "grade": MACHINE[u], "samples": 1,
                                    "model": "m1", "prompt_version": "v1", "confidence": 0.8}
    m = res.manifest
    assert m["counts"]["sources"]["machine"] == 24 and m["counts"]["sources"]["single"] == 36
    assert m["incomplete"]["unjudged_pooled_pairs"] == 0
    mf = m["machine_fill"]
    assert (mf["judge"], mf["kind"], mf["pairs_filled"], mf["pairs_labelled_by_machine"]) == ("llm", "machine", 24, 60)
    cal = mf["calibration"]
    assert cal["compared_pairs"] == 36
    assert cal["exact_agreement"]["value"] == pytest.approx(24 / 36)  # wrong on the 12 d0 pairs
    assert cal["mean_signed_difference"]["value"] == pytest.approx(12 / 36)
    assert cal["verdict"] == "no human baseline"  # nobody labelled an overlap set here
    assert "judges" in m and all(j["name"] != "llm" for j in m["judges"])


def test_cli_export_fill_says_what_the_machine_labelled(store, db_url, tmp_path):
    res = CliRunner().invoke(main, ["export", "create", "--version", "v1", "--out", str(tmp_path / "ex"), "--db",
                                    db_url,
                                    "--fill-unjudged", "machine:llm", "--by", "t"])
    assert res.exit_code == 0, res.output
    assert "MACHINE-FILLED: 24 pairs labelled by machine judge llm (66.7% exact agreement with people" in res.output
    bad = CliRunner().invoke(main, ["export", "create", "--version", "v2", "--out", str(tmp_path / "ex"), "--db",
                                    db_url,
                                    "--fill-unjudged", "llm"])
    assert bad.exit_code == 1 and "not machine:NAME" in bad.output
