"""``golden export create --format``: other tools' formats beside the qrels, on SQLite and PostgreSQL. The
Hugging Face folder is read by ``datasets.load_dataset`` (offline) and gives the rows of
qrels.jsonl; every format file is listed with its checksum in the manifest and checked by
``golden export verify``; the qrels.txt that ranx and ir_measures read is the same bytes with or without
formats; a frozen version keeps the formats it was exported with."""

from __future__ import annotations

import json
import os

import pytest
import yaml
from click.testing import CliRunner

from curation.cli import main
from curation.export import versions as export
from curation.export.manifest import sha256_bytes
from curation.export.verify import verify
from curation.formats.hf_dataset import read_hf_dataset
from curation.store.engine import session as new_session
from curation.store.projects import get_project
from tests.export.test_export import EXPECTED_QRELS, complete  # noqa: F401 (a fixture)


def _export(engine, out, version="v1", **kwargs):
    with new_session(engine) as s:
        return export.export_version(s, get_project(s, "p"), version, out_dir=out, created_by="t", **kwargs)


def _records(folder):
    return [json.loads(line) for line in (folder / "qrels.jsonl").read_text(encoding="utf-8").splitlines()]


def _no_nulls(value):
    """A record with its null values dropped: a key qrels.jsonl leaves out is null in Parquet's rows."""
    if isinstance(value, dict):
        return {k: _no_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_no_nulls(v) for v in value]
    return value


def test_every_format_is_listed_with_its_checksum_and_verified(complete, tmp_path):  # noqa: F811
    res = _export(complete, tmp_path / "out", formats=["ltr", "hf", "quepid", "rre"], relevance_level=2)
    folder = res.path
    files = res.manifest["files"]
    assert list(files) == ["qrels.txt", "qrels.jsonl", "queries.jsonl", "CHANGES.md", "quepid.csv", "rre.json",
                           "ltr.txt", "hf/README.md", "hf/data/test-00000-of-00001.parquet"]
    for name, info in files.items():
        data = (folder / name).read_bytes()
        assert (info["sha256"], info["bytes"]) == (sha256_bytes(data), len(data)), name
    entry = res.manifest["formats"]
    assert list(entry) == ["relevance_level", "quepid", "rre", "ltr", "hf"] and entry["relevance_level"] == 2
    assert "qid (read back by the query's text)" in entry["quepid"]["cannot_hold"]
    assert json.loads((folder / "rre.json").read_text())["golden"]["relevance_level"] == 2
    assert (folder / "ltr.txt").read_text().startswith("# golden version=v1 scale=0-2 relevance_level=2\n")
    assert (folder / "qrels.txt").read_text() == EXPECTED_QRELS
    assert verify(folder).ok, verify(folder).problems
    (folder / "hf" / "data" / "test-00000-of-00001.parquet").write_bytes(b"PAR1 changed")
    assert any("test-00000-of-00001.parquet: sha256" in p for p in verify(folder).problems)


def test_formats_leave_the_qrels_and_the_state_as_they_are(complete, tmp_path):  # noqa: F811
    plain = _export(complete, tmp_path / "a")
    again = _export(complete, tmp_path / "b", "v2", formats=["hf", "ltr"])
    for name in ("qrels.txt", "qrels.jsonl", "queries.jsonl"):
        assert (plain.path / name).read_bytes() == (again.path / name).read_bytes()
    assert plain.state_sha256 == again.state_sha256
    assert "formats" not in plain.manifest


def test_a_frozen_version_is_written_again_with_its_formats_only(complete, tmp_path):  # noqa: F811
    first = _export(complete, tmp_path / "a", formats=["quepid", "hf"])
    same = _export(complete, tmp_path / "b", formats=["hf", "quepid"])
    bare = _export(complete, tmp_path / "c")  # no --format: the version as it was frozen
    for name in first.manifest["files"]:
        assert (first.path / name).read_bytes() == (same.path / name).read_bytes() == (bare.path / name).read_bytes()
    with pytest.raises(export.VersionFrozen, match="exported with formats quepid, hf \\(relevance level 1\\)"):
        _export(complete, tmp_path / "d", formats=["ltr"])
    with pytest.raises(export.VersionFrozen, match="relevance level 1"):
        _export(complete, tmp_path / "d", formats=["quepid", "hf"], relevance_level=2)
    assert not (tmp_path / "d" / "v1").exists()


def test_the_relevance_level_and_the_formats_are_checked(complete, tmp_path):  # noqa: F811
    with pytest.raises(ValueError, match="^relevance_level: 3 is not a grade of the scale \\(0, 1, 2\\)"):
        _export(complete, tmp_path / "a", formats=["ltr"], relevance_level=3)
    with pytest.raises(ValueError, match="^formats: csv not one of"):
        _export(complete, tmp_path / "a", formats=["csv"])


