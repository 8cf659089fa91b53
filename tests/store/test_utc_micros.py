"""curation.store.direct.utc_micros: the times of many rows at once, always the value (or the error)
that to_datetime gives one at a time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from curation.store.direct import EPOCH, ONE_MICROSECOND, from_micros, sqlite_datetime, to_datetime, utc_micros


def one_by_one(values):
    return [None if v is None else (to_datetime(v) - EPOCH) // ONE_MICROSECOND for v in values]


def assert_same(values):
    micros, missing = utc_micros(values)
    assert missing.tolist() == [v is None for v in values]
    expected = one_by_one(values)
    assert [None if m else int(x) for x, m in zip(micros, missing)] == expected


ZONES = [UTC, timezone(timedelta(hours=5, minutes=30)), timezone(-timedelta(hours=8))]
aware = st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.sampled_from(ZONES))


@given(st.lists(st.one_of(st.none(), aware.map(sqlite_datetime)), max_size=40))
def test_stored_texts_read_whole_as_one_by_one(values):
    assert_same(values)


@given(st.lists(st.one_of(st.none(), aware.map(sqlite_datetime), aware.map(str), aware.map(datetime.isoformat), aware,
                          aware.map(lambda d: d.replace(tzinfo=None)), aware.map(lambda d: d.date().isoformat())),
                max_size=20))
def test_any_mix_of_forms_as_one_by_one(values):
    """Other texts (a "T", an offset, no fraction, a date alone) and PostgreSQL's datetimes go the slow way."""
    assert_same(values)


def test_the_stored_form_round_trips():
    t = datetime(2026, 12, 2, 16, 59, 58, 123456, tzinfo=UTC)
    micros, missing = utc_micros([sqlite_datetime(t), None])
    assert from_micros(micros[0]) == t and missing.tolist() == [False, True] and micros[1] == 0
    assert utc_micros([])[0].shape == (0,)


@pytest.mark.parametrize("bad", [
    "0000-01-01 00:00:00.000000",  # year 0: numpy would take it
    "2026-02-30 00:00:00.000000",  # not a day
    "2026-13-01 00:00:00.000000",
    "2026-12-02 24:00:00.000000",
    "2026-12-02 12:60:00.000000",
    "2026-12-02 12:00:60.000000",
    "٢٠٢٦-12-02 12:00:00.000000",  # Arabic-Indic digits: a digit to str.isdigit, not to fromisoformat
    "2026-12-02 12:00:00.00000x",
    "now",
    "",
])
def test_text_the_store_never_writes_fails_as_one_by_one(bad):
    """Beside a good row, so the whole-array path sees it: the same error as to_datetime, never a value."""
    good = "2026-12-02 12:00:00.000000"
    with pytest.raises(ValueError) as one:
        one_by_one([bad])
    with pytest.raises(type(one.value)):
        utc_micros([good, bad])


def test_a_large_batch_is_exact():
    rng = np.random.default_rng(7)
    base = datetime(2020, 1, 1, tzinfo=UTC)
    values = [sqlite_datetime(base + timedelta(microseconds=int(x))) for x in rng.integers(0, 10**15, 50_000)]
    assert_same(values)


@given(aware)
def test_sqlite_datetime_writes_what_sqlalchemy_writes(t):
    """The hot path's text of a datetime is SQLAlchemy's own for SQLite (years before 1000 too)."""
    from sqlalchemy.dialects import sqlite

    write = sqlite.DATETIME().bind_processor(sqlite.dialect())
    assert sqlite_datetime(t) == write(t.astimezone(UTC).replace(tzinfo=None))


@given(st.lists(st.integers(min_value=-(2**62), max_value=2**62), max_size=30))
def test_micros_to_seconds_as_timedelta_gives_them(micros):
    """Correctly rounded even past 2**53, where numpy's conversion to float would round first."""
    from curation.store.direct import micros_to_seconds

    assert micros_to_seconds(np.array(micros, dtype=np.int64)) == [m / 1_000_000 for m in micros]
    small = [m % 2**50 for m in micros]
    assert micros_to_seconds(np.array(small, dtype=np.int64)) == \
        [timedelta(microseconds=m).total_seconds() for m in small]
