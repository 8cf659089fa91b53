"""``golden machine run`` against an OpenAI-compatible server of the tests' own (tests/support/llm.py):
every label stored with its provenance on SQLite and PostgreSQL; 429 (Retry-After), 500, a malformed
body, a hang, a refusal and answers off the schema retried or recorded as errors, never as grades,
and asked again by the next run; a server that goes away stops the run and the next run continues
without asking twice; changing the guidelines or a query's need makes labels stale and ``--stale``
re-judges only those; the dry run sends nothing; llama.cpp gets its own structured-output form."""

from __future__ import annotations

import json
import threading
import time

import pytest
from click.testing import CliRunner
from sqlmodel import select

from curation.cli import main
from curation.machine.runner import WireSettings, retry_after, run_machine
from curation.machine.runs import list_runs, runs_overview, stale_labels
from curation.store.engine import session as new_session
from curation.store.lookups import pair_keys
from curation.store.models import MachineFailure, MachineJudge, MachineLabel, MachineRun
from curation.store.needs import set_need
from curation.store.projects import get_project, set_guidelines
from curation.store.users import get_user
from tests.support.llm import FakeLLM
from tests.support.projects import pairs_project

PAIRS = [(f"q{q}", f"d{q}-{d}") for q in range(1, 5) for d in range(1, 6)]  # 4 queries x 5 documents


def grade_by_doc(prompt: str, body: dict) -> int:
    """The fake model's grade: the document number mod 3, read from the prompt (a deterministic
    function the tests can recompute)."""
    for _q, d in PAIRS:
        if f"Text of document {d}." in prompt:
            return int(d.split("-")[1]) % 3
    raise AssertionError("no document in the prompt")


@pytest.fixture
def project(engine, tmp_path):
    pairs_project(engine, tmp_path, PAIRS)
    with new_session(engine) as s:
        version, _ = set_guidelines(s, get_project(s, "p"), "# Guidelines\n\nJudge relevance.\n")
    engine.guidelines_version = version.version
    return engine


def wire(fake: FakeLLM, **kw) -> WireSettings:
    kw.setdefault("backoff", 0.01)
    kw.setdefault("timeout", 5.0)
    return WireSettings(base_url=fake.base_url, model="judge-model", **kw)


def go(engine, fake, *, machine="llm", **kw):
    w = kw.pop("wire", None) or wire(fake)
    with new_session(engine) as s:
        return run_machine(s, project="p", machine=machine, wire=w, progress=False, handle_sigint=False, **kw)


def labels(engine, machine="llm"):
    with new_session(engine) as s:
        mj = s.exec(select(MachineJudge).where(MachineJudge.name == machine)).one()
        return s.exec(select(MachineLabel).where(MachineLabel.machine_id == mj.id).order_by(MachineLabel.id)).all()


