"""A machine judge guiding the decisive order (``golden judging assign --order decisive --machine NAME``,
the dashboard's Comparisons setting, ``golden decisive simulate --machine FILE``).

What the machine says about each pair, per pair of the pool (:func:`pair_figures`): its P(grade >= 1)
and P(top grade), from its stated probabilities where it gave them (the mean over its samples of the
current prompt version), else its samples' vote shares, and its majority grade (the calibration
class). :func:`curation.evaluate.decisive.calibrated_relevance` calibrates them against the human labels
so far, and :mod:`curation.evaluate.plan` is the rule that orders the pairs.
Judges see none of it: the queue holds pair ids, in blocks shuffled within (as the blind order).
The guarantee reads only human labels, so it holds whatever the machine says.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
from sqlmodel import Session

from curation.machine.labels import MachineRow, _current_samples, majority
from curation.store.models import Project

SETTING = "decisive_machine:{project_id}"  # StoreSetting key: the machine judge guiding the project's order


def rows_from_file(records) -> list[MachineRow]:
    """Records of :func:`curation.formats.machine_labels.read_machine_labels` as :class:`MachineRow`
    (in file order: the last prompt version read is the current one)."""
    return [MachineRow(r.qid, r.docid, -1, int(r.grade), int(r.sample), r.prompt_version, r.model, r.confidence,
                       dict(r.probabilities) if r.probabilities else None, i) for i, r in enumerate(records)]


def pair_figures(rows: Iterable[MachineRow], units: Sequence[tuple[str, str]], max_grade: int
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each ``(qid, docid)`` of ``units``: the machine's P(grade >= 1), its P(grade >= max_grade)
    (NaN where it has no label of the current prompt version) and its majority grade (-1 without a
    label). Where every sample stated probabilities, their mean; else the share of the samples that
    gave such a grade (vote shares)."""
    samples = _current_samples(list(rows), ...)
    rel = np.full(len(units), np.nan)
    top = np.full(len(units), np.nan)
    key = np.full(len(units), -1, dtype=np.int64)
    for i, u in enumerate(units):
        got = samples.get(u)
        if not got:
            continue
        if all(r.probabilities for r in got):
            rel[i] = np.mean([sum(p for g, p in r.probabilities.items() if g >= 1) for r in got])
            top[i] = np.mean([sum(p for g, p in r.probabilities.items() if g >= max_grade) for r in got])
        else:
            rel[i] = np.mean([r.grade >= 1 for r in got])
            top[i] = np.mean([r.grade >= max_grade for r in got])
        key[i] = majority([(r.sample, r.grade) for r in got])
    return np.clip(rel, 0, 1), np.clip(top, 0, 1), key


def project_figures(session: Session, project: Project, machine: str):
    """A function of the pool (:func:`curation.evaluate.decisive.load_pool`'s matrix) giving
    :func:`pair_figures` of ``machine``'s stored labels, for
    :func:`curation.evaluate.decisive.pair_priority_map`."""
    from curation.evaluate.decisive import max_grade
    from curation.machine.labels import load_machine_rows

    rows = load_machine_rows(session, project, machine)
    G = max_grade(project)

    def figures(pm):
        units = [(pm.qids[q], d) for q, d in zip(pm.pair_query.tolist(), pm.docids)]
        return pair_figures(rows, units, G)

    return figures


def guide_machine(session: Session, project: Project) -> str | None:
    """The machine judge set to guide the project's decisive order (None: the blind order)."""
    from sqlmodel import select

    from curation.store.models import StoreSetting

    row = session.exec(select(StoreSetting).where(StoreSetting.key == SETTING.format(project_id=project.id))).first()
    return row.value if row is not None and row.value else None


def set_guide_machine(session: Session, project: Project, machine: str | None) -> None:
    """Set (or, with None, clear) the machine judge guiding the project's decisive order; ValueError
    when no such machine judge has labels in the project. Does not commit."""
    from sqlmodel import select

    from curation.machine.labels import count_labels
    from curation.store.models import StoreSetting

    key = SETTING.format(project_id=project.id)
    row = session.exec(select(StoreSetting).where(StoreSetting.key == key)).first()
    if machine is None:
        if row is not None:
            session.delete(row)
        return
    if count_labels(session, project, machine) == 0:
        raise ValueError(f"machine: {machine!r} has no label in project {project.name!r}; import them first "
                         "(golden judging import --machine NAME)")
    if row is None:
        session.add(StoreSetting(key=key, value=machine))
    else:
        row.value = machine
        session.add(row)


def guided_priority_map(session: Session, project: Project) -> dict[int, float]:
    """The decisive priorities of the project's unjudged pairs, guided by its machine judge when one
    is set (:func:`guide_machine`), else the blind ones, unchanged."""
    from curation.evaluate.decisive import pair_priority_map

    name = guide_machine(session, project)
    if name is None:
        return pair_priority_map(session, project)
    return pair_priority_map(session, project, machine=project_figures(session, project, name))


def guided_settlement_report(session: Session, project: Project, compare=None, **kwargs) -> dict:
    """:func:`curation.evaluate.decisive.settlement_report` with the project's guiding machine judge
    named (``"machine"``) and its labels in the estimate's model: the one report behind ``golden
    settle`` and the dashboard's Comparisons panel."""
    from curation.evaluate.decisive import settlement_report

    name = guide_machine(session, project)
    figures = None if name is None else project_figures(session, project, name)
    return settlement_report(session, project, compare, machine=name, machine_figures=figures, **kwargs)
