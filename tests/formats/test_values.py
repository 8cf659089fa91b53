"""Non-finite numbers in files: NaN, infinities and overflow (1e400, or beyond trec_eval's 32-bit
float) are refused with file:line wherever a number is read."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from curation.formats.conflicts import Dedup
from curation.formats.fileio import InputError
from curation.formats.qrels import MAX_GRADE, parse_grade
from curation.formats.runs import read_run


@pytest.mark.parametrize("score", ["inf", "-inf", "Infinity", "1e400", "-1e400", "1e39", "nan"])
def test_run_score_that_is_not_finite_is_refused_on_both_paths(tmp_path, score):
    # many lines so that the fast (pyarrow) path is the one taken first
    lines = [f"q{q} Q0 d{d} {d} {100 - d} sys\n" for q in range(1, 4) for d in range(1, 30)]
    lines[40] = f"q2 Q0 dX 99 {score} sys\n"
    path = tmp_path / "run.trec"
    path.write_text("".join(lines))
    with pytest.raises(InputError, match=rf"^{path}:41: score .*(finite|NaN)"):
        read_run(path)


@pytest.mark.parametrize("score", ["Infinity", "-Infinity", "1e400", "NaN"])
def test_jsonl_run_score_that_is_not_finite_is_refused(tmp_path, score):
    path = tmp_path / "run.jsonl"
    path.write_text('{"qid": "q1", "docid": "d1", "score": 1}\n' f'{{"qid": "q1", "docid": "d2", "score": {score}}}\n')
    with pytest.raises(InputError, match=rf"^{path}:2: score"):
        read_run(path)


# Property tests (hypothesis): for any value, the number readers return a finite, bounded number or
# raise InputError naming file:line, nothing else.

_ANY = st.one_of(st.text(max_size=40), st.integers(), st.floats(), st.booleans(), st.none(),
                 st.lists(st.integers(), max_size=2))


@settings(max_examples=300, deadline=None)
@given(_ANY)
def test_parse_grade_returns_a_bounded_integer_or_an_input_error(raw):
    try:
        grade = parse_grade(raw, "g.txt", 7)
    except InputError as exc:
        assert str(exc).startswith("g.txt:7: grade ")
    else:
        assert type(grade) is int and abs(grade) <= MAX_GRADE


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abc"), st.integers(0, 2)), max_size=12),
       st.sampled_from(["error", "first", "last"]))
def test_dedup_keeps_one_value_per_key_as_the_policy_says(records, policy):
    d = Dedup("f", policy=policy)
    kept: dict[str, int] = {}
    try:
        for lineno, (key, value) in enumerate(records, 1):
            if d.add(key, value, lineno):
                kept[key] = value
    except InputError as exc:
        assert policy == "error" and str(exc).startswith("f:")
        return
    # an independent account: the first or last value of each key in the list
    expected: dict[str, int] = {}
    for key, value in records:
        if policy == "last" or key not in expected:
            expected[key] = value
    assert kept == expected
    distinct = {(k, v) for k, v in records}
    assert d.repeats + d.conflicts + len(kept) == len(records)
    if policy != "last":  # every other value of a key is a conflict, each time it appears
        assert len(kept) + d.conflicts >= len(distinct)


@pytest.mark.parametrize("count", ["1e300", "1e400", "inf", "NaN", "9007199254740993"])
def test_log_count_that_is_not_finite_or_too_large_is_refused_with_the_line(tmp_path, count):
    """1e300 became a garbage int64 (a negative count) in the fast reader, and its query vanished."""
    import pyarrow as pa

    from curation.formats.logs import MAX_COUNT, count_values, exact_batches

    assert count_values(pa.array(["1", count])) is None  # the fast reader declines: the exact one names the line
    path = tmp_path / "log.csv"
    path.write_text(f"query,n\nok,1\nbig,{count}\n")
    with pytest.raises(InputError, match=rf"log.csv:3: count '{count}' is not a whole number of searches "
                                         rf"\(0 to {MAX_COUNT}\)"):
        [b for b in exact_batches(str(path), "csv", ["query", "n"], "n")]