def test_a_run_labels_every_pair_with_its_provenance(project):
    engine = project
    with FakeLLM(grade_by_doc) as fake:
        r = go(engine, fake, wire=wire(fake, temperature=0.3, seed=11, max_tokens=20), samples=2)
    assert (r.status, r.pairs, r.jobs, r.labelled, r.errors) == ("finished", 20, 40, 40, {})
    rows = labels(engine)
    assert len(rows) == 40
    assert {(x.pair_id, x.sample) for x in rows} == {(x.pair_id, k) for x in rows for k in (0, 1)}
    by_body = {}
    for body in fake.requests:
        by_body[(body["messages"][0]["content"], body["seed"])] = body
    assert len(by_body) == 40  # each (pair, sample) asked once, the sample index in the seed
    with new_session(engine) as s:
        run = s.exec(select(MachineRun)).one()
        keys = pair_keys(s, [x.pair_id for x in rows])
    for x in rows:
        grade = json.loads(x.raw_response)["grade"]
        assert x.grade == grade == int(keys[x.pair_id][1].split("-")[1]) % 3  # the label is its own pair's
        assert x.model == "judge-model" and x.served_model == "fake-served-1"
        assert x.prompt_version == r.prompt_version == run.prompt_version
        assert x.prompt_version.startswith("umbrela-") and x.prompt_version.endswith(f"+g{engine.guidelines_version}")
        assert x.need_version == 0 and x.run_id == run.id
        samp = json.loads(x.sampling_json)
        assert samp["temperature"] == 0.3 and samp["max_tokens"] == 20 and samp["seed"] == 11 + x.sample
        assert x.tokens_out == 5 and x.tokens_in > 50 and x.latency_ms > 0
    # the prompt holds the guidelines, the grade scale, the query and the document
    prompt = fake.requests[0]["messages"][0]["content"]
    assert "Judge relevance." in prompt and "query q" in prompt and "Text of document" in prompt
    assert "0 (" in prompt and "2 (" in prompt
    # json_schema form for a server that is not llama.cpp
    assert fake.requests[0]["response_format"]["type"] == "json_schema"
    assert fake.requests[0]["response_format"]["json_schema"]["schema"]["properties"]["grade"]["enum"] == [0, 1, 2]
    assert r.structured == "json_schema"
    # two samples and no logprobs: vote shares (here both samples agree: share 1.0)
    assert r.vote_pairs == 20 and all(x.confidence == 1.0 for x in rows)
    # a second run asks for nothing
    with FakeLLM(grade_by_doc) as fake2:
        r2 = go(engine, fake2, samples=2)
    assert (r2.jobs, r2.already, len(fake2.requests)) == (0, 40, 0)
    with new_session(engine) as s:
        runs = list_runs(s, get_project(s, "p"))
    assert [(x.pairs_done, x.labels, x.errors, x.model) for x in runs] == [(0, 0, 0, "judge-model"),
                                                                         (20, 40, 0, "judge-model")]


def test_llama_cpp_gets_its_own_structured_form_and_logprobs_become_probabilities(sqlite_engine, tmp_path):
    pairs_project(sqlite_engine, tmp_path, PAIRS[:5])
    with FakeLLM(grade_by_doc, owned_by="me", logprobs=True) as fake:
        r = go(sqlite_engine, fake, wire=wire(fake, logprobs=True))
    assert r.structured == "json_object"
    rf = fake.requests[0]["response_format"]
    assert rf["type"] == "json_object" and rf["schema"]["required"] == ["grade"]
    assert fake.requests[0]["logprobs"] is True and fake.requests[0]["top_logprobs"] == 5
    import math
    for x in labels(sqlite_engine):
        p = {int(k): v for k, v in json.loads(x.probabilities_json).items()}
        # exp(-0.2) and exp(-1.8) normalised over the two tokens that are grades (" x" is left out)
        a, b = math.exp(-0.2), math.exp(-1.8)
        assert p[x.grade] == pytest.approx(a / (a + b))
        assert p[(x.grade + 1) % 3] == pytest.approx(b / (a + b))
        assert x.confidence == pytest.approx(a / (a + b))


