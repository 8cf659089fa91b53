"""A command killed by SIGINT, SIGTERM or SIGHUP while writing leaves nothing behind: no temporary
file beside its output, no output, and the inputs as they were.

Each case runs the real ``golden`` in a subprocess (:mod:`tests.support.paused`), paused inside the
rename that would put a complete temporary file into place, and signals it there.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli.test_malformed_inputs import write_clean

ROOT = Path(__file__).resolve().parents[2]

COMMANDS = {
    "sample": "sample {d}/log.csv --query-col query --count-col count --size 3 --floor 0 --seed 1 --out {d}/out.jsonl",
    "pool": "pool {d}/run_a.trec {d}/run_b.trec --depth 5 --out {d}/out.jsonl",
    "leakcheck": "leakcheck --queries {d}/queries.jsonl --corpus {d}/corpus.jsonl --workers 1 --out {d}/out.jsonl",
    "corpus-sample": "corpus-sample {d}/corpus.tsv --size 4 --seed 1 --out {d}/out.parquet",
}


def start_paused(argv: list[str], target: str, flag: Path, call: int = 1, cwd: Path | None = None):
    """``golden argv`` in a subprocess, paused at the ``call``-th call of ``target``; returns the
    process once it is there (``flag`` written)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "tests.support.paused", target, str(call), str(flag), *argv],
                            cwd=cwd or ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not flag.exists():
        if proc.poll() is not None:
            out, err = proc.communicate()
            return proc, out + err
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"{argv[0]} never reached {target}")
        time.sleep(0.02)
    return proc, None


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


@pytest.mark.parametrize("signum", [signal.SIGTERM, pytest.param(signal.SIGHUP, marks=pytest.mark.slow),
                                    pytest.param(signal.SIGINT, marks=pytest.mark.slow)], ids=lambda s: s.name)
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_signal_while_writing_leaves_no_temporary_file(tmp_path, command, signum):
    data = tmp_path / "data"
    write_clean(data)
    before = _files(data)
    flag = tmp_path / "flag"
    argv = COMMANDS[command].format(d=data).split()
    proc, finished = start_paused(argv, "os:replace", flag)
    assert finished is None, finished
    assert [p.name for p in data.iterdir() if p.name.endswith(".tmp")], "paused before its temporary file"
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=60)
    assert "Traceback" not in err, err
    if signum == signal.SIGINT:
        assert proc.returncode == 1 and "Aborted" in err  # click's answer to Ctrl-C
    else:
        assert proc.returncode == -signum, (proc.returncode, err)
    assert _files(data) == before  # no output, no temporary file, inputs untouched
    assert not [p for p in data.iterdir() if p.name.startswith(".")]