def test_the_hf_folder_loads_in_datasets_with_the_rows_of_qrels_jsonl(complete, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    res = _export(complete, tmp_path / "out", formats=["hf"])
    import datasets

    loaded = datasets.load_dataset(str(res.path / "hf"), cache_dir=str(tmp_path / "cache"))
    assert list(loaded) == ["test"]
    rows = list(loaded["test"])
    expected = _records(res.path)
    assert [_no_nulls(r) for r in rows] == [_no_nulls(r) for r in expected]
    assert [(r["qid"], r["docid"], r["grade"]) for r in rows] == [
        tuple(line.split()[i] if i != 3 else int(line.split()[3]) for i in (0, 2, 3))
        for line in EXPECTED_QRELS.splitlines()]

    card = (res.path / "hf" / "README.md").read_text(encoding="utf-8")
    front = yaml.safe_load(card.split("---\n")[1])
    assert front["configs"] == [{"config_name": "default", "data_files": [{"split": "test",
                                                                         "path": "data/test-*.parquet"}]}]
    golden = front["golden"]
    assert (golden["version"], golden["scale"], golden["relevance_level"]) == ("v1", "0-2", 1)
    agreement = res.manifest["agreement"]
    assert golden["agreement"]["pairs"] == agreement["pairs"] == 2
    assert golden["agreement"]["measures"] == {k: v["value"] for k, v in agreement["overall"]["measures"].items()}
    assert "a grade of 1 or more counts as relevant" in card
    meta, parquet_rows = read_hf_dataset(res.path / "hf")
    assert meta == golden and parquet_rows == rows


def test_the_hf_folder_is_written_in_shards(complete, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.setattr("curation.formats.hf_dataset.SHARD_ROWS", 4)
    res = _export(complete, tmp_path / "out", formats=["hf"])
    shards = sorted(p.name for p in (res.path / "hf" / "data").iterdir())
    assert shards == ["test-00000-of-00002.parquet", "test-00001-of-00002.parquet"]
    _, rows = read_hf_dataset(res.path / "hf")
    assert [_no_nulls(r) for r in rows] == [_no_nulls(r) for r in _records(res.path)]


def test_cli_export_names_what_each_format_cannot_hold(complete, tmp_path):  # noqa: F811
    db = complete.url.render_as_string(hide_password=False)
    res = CliRunner().invoke(main, ["export", "--version", "v1", "--project", "p", "--out", str(tmp_path / "out"),
                                    "--format", "ltr", "--format", "quepid", "--by", "t", "--db", db])
    assert res.exit_code == 0, res.output
    assert "formats (relevance level 1: grade >= 1 is relevant):" in res.output
    assert "LTR: ltr.txt; cannot hold: judges' votes, adjudications and seeds (the final grade only)" in res.output
    assert "Quepid: quepid.csv; cannot hold: qid (read back by the query's text)" in res.output
    assert sorted(os.listdir(tmp_path / "out" / "v1")) == sorted([
        "CHANGES.md", "ltr.txt", "manifest.json", "qrels.jsonl", "qrels.txt", "queries.jsonl", "quepid.csv"])
    res = CliRunner().invoke(main, ["verify", str(tmp_path / "out" / "v1")])
    assert res.exit_code == 0, res.output


@pytest.mark.slow  # importing ranx compiles its numba code: about 10 s
def test_ranx_and_ir_measures_read_the_qrels_of_an_export_with_formats(complete, tmp_path):  # noqa: F811
    import ir_measures
    from ranx import Qrels

    res = _export(complete, tmp_path / "out", formats=["quepid", "rre", "ltr", "hf"])
    path = str(res.path / "qrels.txt")
    expected = {(q, d, int(g)) for q, _, d, g in (line.split() for line in EXPECTED_QRELS.splitlines())}
    assert {(x.query_id, x.doc_id, x.relevance) for x in ir_measures.read_trec_qrels(path)} == expected
    qrels = Qrels.from_file(path, kind="trec").to_dict()
    assert {(q, d, g) for q, docs in qrels.items() for d, g in docs.items()} == expected


def test_a_format_that_fails_leaves_no_folder_and_no_version(complete, tmp_path, monkeypatch):  # noqa: F811
    from sqlmodel import select

    from curation.store.models import ExportVersion

    def broken(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("curation.formats.hf_dataset.write_hf_dataset", broken)
    (tmp_path / "out").mkdir()  # the spool goes beside the target: it must be gone too
    with pytest.raises(OSError, match="No space left"):
        _export(complete, tmp_path / "out", formats=["quepid", "hf"])
    assert [p.name for p in (tmp_path / "out").iterdir()] == []  # no version folder, no temporary one
    with new_session(complete) as s:
        assert list(s.exec(select(ExportVersion))) == []
