"""``limits.check_data_lines``: the first line over the cap, found by jumps, agrees with splitting the lines."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from curation.formats.fileio import InputError
from curation.formats.limits import check_data_lines


def _brute_force(data: bytes, cap: int):
    """(line number, length) of the first line over ``cap`` bytes, by splitting every line."""
    for lineno, line in enumerate(data.split(b"\n"), 1):
        if len(line) > cap:
            return lineno, len(line)
    return None


@settings(max_examples=300, deadline=None)
@given(lengths=st.lists(st.integers(0, 40), min_size=0, max_size=30), final_newline=st.booleans(),
       cap=st.integers(1, 30))
def test_first_long_line_matches_splitting(lengths, final_newline, cap):
    data = b"\n".join(b"x" * n for n in lengths) + (b"\n" if final_newline and lengths else b"")
    expected = _brute_force(data, cap)
    if expected is None:
        check_data_lines(data, "f.txt", cap)
        return
    lineno, size = expected
    with pytest.raises(InputError) as err:
        check_data_lines(data, "f.txt", cap)
    assert str(err.value) == (f"f.txt:{lineno}: the line is {size} bytes, over the limit of {cap} bytes "
                              "(raise it with GOLDEN_MAX_LINE_BYTES=N)")


def test_default_cap_comes_from_the_environment(monkeypatch):
    data = b"short\n" + b"y" * 50 + b"\nshort\n"
    check_data_lines(data, "run.txt")  # the default (1,000,000) is far above
    monkeypatch.setenv("GOLDEN_MAX_LINE_BYTES", "49")
    with pytest.raises(InputError, match=r"^run.txt:2: the line is 50 bytes, over the limit of 49 bytes"):
        check_data_lines(data, "run.txt")