def test_faults_are_retried_or_recorded_never_graded(sqlite_engine, tmp_path):
    pairs_project(sqlite_engine, tmp_path, PAIRS[:10])
    with FakeLLM(grade_by_doc, retry_after="1", hang=3.0) as fake:
        # concurrency 1: faults are taken in request order
        fake.faults.extend(["429", None, "500", "500", None, "malformed", "hang", "refusal", "prose", "badgrade"])
        t0 = time.monotonic()
        r = go(sqlite_engine, fake, wire=wire(fake, concurrency=1, timeout=1.0, max_retries=2))
        took = time.monotonic() - t0
        # the 429's retry waited Retry-After (1 s), not the 0.01 s backoff
        assert fake.times[1] - fake.times[0] >= 0.95
    assert r.errors == {"malformed": 1, "timeout": 1, "refusal": 1, "unparseable": 2}
    assert r.labelled == 5 and r.status == "finished" and took < 30
    rows = labels(sqlite_engine)
    assert len(rows) == 5 and all(x.grade == json.loads(x.raw_response)["grade"] for x in rows)
    with new_session(sqlite_engine) as s:
        fails = s.exec(select(MachineFailure).order_by(MachineFailure.id)).all()
        assert sorted(f.kind for f in fails) == ["malformed", "refusal", "timeout", "unparseable", "unparseable"]
        assert any("grade 7 is not on the scale" in (f.detail or "") for f in fails)
        assert any(f.raw_response == "The grade is 2." or (f.raw_response or "").startswith("The grade is")
                   for f in fails)
        failed_pairs = {f.pair_id for f in fails}
        ov = runs_overview(s, get_project(s, "p"))
    assert ov["runs"][0]["errors"] == 5 and ov["runs"][0]["errors_by_kind"]["unparseable"] == 2
    assert {f["kind"] for f in ov["runs"][0]["failures"]} == {"malformed", "timeout", "refusal", "unparseable"}
    res = CliRunner().invoke(main, ["machine", "runs", "--project", "p", "--db", str(sqlite_engine.url)])
    assert res.exit_code == 0 and "errors: malformed 1, refusal 1, timeout 1, unparseable 2" in res.output
    assert "error on q1 / d1-" in res.output
    # the next run asks only for the five failed pairs, and labels them
    with FakeLLM(grade_by_doc) as fake2:
        r2 = go(sqlite_engine, fake2)
    assert (r2.jobs, r2.labelled, r2.errors) == (5, 5, {})
    with new_session(sqlite_engine) as s:
        asked = {x.pair_id for x in s.exec(select(MachineLabel).where(MachineLabel.run_id == r2.run_id)).all()}
    assert asked == failed_pairs


def test_a_5xx_left_after_the_retries_is_an_http_error(sqlite_engine, tmp_path):
    pairs_project(sqlite_engine, tmp_path, PAIRS[:1])
    with FakeLLM(grade_by_doc) as fake:
        fake.faults.extend(["500", "500", "500"])
        r = go(sqlite_engine, fake, wire=wire(fake, max_retries=2))
    assert r.errors == {"http": 1} and r.labelled == 0 and len(fake.requests) == 3


def test_retry_after_reads_seconds_and_dates():
    assert retry_after("3") == 3.0
    assert retry_after(None) is None and retry_after("soon") is None
    assert retry_after("Tue, 01 Dec 2026 10:00:10 GMT", now=1796119200.0) == pytest.approx(10.0)


def test_a_dead_server_stops_the_run_and_the_next_run_continues(sqlite_engine, tmp_path):
    pairs_project(sqlite_engine, tmp_path, PAIRS)
    fake = FakeLLM(grade_by_doc).start()
    port = fake.port
    served = []

    def grade_then_die(prompt, body):
        served.append(prompt)
        if len(served) == 8:  # the eighth request: the server dies while answering it
            threading.Thread(target=fake.kill).start()
        return grade_by_doc(prompt, body)

    fake.grade_of = grade_then_die
    r = go(sqlite_engine, fake, wire=wire(fake, concurrency=2, max_retries=1))
    assert r.status == "server-down" and 0 < r.labelled < 20
    first = {(x.pair_id, x.sample) for x in labels(sqlite_engine)}
    assert len(first) == r.labelled
    fake2 = FakeLLM(grade_by_doc).start(port)
    try:
        r2 = go(sqlite_engine, fake2)
    finally:
        fake2.stop()
    assert r2.status == "finished" and r2.jobs == 20 - len(first) == r2.labelled
    asked = {b["messages"][0]["content"] for b in fake2.requests}
    assert len(asked) == len(fake2.requests) == r2.jobs  # nothing asked twice
    rows = labels(sqlite_engine)
    assert len({(x.pair_id, x.sample) for x in rows}) == len(rows) == 20


