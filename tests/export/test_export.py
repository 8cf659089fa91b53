"""``golden export create`` / ``golden export verify`` on SQLite and PostgreSQL (the ``engine`` fixture): TREC
format read by ir_measures and ranx, provenance, determinism, immutability, the blocking rules,
``verify`` catching a changed byte, and CHANGES between versions. Expected values are written out
by hand from the labels each test gives."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlmodel import select

from curation.cli import main
from curation.export import versions as export
from curation.export.archive import build_archive, read_archive
from curation.export.manifest import ALL_FILES, DATA_FILES, sha256_bytes
from curation.export.verify import verify
from curation.formats.qrels import read_qrels
from curation.store.engine import session as new_session
from curation.store.models import Document, ExportVersion, PoolPair, Query
from curation.store.projects import get_project
from tests.support.judgments import adjudicate, judge
from tests.support.projects import pairs_project, read_files

# qids and docids chosen so that string order differs from numeric order: "007" < "10" < "9",
# "d1" < "d10" < "d2"; "007" must stay "007" (never the number 7).
PAIRS = [("007", "d1"), ("007", "d2"), ("007", "d10"), ("10", "d1"), ("10", "d3"), ("9", "d4")]
ALICE = {("007", "d1"): 2, ("007", "d2"): 0, ("007", "d10"): 1, ("10", "d1"): 1, ("10", "d3"): 0, ("9", "d4"): 2}
BOB = {("007", "d1"): 2, ("10", "d1"): 0}  # agrees on 007/d1, disagrees on 10/d1
EXPECTED_QRELS = "007 0 d1 2\n007 0 d10 1\n007 0 d2 0\n10 0 d1 1\n10 0 d3 0\n9 0 d4 2\n"


@pytest.fixture
def complete(engine, tmp_path):
    """Every pooled pair labelled, the one disagreement adjudicated (10/d1 -> 1)."""
    pairs_project(engine, tmp_path / "in", PAIRS)
    judge(engine, tmp_path, "alice", ALICE)
    judge(engine, tmp_path, "bob", BOB)
    adjudicate(engine, "10", "d1", 1)
    return engine


def do_export(engine, out: Path, version: str = "v1", **kwargs):
    kwargs.setdefault("created_by", "tester")
    with new_session(engine) as s:
        return export.export_version(s, get_project(s, "p"), version, out_dir=out, **kwargs)


def versions_in_store(engine) -> list[ExportVersion]:
    with new_session(engine) as s:
        return list(s.exec(select(ExportVersion).order_by(ExportVersion.id)))


# ------------------------------------------------------------------------------------ the format


def test_the_data_files_keep_the_layout_of_versions_already_exported(complete, tmp_path):
    # A stored version's state hash covers these bytes: the lines below are those golden wrote before the
    # export went through curation.formats (", " and ": " between items, keys in this order).
    do_export(complete, tmp_path / "out")
    folder = tmp_path / "out" / "v1"
    assert (folder / "qrels.txt").read_text() == EXPECTED_QRELS
    assert (folder / "queries.jsonl").read_text().splitlines()[1] == (
        '{"qid": "10", "text": "query 10", "stratum": {"freq": "tail"}, "stratum_key": "freq=tail", "traffic": 11, '
        '"users": 2, "weight": 1.5, "split": null, "leak_status": null, "status": "active", "stratum_share": 0.5}'
    )  # stratum_share: written only when the store knows it, after the keys older versions had
    assert (folder / "qrels.jsonl").read_text().splitlines()[0] == (
        '{"qid": "007", "docid": "d1", "grade": 2, "source": "unanimous", "seed_only": false, "judgments": '
        '[{"judge": "alice", "grade": 2, "unsure": false, "guidelines_version": null}, {"judge": "bob", "grade": 2, '
        '"unsure": false, "guidelines_version": null}], "adjudication": null, "seeds": [], "pooled": true, '
        '"guidelines_version": null}'
    )


@pytest.mark.slow  # importing ranx compiles its numba code: about 10 s
def test_qrels_are_trec_format_and_load_in_ir_measures_and_ranx(complete, tmp_path):
    import ir_measures
    from ranx import Qrels

    res = do_export(complete, tmp_path / "out")
    folder = tmp_path / "out" / "v1"
    assert sorted(p.name for p in folder.iterdir()) == sorted(ALL_FILES)
    text = (folder / "qrels.txt").read_text()
    assert text == EXPECTED_QRELS
    expected = {"007": {"d1": 2, "d10": 1, "d2": 0}, "10": {"d1": 1, "d3": 0}, "9": {"d4": 2}}

    loaded = list(ir_measures.read_trec_qrels(str(folder / "qrels.txt")))
    assert all(isinstance(q.query_id, str) and isinstance(q.doc_id, str) and type(q.relevance) is int for q in loaded)
    assert {(q.query_id, q.doc_id): q.relevance for q in loaded} == {
        (q, d): g for q, docs in expected.items() for d, g in docs.items()
    }
    trec_qrels = Qrels.from_file(str(folder / "qrels.txt"), kind="trec").to_dict()
    assert {q: dict(d) for q, d in trec_qrels.items()} == expected
    assert read_qrels(folder / "qrels.txt") == expected
    assert res.manifest["counts"]["pairs"] == 6 and res.manifest["counts"]["grades"] == {"0": 2, "1": 2, "2": 2}


def test_qrels_jsonl_carries_provenance_in_the_same_order(complete, tmp_path):
    do_export(complete, tmp_path / "out")
    folder = tmp_path / "out" / "v1"
    records = [json.loads(line) for line in (folder / "qrels.jsonl").read_text().splitlines()]
    assert [(r["qid"], r["docid"], r["grade"]) for r in records] == [
        tuple(line.split()[i] if i != 3 else int(line.split()[3]) for i in (0, 2, 3))
        for line in EXPECTED_QRELS.splitlines()
    ]
    by_pair = {(r["qid"], r["docid"]): r for r in records}
    assert {k: r["source"] for k, r in by_pair.items()} == {
        ("007", "d1"): "unanimous", ("007", "d10"): "single", ("007", "d2"): "single",
        ("10", "d1"): "adjudicated", ("10", "d3"): "single", ("9", "d4"): "single",
    }
    adj = by_pair[("10", "d1")]
    assert [(j["judge"], j["grade"]) for j in adj["judgments"]] == [("alice", 1), ("bob", 0)]
    assert adj["adjudication"]["lead"] == "lena" and adj["adjudication"]["grade"] == 1
    assert adj["adjudication"]["guidelines_version"] == 1 and adj["guidelines_version"] == 1
    assert all(not r["seed_only"] and r["seeds"] == [] for r in records)

    queries = [json.loads(line) for line in (folder / "queries.jsonl").read_text().splitlines()]
    assert [q["qid"] for q in queries] == ["007", "10", "9"]
    assert queries[0] == {"qid": "007", "text": "query 007", "stratum": {"freq": "head"},
                          "stratum_key": queries[0]["stratum_key"], "traffic": 10, "users": 1, "weight": 1.5,
                          "split": None, "leak_status": None, "status": "active", "stratum_share": 0.5}

    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["version"] == "v1" and manifest["parent"] is None and manifest["created_by"] == "tester"
    assert manifest["policy"] == "adjudicated"
    assert manifest["counts"]["sources"]["unanimous"] == 1 and manifest["counts"]["sources"]["adjudicated"] == 1
    assert manifest["incomplete"] == {"unjudged_pooled_pairs": 0, "unresolved_disagreements": 0}
    assert [(j["name"], j["labels"], j["labels_in_export"]) for j in manifest["judges"]] == [
        ("alice", 6, 6), ("bob", 2, 2)]
    assert manifest["pool"]["pairs"] == 6 and manifest["corpus"]["documents"] == 5
    assert manifest["label_scale"]["scale"] == "0-2"
    assert manifest["guidelines"]["current"]["version"] == 1 and len(manifest["guidelines"]["current"]["sha256"]) == 64
    assert manifest["agreement"]["pairs"] == 2 and manifest["agreement"]["judges"] == ["alice", "bob"]
    for name in DATA_FILES:
        assert manifest["files"][name]["sha256"] == sha256_bytes((folder / name).read_bytes())
        assert manifest["files"][name]["bytes"] == (folder / name).stat().st_size


def test_pool_runs_and_depth_reach_the_manifest(engine, tmp_path):
    runs = [{"name": "bm25", "sha256": "1" * 64, "depth": 20}, {"name": "dense", "sha256": "2" * 64, "depth": 20}]
    pairs_project(engine, tmp_path / "in", PAIRS, runs=runs, depth=20)
    judge(engine, tmp_path, "alice", ALICE)
    res = do_export(engine, tmp_path / "out")
    assert res.manifest["pool"]["depth"] == 20
    assert [(r["name"], r["sha256"]) for r in res.manifest["pool"]["runs"]] == [("bm25", "1" * 64), ("dense", "2" * 64)]


# ------------------------------------------------------------------------- determinism, immutability


def test_exporting_the_same_version_again_gives_identical_bytes(complete, tmp_path):
    first = do_export(complete, tmp_path / "a")
    again = do_export(complete, tmp_path / "b", created_by="someone else")
    assert first.new and not again.new
    a, b = read_files(tmp_path / "a" / "v1"), read_files(tmp_path / "b" / "v1")
    assert a == b and set(a) == set(ALL_FILES)
    # Over the existing folder too (left as it is: nothing rewritten), and the stored zip holds exactly these bytes.
    inodes = {p.name: p.stat().st_ino for p in (tmp_path / "a" / "v1").iterdir()}
    do_export(complete, tmp_path / "a")
    assert read_files(tmp_path / "a" / "v1") == a
    assert {p.name: p.stat().st_ino for p in (tmp_path / "a" / "v1").iterdir()} == inodes
    [row] = versions_in_store(complete)
    from curation.store.archives import iter_chunks

    with new_session(complete) as s:
        stored = b"".join(iter_chunks(s, row.id))
    assert read_archive(stored) == a
    assert build_archive("v1", a) == stored
    assert (row.archive_bytes, row.archive_sha256) == (len(stored), hashlib.sha256(stored).hexdigest())


def test_the_same_store_content_gives_the_same_files_in_another_store(complete, tmp_path):
    from curation.store.engine import make_engine
    from curation.store.migrate import upgrade

    other = make_engine(f"sqlite:///{tmp_path / 'other.db'}")
    upgrade(other)
    try:
        pairs_project(other, tmp_path / "in2", PAIRS)
        judge(other, tmp_path, "alice", ALICE)
        judge(other, tmp_path, "bob", BOB)
        adjudicate(other, "10", "d1", 1)
        one, two = do_export(complete, tmp_path / "one"), do_export(other, tmp_path / "two")
    finally:
        other.dispose()
    assert one.state_sha256 == two.state_sha256
    for name in DATA_FILES:
        assert (tmp_path / "one" / "v1" / name).read_bytes() == (tmp_path / "two" / "v1" / name).read_bytes()


def test_a_frozen_version_refuses_a_changed_state(complete, tmp_path):
    do_export(complete, tmp_path / "out")
    before = read_files(tmp_path / "out" / "v1")
    judge(complete, tmp_path, "alice", {("007", "d2"): 1})  # alice changes her mind: 0 -> 1

    with pytest.raises(export.VersionFrozen) as exc:
        do_export(complete, tmp_path / "out")
    msg = str(exc.value)
    assert "'v1'" in msg and "frozen" in msg and "--version v2" in msg and "1 pair relabelled" in msg
    with pytest.raises(export.VersionFrozen):
        do_export(complete, tmp_path / "elsewhere")
    assert not (tmp_path / "elsewhere" / "v1").exists()
    assert read_files(tmp_path / "out" / "v1") == before
    with pytest.raises(export.VersionFrozen):  # another policy is another state too
        do_export(complete, tmp_path / "out", policy="majority")

    v2 = do_export(complete, tmp_path / "out", "v2")
    assert v2.manifest["parent"] == "v1"
    assert "007 0 d2 1\n" in (tmp_path / "out" / "v2" / "qrels.txt").read_text()
    # The frozen v1 can still be written, byte for byte, whatever the store holds now.
    with new_session(complete) as s:
        export.write_frozen(s, get_project(s, "p"), "v1", out_dir=tmp_path / "restored")
    assert read_files(tmp_path / "restored" / "v1") == before
    assert [v.name for v in versions_in_store(complete)] == ["v1", "v2"]


def test_bad_version_names_and_policies_are_refused(complete, tmp_path):
    for bad in ("", "../v1", "v 1", "a/b", ".hidden"):
        with pytest.raises(ValueError, match="version"):
            do_export(complete, tmp_path / "out", bad)
    with pytest.raises(ValueError, match="policy"):
        do_export(complete, tmp_path / "out", policy="loudest")
    assert versions_in_store(complete) == []


def test_an_unrelated_folder_in_the_way_is_not_overwritten(complete, tmp_path):
    (tmp_path / "out" / "v1").mkdir(parents=True)
    (tmp_path / "out" / "v1" / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="already holds files"):
        do_export(complete, tmp_path / "out")
    assert (tmp_path / "out" / "v1" / "notes.txt").read_text() == "mine"
    assert versions_in_store(complete) == []  # nothing frozen either: whole or nothing
    do_export(complete, tmp_path / "ok")
    with pytest.raises(ValueError, match="already holds files"):  # another version's folder renamed v2
        shutil.copytree(tmp_path / "ok" / "v1", tmp_path / "ok" / "v2")
        do_export(complete, tmp_path / "ok", "v2")
    assert [v.name for v in versions_in_store(complete)] == ["v1"]


def test_a_damaged_export_folder_is_never_replaced_but_restored_from_the_store_once_moved(complete, tmp_path):
    do_export(complete, tmp_path / "out")
    good = read_files(tmp_path / "out" / "v1")
    (tmp_path / "out" / "v1" / "manifest.json").write_text("{ not json")
    (tmp_path / "out" / "v1" / "qrels.txt").unlink()
    damaged = read_files(tmp_path / "out" / "v1")
    assert not verify(tmp_path / "out" / "v1").ok
    for again in (lambda s: export.write_frozen(s, get_project(s, "p"), "v1", out_dir=tmp_path / "out"),
                  lambda s: export.export_version(s, get_project(s, "p"), "v1", out_dir=tmp_path / "out")):
        with new_session(complete) as s, pytest.raises(ValueError, match="never replaces an export folder: move it"):
            again(s)
        assert read_files(tmp_path / "out" / "v1") == damaged
    (tmp_path / "out" / "v1").rename(tmp_path / "out" / "v1.damaged")
    with new_session(complete) as s:
        export.write_frozen(s, get_project(s, "p"), "v1", out_dir=tmp_path / "out")
    assert read_files(tmp_path / "out" / "v1") == good


# ------------------------------------------------------------------------------------ blocking rules


def test_unjudged_pooled_pairs_block_the_export_unless_allowed(engine, tmp_path):
    pairs_project(engine, tmp_path / "in", PAIRS)
    judge(engine, tmp_path, "alice", {k: v for k, v in ALICE.items() if k[0] != "9" and k != ("007", "d10")})
    with pytest.raises(export.ExportBlocked) as exc:
        do_export(engine, tmp_path / "out")
    assert exc.value.unjudged == 2 and exc.value.unresolved == 0
    assert "2 pooled pairs have no human label" in str(exc.value) and "--allow-incomplete" in str(exc.value)
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []
    assert versions_in_store(engine) == []

    res = do_export(engine, tmp_path / "out", allow_incomplete=True)
    assert res.manifest["incomplete"] == {"unjudged_pooled_pairs": 2, "unresolved_disagreements": 0}
    assert (tmp_path / "out" / "v1" / "qrels.txt").read_text() == "007 0 d1 2\n007 0 d2 0\n10 0 d1 1\n10 0 d3 0\n"


def test_unresolved_disagreements_block_until_adjudicated_or_a_majority_policy(engine, tmp_path):
    pairs_project(engine, tmp_path / "in", PAIRS)
    judge(engine, tmp_path, "alice", ALICE)
    judge(engine, tmp_path, "bob", BOB)
    with pytest.raises(export.ExportBlocked) as exc:
        do_export(engine, tmp_path / "out")
    assert (exc.value.unjudged, exc.value.unresolved) == (0, 1) and "10/d1" in str(exc.value)
    with pytest.raises(export.ExportBlocked):  # 1 vs 1 has no majority either
        do_export(engine, tmp_path / "out", policy="majority")

    judge(engine, tmp_path, "carol", {("10", "d1"): 0})  # now 2 of 3 say 0
    res = do_export(engine, tmp_path / "out", policy="majority")
    assert "10 0 d1 0\n" in (tmp_path / "out" / "v1" / "qrels.txt").read_text()
    assert res.manifest["counts"]["sources"]["majority"] == 1
    with pytest.raises(export.ExportBlocked):  # the default policy still wants an adjudication
        do_export(engine, tmp_path / "out", "v2")
    adjudicate(engine, "10", "d1", 1)
    do_export(engine, tmp_path / "out", "v2")
    assert "10 0 d1 1\n" in (tmp_path / "out" / "v2" / "qrels.txt").read_text()


def test_dropped_queries_and_excluded_documents_are_left_out_and_counted(complete, tmp_path):
    with new_session(complete) as s:
        q = s.exec(select(Query).where(Query.qid == "9")).one()
        q.status = "dropped"
        d = s.exec(select(Document).where(Document.docid == "d10")).one()
        d.excluded = True
        s.add(q)
        s.add(d)
        s.commit()
    res = do_export(complete, tmp_path / "out")
    assert (tmp_path / "out" / "v1" / "qrels.txt").read_text() == "007 0 d1 2\n007 0 d2 0\n10 0 d1 1\n10 0 d3 0\n"
    assert res.manifest["counts"]["left_out"] == {"dropped_query": 1, "excluded_document": 1, "query_not_in_set": 0}
    assert res.manifest["query_set"]["dropped"] == ["9"] and res.manifest["counts"]["queries"] == 2


def test_leak_check_results_and_decisions_reach_the_export(complete, tmp_path):
    from curation.leak.findings import decide, record_findings
    from curation.store.models import LeakFinding
    from curation.store.users import get_user

    records = [
        {"qid": "007", "status": "leak", "matches": [{"chunk_id": "d10", "mode": "exact", "score": 1.0},
                                                      {"chunk_id": "d10", "mode": "jaccard", "score": 0.9}]},
        {"qid": "10", "status": "leak", "matches": [{"chunk_id": "other", "mode": "containment", "score": 0.8}]},
        {"qid": "9", "status": "clean", "matches": []},
    ]
    with new_session(complete) as s:
        proj = get_project(s, "p")
        record_findings(s, proj, records)
        lena = get_user(s, "lena")
        by_chunk = {f.chunk_id: f.id for f in s.exec(select(LeakFinding))}
        decide(s, proj, by_chunk["d10"], "exclude_chunk", lena)  # 007/d10 leaves the snapshot
        decide(s, proj, by_chunk["other"], "keep", lena)
    res = do_export(complete, tmp_path / "out")
    assert "d10" not in (tmp_path / "out" / "v1" / "qrels.txt").read_text()
    leak = res.manifest["leak_check"]
    assert leak["queries"] == {"clean": 1, "leak": 2}
    assert leak["findings"] == 3 and leak["by_mode"] == {"containment": 1, "exact": 1, "jaccard": 1}
    assert leak["decisions"] == {"exclude_chunk": 2, "keep": 1}
    assert res.manifest["corpus"]["excluded_documents"] == 1
    assert res.manifest["counts"]["left_out"]["excluded_document"] == 1
    statuses = {json.loads(x)["qid"]: json.loads(x)["leak_status"]
                for x in (tmp_path / "out" / "v1" / "queries.jsonl").read_text().splitlines()}
    assert statuses == {"007": "leak", "10": "leak", "9": "clean"}


# ----------------------------------------------------------------------------------------- verify


def test_verify_catches_any_changed_byte(complete, tmp_path):
    do_export(complete, tmp_path / "out")
    good = tmp_path / "out" / "v1"
    assert verify(good).ok, verify(good).problems
    for name in ALL_FILES:
        size = (good / name).stat().st_size
        for pos in sorted({0, size // 3, size // 2, size - 2}):
            copy = tmp_path / f"bad-{name}-{pos}" / "v1"
            shutil.copytree(good, copy)
            data = bytearray((copy / name).read_bytes())
            data[pos] ^= 0x01
            (copy / name).write_bytes(bytes(data))
            report = verify(copy)
            assert not report.ok, f"a flipped byte at {pos} of {name} went unnoticed"
            assert any(name in p for p in report.problems), report.problems
    extra = tmp_path / "extra" / "v1"
    shutil.copytree(good, extra)
    (extra / "notes.txt").write_text("x")
    assert any("not listed" in p for p in verify(extra).problems)
    renamed = tmp_path / "renamed" / "v9"
    shutil.copytree(good, renamed)
    assert any("folder is named 'v9'" in p for p in verify(renamed).problems)


def test_verify_rechecks_the_format_even_when_checksums_were_recomputed(complete, tmp_path):
    """Someone edits qrels.txt and patches the manifest's checksum to match: the format and count
    checks and the manifest seal still catch it."""
    do_export(complete, tmp_path / "out")
    folder = tmp_path / "out" / "v1"
    (folder / "qrels.txt").write_text(EXPECTED_QRELS.replace("10 0 d3 0", "10 0 d3 0.5"))
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["files"]["qrels.txt"]["sha256"] = sha256_bytes((folder / "qrels.txt").read_bytes())
    manifest["files"]["qrels.txt"]["bytes"] = (folder / "qrels.txt").stat().st_size
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    problems = verify(folder).problems
    assert any("qrels.txt:5" in p and "integer grade" in p for p in problems)
    assert any("manifest_sha256" in p for p in problems)
    assert any("state_sha256" in p for p in problems)


# ---------------------------------------------------------------------------------------- CHANGES


def test_changes_against_the_parent_version(engine, tmp_path):
    pairs_project(engine, tmp_path / "in", PAIRS + [("11", "d5")])
    judge(engine, tmp_path, "alice", {k: v for k, v in ALICE.items() if k != ("9", "d4")})
    do_export(engine, tmp_path / "out", "v1", allow_incomplete=True)  # 9/d4 and 11/d5 unjudged
    v1_changes = (tmp_path / "out" / "v1" / "CHANGES.md").read_text()
    assert v1_changes == ("# v1\n\nFirst version: no parent to compare with.\n\n"
                          "- queries: 4\n- judged pairs: 5\n- policy: adjudicated\n")

    judge(engine, tmp_path, "alice", {("007", "d2"): 1, ("9", "d4"): 2, ("11", "d5"): 0})  # relabel + 2 new
    with new_session(engine) as s:  # query 10 dropped (a leak decision), query 12 arrives with one pair
        proj = get_project(s, "p")
        q10 = s.exec(select(Query).where(Query.qid == "10")).one()
        q10.status = "dropped"
        s.add(q10)
        q12 = Query(project_id=proj.id, qid="12", text="a new query", stratum_json='{"freq": "tail"}',
                    stratum_key="freq=tail")
        s.add(q12)
        s.flush()
        doc = s.exec(select(Document).where(Document.docid == "d5")).one()
        s.add(PoolPair(project_id=proj.id, query_id=q12.id, document_id=doc.id, batch=1))
        s.commit()
    judge(engine, tmp_path, "alice", {("12", "d5"): 1})
    res = do_export(engine, tmp_path / "out", "v2")
    assert res.manifest["parent"] == "v1"
    assert (tmp_path / "out" / "v2" / "CHANGES.md").read_text() == (
        "# v2\n\n"
        "Changes against v1.\n\n"
        "| change | count |\n|---|---:|\n"
        "| pairs added | 3 |\n"
        "| pairs removed | 2 |\n"
        "| pairs relabelled | 1 |\n"
        "| pairs with the same grade from a new source | 0 |\n"
        "| queries added | 1 |\n"
        "| queries dropped | 1 |\n\n"
        "Judged pairs: 5 -> 6; queries: 4 -> 4.\n\n"
        "## Queries added (1)\n\n- `12` a new query\n\n"
        "## Queries dropped (1)\n\n- `10` query 10\n\n"
        "## Pairs relabelled (1)\n\n- `007` `d2`: 0 -> 1 (single -> single)\n\n"
        "## Pairs added (3)\n\n- `11` `d5`: 0 (single)\n- `12` `d5`: 1 (single)\n- `9` `d4`: 2 (single)\n\n"
        "## Pairs removed (2)\n\n- `10` `d1`: was 1 (single)\n- `10` `d3`: was 0 (single)\n"
    )


# ------------------------------------------------------------------------------- robust03, two readers


def _robust_project(engine, tmp_path, shared, *, runs=("input.aplrob03a.gz", "input.uwmtCR0.gz"), depth=10):
    from curation.formats.runs import read_run

    qrels = read_qrels(shared("robust03", "qrels", "robust03_qrels.txt"))
    pooled: dict[tuple[str, str], None] = {}
    for name in runs:
        run = read_run(shared("robust03", "runs", name))
        for qid in sorted(run.rankings):
            if qid in qrels:
                for docid in run.top(qid, depth):
                    pooled[(qid, docid)] = None
    pairs_project(engine, tmp_path / "robust", list(pooled), name="robust")
    # NIST's judgments of the pooled pairs (TREC counts an unjudged document as not relevant).
    truth = {k: qrels[k[0]].get(k[1], 0) for k in pooled}
    judge(engine, tmp_path, "alice", truth, project="robust")
    return truth


@pytest.mark.slow
def test_robust03_export_gives_the_same_ndcg_in_ir_measures_and_ranx(engine, tmp_path, shared):
    import ir_measures
    from ir_measures import nDCG
    from ranx import Qrels, Run, evaluate

    from curation.formats.runs import read_run

    truth = _robust_project(engine, tmp_path, shared)
    with new_session(engine) as s:
        export.export_version(s, get_project(s, "robust"), "v1", out_dir=tmp_path / "out", created_by="t")
    path = tmp_path / "out" / "v1" / "qrels.txt"
    assert verify(path.parent).ok

    # The exported qrels are exactly NIST's grades on the pooled pairs.
    exported = read_qrels(path)
    assert {(q, d): g for q, docs in exported.items() for d, g in docs.items()} == truth

    # A third run, in trec_eval's order, given strictly decreasing scores so no reader can re-break ties.
    run = read_run(shared("robust03", "runs", "input.pircRBa1.gz"))
    scores = {
        q: {d: float(len(docs) - i) for i, d in enumerate(docs)} for q, docs in run.rankings.items() if q in exported
    }
    run_path = tmp_path / "run.trec"
    run_path.write_text(
        "".join(f"{q} Q0 {d} {i + 1} {s} r\n" for q in scores for i, (d, s) in enumerate(scores[q].items()))
    )

    irm = {m.query_id: m.value for m in ir_measures.iter_calc([nDCG @ 10], ir_measures.read_trec_qrels(str(path)),
                                                              ir_measures.read_trec_run(str(run_path)))}
    rq = Qrels.from_file(str(path), kind="trec")
    rr = Run.from_file(str(run_path), kind="trec")
    per_query = evaluate(rq, rr, "ndcg@10", return_mean=False, make_comparable=True)
    ranx_scores = dict(zip(rr.keys(), per_query)) if not isinstance(per_query, dict) else per_query
    shared_qids = sorted(set(irm) & set(ranx_scores))
    assert len(shared_qids) >= 90
    for qid in shared_qids:
        assert irm[qid] == pytest.approx(ranx_scores[qid], abs=1e-9), qid
    assert len({round(v, 6) for v in irm.values()}) > 10  # a real spread of values, not all 0 or 1


# ------------------------------------------------------------------------------------------- CLI


def test_cli_export_verify_and_refusals(complete, tmp_path):
    url = complete.url.render_as_string(hide_password=False)
    runner = CliRunner()
    out = tmp_path / "exports"
    res = runner.invoke(main, ["export", "create", "--db", url, "--version", "v1", "--out", str(out), "--by", "ana"])
    assert res.exit_code == 0, res.output
    assert "v1 of project p" in res.output and "new version" in res.output and "6 judged pairs" in res.output
    res = runner.invoke(main, ["export", "verify", str(out / "v1")])
    assert res.exit_code == 0 and "OK, version v1" in res.output

    (out / "v1" / "qrels.txt").write_bytes((out / "v1" / "qrels.txt").read_bytes().replace(b"d4 2", b"d4 1"))
    res = runner.invoke(main, ["export", "verify", str(out / "v1")])
    assert res.exit_code == 1 and "qrels.txt" in res.output and "--frozen" in res.output
    res = runner.invoke(main, ["export", "create", "--db", url, "--version", "v1", "--out", str(out), "--frozen"])
    assert res.exit_code == 1 and "never replaces an export folder: move it away" in res.output  # never replaced
    (out / "v1").rename(tmp_path / "v1.damaged")
    res = runner.invoke(main, ["export", "create", "--db", url, "--version", "v1", "--out", str(out), "--frozen"])
    assert res.exit_code == 0 and "frozen version written again" in res.output
    assert runner.invoke(main, ["export", "verify", str(out / "v1")]).exit_code == 0

    judge(complete, tmp_path, "bob", {("9", "d4"): 0})  # a new disagreement
    res = runner.invoke(main, ["export", "create", "--db", url, "--version", "v1", "--out", str(out)])
    assert res.exit_code == 1 and "frozen" in res.output and "--version v2" in res.output
    res = runner.invoke(main, ["export", "create", "--db", url, "--version", "v2", "--out", str(out)])
    assert res.exit_code == 1 and "export blocked" in res.output and "--allow-incomplete" in res.output
    res = runner.invoke(main, ["export", "create", "--db", url, "--version", "v2", "--out", str(out),
                               "--allow-incomplete"])
    assert res.exit_code == 0 and "INCOMPLETE: 0 pooled pairs unjudged, 1 disagreements unresolved" in res.output


def test_the_export_folder_feeds_the_statistics_as_is(engine, tmp_path):
    """`golden stats compare --qrels DIR/v1 --split holdout` reads qrels.txt and queries.jsonl unchanged."""
    from curation.export.split import split_project

    pairs = [(f"q{i:02d}", f"d{j}") for i in range(12) for j in range(3)]
    pairs_project(engine, tmp_path / "in", pairs)
    judge(engine, tmp_path, "alice", {p: (2 if p[1] == "d0" else 0) for p in pairs})
    with new_session(engine) as s:
        split_project(s, get_project(s, "p"), holdout=0.5, seed=1)
    do_export(engine, tmp_path / "out")
    run_a, run_b = tmp_path / "a.trec", tmp_path / "b.trec"
    run_a.write_text("".join(f"q{i:02d} Q0 d{j} {j + 1} {3 - j} a\n" for i in range(12) for j in range(3)))
    run_b.write_text("".join(f"q{i:02d} Q0 d{j} {3 - j} {j + 1} b\n" for i in range(12) for j in range(3)))
    res = CliRunner().invoke(main, ["stats", "compare", str(run_a), str(run_b), "--qrels", str(tmp_path / "out" / "v1"),
                                    "--split", "holdout"])
    assert res.exit_code == 0, res.output
    assert "6 queries paired" in res.output and "split holdout" in res.output


def test_every_command_has_help_with_an_example():
    runner = CliRunner()
    for cmd in ("export create", "export verify", "export split", "judging seed"):
        res = runner.invoke(main, [*cmd.split(), "--help"])
        assert res.exit_code == 0 and "Example:" in res.output, cmd


def test_the_export_folder_and_files_get_the_usual_permissions(complete, tmp_path):
    import os
    import stat

    old = os.umask(0o022)
    try:
        do_export(complete, tmp_path / "out")
    finally:
        os.umask(old)
    folder = tmp_path / "out" / "v1"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o755
    assert {stat.S_IMODE((folder / name).stat().st_mode) for name in ALL_FILES} == {0o644}


def test_a_stored_version_is_read_by_the_format_readers_even_with_a_line_separator_in_a_text():
    from curation.export.changes import version_records

    files = {
        "qrels.jsonl": b'{"qid": "q1", "docid": "d1", "grade": 1, "source": "single"}\n',
        "queries.jsonl": '{"qid": "q1", "text": "a\u2028b", "stratum": {}}\n'.encode(),  # U+2028 kept raw
    }
    labels, queries = version_records(files)
    assert labels == {("q1", "d1"): {"qid": "q1", "docid": "d1", "grade": 1, "source": "single"}}
    assert list(queries) == ["q1"] and queries["q1"].text == "a\u2028b"
    assert version_records({**files, "queries.jsonl": b""})[1] == {}
