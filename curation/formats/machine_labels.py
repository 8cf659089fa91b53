"""Machine judges' labels (``golden judging import --machine``): the one reader.

Two layouts, told apart by the file name (``.jsonl``, ``.json`` or ``.ndjson``, gzip allowed, is
JSONL; anything else is TREC qrels):

* TREC qrels, ``qid iter docid grade`` (read by :func:`curation.formats.qrels.parse_qrel_line`):
  one sample per pair, no probabilities;
* JSONL, one label a line::

    {"qid": "q1", "docid": "d7", "grade": 2, "probability": {"0": 0.1, "1": 0.2, "2": 0.7},
     "rationale": "answers the question", "sample": 0, "model": "m-large", "prompt_version": "v3"}

  ``qid``, ``docid`` and an integer ``grade`` are required. Optional: ``probability`` (a grade ->
  probability object over the grades, each in [0, 1], summing to 1 within 0.01) or ``confidence``
  (the probability of the grade given, in [0, 1]); ``rationale`` (text); ``sample`` (an integer >= 0
  numbering repeated samples of the same prompt; default 0); ``model`` and ``prompt_version``
  (strings).

A label repeated for the same (qid, docid, sample, prompt version) follows ``on_conflict``
(:mod:`curation.formats.conflicts`). Errors name ``file:line``. :func:`write_machine_labels` writes
the JSONL layout (the demo's simulated machine judge).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from dataclasses import dataclass

from curation.formats.conflicts import Dedup
from curation.formats.fileio import (
    InputError,
    atomic_write,
    base_suffix,
    identifier,
    iter_jsonl_lines,
    json_line,
    no_records,
    open_text,
)
from curation.formats.qrels import parse_grade, parse_qrel_line

JSONL_SUFFIXES = (".jsonl", ".json", ".ndjson")
PROBABILITY_TOLERANCE = 0.01  # the probabilities of a label must sum to 1 within this
MAX_SAMPLE = 1000


@dataclass(frozen=True)
class MachineLabelLine:
    """One label of a machine judge, as read."""

    qid: str
    docid: str
    grade: int
    line: int
    sample: int = 0
    probabilities: tuple[tuple[int, float], ...] | None = None  # (grade, probability), by grade
    confidence: float | None = None  # the probability of ``grade`` (from ``probabilities`` when given)
    rationale: str | None = None
    model: str | None = None
    prompt_version: str | None = None


def _unit(raw, path: str, lineno: int, what: str) -> float:
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not math.isfinite(float(raw)):
        raise InputError(path, lineno, f"{what} {raw!r} is not a number")
    value = float(raw)
    if not 0.0 <= value <= 1.0:
        raise InputError(path, lineno, f"{what} {raw!r} is not between 0 and 1")
    return value


def _text(obj: dict, key: str, path: str, lineno: int) -> str | None:
    value = obj.get(key)
    if value is None or value == "":
        return None
    if isinstance(value, (dict, list, bool)):
        raise InputError(path, lineno, f"{key!r} must be a string")
    return str(value)


def parse_machine_record(obj: dict, path: str, lineno: int) -> MachineLabelLine:
    """One JSONL object as a :class:`MachineLabelLine` (:class:`InputError` naming ``path:lineno``)."""
    qid = identifier(obj, "qid", path, lineno)
    docid = identifier(obj, "docid", path, lineno)
    if "grade" not in obj:
        raise InputError(path, lineno, "missing 'grade'")
    grade = parse_grade(obj["grade"], path, lineno)
    sample = obj.get("sample", 0)
    if sample is None:
        sample = 0
    if isinstance(sample, bool) or not isinstance(sample, int) or not 0 <= sample <= MAX_SAMPLE:
        raise InputError(path, lineno, f"sample {sample!r} is not an integer between 0 and {MAX_SAMPLE}")
    probs = None
    confidence = None
    raw_probs = obj.get("probability", obj.get("probabilities"))
    if raw_probs is not None:
        if not isinstance(raw_probs, dict) or not raw_probs:
            raise InputError(path, lineno, "probability must be an object of grade -> probability, e.g. "
                                           '{"0": 0.1, "1": 0.9}')
        parsed = {}
        for k, v in raw_probs.items():
            parsed[parse_grade(k, path, lineno)] = _unit(v, path, lineno, f"probability of grade {k}")
        total = sum(parsed.values())
        if abs(total - 1.0) > PROBABILITY_TOLERANCE:
            raise InputError(path, lineno, f"the probabilities sum to {total:.4g}, not 1")
        probs = tuple(sorted(parsed.items()))
        confidence = parsed.get(grade, 0.0)
    if obj.get("confidence") is not None:
        stated = _unit(obj["confidence"], path, lineno, "confidence")
        confidence = stated if confidence is None else confidence
    return MachineLabelLine(
        qid, docid, grade, lineno, sample, probs, confidence, _text(obj, "rationale", path, lineno),
        _text(obj, "model", path, lineno), _text(obj, "prompt_version", path, lineno),
    )


def read_machine_labels(
    path: str | os.PathLike, *, allow_empty: bool = False, dedup: Dedup | None = None
) -> list[MachineLabelLine]:
    """Every label of a machine judge's file (JSONL or TREC qrels, see the module docstring), in file
    order. A label repeating an earlier (qid, docid, sample, prompt version) with the same grade is
    read once (counted in ``dedup``); with another grade it follows ``dedup``'s policy (default:
    an :class:`InputError` naming both lines). A file without a label is ``path: no records`` unless
    ``allow_empty``."""
    path = str(path)
    dedup = dedup if dedup is not None else Dedup(path, what="label")
    kept: dict[tuple, int] = {}
    out: list[MachineLabelLine] = []
    for rec in _records(path):
        key = (rec.qid, rec.docid, rec.sample, rec.prompt_version)
        if dedup.add(key, rec.grade, rec.line):
            if key in kept:  # policy "last": the later line replaces the earlier one
                out[kept[key]] = rec
            else:
                kept[key] = len(out)
                out.append(rec)
    if not out and not allow_empty:
        raise no_records(path, "expected JSON lines with qid, docid and grade, or qid iter docid grade lines")
    return out


def _records(path: str) -> Iterator[MachineLabelLine]:
    with open_text(path) as fh:
        if base_suffix(path) in JSONL_SUFFIXES:
            for lineno, obj in iter_jsonl_lines(fh, path, expect="an object with qid, docid and grade",
                                                finite=True):
                yield parse_machine_record(obj, path, lineno)
            return
        for lineno, line in enumerate(fh, 1):
            q = parse_qrel_line(line, path, lineno)
            if q is not None:
                yield MachineLabelLine(q.qid, q.docid, q.grade, lineno)


def write_machine_labels(records, path: str | os.PathLike) -> None:
    """Write :class:`MachineLabelLine` records as JSONL (the layout :func:`read_machine_labels` reads),
    whole or not at all; fields without a value are left out."""
    with atomic_write(path) as fh:
        for r in records:
            obj = {"qid": r.qid, "docid": r.docid, "grade": int(r.grade), "sample": r.sample}
            if r.probabilities is not None:
                obj["probability"] = {str(g): p for g, p in r.probabilities}
            elif r.confidence is not None:
                obj["confidence"] = r.confidence
            for key in ("rationale", "model", "prompt_version"):
                if getattr(r, key) is not None:
                    obj[key] = getattr(r, key)
            fh.write(json_line(obj) + "\n")
