"""The demo's simulated machine judge: three samples of every pooled pair, imported as a machine, and
its planted lean towards long documents is what `golden labels calibrate` flags (humans: the hidden truth).

What the demo guarantees is the length flag. Another check may also flag by chance, depending on the
sample (the checks are not corrected against each other; bench/README.md, "The demo's calibration
test and other draw keys"): such a flag must be shown with its excess and interval, and the summary
line must name exactly the flagged checks."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from click.testing import CliRunner

from curation.cli import main
from curation.demo import MACHINE_SAMPLES, build_demo, load_demo_store, write_machine_judge
from curation.formats.machine_labels import read_machine_labels

pytestmark = pytest.mark.slow


def test_demo_writes_imports_and_calibrate_finds_the_length_lean(tmp_path):
    result = build_demo(tmp_path / "demo", seed=0)
    path = result.data.paths.machine
    labels = read_machine_labels(path)
    per_pair = Counter((r.qid, r.docid) for r in labels)
    pooled = {(p.qid, p.docid) for p in result.pool.pairs}
    assert set(per_pair) == pooled and set(per_pair.values()) == {MACHINE_SAMPLES}
    assert all(r.probabilities and r.model == "sim-large" and r.prompt_version == "v1" for r in labels)
    first = path.read_bytes()
    write_machine_judge(result, seed=0)
    assert path.read_bytes() == first  # same seed, same bytes

    store = load_demo_store(result, seed=0)
    assert store.machine.imported == len(labels) and store.machine.samples == MACHINE_SAMPLES
    runner = CliRunner()
    res = runner.invoke(main, ["judging", "import", str(result.data.paths.hidden_qrels), "--judge", "alice",
                               "--db", store.url])
    assert res.exit_code == 0, res.output
    res = runner.invoke(main, ["labels", "calibrate", "--machine", "llm", "--db", store.url])
    assert res.exit_code == 0, res.output
    flags = re.findall(r"^  \[FLAG\] ([^:]+): (.*)$", res.output, flags=re.M)
    assert flags and flags[0][0].startswith("Document length"), res.output
    assert "more lenient on longer documents" in flags[0][1]
    figure = r"excess [+-]\d\.\d\d \([+-]\d\.\d\d to [+-]\d\.\d\d\) grades"
    assert all(re.search(figure, finding) for _, finding in flags), flags
    summary = re.search(r"^failed checks: (.*)$", res.output, flags=re.M).group(1).split(", ")
    repeats = "repeat consistency [FLAG]" in res.output
    assert summary[0] == "length" and len(summary) == len(flags) + repeats, res.output