def test_guidelines_and_needs_make_labels_stale_and_stale_rejudges_only_them(project):
    engine = project
    with FakeLLM(grade_by_doc) as fake:
        r1 = go(engine, fake)
    assert r1.labelled == 20
    with new_session(engine) as s:
        proj = get_project(s, "p")
        set_need(s, proj, "q2", lead=get_user(s, "lena"), description="recipes for bread", narrative=None)
        mj = s.exec(select(MachineJudge)).one()
        stale = stale_labels(s, proj, mj, r1.prompt_version)
    assert {x.qid for x in stale} == {"q2"} and len(stale) == 5 and {x.reason for x in stale} == {"need"}
    with FakeLLM(grade_by_doc) as fake:
        r2 = go(engine, fake, selection="stale")
    assert (r2.pairs, r2.jobs, r2.labelled) == (5, 5, 5)
    assert all("recipes for bread" in b["messages"][0]["content"] for b in fake.requests)
    with new_session(engine) as s:
        proj = get_project(s, "p")
        assert stale_labels(s, proj, mj, r1.prompt_version) == []
        set_guidelines(s, proj, "# Guidelines\n\nJudge relevance strictly.\n")
        ov = runs_overview(s, proj)
    assert ov["machines"][0]["stale"] == 20
    assert ov["machines"][0]["current_prompt_version"].endswith(f"+g{engine.guidelines_version + 1}")
    with FakeLLM(grade_by_doc) as fake:
        r3 = go(engine, fake, selection="stale")
        assert (r3.jobs, r3.labelled) == (20, 20) and r3.prompt_version.endswith(f"+g{engine.guidelines_version + 1}")
        r4 = go(engine, fake, selection="stale")
    assert r4.jobs == 0 and r4.pairs == 0
    with new_session(engine) as s:
        assert runs_overview(s, get_project(s, "p"))["machines"][0]["stale"] == 0


def test_dry_run_sends_nothing_and_prices_the_tokens(sqlite_engine, tmp_path):
    pairs_project(sqlite_engine, tmp_path, PAIRS)
    db = str(sqlite_engine.url)
    with FakeLLM(grade_by_doc) as fake:
        res = CliRunner().invoke(main, ["machine", "run", "--project", "p", "--machine", "llm", "--base-url",
                                        fake.base_url, "--model", "m", "--pairs", "sample", "--sample", "6",
                                        "--samples", "3", "--dry-run", "--price-in", "2", "--price-out", "10",
                                        "--max-tokens", "10", "--db", db])
    assert res.exit_code == 0, res.output
    assert fake.requests == []
    assert "6 pairs selected" in res.output and "18 requests to make" in res.output
    assert "at most 180 out" in res.output and "expected cost" in res.output
    assert "dry run: nothing was sent" in res.output
    with new_session(sqlite_engine) as s:
        assert s.exec(select(MachineRun)).all() == []


def test_the_key_comes_from_the_environment_and_is_never_stored(sqlite_engine, tmp_path, monkeypatch):
    pairs_project(sqlite_engine, tmp_path, PAIRS[:2])
    db = str(sqlite_engine.url)
    monkeypatch.setenv("GOLDEN_TEST_KEY", "sk-secret-123")
    with FakeLLM(grade_by_doc) as fake:
        res = CliRunner().invoke(main, ["machine", "run", "--project", "p", "--machine", "llm", "--base-url",
                                        fake.base_url, "--model", "m", "--api-key-env", "GOLDEN_TEST_KEY",
                                        "--no-progress", "--db", db])
    assert res.exit_code == 0, res.output
    assert "2 labels stored" in res.output and "sk-secret" not in res.output
    import sqlite3
    dump = "\n".join(sqlite3.connect(db.removeprefix("sqlite:///")).iterdump())
    assert "sk-secret" not in dump
    res = CliRunner().invoke(main, ["machine", "run", "--project", "p", "--machine", "llm", "--base-url",
                                    "http://127.0.0.1:9/v1", "--model", "m", "--api-key-env", "NOT_SET_ANYWHERE",
                                    "--db", db])
    assert res.exit_code == 1 and "NOT_SET_ANYWHERE is not set" in res.output


