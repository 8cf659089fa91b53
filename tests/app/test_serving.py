"""`golden serve` under gunicorn: several worker processes, a clean stop, and nothing lost when
judges' requests land on different processes at once.

The first test starts the real command and looks at the processes it runs. The second runs
bench/bench_judging_load.py at a small size against a real `golden serve`; its own checks then read
the database: every answered token has exactly one judgment, nothing else was recorded, and no
non-overlap pair was judged by two judges."""

from __future__ import annotations

import importlib.util
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.support.projects import sqlite_store

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow  # each test starts golden serve (gunicorn) and its workers


def _bench():
    """bench/bench_judging_load.py as a module (bench/ is not a package)."""
    spec = importlib.util.spec_from_file_location("bench_judging_load", ROOT / "bench" / "bench_judging_load.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_serve_runs_worker_processes_on_the_port_it_prints_and_stops_cleanly(tmp_path):
    with sqlite_store(tmp_path) as (url, _engine):
        log = tmp_path / "serve.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                [sys.executable, "-c", "from curation.cli import main; main()", "serve", "--db", url, "--port", "0",
                 "--workers", "2"],
                stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "GOLDEN_SECRET_KEY": "serve-test"},
            )
        try:
            deadline = time.monotonic() + 60
            port = None
            while port is None and time.monotonic() < deadline:
                assert proc.poll() is None, log.read_text()
                match = re.search(r"http://127\.0\.0\.1:(\d+)/ with gunicorn \(2 worker processes\)", log.read_text())
                port = int(match.group(1)) if match else time.sleep(0.1)
            assert port, log.read_text()
            assert port != 0
            while True:  # the socket is bound before the line is printed; workers may still be starting
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/login", timeout=2) as response:
                        assert response.status == 200 and b"csrf_token" in response.read()
                        break
                except OSError:
                    assert time.monotonic() < deadline, log.read_text()
                    time.sleep(0.1)
            assert len(_bench().child_pids(proc.pid)) == 2
        finally:
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(timeout=30)
        output = log.read_text()
        assert code == 0, output
        assert output.rstrip().endswith("golden: stopped") and output.count("golden: stopped") == 1
        assert "Traceback" not in output


def test_judges_on_several_worker_processes_lose_and_duplicate_nothing(db_url, capsys):
    bench = _bench()
    status = bench.main(["--db", db_url, "--seconds", "3", "--judges", "6", "--queries", "60", "--docs", "8",
                         "--overlap", "12", "--preload", "300", "--workers", "3"])
    out = capsys.readouterr().out
    assert status == 0, out  # 1 when any request failed or any check of the database did
    assert "checks: no judgment lost or duplicated; no non-overlap pair judged twice" in out
    answered = int(re.search(r"judgments/second\s+[\d.]+\s+\(([\d,]+) judgments\)", out).group(1).replace(",", ""))
    assert answered > 50, out  # the judges did answer, through three worker processes
