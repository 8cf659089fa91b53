"""The export writes most lines of qrels.txt and qrels.jsonl through plain_label_lines (a list
comprehension per file) and reads the agreement's labels from its own pass over the judgments: the
lines must be the bytes qrel_text and label_record_line write one at a time, and the manifest's
agreement the summary of what `golden labels agreement` computes from load_judgments (the earlier path)."""

from __future__ import annotations

import json
import random

import pytest

from curation.agree.agreement import agreement_report
from curation.agree.labels import load_judgments
from curation.export import gather
from curation.export import versions as export
from curation.formats.qrels import label_record_line, label_vote_json, plain_label_lines, qrel_text
from curation.store.engine import session as new_session
from curation.store.projects import get_project
from tests.support.rich_store import rich_project

ODD = ['q"1', "back\\slash", "tab\tin", "ctl\x01", "é-ü", "日本", "a b", "\x7f", "line\u2028sep"]


def _ident(rng: random.Random) -> str:
    if rng.random() < 0.2:
        return rng.choice(ODD) + str(rng.randrange(100))
    return f"{rng.choice('qdx')}{rng.randrange(10 ** rng.randrange(1, 7))}"


@pytest.mark.parametrize("seed", range(6))
def test_plain_lines_are_the_per_line_writers_bytes(seed):
    rng = random.Random(seed)
    n = 300
    clean = seed % 2 == 0  # the clean case takes the path without escaping
    qids = [f"q{rng.randrange(50)}" if clean else _ident(rng) for _ in range(n)]
    docids = [f"d{rng.randrange(10 ** 6)}" if clean else _ident(rng) for _ in range(n)]
    grades = [rng.choice((-1, 0, 1, 2, 3, 2**31 - 1)) for _ in range(n)]
    single = [rng.random() < 0.7 for _ in range(n)]
    gvs = [rng.choice((-1, 1, 2, 17)) for _ in range(n)]
    unsure = [rng.random() < 0.1 for _ in range(n)]
    votes = [[label_vote_json(rng.choice(("alice", 'bo"b', "zoë")), g, rng.random() < 0.1,
                              None if rng.random() < 0.5 else 2, need_version=rng.choice((None, 3)))
              for _ in range(1 if s else rng.randrange(2, 5))] for g, s in zip(grades, single, strict=True)]
    for machine in (False, True):
        txt, jsonl = plain_label_lines(qids, docids, grades, single, [", ".join(v) for v in votes], gvs, unsure,
                                       machine=machine)
        for i in range(n):
            extra = {}
            if unsure[i]:
                extra["unsure"] = True
            if machine:
                extra["machine"] = None
            assert txt[i] == qrel_text(qids[i], docids[i], grades[i])
            assert jsonl[i] == label_record_line(
                qids[i], docids[i], grades[i], "single" if single[i] else "unanimous", votes[i], None, [], True,
                None if gvs[i] < 0 else gvs[i], extra)
            record = json.loads(jsonl[i])
            assert (record["qid"], record["docid"], record["grade"]) == (qids[i], docids[i], grades[i])


@pytest.mark.parametrize("chunk", [7, 10_000])
def test_the_manifests_agreement_is_the_reports_on_the_overlap(engine, tmp_path, monkeypatch, chunk):
    # rich_project: four judges, a lead and an admin, changed minds, equal answer times, skips, an
    # overlap set; the agreement is read from the export's own pass, a chunk of queries at a time.
    rich_project(engine, tmp_path / "in", n_queries=16, docs=9, seed=11)
    monkeypatch.setattr(gather, "CHUNK_PAIRS", chunk)
    with new_session(engine) as s:
        proj = get_project(s, "p")
        res = export.export_version(s, proj, "v1", out_dir=tmp_path / "out", allow_incomplete=True)
        scale = sorted(int(g["grade"]) for g in json.loads(proj.grades_json))
        report = agreement_report(load_judgments(s, proj, overlap_only=True, seconds=True), scale=scale).as_dict()
    got = res.manifest["agreement"]
    assert len(report["judges"]) >= 3 and got["pairs"] > 0
    assert got["judges"] == report["judges"] and got["cut"] == report["cut"] and got["notes"] == report["notes"]
    assert got["pairs"] == report["overall"]["pairs"] and got["queries"] == report["overall"]["queries"]
    assert got["verdict"] == gather._plain(report["verdict"])
    assert got["overall"] == gather._plain({"measures": report["overall"]["measures"],
                                            "binary": report["overall"]["binary"]})
    assert got["pairwise"] == gather._plain([{"judges": c["judges"], "pairs": c["pairs"], "measures": c["measures"]}
                                             for c in report["pairwise"]])