def test_waiters_arriving_together_get_successive_slots():
    import asyncio
    import time

    from curation.machine.runner import RateLimiter

    async def starts():
        limiter = RateLimiter(1200)  # one every 0.05 s
        woke = []

        async def one():
            await limiter.wait()
            woke.append(time.monotonic())

        await asyncio.gather(*(one() for _ in range(6)))
        return sorted(woke)

    woke = asyncio.run(starts())
    # six waiters at once: the last may start only after five gaps (a shared slot would start two together)
    assert woke[-1] - woke[0] >= 5 * 0.05 - 0.005, woke


def test_rate_limit_and_token_budget(sqlite_engine, tmp_path):
    pairs_project(sqlite_engine, tmp_path, PAIRS[:10])
    with FakeLLM(grade_by_doc) as fake:
        r = go(sqlite_engine, fake, wire=wire(fake, concurrency=4, requests_per_minute=600))
        times = sorted(fake.times)
    # 600 a minute: one every 0.1 s. Measured where the server receives them, so each time may be
    # late by the machine's scheduling: the span of ten (at least 0.9 s as sent) and the most in
    # any 0.3 s (3 as sent) are checked with room for that, not each gap.
    busiest = max(sum(t <= s + 0.3 for t in times[i:]) for i, s in enumerate(times))
    assert r.labelled == 10 and times[-1] - times[0] >= 0.8 and busiest <= 5, (times, busiest)
    with FakeLLM(grade_by_doc) as fake:
        r = go(sqlite_engine, fake, machine="llm2", wire=wire(fake, concurrency=1, token_budget=1))
        per = len(fake.requests)
    assert r.status == "budget" and per == 1 and r.labelled == 1


def test_the_leads_page_lists_the_runs_and_the_stale_labels_escaped(project, app, tmp_path):
    from tests.support.client import login

    engine = project
    name = "<b>llm</b>"
    with FakeLLM(grade_by_doc) as fake:
        fake.faults.extend(["prose"])
        r = go(engine, fake, machine=name, wire=wire(fake, concurrency=1))
    assert r.labelled == 19 and r.errors == {"unparseable": 1}
    with new_session(engine) as s:
        proj = get_project(s, "p")
        set_need(s, proj, "q3", lead=get_user(s, "lena"), description="<i>bread</i>", narrative=None)
        pid = proj.id
    client = login(app.test_client(), "lena")
    res = client.get(f"/lead/{pid}/machines")
    assert res.status_code == 200
    html = res.get_data(as_text=True)
    assert "<b>llm</b>" not in html and "&lt;b&gt;llm&lt;/b&gt;" in html
    assert 'data-testid="machine-run"' in html and r.prompt_version in html
    assert "<td>19 / 20</td>" in html  # pairs done / planned
    assert "unparseable 1" in html
    assert 'data-testid="machine-run-errors"' in html and 'not JSON' in html
    assert '<span data-testid="machine-stale">5</span>' in html and "information need changed" in html


def test_a_template_of_ones_own_is_checked_and_its_hash_is_the_prompt_version(sqlite_engine, tmp_path):
    pairs_project(sqlite_engine, tmp_path, PAIRS[:3])
    db = str(sqlite_engine.url)
    bad = tmp_path / "bad.j2"
    bad.write_text("Q: {{ query }}\n{% for g in grades %}\n")
    res = CliRunner().invoke(main, ["machine", "run", "--project", "p", "--machine", "llm", "--base-url",
                                    "http://127.0.0.1:9/v1", "--model", "m", "--template", str(bad), "--db", db])
    assert res.exit_code == 1 and f"line 2 of {bad}" in res.output
    bad.write_bytes(b"Q: {{ query }}\n\xff\n")
    res = CliRunner().invoke(main, ["machine", "run", "--project", "p", "--machine", "llm", "--base-url",
                                    "http://127.0.0.1:9/v1", "--model", "m", "--template", str(bad), "--db", db])
    assert res.exit_code == 1 and f"line 2 of {bad} is not UTF-8" in res.output
    good = tmp_path / "mine.j2"
    good.write_text("Query {{ query }}; document {{ document }}. JSON please.\n")
    import hashlib
    digest = hashlib.sha256(good.read_bytes()).hexdigest()[:12]
    with FakeLLM(grade_by_doc) as fake:
        r = go(sqlite_engine, fake, template_path=str(good))
        assert fake.requests[0]["messages"][0]["content"].startswith("Query query q1; document Text of document")
    assert r.prompt_version.startswith(f"mine-{digest}+g")


