"""Reading TREC qrels (``qid iter docid grade``, white-space separated, one judgment a line).

Identifiers stay strings, grades are integers (``2.0`` is read as ``2``; ``2.5`` is an error), as
trec_eval reads them; blank lines and ``#`` comments are skipped; gzip is read transparently;
errors name ``file:line``. :func:`parse_qrels` is the one parser, for files and for the bytes of
an export alike; :func:`write_qrels` writes one line per :class:`QrelLine`, single spaces
(:func:`format_qrel`, which also writes an export's ``qrels.txt``).

An export's ``qrels.jsonl`` (the same pairs with their provenance: votes, adjudication, seeds,
source) is written by :func:`format_label_record` and read by :func:`parse_label_records`. For a
million pairs the export writes both files' common lines (a pooled pair whose judges agree, nothing
else to say) with :func:`plain_label_lines`, the same bytes as :func:`qrel_text` and
:func:`label_record_line` give one line at a time.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from json.encoder import encode_basestring as _json_str  # json.dumps's string encoder (ensure_ascii off)

from curation.formats.conflicts import Dedup
from curation.formats.fileio import (
    INTEGER_TEXT,
    InputError,
    atomic_write,
    iter_jsonl_lines,
    json_line,
    no_records,
    open_text,
    trec_fields,
)
from curation.formats.limits import check_size

MAX_GRADE = 2**31 - 1  # grades are stored as 32-bit integers; anything beyond is a broken file


@dataclass(frozen=True)
class QrelLine:
    qid: str
    iteration: str
    docid: str
    grade: int


def parse_grade(raw, path: str | os.PathLike, lineno: int | None) -> int:
    """A grade as an integer: a JSON integer (``2``, or ``2.0``), or text of ASCII digits with an
    optional sign (``"2"``, ``"-1"``; ``"2.0"`` too, as trec_eval reads it); anything else (``"2.5"``,
    ``"high"``, ``"1_0"``, ``"1e1"``, Arabic-Indic, full-width or superscript digits, ``true``, NaN,
    beyond +-:data:`MAX_GRADE`) is an :class:`InputError` naming the file and line."""
    if isinstance(raw, bool):
        raise InputError(path, lineno, f"grade {raw!r} is not an integer")
    if isinstance(raw, int):
        grade = raw
    elif isinstance(raw, float):
        if not math.isfinite(raw):
            raise InputError(path, lineno, f"grade {raw!r} is not a finite number; grades are integers")
        if not raw.is_integer():
            raise InputError(path, lineno, f"grade {raw!r} is not an integer")
        grade = int(raw)
    elif isinstance(raw, str) and INTEGER_TEXT.fullmatch(raw.removesuffix(".0")) and len(raw) <= 20:
        grade = int(raw.removesuffix(".0"))
    elif isinstance(raw, str) and INTEGER_TEXT.fullmatch(raw.removesuffix(".0")):
        raise InputError(path, lineno, f"grade {_short(raw)} is not between -{MAX_GRADE} and {MAX_GRADE}")
    else:
        raise InputError(path, lineno, f"grade {_short(raw)} is not an integer (ASCII digits, an optional sign)")
    if abs(grade) > MAX_GRADE:
        raise InputError(path, lineno, f"grade {_short(raw)} is not between -{MAX_GRADE} and {MAX_GRADE}")
    return grade


def _short(raw) -> str:
    text = repr(raw)
    return text if len(text) <= 30 else text[:27] + "..."


def parse_qrels(lines: Iterable[str], path: str | os.PathLike = "qrels.txt") -> Iterator[QrelLine]:
    """Yield :class:`QrelLine` from qrels text lines (``path`` names them in errors); blank and
    ``#`` lines skipped."""
    path = str(path)
    for lineno, line in enumerate(lines, 1):
        parsed = parse_qrel_line(line, path, lineno)
        if parsed is not None:
            yield parsed


def parse_qrel_line(line: str, path: str | os.PathLike, lineno: int | None) -> QrelLine | None:
    """One qrels line as a :class:`QrelLine`; None for a blank or ``#`` line; :class:`InputError`
    naming ``path:lineno`` for anything but four fields with an integer grade, or a line over
    GOLDEN_MAX_LINE_BYTES (:mod:`curation.formats.limits`)."""
    parts = trec_fields(line)
    if not parts or parts[0].startswith("#"):
        return None
    check_size(line, "GOLDEN_MAX_LINE_BYTES", path, lineno, "the line")
    if len(parts) != 4:
        raise InputError(path, lineno, f"has {len(parts)} fields, expected 4 (qid iter docid grade)")
    qid, iteration, docid, raw = parts
    return QrelLine(qid, iteration, docid, parse_grade(raw, path, lineno))


