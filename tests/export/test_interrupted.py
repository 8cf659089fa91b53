"""An export killed at any point leaves either no version or a complete, recorded one, and an existing
version folder is never rewritten, on SQLite and PostgreSQL.

A real ``golden export create`` runs in a subprocess (:mod:`tests.support.paused`), paused at one point of
its work, and is sent SIGTERM (or SIGKILL, which nothing can catch: the next export settles what it
left). Then the store and the folder must agree.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlmodel import select

from curation.cli import main
from curation.store.engine import session as new_session
from curation.store.models import ExportChunk, ExportVersion
from tests.cli.test_signals import start_paused
from tests.export.test_export import complete  # noqa: F401 (a fixture)
from tests.support.judgments import judge
from tests.support.projects import read_files

# Where the export is paused: (function, which call), in the order the export reaches them.
POINTS = {
    "gathering": ("curation.export.versions:gather_state", 1),
    "storing the zip": ("curation.export.versions:store_archive", 1),
    "before the folder": ("curation.export.versions:write_folder", 1),
    "folder written, not renamed": ("os:rename", 1),
    "folder in place, not completed": ("curation.export.versions:record_audit", 1),
}


def _url(engine) -> str:
    return engine.url.render_as_string(hide_password=False)


def _rows(engine) -> list[tuple[str, str | None, int]]:
    with new_session(engine) as s:
        rows = s.exec(select(ExportVersion).order_by(ExportVersion.id)).all()
        return [(r.name, r.pending_folder, len(s.exec(select(ExportChunk.no).where(ExportChunk.version_id == r.id))
                                                .all())) for r in rows]


def _export(engine, out: Path, version: str = "v1", *extra: str):
    return CliRunner().invoke(main, ["export", "create", "--db", _url(engine), "--version", version, "--out", str(out),
                                     "--by", "t", *extra])


def _killed_export(engine, tmp_path, point: str, signum: int, out: Path):
    target, call = POINTS[point]
    flag = tmp_path / f"flag-{point.replace(' ', '-')}-{signum}"
    argv = ["export", "create", "--db", _url(engine), "--version", "v1", "--out", str(out), "--by", "t"]
    proc, finished = start_paused(argv, target, flag, call)
    assert finished is None, finished
    if point == "folder written, not renamed":
        assert [p.name for p in out.iterdir() if p.name.startswith(".v1.") and p.name.endswith(".tmp")]
    os.kill(proc.pid, signum)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == -signum, err
    assert "Traceback" not in err, err


@pytest.mark.parametrize("point", list(POINTS))
def test_sigterm_at_any_point_leaves_no_version_or_a_complete_recorded_one(complete, tmp_path, point):  # noqa: F811
    out = tmp_path / "exports"
    out.mkdir()
    _killed_export(complete, tmp_path, point, signal.SIGTERM, out)
    rows = _rows(complete)
    folder = out / "v1"
    if rows:
        assert rows == [("v1", None, rows[0][2])] and rows[0][2] > 0  # complete, with its zip
        assert folder.is_dir()
        res = CliRunner().invoke(main, ["export", "verify", str(folder), "--db", _url(complete)])
        assert res.exit_code == 0 and "the store records this version" in res.output, res.output
    else:
        assert not os.path.lexists(folder)
    assert sorted(p.name for p in out.iterdir()) == (["v1"] if rows else [])  # no spool, no temporary folder
    # Then the judges change a label: v1 is refused (if it was recorded) or exported afresh, and an
    # existing folder keeps its bytes and files.
    before = read_files(folder) if rows else None
    inodes = {p.name: p.stat().st_ino for p in folder.iterdir()} if rows else None
    judge(complete, tmp_path, "alice", {("007", "d2"): 1})
    res = _export(complete, out)
    if rows:
        assert res.exit_code == 1 and "is frozen" in res.output, res.output
        assert read_files(folder) == before
        assert {p.name: p.stat().st_ino for p in folder.iterdir()} == inodes
    else:
        assert res.exit_code == 0 and "new version" in res.output, res.output
        assert "007 0 d2 1\n" in (folder / "qrels.txt").read_text()


@pytest.mark.parametrize("point", ["before the folder", "folder in place, not completed"])
def test_a_killed_export_is_settled_by_the_next_one(complete, tmp_path, point):  # noqa: F811
    out = tmp_path / "exports"
    out.mkdir()
    _killed_export(complete, tmp_path, point, signal.SIGKILL, out)
    [(name, pending, chunks)] = _rows(complete)
    assert name == "v1" and pending == str((out / "v1").resolve()) and chunks > 0
    folder = out / "v1"
    if point == "folder in place, not completed":
        res = CliRunner().invoke(main, ["export", "verify", str(folder), "--db", _url(complete)])
        assert res.exit_code == 1 and "still pending in the store" in res.output, res.output
        before = read_files(folder)
        judge(complete, tmp_path, "alice", {("007", "d2"): 1})
        res = _export(complete, out)  # completes the published v1, then refuses the changed state
        assert res.exit_code == 1 and "is frozen" in res.output, res.output
        assert _rows(complete) == [("v1", None, chunks)]
        assert read_files(folder) == before
    else:
        assert not folder.exists()
        assert [p.name for p in out.iterdir()] and all(p.name.startswith(".v1.") for p in out.iterdir())
        judge(complete, tmp_path, "alice", {("007", "d2"): 1})
        res = _export(complete, out)  # the unpublished v1 goes; v1 is exported from the new state
        assert res.exit_code == 0 and "new version" in res.output, res.output
        assert [r[:2] for r in _rows(complete)] == [("v1", None)]
        assert "007 0 d2 1\n" in (folder / "qrels.txt").read_text()
        res = CliRunner().invoke(main, ["export", "verify", str(folder), "--db", _url(complete)])
        assert res.exit_code == 0 and "left by an interrupted export" in res.output  # the killed one's spool, named


def test_a_version_folder_the_store_never_recorded_is_refused_not_rewritten(complete, tmp_path):  # noqa: F811
    # What an export interrupted between its rename and its commit left before: v1/ and no row.
    out = tmp_path / "exports"
    assert _export(complete, out).exit_code == 0
    with new_session(complete) as s:
        for chunk in s.exec(select(ExportChunk)).all():
            s.delete(chunk)
        for row in s.exec(select(ExportVersion)).all():
            s.delete(row)
        s.commit()
    before = read_files(out / "v1")
    res = CliRunner().invoke(main, ["export", "verify", str(out / "v1"), "--db", _url(complete)])
    assert res.exit_code == 1 and "the store holds no version 'v1'" in res.output, res.output
    judge(complete, tmp_path, "alice", {("007", "d2"): 1})  # the judges go on
    res = _export(complete, out)
    assert res.exit_code == 1, res.output
    assert "the store holds no version 'v1'" in res.output and "move it away" in res.output
    assert read_files(out / "v1") == before and _rows(complete) == []
    (out / "v1").rename(tmp_path / "v1.orphan")
    assert _export(complete, out).exit_code == 0


def test_migration_0021_adds_the_pending_columns_and_its_downgrade_drops_pending_versions(db_url):
    from sqlalchemy import text

    from curation.store.engine import make_engine
    from curation.store.migrate import current_revision, upgrade
    from tests.export.test_archive_store import _downgrade

    eng = make_engine(db_url)
    try:
        upgrade(eng, "0020")
        with eng.begin() as conn:
            conn.execute(text("INSERT INTO project (id, name, scale, grades_json, hold_main, created_at) "
                              "VALUES (1, 'p', '0-2', '[]', false, CURRENT_TIMESTAMP)"))
            conn.execute(text("INSERT INTO exportversion (id, project_id, name, state_sha256, manifest_json, "
                              "created_at) VALUES (1, 1, 'v1', 'x', '{}', CURRENT_TIMESTAMP)"))
        upgrade(eng, "0021")  # this migration alone (later ones follow it)
        assert current_revision(eng) == "0021"
        with eng.begin() as conn:
            assert conn.execute(text("SELECT pending_folder, pending_owner FROM exportversion")).all() == [(None, None)]
            conn.execute(text("INSERT INTO exportversion (id, project_id, name, state_sha256, manifest_json, "
                              "created_at, pending_folder, pending_owner) VALUES (2, 1, 'v2', 'y', '{}', "
                              "CURRENT_TIMESTAMP, '/x/v2', 'h:1')"))
            conn.execute(text("INSERT INTO exportchunk (version_id, no, data) VALUES (2, 0, :d)"), {"d": b"zip"})
    finally:
        eng.dispose()
    _downgrade(db_url, "0020")
    eng = make_engine(db_url)
    try:
        with eng.connect() as conn:
            assert conn.execute(text("SELECT id, name FROM exportversion")).all() == [(1, "v1")]
            assert conn.execute(text("SELECT count(*) FROM exportchunk")).scalar_one() == 0
        upgrade(eng, "0021")
        assert current_revision(eng) == "0021"
    finally:
        eng.dispose()
