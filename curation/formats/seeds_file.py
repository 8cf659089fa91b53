"""Seed files: query-document pairs known from existing signals (``golden seed``), one pair a line.

* JSONL: ``{"qid": "q1", "docid": "d7", "grade": 2}``; ``qid`` and ``docid`` required and
  non-empty, ``grade`` optional;
* CSV (``.csv``), TSV (``.tsv``) or white-space separated text (any other name):
  ``qid docid [grade]``, with an optional ``qid,docid[,grade]`` header row; blank lines and lines
  starting with ``#`` are skipped.

A grade is an integer (:func:`curation.formats.qrels.parse_grade`); absent or empty, the source's
default grade applies (``Seed.grade`` is None). Gzip is read transparently; errors name ``file:line``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

from curation.formats.fileio import (
    InputError,
    base_suffix,
    identifier,
    iter_jsonl_lines,
    no_records,
    open_text,
    trec_fields,
)
from curation.formats.limits import csv_reader
from curation.formats.qrels import parse_grade


@dataclass(frozen=True)
class Seed:
    qid: str
    docid: str
    grade: int | None  # None: the source's default grade
    line: int


def _grade(raw, path, lineno) -> int | None:
    return None if raw is None or raw == "" else parse_grade(raw, path, lineno)


def read_seeds(path: str | os.PathLike, *, allow_empty: bool = False) -> Iterator[Seed]:
    """Yield the seed pairs of a JSONL, CSV, TSV or whitespace-separated file (gzip allowed); a file
    without a pair is ``path: no records`` unless ``allow_empty``."""
    path = str(path)
    any_seed = False
    for seed in _read_seeds(path):
        any_seed = True
        yield seed
    if not any_seed and not allow_empty:
        raise no_records(path, "expected qid docid [grade] lines")


def _read_seeds(path: str) -> Iterator[Seed]:
    suffix = base_suffix(path)
    with open_text(path) as fh:
        if suffix in (".jsonl", ".json", ".ndjson"):
            for lineno, obj in iter_jsonl_lines(fh, path, expect="a JSON object with qid and docid"):
                qid, docid = identifier(obj, "qid", path, lineno), identifier(obj, "docid", path, lineno)
                grade = obj.get("grade")
                if isinstance(grade, str) and grade != "":
                    raise InputError(path, lineno, f"grade {grade[:30]!r} is a string; write it as a JSON integer")
                yield Seed(qid, docid, _grade(grade, path, lineno), lineno)
            return
        if suffix == ".csv":
            rows = csv_reader(fh)
        elif suffix == ".tsv":
            rows = csv_reader(fh, delimiter="\t")
        else:
            rows = (trec_fields(line) for line in fh)
        for lineno, parts in enumerate(rows, 1):
            parts = [p.strip() for p in parts]
            if not parts or not any(parts) or parts[0].startswith("#"):
                continue
            if lineno == 1 and [p.lower() for p in parts[:2]] == ["qid", "docid"]:
                continue
            if len(parts) not in (2, 3):
                raise InputError(path, lineno, f"has {len(parts)} fields, expected 2 or 3 (qid docid [grade])")
            if not parts[0] or not parts[1]:
                raise InputError(path, lineno, "empty qid or docid")
            yield Seed(parts[0], parts[1], _grade(parts[2] if len(parts) == 3 else None, path, lineno), lineno)
