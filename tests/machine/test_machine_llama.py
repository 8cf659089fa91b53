"""``golden machine run`` end to end against the REAL llama.cpp server (llama-cpp-python's
``python -m llama_cpp.server``) serving a tiny random-weight GGUF model the test writes: a run labels
the project's pairs with provenance through the server's own structured-output form; the server is
killed (SIGKILL) mid-run and started again, and either the run rides it out (retries) or stops and
the next run continues, never asking twice for an answered (pair, sample) (counted from the
server's access logs); ``golden labels calibrate`` then reports on the labels."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlmodel import func, select

from curation.cli import main
from curation.store.engine import session as new_session
from curation.store.models import MachineJudge, MachineLabel, MachineRun
from tests.support.judgments import judge
from tests.support.projects import pairs_project

pytestmark = pytest.mark.slow

try:
    import llama_cpp  # noqa: F401

    LLAMA = None
except ImportError as exc:  # pragma: no cover - depends on the machine
    LLAMA = f"llama-cpp-python[server] is not installed ({exc}); pip install 'llama-cpp-python[server]' gguf"

ROOT = Path(__file__).resolve().parents[2]
PAIRS = [(f"q{q:02d}", f"d{q}-{d}") for q in range(12) for d in range(10)]  # 120 pairs
TEMPLATE = """Grade the document for the query.
Q: {{ query }}{% if need %} ({{ need.description }}){% endif %}
D: {{ document }}
{% for g in grades %}{{ g.grade }}={{ g.name }} {% endfor %}
Answer {"grade": n}
"""


@pytest.fixture
def llama(tmp_path):
    if LLAMA:
        pytest.skip(LLAMA)
    from tests.support.llama_server import LlamaServer
    from tests.support.tiny_gguf import write_tiny_gguf

    model = write_tiny_gguf(tmp_path / "tiny.gguf")
    server = LlamaServer(model, tmp_path).start()
    try:
        yield server
    finally:
        server.kill()


def golden(*args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-c", "from curation.cli import main; main()", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True)


def count(engine, machine: str) -> int:
    with new_session(engine) as s:
        mj = s.exec(select(MachineJudge).where(MachineJudge.name == machine)).first()
        if mj is None:
            return 0
        return s.exec(select(func.count(MachineLabel.id)).where(MachineLabel.machine_id == mj.id)).one()


def kill_when(engine, machine: str, server, at: int, proc) -> int:
    """SIGKILL the server once ``at`` labels are stored; returns the labels stored then."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        n = count(engine, machine)
        if n >= at:
            server.kill()
            return n
        time.sleep(0.01)
    raise AssertionError(f"the run ended before {at} labels: {proc.communicate()[0][-2000:]}")


def test_a_run_against_llama_cpp_survives_a_killed_server_and_calibrate_reports_on_it(llama, sqlite_engine,
                                                                                         tmp_path):
    engine = sqlite_engine
    pairs_project(engine, tmp_path, PAIRS)
    rng = random.Random(4)
    judge(engine, tmp_path, "alice", {u: rng.choice((0, 1, 2)) for u in PAIRS})
    template = tmp_path / "short.j2"
    template.write_text(TEMPLATE)
    db = str(engine.url)
    base = ["machine", "run", "--project", "p", "--base-url", llama.base_url, "--model", "tiny-llama",
            "--template", str(template), "--max-doc-chars", "120", "--max-tokens", "16", "--temperature", "1.5",
            "--request-seed", "7", "--logprobs", "--concurrency", "2", "--no-progress", "--db", db]

    # 1. the server is killed mid-run and not back in time: the run stops (exit 3), keeps its labels
    proc = golden(*base, "--machine", "llm", "--max-retries", "1")
    killed_at = kill_when(engine, "llm", llama, 15, proc)
    out = proc.communicate(timeout=120)[0]
    assert proc.returncode == 3, out
    assert "server-down" in out and "run the same command again to continue" in out
    first = count(engine, "llm")
    assert killed_at <= first < len(PAIRS)
    answered_before = llama.answered()
    assert answered_before >= first  # what it answered (the answer in flight at the kill may be lost)

    # 2. restarted: the next run asks only for what was not answered, and finishes
    llama.start()
    proc = golden(*base, "--machine", "llm")
    out = proc.communicate(timeout=300)[0]
    assert proc.returncode == 0, out
    assert f"{len(PAIRS) - first} requests to make" in out and "finished" in out
    assert llama.answered() - answered_before == len(PAIRS) - first  # nothing asked twice
    with new_session(engine) as s:
        rows = s.exec(select(MachineLabel).order_by(MachineLabel.id)).all()
        runs = s.exec(select(MachineRun).order_by(MachineRun.id)).all()
    assert len(rows) == len({(r.pair_id, r.sample) for r in rows}) == len(PAIRS)
    assert [r.status for r in runs] == ["server-down", "finished"]
    for r in rows:
        assert r.grade == json.loads(r.raw_response)["grade"]  # the server's structured answer, parsed
        assert r.served_model == "tiny-llama" and r.model == "tiny-llama"
        assert r.prompt_version.startswith("short-") and r.tokens_in > 20 and r.tokens_out > 0
        assert json.loads(r.sampling_json)["seed"] == 7 and r.latency_ms > 0
        if r.probabilities_json:  # grade-token logprobs, normalised over the grades
            assert sum(json.loads(r.probabilities_json).values()) == pytest.approx(1.0)
    assert {r.grade for r in rows} <= {0, 1, 2}

    # 3. killed and restarted while the run retries: the same run rides it out
    proc = golden(*base, "--machine", "llm2", "--max-retries", "8")
    kill_when(engine, "llm2", llama, 15, proc)
    time.sleep(0.3)
    llama.start()
    out = proc.communicate(timeout=300)[0]
    assert proc.returncode == 0, out
    assert count(engine, "llm2") == len(PAIRS)

    # 4. golden labels calibrate reports on the run's labels, on their prompt version
    res = CliRunner().invoke(main, ["labels", "calibrate", "--project", "p", "--machine", "llm", "--json",
                                    "--resamples", "200", "--db", db])
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    assert d["machine_pairs"] == d["pairs"] == len(PAIRS)
    assert d["prompt_version"] == rows[0].prompt_version
    assert d["headline"]["exact"]["value"] is not None