def test_sigint_stops_the_run_cleanly_and_the_next_run_continues(sqlite_engine, tmp_path):
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    pairs_project(sqlite_engine, tmp_path, PAIRS)
    db = str(sqlite_engine.url)
    root = Path(__file__).resolve().parents[2]
    with FakeLLM(grade_by_doc, delay=0.05) as fake:
        argv = [sys.executable, "-c", "from curation.cli import main; main()", "machine", "run", "--project", "p",
                "--machine", "llm", "--base-url", fake.base_url, "--model", "m", "--concurrency", "1",
                "--progress", "--db", db]
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env={**os.environ, "PYTHONPATH": str(root)})
        deadline = time.monotonic() + 60
        while len(fake.requests) < 5 and time.monotonic() < deadline:
            time.sleep(0.01)
        proc.send_signal(signal.SIGINT)
        out = proc.communicate(timeout=60)[0]
        assert proc.returncode == 3, out
        assert "interrupted" in out and "Traceback" not in out
        first = len(labels(sqlite_engine))
        assert 3 <= first < 20
        with new_session(sqlite_engine) as s:
            assert s.exec(select(MachineRun)).one().status == "interrupted"
        answered_prompts = {b["messages"][0]["content"] for b in fake.requests[:first]}
        fake.requests.clear()
        r = go(sqlite_engine, fake)
    assert r.status == "finished" and r.jobs == 20 - first == len(fake.requests)
    assert not answered_prompts & {b["messages"][0]["content"] for b in fake.requests}
    rows = labels(sqlite_engine)
    assert len(rows) == len({(x.pair_id, x.sample) for x in rows}) == 20


def test_a_server_that_cannot_be_reached_is_refused_and_the_run_says_so(sqlite_engine, tmp_path):
    from tests.support.llama_server import free_port

    pairs_project(sqlite_engine, tmp_path, PAIRS[:2])
    res = CliRunner().invoke(main, ["machine", "run", "--project", "p", "--machine", "llm", "--base-url",
                                    f"http://127.0.0.1:{free_port()}/v1", "--model", "m", "--db",
                                    str(sqlite_engine.url)])
    assert res.exit_code == 1 and "cannot reach" in res.output
    with new_session(sqlite_engine) as s:
        assert [r.status for r in s.exec(select(MachineRun)).all()] == ["server-down"]


def test_samples_that_disagree_give_vote_shares(sqlite_engine, tmp_path):
    pairs_project(sqlite_engine, tmp_path, PAIRS[:4])
    # samples 0 and 1 say the document's grade, sample 2 one grade up (mod 3)
    with FakeLLM(lambda p, b: (grade_by_doc(p, b) + (b["seed"] == 2)) % 3) as fake:
        r = go(sqlite_engine, fake, wire=wire(fake, seed=0, temperature=0.8), samples=3)
    assert r.vote_pairs == 4
    by_pair = {}
    for x in labels(sqlite_engine):
        by_pair.setdefault(x.pair_id, []).append(x)
    for xs in by_pair.values():
        xs.sort(key=lambda x: x.sample)
        g = xs[0].grade
        probs = {int(k): v for k, v in json.loads(xs[0].probabilities_json).items()}
        assert probs == pytest.approx({g: 2 / 3, (g + 1) % 3: 1 / 3})
        assert [x.confidence for x in xs] == pytest.approx([2 / 3, 2 / 3, 1 / 3])
