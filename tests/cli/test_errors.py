"""The one error path: whatever a command raises reaches the user as one line and a documented exit
code (docs/reference/exit-codes-and-limits.md), never a traceback unless GOLDEN_DEBUG=1; OS errors name the path and
the cause and leave nothing partial behind."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from curation.cli import main
from curation.cli.base import EXIT_BUG
from curation.export.write import write_folder
from curation.formats.fileio import WriteError, atomic_write

ENOSPC_TEXT = os.strerror(errno.ENOSPC)  # "No space left on device" from the C library itself


def golden(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """``golden ARGS`` in a new Python process (tracebacks go to its stderr, as for a user)."""
    code = "import sys; from curation.cli import main; main(sys.argv[1:], prog_name='golden')"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=120)


class FullFile:
    """A file object that takes ``room`` bytes, then fails as a full disk does."""

    def __init__(self, fh, room: int = 10):
        self._fh, self._room = fh, room

    def write(self, data):
        if len(data) > self._room:
            raise OSError(errno.ENOSPC, ENOSPC_TEXT)
        self._room -= len(data)
        return self._fh.write(data)

    def __getattr__(self, name):
        return getattr(self._fh, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._fh.close()


def test_atomic_write_names_the_target_when_the_disk_is_full(tmp_path, monkeypatch):
    import curation.formats.fileio as fileio

    real = fileio.os.fdopen
    monkeypatch.setattr(fileio.os, "fdopen", lambda *a, **k: FullFile(real(*a, **k)))
    target = tmp_path / "out" / "queries.jsonl"
    with pytest.raises(WriteError) as info:
        with atomic_write(target) as fh:
            fh.write("x" * 100)
    assert info.value.errno == errno.ENOSPC and info.value.filename == str(target)
    assert list((tmp_path / "out").iterdir()) == []  # no temporary file, no target


def test_atomic_write_names_the_target_when_the_folder_is_not_writable(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root writes into read-only folders")
    (tmp_path / "ro").mkdir(mode=0o500)
    with pytest.raises(WriteError) as info, atomic_write(tmp_path / "ro" / "x.txt") as fh:
        fh.write("x")
    assert info.value.errno == errno.EACCES and info.value.filename == str(tmp_path / "ro" / "x.txt")


def test_an_input_error_inside_the_block_is_not_taken_for_a_write_error(tmp_path):
    with pytest.raises(FileNotFoundError) as info, atomic_write(tmp_path / "x.txt"):
        open(tmp_path / "missing.txt")
    assert not isinstance(info.value, WriteError) and info.value.filename == str(tmp_path / "missing.txt")


def test_write_folder_names_the_file_and_leaves_nothing_when_the_disk_is_full(tmp_path, monkeypatch):
    import builtins

    import curation.export.write as write

    monkeypatch.setattr(write, "open", lambda *a, **k: FullFile(builtins.open(*a, **k)), raising=False)
    files = {name: b"y" * 50 for name in write.ALL_FILES}
    with pytest.raises(WriteError) as info:
        write_folder(tmp_path / "exports", "v5", files)
    assert info.value.errno == errno.ENOSPC
    assert Path(info.value.filename).parent == tmp_path / "exports" / "v5"
    assert list((tmp_path / "exports").iterdir()) == []


# ------------------------------------------------------------------------------- the CLI's answer


@pytest.fixture
def exported(tmp_path):
    """An exported version folder (of the demo's qrels path is too slow: a tiny project instead)."""
    from tests.export.test_export import ALICE, BOB, PAIRS
    from tests.support.judgments import adjudicate, judge
    from tests.support.projects import pairs_project, sqlite_store

    with sqlite_store(tmp_path) as (url, engine):
        pairs_project(engine, tmp_path / "in", PAIRS)
        judge(engine, tmp_path, "alice", ALICE)
        judge(engine, tmp_path, "bob", BOB)
        adjudicate(engine, "10", "d1", 1)
        res = CliRunner().invoke(main, ["export", "create", "--db", url, "--version", "v1", "--out",
                                        str(tmp_path / "ex")])
        assert res.exit_code == 0, res.output
    return tmp_path / "ex" / "v1"


def test_exit_0_when_done_and_2_on_a_usage_error(exported):
    assert golden("export", "verify", str(exported)).returncode == 0
    res = golden("export", "verify", "--no-such-option", str(exported))
    assert res.returncode == 2 and "No such option" in res.stderr and "Traceback" not in res.stderr


def test_exit_1_and_one_line_for_bad_input(tmp_path):
    bad = tmp_path / "queries.jsonl"
    bad.write_text('{"qid": "q1", "text": "a"}\nnot json\n', encoding="utf-8")
    res = golden("pool", str(bad), "--queries", str(bad), "--out", str(tmp_path / "pool.jsonl"))
    assert res.returncode == 1, res.stderr
    assert "Traceback" not in res.stderr and res.stderr.count("\n") == 1 and str(bad) in res.stderr
    assert not (tmp_path / "pool.jsonl").exists()


def test_an_unreachable_store_is_one_line(tmp_path):
    res = golden("judging", "assign", "--judges", "alice", "--db", "postgresql://nobody@127.0.0.1:1/golden")
    assert res.returncode == 1 and "Traceback" not in res.stderr and res.stderr.count("\n") == 1
    assert res.stderr.startswith("Error: cannot use the store: ") and "127.0.0.1" in res.stderr


def _crash_verify(folder: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    code = ("import sys, curation.export.verify as v\n"
            "def boom(path): raise KeyError('files')\n"
            "v.verify = boom\n"
            "from curation.cli import main; main(sys.argv[1:], prog_name='golden')")
    return subprocess.run([sys.executable, "-c", code, "export", "verify", str(folder)], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=120)


def test_an_unexpected_exception_is_one_line_asking_for_a_bug_report_and_exit_70(tmp_path):
    env = {"GOLDEN_DEBUG": ""}
    res = _crash_verify(tmp_path, env)
    assert res.returncode == EXIT_BUG == 70
    assert "Traceback" not in res.stderr and res.stderr.count("\n") == 1
    assert "golden export verify: unexpected KeyError" in res.stderr and "bug" in res.stderr
    assert "GOLDEN_DEBUG=1" in res.stderr


def test_golden_debug_shows_the_traceback(tmp_path):
    res = _crash_verify(tmp_path, {"GOLDEN_DEBUG": "1"})
    assert res.returncode == 70
    assert "Traceback (most recent call last)" in res.stderr and "KeyError: 'files'" in res.stderr


# ------------------------------------------------------------------------------ golden export verify


@pytest.mark.parametrize("files", ["[]", '"x"', "1", '{"qrels.txt": "abc"}', '{"qrels.txt": {"sha256": 5}}',
                                   '{"../../etc/passwd": {"sha256": "0", "bytes": 1}}'])
def test_verify_refuses_a_malformed_manifest_with_a_problem_line(exported, files):
    mpath = exported / "manifest.json"
    manifest = json.loads(mpath.read_text(encoding="utf-8"))
    mpath.write_text(json.dumps({**manifest, "files": json.loads(files)}), encoding="utf-8")
    res = golden("export", "verify", str(exported))
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
    assert f"FAIL {mpath}: " in res.stderr and '"files"' in res.stderr


@pytest.mark.parametrize("field, value", [("counts", "[]"), ("counts", '{"grades": [1]}'), ("version", "5")])
def test_verify_reports_other_malformed_manifest_fields(exported, field, value):
    mpath = exported / "manifest.json"
    manifest = json.loads(mpath.read_text(encoding="utf-8"))
    mpath.write_text(json.dumps({**manifest, field: json.loads(value)}), encoding="utf-8")
    res = golden("export", "verify", str(exported))
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
    assert f"FAIL {mpath}: " in res.stderr


def test_the_exit_codes_are_the_ones_the_docs_document():
    import re

    from curation.cli import base, leakcheck

    page = Path(__file__).resolve().parents[2] / "docs" / "reference" / "exit-codes-and-limits.md"
    section = page.read_text(encoding="utf-8").split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    documented = {int(c) for c in re.findall(r"^\| (\d+) \|", section, flags=re.M)}
    assert documented == {base.EXIT_OK, base.EXIT_ERROR, base.EXIT_USAGE, base.EXIT_LEAK, base.EXIT_NULL_ARM,
                          base.EXIT_BUG} == {0, 1, 2, 3, 4, 70}
    assert leakcheck.EXIT_LEAKS == base.EXIT_LEAK


def test_golden_debug_also_shows_the_traceback_of_an_input_error(tmp_path):
    bad = tmp_path / "run.trec"
    bad.write_text("q1 Q0 d1\n", encoding="utf-8")
    args = ("pool", str(bad), "--queries", str(bad), "--out", str(tmp_path / "p.jsonl"))
    plain, debug = golden(*args, env={"GOLDEN_DEBUG": ""}), golden(*args, env={"GOLDEN_DEBUG": "1"})
    assert plain.returncode == debug.returncode == 1
    assert "Traceback" not in plain.stderr and "Traceback (most recent call last)" in debug.stderr
    assert debug.stderr.splitlines()[-1] == plain.stderr.splitlines()[-1]  # the same one line, last


def test_error_line_for_each_kind_of_exception():
    import gzip

    from sqlalchemy.exc import IntegrityError, OperationalError

    from curation.cli.base import error_line
    from curation.formats.fileio import InputError

    cmd = "golden pool"
    denied = PermissionError(errno.EACCES, os.strerror(errno.EACCES), "in/run.trec")
    assert error_line(denied, cmd) == (f"in/run.trec: {os.strerror(errno.EACCES)}", 1)
    moved = OSError(errno.EXDEV, os.strerror(errno.EXDEV), "a", None, "b")
    assert error_line(moved, cmd) == (f"a -> b: {os.strerror(errno.EXDEV)}", 1)
    assert error_line(WriteError(errno.ENOSPC, ENOSPC_TEXT, "out/q.jsonl"), cmd) == (
        f"cannot write out/q.jsonl: {ENOSPC_TEXT}", 1)
    assert error_line(gzip.BadGzipFile("Not a gzipped file (b'ab')"), cmd) == (
        "golden pool: Not a gzipped file (b'ab')", 1)
    assert error_line(InputError("q.jsonl", 3, "not valid JSON"), cmd) == ("q.jsonl:3: not valid JSON", 1)
    assert error_line(EOFError("Compressed file ended"), cmd)[1] == 1
    locked = OperationalError("UPDATE project", {}, Exception("database is locked"))
    assert error_line(locked, cmd) == ("cannot use the store: database is locked", 1)
    clash = IntegrityError("INSERT INTO x\nVALUES (1)", {}, Exception("UNIQUE constraint failed"))
    line, code = error_line(clash, cmd)
    assert code == 70 and line.startswith("golden pool: unexpected IntegrityError") and "bug" in line
    assert "\n" not in line
    assert error_line(RuntimeError("boom"), cmd)[1] == 70
