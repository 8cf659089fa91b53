"""A full disk while a command writes its output: one line naming the file and the cause, exit 1,
no traceback, nothing partial left. A real full disk: a 64 KB tmpfs filled to the last byte (needs
root and ``mount``; the injected ENOSPC tests of the writers are in tests/cli/test_errors.py)."""

from __future__ import annotations

import errno
import os
import shlex
import subprocess

import pytest
from click.testing import CliRunner

from curation.cli import main
from curation.cli.demo import demo_commands
from curation.demo import build_demo

NO_SPACE = os.strerror(errno.ENOSPC)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return build_demo(tmp_path_factory.mktemp("demo") / "golden-demo", seed=3)


@pytest.fixture
def full_disk(tmp_path):
    """A folder on a tmpfs with no byte left."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mnt = tmp_path / "full"
    mnt.mkdir()
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], capture_output=True, text=True)
    if res.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {res.stderr.strip()}")
    try:
        fd = os.open(mnt / ".filler", os.O_WRONLY | os.O_CREAT)
        try:
            while True:
                os.write(fd, b"\0" * 512)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
        finally:
            os.close(fd)
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


def _demo_args(demo, key: str, out) -> list[str]:
    args = shlex.split(demo_commands(demo)[key])[1:]
    args[args.index("--out") + 1] = str(out)
    return args


def _commands(demo, mnt) -> dict[str, tuple[list[str], object]]:
    p = demo.data.paths
    return {
        "sample": (_demo_args(demo, "sample", mnt / "queries.jsonl"), mnt / "queries.jsonl"),
        "pool": (_demo_args(demo, "pool", mnt / "pool.jsonl"), mnt / "pool.meta.json"),  # written with pool.jsonl
        "corpus-sample": (["sample", "corpus", str(p.corpus), "--size", "50", "--out", str(mnt / "s.jsonl")],
                          mnt / "s.jsonl"),
        "leakcheck": (["leakcheck", "--queries", str(p.queries), "--corpus", str(p.corpus), "--workers", "1",
                       "--out", str(mnt / "leaks.jsonl")], mnt / "leaks.jsonl"),
        "compare --html": (["stats", "compare", str(p.runs[0]), str(p.runs[1]), "--qrels", str(p.hidden_qrels),
                            "--resamples", "200", "--html", str(mnt / "report.html")], mnt / "report.html"),
    }


@pytest.mark.parametrize("command", ["sample", "pool", "corpus-sample", "leakcheck", "compare --html"])
def test_a_full_disk_is_one_line_naming_the_file(demo, full_disk, command):
    args, out = _commands(demo, full_disk)[command]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 1, res.output
    assert isinstance(res.exception, SystemExit)  # no exception escaped the command
    assert res.stderr.strip().splitlines() == [f"Error: cannot write {out}: {NO_SPACE}"]
    assert sorted(p.name for p in full_disk.iterdir()) == [".filler"]  # nothing partial


def test_a_full_disk_during_export_leaves_no_folder_and_no_version(full_disk, tmp_path):
    from sqlmodel import select

    from curation.store.engine import session
    from curation.store.models import ExportVersion
    from tests.export.test_export import ALICE, BOB, PAIRS
    from tests.support.judgments import adjudicate, judge
    from tests.support.projects import pairs_project, sqlite_store

    with sqlite_store(tmp_path) as (url, engine):
        pairs_project(engine, tmp_path / "in", PAIRS)
        judge(engine, tmp_path, "alice", ALICE)
        judge(engine, tmp_path, "bob", BOB)
        adjudicate(engine, "10", "d1", 1)
        res = CliRunner().invoke(main, ["export", "create", "--db", url, "--version", "v5", "--out",
                                        str(full_disk / "ex")])
        assert res.exit_code == 1 and isinstance(res.exception, SystemExit), res.output
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"Error: cannot write {full_disk / 'ex' / 'v5'}")
        assert lines[0].endswith(f": {NO_SPACE}")
        assert [p.name for p in (full_disk / "ex").iterdir()] == []
        with session(engine) as s:
            assert list(s.exec(select(ExportVersion))) == []  # the version is not recorded either


def test_a_read_only_file_system_is_one_line_naming_the_file(demo, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mnt = tmp_path / "ro"
    mnt.mkdir()
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,ro", "tmpfs", str(mnt)], capture_output=True,
                         text=True)
    if res.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {res.stderr.strip()}")
    try:
        res = CliRunner().invoke(main, _demo_args(demo, "sample", mnt / "q" / "queries.jsonl"))
        assert res.exit_code == 1 and isinstance(res.exception, SystemExit), res.output
        assert res.stderr.strip().splitlines() == [
            f"Error: cannot write {mnt / 'q' / 'queries.jsonl'}: {os.strerror(errno.EROFS)}"
        ]
    finally:
        subprocess.run(["umount", str(mnt)], check=True)
