"""`golden serve` under granian and gunicorn: several worker processes, a clean stop, one port for
one server, and nothing lost when judges' requests land on different processes at once.

The first tests start the real command and look at the processes it runs and the port it holds.
The last runs bench/bench_judging_load.py at a small size against a real `golden serve`; its own
checks then read the database: every answered token has exactly one judgment, nothing else was
recorded, and no non-overlap pair was judged by two judges."""

from __future__ import annotations

import contextlib
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
pytestmark = pytest.mark.slow  # each test starts golden serve (granian or gunicorn) and its workers
SERVERS = ("granian", "gunicorn")


def _bench():
    """bench/bench_judging_load.py as a module (bench/ is not a package)."""
    spec = importlib.util.spec_from_file_location("bench_judging_load", ROOT / "bench" / "bench_judging_load.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _start_serve(url: str, log: Path, *args: str, new_session: bool = False, ignoring=()) -> subprocess.Popen:
    """`golden serve ARGS` with its output in ``log``; ``ignoring``: signals it starts with ignored."""

    def ignore():
        for signum in ignoring:
            signal.signal(signum, signal.SIG_IGN)

    with open(log, "wb") as out:
        return subprocess.Popen(
            [sys.executable, "-c", "from curation.cli import main; main()", "serve", "--db", url, *args],
            stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "GOLDEN_SECRET_KEY": "serve-test"},
            start_new_session=new_session, preexec_fn=ignore if ignoring else None,
        )


def _printed_port(proc: subprocess.Popen, log: Path, pattern: str, deadline: float) -> int:
    """The port of the start line matching ``pattern`` (one group), once it is printed."""
    while time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text()
        match = re.search(pattern, log.read_text())
        if match:
            return int(match.group(1))
        time.sleep(0.1)
    raise AssertionError(log.read_text())


def _login_page(port: int, deadline: float, log: Path) -> None:
    while True:  # the socket is bound before the line is printed; workers may still be starting
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/login", timeout=2) as response:
                assert response.status == 200 and b"csrf_token" in response.read()
                return
        except OSError:
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)


def _two_workers_up(proc: subprocess.Popen, log: Path, start_line: str, deadline: float) -> tuple[int, list[int]]:
    """The printed port and the worker processes, once the start line is out and the login page answers."""
    port = _printed_port(proc, log, start_line, deadline)
    _login_page(port, deadline, log)
    workers = _bench().child_pids(proc.pid)
    assert len(workers) == 2
    return port, workers


def _stop(proc: subprocess.Popen, log: Path) -> str:
    proc.send_signal(signal.SIGTERM)
    code = proc.wait(timeout=30)
    output = log.read_text()
    assert code == 0, output
    assert output.rstrip().endswith("golden: stopped") and output.count("golden: stopped") == 1
    assert "Traceback" not in output
    return output


@pytest.mark.parametrize("server", SERVERS)
def test_serve_runs_worker_processes_on_the_port_it_prints_and_stops_cleanly(tmp_path, server):
    with sqlite_store(tmp_path) as (url, _engine):
        log = tmp_path / "serve.log"
        proc = _start_serve(url, log, "--port", "0", "--workers", "2", "--server", server)
        try:
            deadline = time.monotonic() + 60
            start_line = rf"http://127\.0\.0\.1:(\d+)/ with {server} \(2 worker processes\)"
            port, workers = _two_workers_up(proc, log, start_line, deadline)
            assert port != 0
            # every worker serves the one socket bound before the line was printed: each holds it,
            # and no worker listens on a socket of its own (granian's default on Linux)
            listening = {pid: _listening_ports(pid) for pid in workers}
            assert all(ports == {port} for ports in listening.values()), listening
        finally:
            _stop(proc, log)


@pytest.mark.parametrize("ignoring", [(), (signal.SIGINT, signal.SIGQUIT)], ids=["terminal", "background-job"])
def test_sigint_to_the_whole_process_group_stops_every_worker_at_once(tmp_path, ignoring):
    # A terminal's Ctrl+C, or `kill -INT -- -PGID`, sends SIGINT to the master and every worker
    # together. Started as a shell script's background job (`golden serve ... &`, which starts with
    # SIGINT and SIGQUIT ignored), granian's master respawned a worker that had ended on it, then
    # killed that one after 5 s. (gunicorn's workers end on SIGINT themselves: not blocked there.)
    with sqlite_store(tmp_path) as (url, _engine):
        log = tmp_path / "serve.log"
        proc = _start_serve(url, log, "--port", "0", "--workers", "2", "--server", "granian", new_session=True,
                            ignoring=ignoring)
        try:
            deadline = time.monotonic() + 60
            _, workers = _two_workers_up(proc, log, r"http://127\.0\.0\.1:(\d+)/ with", deadline)
            # every worker blocks SIGINT from its fork on, once Python's at-fork hook has run in it
            # (a process seen an instant after its fork may not be there yet); the next test stops
            # the workers in that first instant
            while not all(_blocks_sigint(pid) for pid in workers):
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.05)
        finally:
            started = time.monotonic()
            os.killpg(proc.pid, signal.SIGINT)
            code = proc.wait(timeout=30)
        output = log.read_text()
        assert code == 0 and time.monotonic() - started < 4, output
        assert output.rstrip().endswith("golden: stopped") and "Traceback" not in output
        assert "Killing" not in output and "Unexpected exit" not in output, output
        assert not [pid for pid in workers if Path(f"/proc/{pid}").exists() and _state(pid) != "Z"], output