def iter_qrels(path: str | os.PathLike, *, allow_empty: bool = False) -> Iterator[QrelLine]:
    """Yield :class:`QrelLine` from a TREC qrels file (gzip allowed); blank and ``#`` lines skipped. A file
    without a judgment is ``path: no records`` unless ``allow_empty``."""
    for _, line in iter_numbered_qrels(path, allow_empty=allow_empty):
        yield line


def qrels_dict(lines: Iterable[QrelLine]) -> dict[str, dict[str, int]]:
    """``{qid: {docid: grade}}`` from qrels lines; when a pair appears more than once (a
    multi-assessor file), the last line wins."""
    qrels: dict[str, dict[str, int]] = {}
    for q in lines:
        qrels.setdefault(q.qid, {})[q.docid] = q.grade
    return qrels


def read_qrels(
    path: str | os.PathLike, *, on_conflict: str = "error", dedup: Dedup | None = None
) -> dict[str, dict[str, int]]:
    """Read a qrels file into ``{qid: {docid: grade}}``.

    A pair repeated with the same grade is read once and counted in ``dedup`` (a
    :class:`~curation.formats.conflicts.Dedup`, made here when not given); a pair given two grades
    (say a multi-assessor file) is an :class:`InputError` naming both lines unless ``on_conflict``
    is ``first`` or ``last``. :func:`iter_qrels` yields every line as it is.
    """
    dedup = dedup if dedup is not None else Dedup(path, policy=on_conflict, what="pair")
    qrels: dict[str, dict[str, int]] = {}
    for lineno, q in iter_numbered_qrels(path):
        if dedup.add((q.qid, q.docid), q.grade, lineno):
            qrels.setdefault(q.qid, {})[q.docid] = q.grade
    return qrels


def iter_numbered_qrels(path: str | os.PathLike, *, allow_empty: bool = False) -> Iterator[tuple[int, QrelLine]]:
    """``(line number, QrelLine)`` for each judgment of a qrels file, for readers that name lines; a file
    without a judgment is ``path: no records`` unless ``allow_empty``."""
    any_line = False
    with open_text(path) as fh:
        for lineno, line in enumerate(fh, 1):
            q = parse_qrel_line(line, path, lineno)
            if q is not None:
                any_line = True
                yield lineno, q
    if not any_line and not allow_empty:
        raise no_records(path, "expected qid iter docid grade lines")


def format_qrel(line: QrelLine) -> str:
    """One qrels line, with its newline: ``qid iter docid grade``."""
    return qrel_text(line.qid, line.docid, line.grade, line.iteration)


def qrel_text(qid: str, docid: str, grade: int, iteration: str = "0") -> str:
    """:func:`format_qrel` from the fields, without building a :class:`QrelLine` (the export's loop)."""
    return f"{qid} {iteration} {docid} {int(grade)}\n"


def write_qrels(lines: Iterable[QrelLine], path: str | os.PathLike) -> None:
    """Write qrels lines in the order given, whole or not at all."""
    with atomic_write(path) as fh:
        fh.writelines(format_qrel(q) for q in lines)


def format_label_record(record: Mapping) -> str:
    """One line of an export's ``qrels.jsonl``, with its newline: the record's keys in the order given,
    in the export's JSON layout (:func:`curation.formats.fileio.json_line` with ``spaced``)."""
    return json_line(record, spaced=True) + "\n"


def label_vote_json(judge: str, grade: int, unsure: bool, guidelines_version: int | None, *,
                    need_version: int | None = None) -> str:
    """One entry of a ``qrels.jsonl`` record's ``judgments`` list, as :func:`format_label_record` writes it;
    ``need_version`` (the query's information need the label was made under) only when there was one."""
    vote = {"judge": judge, "grade": grade, "unsure": unsure, "guidelines_version": guidelines_version}
    if need_version is not None:
        vote["need_version"] = need_version
    return json_line(vote, spaced=True)


