"""A project's label scale, in one place: its grades, their names and descriptions, and the check
of a grade.

A project stores its scale as ``Project.grades_json`` (``[{"grade", "name", "description"}]``,
lowest grade first), written from the guidelines' Grades section or a default scale when the
project is created; only this module reads or writes that column.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass

from curation.store.models import Project

SCALE = Project.__table__.c.grades_json  # the column, for a Core select


@dataclass(frozen=True)
class Grade:
    """One grade of a label scale: the number stored, a short name and what it means."""

    grade: int
    name: str
    description: str


DEFAULT_SCALES: dict[str, tuple[Grade, ...]] = {
    "binary": (
        Grade(0, "Not relevant", "The document does not help answer the query."),
        Grade(1, "Relevant", "The document helps answer the query, in whole or in part."),
    ),
    "0-2": (
        Grade(0, "Not relevant", "The document does not help answer the query."),
        Grade(1, "Partially relevant", "On topic, but answers only part of the query or needs other sources."),
        Grade(2, "Highly relevant", "Answers the query on its own; a user would be satisfied with it."),
    ),
    "0-3": (
        Grade(0, "Irrelevant", "Nothing to do with the query."),
        Grade(1, "Related", "On the query's topic, but does not answer it."),
        Grade(2, "Highly relevant", "Answers the query, perhaps with some digging or only in part."),
        Grade(3, "Perfectly relevant", "Dedicated to the query: it answers it fully and directly."),
    ),
}
SCALES = tuple(DEFAULT_SCALES)


def encode_scale(scale_def: Sequence[Grade]) -> str:
    """The grades as stored in ``Project.grades_json``."""
    return json.dumps([{"grade": g.grade, "name": g.name, "description": g.description} for g in scale_def])


def scale_fields(scale_def: Sequence[Grade]) -> dict[str, str]:
    """The stored scale of a new project's row (keyword arguments of ``Project``)."""
    return {"grades_json": encode_scale(scale_def)}


def set_scale(project: Project, scale_def: Sequence[Grade]) -> None:
    """Store ``scale_def`` as ``project``'s scale."""
    project.grades_json = encode_scale(scale_def)


def _stored(project) -> str | None:
    """The stored scale of a Project row, or of a record that read :data:`SCALE` as ``stored_scale``
    (the judging pages' :class:`curation.judge.judging.JudgeProject`)."""
    stored = getattr(project, "stored_scale", None)
    return stored if stored is not None else project.grades_json


def grades(project: Project) -> tuple[Grade, ...]:
    """The grades of ``project``'s scale, lowest first (for the judging page and validation)."""
    return _decoded(_stored(project))


@functools.lru_cache(maxsize=256)
def _decoded(stored: str) -> tuple[Grade, ...]:
    """The grades of a stored scale, decoded once per text in a process (the judging page asks on
    every answer); the grades are frozen and the tuple immutable, so every caller may share them."""
    return tuple(Grade(int(g["grade"]), g["name"], g["description"]) for g in json.loads(stored))


def scale_records(project: Project) -> list[dict]:
    """The grades as stored (``{"grade", "name", "description"}`` each), for the export's manifest."""
    return json.loads(_stored(project) or "[]")


def grade_values(project: Project) -> list[int]:
    """The grades of the project's scale, ascending (from its stored grades, else its scale's name)."""
    try:
        values = sorted(int(g["grade"]) for g in scale_records(project))
    except (ValueError, TypeError, KeyError):
        values = []
    if values:
        return values
    return {"binary": [0, 1], "0-2": [0, 1, 2], "0-3": [0, 1, 2, 3]}.get(project.scale, [0, 1])


@functools.lru_cache(maxsize=64)
def stored_grade_values(stored: str) -> tuple[int, ...]:
    """The grades of a stored scale (a value of :data:`SCALE`, read without its Project), in
    stored order; parsed once per distinct scale."""
    return tuple(int(g["grade"]) for g in json.loads(stored))


def check_grade(grade, allowed: Sequence[int], scale: str, *, parameter: str = "grade") -> int:
    """``grade`` as an int when it is one of the ``allowed`` grades of the scale named ``scale``;
    else a ValueError naming ``parameter``, e.g. ``grade: 5 is not a grade of the scale 0-2 (0, 1, 2)``.

    Whole numbers are taken as ints or as text of an optional sign and ASCII digits; a bool, a float
    or text ``int()`` would also read (non-ASCII digits, ``1_0``) is refused."""
    allowed = tuple(int(g) for g in allowed)
    value = None
    if isinstance(grade, int) and not isinstance(grade, bool):
        value = grade
    elif isinstance(grade, str):
        text = grade.strip()
        if text.isascii() and text.lstrip("+-").isdigit() and len(text) - len(text.lstrip("+-")) <= 1:
            value = int(text)
    if value is None or value not in allowed:
        shown = str(value) if value is not None else repr(str(grade)[:30])
        raise ValueError(f"{parameter}: {shown} is not a grade of the scale {scale} "
                         f"({', '.join(map(str, allowed))})")
    return value
