"""The one check of a grade against a project's scale (curation.store.scale.check_grade)."""

from __future__ import annotations

import pytest

from curation.store.scale import check_grade


@pytest.mark.parametrize(("grade", "expected"), [(0, 0), (2, 2), ("1", 1), (" 2 ", 2), ("+1", 1)])
def test_a_grade_of_the_scale_is_returned_as_an_int(grade, expected):
    assert check_grade(grade, [0, 1, 2], "0-2") == expected


@pytest.mark.parametrize(("grade", "shown"), [
    (5, "5"), (-1, "-1"), ("3", "3"), (True, "'True'"), (1.0, "'1.0'"), ("1_0", "'1_0'"),
    ("\u0661", "'\u0661'"), ("--1", "'--1'"), ("", "''"), (None, "'None'"), ("x" * 40, repr("x" * 30)),
])
def test_anything_else_is_refused_naming_the_parameter_and_the_scale(grade, shown):
    with pytest.raises(ValueError) as err:
        check_grade(grade, [0, 1, 2], "0-2")
    assert str(err.value) == f"grade: {shown} is not a grade of the scale 0-2 (0, 1, 2)"


def test_the_parameter_is_named():
    with pytest.raises(ValueError, match=r"^relevance: 4 is not a grade of the scale 0-3 \(0, 1, 2, 3\)$"):
        check_grade(4, (0, 1, 2, 3), "0-3", parameter="relevance")
