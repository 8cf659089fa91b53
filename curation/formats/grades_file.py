"""The grades file (``golden project create --grades``): a JSON list of ``{grade, name, description}``
objects, or an object whose ``"grades"`` holds that list, overriding the scale's default names.

Rules: strict UTF-8 (:func:`curation.formats.fileio.load_json`: a byte-order mark dropped, NaN and
infinities refused); every entry is an object with a ``grade``; a grade number is given once. Errors
name ``file:line`` where each entry of a top-level list starts on its own line.
"""

from __future__ import annotations

import json
import os

from curation.formats.fileio import InputError, open_text, parse_json_text
from curation.formats.qrels import parse_grade


def read_grades(path: str | os.PathLike) -> list[dict]:
    """The entries of a grades file, checked as the module docstring says: each an object whose
    ``grade`` is a JSON integer and whose ``name`` and ``description``, when given, are strings; every
    problem names the file (and the entry's line)."""
    with open_text(path) as fh:  # read once: a pipe too
        text = fh.read()
    data = parse_json_text(text, path)
    if isinstance(data, dict):
        data = data.get("grades", data)
    if not isinstance(data, list):
        raise InputError(path, None, "expected a list of {grade, name, description} objects")
    lines = _entry_lines(text) if data else []
    for i, entry in enumerate(data):
        line = lines[i] if i < len(lines) else None
        if not isinstance(entry, dict) or "grade" not in entry:
            raise InputError(
                path, line,
                f"each entry needs a 'grade' number, got {json.dumps(entry)[:200]}; "
                "write it as {\"grade\": 1, \"name\": ..., \"description\": ...}")
        grade = entry["grade"]
        if isinstance(grade, str) or isinstance(grade, bool):
            raise InputError(path, line, f"grade {grade!r} is not a number; write it as a JSON integer")
        parse_grade(grade, path, line)
        for key in ("name", "description"):
            if entry.get(key) is not None and not isinstance(entry[key], str):
                raise InputError(path, line, f"{key!r} of grade {grade} must be a string, got {entry[key]!r}"[:300])
    _refuse_repeated_grades(path, data, lines)
    return data


def _entry_lines(text: str) -> list[int]:
    """The line where each entry of the document's top-level list starts (empty when the list is
    nested under "grades"), to name ``file:line``."""
    at = len(text) - len(text.lstrip())
    if not text.startswith("[", at):
        return []
    decoder, out, at = json.JSONDecoder(), [], at + 1
    while True:
        while at < len(text) and text[at] in " \t\r\n,":
            at += 1
        if at >= len(text) or text[at] == "]":
            return out
        out.append(text.count("\n", 0, at) + 1)
        _, at = decoder.raw_decode(text, at)


def _refuse_repeated_grades(path, data: list, lines: list[int]) -> None:
    """A grade number given twice is refused, naming both lines (``lines``: where each entry starts)."""
    first: dict = {}
    for i, entry in enumerate(data):
        num = entry["grade"]
        if not isinstance(num, (int, float, str)) or isinstance(num, bool):
            continue  # not a grade number: refused with its line when the scale is read
        if num in first:
            j = first[num]
            both = f" (lines {lines[j]} and {lines[i]})" if j < len(lines) and i < len(lines) else ""
            raise InputError(path, lines[i] if both else None,
                             f"grade {num!r} is given twice{both}; keep one entry per grade")
        first[num] = i
