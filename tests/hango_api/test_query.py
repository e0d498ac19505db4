"""hango_api.query: a time parameter is read as ISO 8601 (a date, no offset, a "+" that
arrived as a space) and refused, as a 400 naming it, when the database could not compare with it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from hango_api.query import query_time, storable_offset
from hango_project.errors import BadQuery


@pytest.mark.parametrize("raw, expected", [
    ("2026-05-01", datetime(2026, 5, 1, tzinfo=UTC)),
    ("2026-05-01T10:00:00", datetime(2026, 5, 1, 10, tzinfo=UTC)),
    ("2026-05-01T10:00:00Z", datetime(2026, 5, 1, 10, tzinfo=UTC)),
    ("2026-05-01 10:00:00 05:30", datetime(2026, 5, 1, 10, tzinfo=timezone(timedelta(hours=5.5)))),
    ("2026-05-01T10:00-15:59", datetime(2026, 5, 1, 10, tzinfo=timezone(-timedelta(hours=16)
                                                                          + timedelta(minutes=1)))),
])
def test_times_are_read(raw, expected):
    assert query_time({"since": raw}, "since") == expected


@pytest.mark.parametrize("raw", [None, ""])
def test_absent_is_none(raw):
    assert query_time({} if raw is None else {"since": raw}, "since") is None


@pytest.mark.parametrize("raw", ["yesterday", "2026-02-30", "2026-05-01T25:00:00",
                                 "2026-05-01T10:00:00+16:00", "2026-05-01T10:00:00-23:59",
                                 "2026-05-01T10:00:00+01:00:00.25"])
def test_bad_times_are_a_bad_query_naming_the_parameter(raw):
    with pytest.raises(BadQuery) as caught:
        query_time({"until": raw}, "until")
    assert caught.value.detail == {"until": raw}
    assert "'until'" in caught.value.message


def test_storable_offsets():
    at = datetime(2026, 1, 1)
    assert storable_offset(at)
    assert storable_offset(at.replace(tzinfo=timezone(timedelta(hours=15, minutes=59,
                                                                seconds=59))))
    assert not storable_offset(at.replace(tzinfo=timezone(timedelta(hours=16))))
    assert not storable_offset(at.replace(tzinfo=timezone(timedelta(seconds=1, microseconds=1))))