def label_record_line(qid: str, docid: str, grade: int, source: str, judgments: list[str], adjudication: Mapping | None,
                      seeds: list, pooled: bool, guidelines_version: int | None, extra: Mapping | None = None) -> str:
    """:func:`format_label_record` of the export's record (keys qid, docid, grade, source, seed_only,
    judgments, adjudication, seeds, pooled, guidelines_version), byte for byte, built from its parts:
    ``judgments`` holds each vote already written by :func:`label_vote_json`, so an export writes a
    million lines without a ``json.dumps`` call per record (tests/formats/test_label_lines.py). ``extra``:
    keys written after those (``unsure``, ``machine``), in its order."""
    return (
        f'{{"qid": {_json_str(qid)}, "docid": {_json_str(docid)}, "grade": {int(grade)}, '
        f'"source": {_json_str(source)}, '
        f'"seed_only": {"true" if source == "seed" else "false"}, "judgments": [{", ".join(judgments)}], '
        f'"adjudication": {"null" if adjudication is None else json_line(adjudication, spaced=True)}, '
        f'"seeds": {json_line(seeds, spaced=True) if seeds else "[]"}, "pooled": {"true" if pooled else "false"}, '
        f'"guidelines_version": {"null" if guidelines_version is None else int(guidelines_version)}'
        + "".join(f", {_json_str(k)}: {json_line(v, spaced=True)}" for k, v in (extra or {}).items())
        + "}\n"
    )


_JSON_ESCAPED = re.compile(r'[\x00-\x1f"\\]')  # what json.dumps escapes (ensure_ascii off)
_SOURCE = ('"unanimous"', '"single"')


def plain_label_lines(qids: list[str], docids: list[str], grades: list[int], single: list[bool], votes: list[str],
                      guidelines_version: list[int], unsure: list[bool], *, machine: bool = False
                      ) -> tuple[list[str], list[str]]:
    """The ``qrels.txt`` and ``qrels.jsonl`` lines (each with its newline) of pooled pairs labelled by
    their judges alone, with no adjudication and no seed judgment: what :func:`qrel_text` and
    :func:`label_record_line` write for them, byte for byte (tests/export/test_fast_lines.py), as one
    f-string per line in two list comprehensions, the identifiers JSON-escaped only when one of them
    needs it. ``single``: source ``single``, else ``unanimous``; ``votes``: each pair's
    :func:`label_vote_json` entries joined by ``", "``; ``guidelines_version``: -1 for none; ``unsure``:
    the ``unsure`` key written; ``machine``: the ``"machine": null`` key of a machine-filled export.
    (Measured against pyarrow's ``binary_join_element_wise`` building the same columns: as fast, without
    importing pyarrow and, through it, pandas.)"""
    txt = [f"{q} 0 {d} {g}\n" for q, d, g in zip(qids, docids, grades, strict=True)]
    if _JSON_ESCAPED.search(" ".join(qids)) or _JSON_ESCAPED.search(" ".join(docids)):
        qids = [_json_str(q)[1:-1] for q in qids]
        docids = [_json_str(d)[1:-1] for d in docids]
    machine_key = ', "machine": null' if machine else ""
    tails = ("}\n" if not machine else machine_key + "}\n", ', "unsure": true' + machine_key + "}\n")
    gv = ["null" if v < 0 else str(v) for v in guidelines_version]
    jsonl = [
        f'{{"qid": "{q}", "docid": "{d}", "grade": {g}, "source": {_SOURCE[s]}, "seed_only": false, '
        f'"judgments": [{v}], "adjudication": null, "seeds": [], "pooled": true, "guidelines_version": {w}{tails[u]}'
        for q, d, g, s, v, w, u in zip(qids, docids, grades, single, votes, gv, unsure, strict=True)
    ]
    return txt, jsonl


def parse_label_records(lines: Iterable[str], path: str | os.PathLike = "qrels.jsonl") -> Iterator[dict]:
    """Yield the records of an export's ``qrels.jsonl`` as read, each with a non-empty string ``qid`` and
    ``docid`` and an integer ``grade`` (:class:`InputError` naming ``file:line`` otherwise)."""
    path = str(path)
    for lineno, obj in iter_jsonl_lines(lines, path, expect="an object with qid, docid and grade"):
        for key in ("qid", "docid"):
            if not isinstance(obj.get(key), str) or not obj[key]:
                raise InputError(path, lineno, f"missing or empty {key!r}")
        if "grade" not in obj:
            raise InputError(path, lineno, "missing 'grade'")
        parse_grade(obj["grade"], path, lineno)
        yield obj
