"""Escalation to people (``golden judging assign --machine NAME --accept-above P``): a machine's label is
accepted for a pair when its stated confidence is at least P; every other pair goes to people, and
so do the overlap set (the humans' own agreement) and a seeded random audit share of the accepted
pairs (so the calibration against people stays honest). Accepted pairs stay unjudged by people:
``golden export create --fill-unjudged machine:NAME`` exports them flagged as the machine's.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from sqlmodel import Session

from curation.store.models import Project

DEFAULT_AUDIT = 0.05


@dataclass
class Escalation:
    machine: str
    accept_above: float
    audit_share: float
    accepted: set[int]  # pair ids withheld from people
    audit: set[int]  # accepted by confidence, but drawn for people to check
    below: int  # pairs with a machine confidence below the threshold
    no_confidence: int  # pool pairs without a machine label or a stated confidence

    def summary(self) -> str:
        return (f"machine judge {self.machine}: {len(self.accepted)} pairs with confidence >= {self.accept_above:g} "
                f"are left to the machine (not given to people); {len(self.audit)} more of that confidence are "
                f"kept for people as a {100 * self.audit_share:g}% audit; {self.below} below the threshold and "
                f"{self.no_confidence} without a machine confidence go to people")


def escalation(session: Session, project: Project, machine: str, *, accept_above: float,
               audit: float = DEFAULT_AUDIT, seed: int = 0) -> Escalation:
    """Which pool pairs the machine's labels are accepted for (confidence >= ``accept_above``, its
    current prompt version, mean over samples), less a random ``audit`` share drawn with ``seed``."""
    from curation.machine.labels import load_machine_rows, machine_confidence
    from curation.store.lookups import pair_ids

    if not 0.0 <= accept_above <= 1.0:
        raise ValueError(f"accept-above: {accept_above!r} is not a probability between 0 and 1")
    if not 0.0 <= audit <= 1.0:
        raise ValueError(f"audit: {audit!r} is not a share between 0 and 1")
    ids = pair_ids(session, project)
    conf = machine_confidence(load_machine_rows(session, project, machine))
    confident = sorted(ids[u] for u, c in conf.items() if c >= accept_above and u in ids)
    rng = random.Random(f"audit:{seed}:{machine}")
    n_audit = round(audit * len(confident))
    audit_ids = set(rng.sample(confident, n_audit)) if n_audit else set()
    below = sum(1 for u, c in conf.items() if c < accept_above and u in ids)
    return Escalation(machine, accept_above, audit, set(confident) - audit_ids, audit_ids, below,
                      len(ids) - len(confident) - below)
