"""``golden judging assign --machine NAME --accept-above P``: people get the pairs whose machine confidence is
below P, the pairs the machine did not label, the overlap set and a random audit share of the
confident pairs; the rest is withheld (and exported as the machine's only with --fill-unjudged)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from sqlmodel import select

from curation.cli import main
from curation.machine.escalation import escalation
from curation.machine.labels import import_machine_labels
from curation.store.engine import session as new_session
from curation.store.lookups import pair_ids
from curation.store.models import Assignment
from curation.store.projects import get_project
from tests.support.machine import write_machine
from tests.support.projects import pairs_project

PAIRS = [(f"q{i:02d}", f"d{j}") for i in range(12) for j in range(5)]
CONF = {"d0": 0.95, "d1": 0.9, "d2": 0.5, "d4": 0.89}  # d3: no machine label


@pytest.fixture
def store(engine, tmp_path):
    pairs_project(engine, tmp_path / "in", PAIRS)
    rows = [{"qid": q, "docid": d, "grade": 1, "confidence": CONF[d]} for q, d in PAIRS if d in CONF]
    with new_session(engine) as s:
        import_machine_labels(s, write_machine(tmp_path / "m.jsonl", rows), machine="llm", project="p")
    return engine


def test_people_get_the_uncertain_pairs_the_overlap_set_and_an_audit_share(store, db_url):
    res = CliRunner().invoke(main, ["judging", "assign", "--judges", "alice,bob", "--overlap", "6", "--machine", "llm",
                                    "--accept-above", "0.9", "--audit", "0.25", "--seed", "3", "--db", db_url])
    assert res.exit_code == 0, res.output
    with new_session(store) as s:
        ids = pair_ids(s, get_project(s, "p"))
        rows = s.exec(select(Assignment.pair_id, Assignment.kind)).all()
    unit = {i: u for u, i in ids.items()}
    overlap = {unit[p] for p, k in rows if k == "overlap"}
    main_pairs = {unit[p] for p, k in rows if k == "main"}
    to_people = overlap | main_pairs
    confident = {u for u in PAIRS if CONF.get(u[1], 0) >= 0.9}  # d0 and d1: 24 pairs
    assert len(overlap) == 6
    assert {u for u in PAIRS if u not in confident} <= to_people  # below P, or no machine label
    with new_session(store) as s:  # the same seeded draw the command made
        esc = escalation(s, get_project(s, "p"), "llm", accept_above=0.9, audit=0.25, seed=3)
    assert len(esc.audit) == round(0.25 * 24) and esc.below == 24 and esc.no_confidence == 12
    audit = {unit[p] for p in esc.audit}
    assert main_pairs & confident == audit - overlap  # confident pairs people get: the audit (the overlap aside)
    withheld = set(PAIRS) - to_people
    assert withheld == confident - audit - overlap and len(withheld) > 0
    assert f"{len(withheld)} new pairs withheld from people" in res.output
    assert "--fill-unjudged machine:llm" in res.output


def test_machine_and_accept_above_go_together(store, db_url):
    res = CliRunner().invoke(main, ["judging", "assign", "--judges", "alice", "--machine", "llm", "--db", db_url])
    assert res.exit_code == 2 and "go together" in res.output
