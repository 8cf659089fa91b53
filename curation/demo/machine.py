"""A simulated machine judge for the demo: the hidden truth with controlled errors and a lean
towards long documents, written as a machine-label file."""

from __future__ import annotations

import random
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from curation.demo.generator import DemoResult

# --------------------------------------------------------------------------------------------
# A simulated machine judge: the hidden truth with controlled errors and a lean towards long documents

DEMO_MACHINE, DEMO_MACHINE_MODEL, DEMO_MACHINE_PROMPT = "llm", "sim-large", "v1"
MACHINE_ERROR = 0.08  # share of pairs given a grade one off the truth
MACHINE_LONG_LEAN = 0.4  # share of the longest 30% of pooled documents raised one grade (enough for a
# clear length flag; a stronger lean also shows through the run whose documents are the longest)
MACHINE_SAMPLE_FLIP = 0.01  # chance that one sample differs from the machine's usual answer: with 3
# samples ~3% of pairs change label, clearly under calibrate's 5% tolerance (0.02 gave ~5.9%, over it)
MACHINE_SAMPLES = 3


def write_machine_judge(result: DemoResult, *, seed: int = 0) -> Path:
    """Write ``machine/llm.jsonl``: a simulated machine judge of every pooled pair, three samples each
    with probabilities, derived from the hidden truth: ``MACHINE_ERROR`` of the pairs one grade off,
    half the pairs of the longest 30% of documents raised one grade (the lean ``golden labels calibrate``
    finds), and the odd sample that differs. Same seed, same bytes."""
    from curation.formats.machine_labels import MachineLabelLine, write_machine_labels
    from curation.formats.qrels import read_qrels

    paths = result.data.paths
    truth = read_qrels(paths.hidden_qrels)
    rng = random.Random(f"machine:{seed}")
    pairs = sorted({(p.qid, p.docid) for p in result.pool.pairs if p.docid in result.fetched.docs})
    length = {d: len(result.fetched.docs[d].text) for _, d in pairs}
    ordered = sorted(length.values())
    long_edge = ordered[int(0.7 * len(ordered))] if ordered else 0
    records = []
    for qid, docid in pairs:
        g = truth.get(qid, {}).get(docid, 0)
        base = g
        if rng.random() < MACHINE_ERROR:
            base = 1 if g != 1 else rng.choice((0, 2))
        if length[docid] >= long_edge and base < 2 and rng.random() < MACHINE_LONG_LEAN:
            base += 1
        conf = round(rng.uniform(0.85, 0.98) if base == g else rng.uniform(0.55, 0.8), 3)
        for sample in range(MACHINE_SAMPLES):
            grade = base
            if rng.random() < MACHINE_SAMPLE_FLIP:
                grade = 1 if base != 1 else rng.choice((0, 2))
            rest = round((1.0 - conf) / 2, 4)
            probs = tuple((x, round(conf if x == grade else rest, 4)) for x in (0, 1, 2))
            records.append(MachineLabelLine(qid, docid, grade, 0, sample, probs, conf, None, DEMO_MACHINE_MODEL,
                                            DEMO_MACHINE_PROMPT))
    path = paths.folder / "machine" / "llm.jsonl"
    path.parent.mkdir(exist_ok=True)
    write_machine_labels(records, path)
    return path