@pytest.mark.parametrize("stop", ["sigterm-to-the-server", "ctrl-c-to-the-group"])
@pytest.mark.parametrize("server", SERVERS)
def test_a_stop_the_moment_the_workers_exist_ends_them_at_once(tmp_path, server, stop):
    # A worker runs the serving process's signal handlers until its server installs its own (the
    # first fraction of a second); they only marked the worker's copy of the server as stopping, so
    # a stop in that instant (a supervisor stopping a service it just started, Ctrl+C at once) was
    # lost and the master killed each worker after 5 s: "Killing worker-1 after it refused to
    # gracefully stop" (granian), "Worker ... was sent SIGKILL! Perhaps out of memory?" (gunicorn).
    with sqlite_store(tmp_path) as (url, _engine):
        log = tmp_path / "serve.log"
        proc = _start_serve(url, log, "--port", "0", "--workers", "2", "--server", server, new_session=True)
        try:
            deadline = time.monotonic() + 60
            _printed_port(proc, log, r"http://127\.0\.0\.1:(\d+)/ with", deadline)
            child_pids = _bench().child_pids  # loaded once: the loop below must see the first instant
            while len(workers := child_pids(proc.pid)) < 2:
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.005)
        finally:
            started = time.monotonic()
            if stop == "sigterm-to-the-server":
                proc.send_signal(signal.SIGTERM)
            else:
                os.killpg(proc.pid, signal.SIGINT)
            code = proc.wait(timeout=30)
        output = log.read_text()
        assert code == 0 and time.monotonic() - started < 4, output
        assert output.rstrip().endswith("golden: stopped") and "Traceback" not in output
        assert "Killing" not in output and "SIGKILL" not in output and "ERROR" not in output, output
        assert not [pid for pid in workers if _state(pid) not in ("Z", "gone")], output


@pytest.mark.parametrize("server", SERVERS)
def test_workers_stop_when_the_serving_process_is_killed(tmp_path, server):
    # SIGKILL (the OOM killer, `kill -9`) gives the master no chance to stop its workers; they must
    # not serve on alone, holding the port
    with sqlite_store(tmp_path) as (url, _engine):
        log = tmp_path / "serve.log"
        proc = _start_serve(url, log, "--port", "0", "--workers", "2", "--server", server)
        try:
            deadline = time.monotonic() + 60
            _, workers = _two_workers_up(proc, log, r"http://127\.0\.0\.1:(\d+)/ with", deadline)
        finally:
            proc.kill()
            proc.wait(timeout=30)
        deadline = time.monotonic() + 10
        while [pid for pid in workers if _state(pid) not in ("Z", "gone")] and time.monotonic() < deadline:
            time.sleep(0.1)
        alive = [pid for pid in workers if _state(pid) not in ("Z", "gone")]
        for pid in alive:  # leave nothing behind, then fail
            os.kill(pid, signal.SIGKILL)
        assert not alive, log.read_text()


def _blocks_sigint(pid: int) -> bool:
    """Whether process ``pid``'s main thread blocks SIGINT (Linux /proc: SigBlk, a hex mask)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigBlk:"):
            return bool(int(line.split()[1], 16) >> (signal.SIGINT - 1) & 1)
    return False


def _state(pid: int) -> str:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    return "gone"


def _listening_ports(pid: int) -> set[int]:
    """The TCP ports process ``pid`` holds a listening socket on (Linux /proc)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(table) as rows:
            next(rows)
            for row in rows:
                fields = row.split()
                if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                    ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


@pytest.mark.parametrize("server", SERVERS)
def test_a_second_serve_on_a_port_in_use_is_refused_and_the_first_keeps_it(tmp_path, server):
    with sqlite_store(tmp_path) as (url, _engine):
        first_log, second_log = tmp_path / "first.log", tmp_path / "second.log"
        first = _start_serve(url, first_log, "--port", "0", "--workers", "2")  # the default server
        try:
            deadline = time.monotonic() + 60
            port = _printed_port(first, first_log, r"http://127\.0\.0\.1:(\d+)/ with granian", deadline)
            _login_page(port, deadline, first_log)
            second = _start_serve(url, second_log, "--port", str(port), "--server", server)
            assert second.wait(timeout=60) == 1
            output = second_log.read_text()
            assert f"cannot listen on 127.0.0.1:{port}" in output and "pick another port with --port" in output
            assert "serving the judging app" not in output and "Traceback" not in output
            _login_page(port, deadline, first_log)
        finally:
            _stop(first, first_log)


@pytest.mark.parametrize("server", SERVERS)
def test_judges_on_several_worker_processes_lose_and_duplicate_nothing(db_url, capsys, server):
    bench = _bench()
    # granian keeps each judge's connection with the worker that accepted it; without keep-alive
    # (gunicorn's sync worker) every answer is a new connection, to any worker
    status = bench.main(["--db", db_url, "--seconds", "3", "--judges", "6", "--queries", "60", "--docs", "8",
                         "--overlap", "12", "--preload", "300", "--workers", "3", "--server", server])
    out = capsys.readouterr().out
    assert status == 0, out  # 1 when any request failed or any check of the database did
    assert "checks: no judgment lost or duplicated; no non-overlap pair judged twice" in out
    answered = int(re.search(r"judgments/second\s+[\d.]+\s+\(([\d,]+) judgments\)", out).group(1).replace(",", ""))
    assert answered > 50, out  # the judges did answer, through three worker processes
