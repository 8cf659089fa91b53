"""What the calibration report adds for machine judges golden runs: the expected calibration error
beside the Brier score (checked against a hand calculation), the circularity warning when a system
run was built with a model of the judge's own family (declared per run), the model-family rule, and
the stale labels and prompt version the figures are on."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from curation.cli import main
from curation.machine.calibrate import expected_calibration_error
from curation.machine.family import circularity, model_family
from curation.machine.runner import WireSettings, run_machine
from curation.store.engine import session as new_session
from curation.store.projects import get_project, set_guidelines
from tests.support.judgments import judge
from tests.support.llm import FakeLLM
from tests.support.projects import pairs_project

PAIRS = [(f"q{q}", f"d{q}-{d}") for q in range(1, 9) for d in range(1, 6)]  # 40 pairs


def test_expected_calibration_error_by_hand():
    # bins of width 0.1 (0.1 falls in the first, as calibration_curve bins it): one pair in each of
    # four bins: (|0.1-0| + |0.15-1| + |0.9-1| + |0.95-1|) / 4 = 0.275
    assert expected_calibration_error(np.array([0, 1, 1, 1]), np.array([0.1, 0.15, 0.9, 0.95])) == pytest.approx(0.275)
    # two pairs in one bin (0.3-0.4): |mean(0.32, 0.35) - mean(0, 1)| = 0.165
    assert expected_calibration_error(np.array([0, 1]), np.array([0.32, 0.35])) == pytest.approx(0.165)
    assert expected_calibration_error(np.array([1, 1, 0, 0]), np.array([1.0, 1.0, 0.0, 0.0])) == 0.0


@pytest.mark.parametrize(("name", "family"), [
    ("gpt-4o-mini", "openai"), ("openai/gpt-4.1", "openai"), ("o3-mini", "openai"),
    ("meta-llama/Llama-3.1-8B-Instruct", "llama"), ("llama3.2:1b", "llama"), ("Qwen2.5-7B-Instruct", "qwen"),
    ("claude-3-5-sonnet", "anthropic"), ("gemma-2-9b", "google"), ("mixtral-8x7b", "mistral"),
    ("phi-3-mini", "microsoft"), ("acme-judge-2", "acme"), (None, None),
])
def test_model_family(name, family):
    assert model_family(name) == family


def test_circularity_pairs_runs_with_the_judges_family():
    found = circularity(["llama3.1:8b"], {"rag-a": "Meta-Llama-3-70B", "rag-b": "gpt-4o", "bm25": "none"})
    assert found == [{"run": "rag-a", "run_model": "Meta-Llama-3-70B", "judge_model": "llama3.1:8b",
                      "family": "llama"}]


def test_the_report_warns_of_circularity_shows_ece_and_stale_labels(sqlite_engine, tmp_path):
    engine = sqlite_engine
    pairs_project(engine, tmp_path, PAIRS, runs=[{"name": "runA", "sha256": "a" * 64, "depth": 10}], depth=10)
    judge(engine, tmp_path, "alice", {u: int(u[1][-1]) % 3 for u in PAIRS})
    db = str(engine.url)
    res = CliRunner().invoke(main, ["machine", "declare-model", "--project", "p", "--run", "runA", "--model",
                                    "Llama-3.1-70B", "--db", db])
    assert res.exit_code == 0, res.output
    with FakeLLM(lambda prompt, body: 1, logprobs=True) as fake, new_session(engine) as s:
        wire = WireSettings(base_url=fake.base_url, model="llama3.1:8b", logprobs=True, backoff=0.01)
        run_machine(s, project="p", machine="llm", wire=wire, progress=False, handle_sigint=False)
        set_guidelines(s, get_project(s, "p"), "# Guidelines\n\nNew rules.\n")
    res = CliRunner().invoke(main, ["labels", "calibrate", "--project", "p", "--machine", "llm", "--json",
                                    "--resamples", "200",
                                    "--db", db])
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    assert d["circularity"][0]["run"] == "runA" and d["circularity"][0]["family"] == "llama"
    assert any(n.startswith("circularity: run runA") for n in d["notes"])
    assert d["stale_labels"] == 40 and any("--stale" in n for n in d["notes"])
    assert d["figures_on"] == f"prompt version {d['prompt_version']}"
    p = d["probabilities"]
    # every label stated P(grade 1) = e^-0.2 / (e^-0.2 + e^-1.8); agreement is the share of human 1s
    conf = np.exp(-0.2) / (np.exp(-0.2) + np.exp(-1.8))
    agree = np.mean([int(u[1][-1]) % 3 == 1 for u in PAIRS])
    assert p["ece"] == pytest.approx(abs(conf - agree))
    res = CliRunner().invoke(main, ["labels", "calibrate", "--project", "p", "--machine", "llm", "--resamples", "200",
                                    "--db", db])
    assert "expected calibration error" in res.output and "note: circularity" in res.output
