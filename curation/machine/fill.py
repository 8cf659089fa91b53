"""``golden export create --fill-unjudged machine:NAME``: the machine's labels for the pooled pairs no person
labelled, each flagged in ``qrels.jsonl`` (source ``machine`` and a ``machine`` object naming the
judge as a machine, its model, prompt version, samples and confidence), counted in the manifest with
the calibration figures that justified it (:func:`curation.machine.calibrate.build_calibration_report`:
agreement with the humans and its interval, the verdict, the checks that failed)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlmodel import Session

from curation.store.models import Project

FILL_SOURCE = "machine"


@dataclass
class MachineFill:
    name: str
    labels: dict[tuple[str, str], dict]  # (qid, docid) -> the provenance record of the machine's label
    calibration: dict  # the manifest's summary of the calibration report


def parse_fill(spec: str) -> str:
    """``machine:NAME`` -> NAME; ValueError otherwise."""
    kind, _, name = (spec or "").partition(":")
    if kind != "machine" or not name:
        raise ValueError(f"fill-unjudged: {spec!r} is not machine:NAME (the machine judge whose labels fill the gaps)")
    return name


def _est(e) -> dict | None:
    if e is None:
        return None
    return {"value": e.value, "low": e.low, "high": e.high}


def machine_fill(session: Session, project: Project, spec: str) -> MachineFill:
    """The machine's label of every pair it labelled (current prompt version, majority of samples) and
    the calibration summary the manifest records."""
    from curation.machine.calibrate import build_calibration_report
    from curation.machine.labels import load_machine_rows, prompt_versions, samples_by_pair
    from curation.machine.labels import majority as vote

    name = parse_fill(spec)
    rows = load_machine_rows(session, project, name)
    versions = prompt_versions(rows)
    if not versions:
        raise ValueError(f"fill-unjudged: machine judge {name!r} has no labels in project {project.name!r}")
    current = versions[-1]
    labels = {}
    for unit, samples in samples_by_pair(rows, current).items():
        confs = [r.confidence for r in samples if r.confidence is not None]
        labels[unit] = {
            "judge": name, "kind": "machine", "grade": vote([(r.sample, r.grade) for r in samples]),
            "samples": len(samples), "model": samples[0].model, "prompt_version": current,
            "confidence": round(sum(confs) / len(confs), 6) if confs else None,
        }
    rep = build_calibration_report(session, project, name, ranking=False)
    hh = rep.human_human.measures.get("agreement") if rep.human_human is not None else None
    calibration = {
        "computed_by": "curation.machine.calibrate.build_calibration_report (golden calibrate; query bootstrap, "
                       f"{rep.resamples} resamples, seed {rep.seed})",
        "compared_pairs": rep.pairs,
        "exact_agreement": _est(rep.headline["exact"]) if rep.headline else None,
        "within_one": _est(rep.headline["within_one"]) if rep.headline else None,
        "mean_signed_difference": _est(rep.headline["signed"]) if rep.headline else None,
        "human_human_agreement": _est(hh),
        "verdict": rep.verdict.band,
        "verdict_rule": rep.verdict.rule,
        "failed_checks": rep.failed_checks,
        "findings": {c.key: c.finding for c in rep.bias if c.flagged},
    }
    return MachineFill(name, labels, calibration)
