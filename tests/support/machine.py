"""Machine judges for the tests: a project built from the robust03 runs and qrels (the qrels are the
humans' labels), and simulated machine judges derived from those qrels with one planted bias each:

- ``clean``: the truth with a few random one-grade errors, the same in every sample;
- ``long``: the clean machine, plus a lean towards long documents (irrelevant long documents
  called relevant at random);
- ``lenient``: the clean machine, plus leniency towards one run (irrelevant documents that run
  retrieved called relevant at random);
- ``flips``: each of three samples flips the clean label at random, independently.

Document texts are generated with lengths drawn independently of relevance, runs and strata, so a
planted bias is the only link between the machine's errors and what the checks group by.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from curation.formats.qrels import read_qrels
from curation.formats.runs import read_runs
from tests.support.projects import add_users, create_from_files, write_project_files

RUNS = ("input.aplrob03a.gz", "input.UIUC03Rd1.gz", "input.VTcdhgp1.gz")
LENIENT_RUN = "UIUC03Rd1"
DEPTH = 12
N_QUERIES = 40
WORDS = ("storm coast policy market river energy court vaccine trade rail border harvest fuel island "
         "school budget drought treaty union forest").split()


def robust_inputs(shared, folder: Path, *, seed: int = 3):
    """queries, pool, corpus, guidelines files for the first ``N_QUERIES`` robust03 topics pooled from
    ``RUNS`` at ``DEPTH`` (judged documents only); returns (paths, truth, facts) with truth
    ``{(qid, docid): grade}`` and facts ``{(qid, docid): (length, systems)}``."""
    qrels = read_qrels(shared("robust03", "qrels", "robust03_qrels.txt"))
    runs = read_runs([shared("robust03", "runs", r) for r in RUNS], depth=DEPTH)
    qids = sorted(qrels)[:N_QUERIES]
    rng = random.Random(seed)
    queries, pool, corpus = [], [], []
    truth, facts, lengths = {}, {}, {}
    for i, q in enumerate(qids):
        queries.append({"qid": q, "text": f"topic {q}", "stratum": {"region": "north" if i % 2 else "south",
                                                                    "shape": "question" if i % 3 else "keyword"},
                        "traffic": 10.0, "users": 1, "stratum_share": 0.5, "weight": 1.0, "pii": []})
        systems: dict[str, dict[str, int]] = {}
        for run in runs:
            for rank, d in enumerate(run.top(q, DEPTH), 1):
                if d in qrels[q]:
                    systems.setdefault(d, {})[run.name.removeprefix("input.")] = rank
        for order, d in enumerate(sorted(systems)):
            pool.append({"qid": q, "docid": d, "order": order, "systems": systems[d]})
            truth[(q, d)] = qrels[q][d]
            if d not in lengths:
                lengths[d] = int(rng.lognormvariate(6.5, 0.8)) + 20
                words = []
                while sum(len(w) + 1 for w in words) < lengths[d]:
                    words.append(rng.choice(WORDS))
                corpus.append({"id": d, "title": d, "text": " ".join(words)[:lengths[d]]})
            facts[(q, d)] = (lengths[d], systems[d])
    paths = write_project_files(folder, queries, pool, corpus)
    return paths, truth, facts


def robust_project(engine, shared, folder: Path, *, name: str = "r3"):
    """The robust03 project in ``engine``: alice's labels are the qrels; bob labels 150 pairs (the
    overlap) with a tenth of them off by one grade, so there is a human-human figure. Returns
    (truth, facts)."""
    from curation.store.engine import session as new_session
    from curation.store.projects import get_project
    from tests.support.judgments import judge

    paths, truth, facts = robust_inputs(shared, folder)
    create_from_files(engine, name, paths)
    add_users(engine, alice="judge", bob="judge", lena="lead")
    judge(engine, folder, "alice", truth, project=name)
    rng = random.Random(11)
    overlap = sorted(truth)[::max(1, len(truth) // 150)][:150]
    bob = {u: (truth[u] if rng.random() > 0.1 else (1 if truth[u] != 1 else rng.choice((0, 2)))) for u in overlap}
    judge(engine, folder, "bob", bob, project=name)
    # settle bob's disagreements as alice labelled (the qrels stay the final labels)
    from tests.support.judgments import adjudicate

    for u in overlap:
        if bob[u] != truth[u]:
            adjudicate(engine, u[0], u[1], truth[u], project=name)
    with new_session(engine) as s:
        get_project(s, name)
    return truth, facts


def _off_by_one(g: int, rng: random.Random) -> int:
    return 1 if g != 1 else rng.choice((0, 2))


def machine_rows(truth, facts, kind: str, *, seed: int = 5, samples: int = 3, error: float = 0.08,
                 prompt_version: str = "v1", model: str = "sim-1") -> list[dict]:
    """JSONL rows of a simulated machine judge of ``kind`` (clean, long, lenient, flips)."""
    rng = random.Random(seed)
    long_edge = sorted(length for length, _ in facts.values())[int(0.7 * len(facts))]
    rows = []
    for u in sorted(truth):
        g = truth[u]
        base = _off_by_one(g, rng) if rng.random() < error else g
        length, systems = facts[u]
        if kind == "long" and length >= long_edge and g == 0 and rng.random() < 0.6:
            base = 1
        if kind == "lenient" and LENIENT_RUN in systems and g == 0 and rng.random() < 0.6:
            base = 1
        conf = 0.95 if base == g else 0.6
        for s in range(samples):
            grade = base
            if kind == "flips" and rng.random() < 0.25:
                grade = _off_by_one(base, rng)
            probs = {str(x): (conf if x == grade else (1 - conf) / 2) for x in (0, 1, 2)}
            rows.append({"qid": u[0], "docid": u[1], "grade": grade, "sample": s, "probability": probs,
                         "model": model, "prompt_version": prompt_version, "rationale": f"simulated {kind}"})
    return rows


def write_machine(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path
