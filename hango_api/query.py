"""Query parameters: strings by nature, parsed here into values; a bad one is a 400
(:class:`~hango_project.errors.BadQuery`) naming the parameter, never a 500 from the query."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

from django.utils.dateparse import parse_date, parse_datetime

from hango_project.errors import BadQuery

# PostgreSQL's timestamptz takes UTC offsets under 16 hours, in whole seconds; Python's datetime
# (and so an ISO 8601 parse) takes up to 24 hours, in microseconds.
MAX_UTC_OFFSET = timedelta(hours=16)

# "…T10:00:00 05:00": a "+" sent unencoded in a query string arrives as a space.
_SPACED_OFFSET = re.compile(r"^(.*\d\d:\d\d(?::\d\d(?:[.,]\d+)?)?) (\d\d(?::?\d\d)?)$")


def storable_offset(value: datetime) -> bool:
    """Whether the database can take ``value``'s UTC offset (a naive value has none)."""
    offset = value.utcoffset()
    return offset is None or (abs(offset) < MAX_UTC_OFFSET and offset.microseconds == 0)


def query_time(params: Mapping[str, str], name: str) -> datetime | None:
    """The parameter as an aware datetime: ISO 8601, a date meaning its UTC midnight, no offset
    meaning UTC; None when absent or empty."""
    raw = params.get(name)
    if not raw:
        return None
    text = _SPACED_OFFSET.sub(r"\1+\2", raw)
    try:
        value = parse_datetime(text)
        if value is None and (day := parse_date(text)) is not None:
            value = datetime(day.year, day.month, day.day)
    except ValueError:  # well formed, but no such time (February 30th, hour 25, offset +24:00)
        value = None
    if value is None:
        raise BadQuery(f"'{name}' must be an ISO 8601 date or time.", detail={name: raw})
    if not storable_offset(value):
        raise BadQuery(f"'{name}' must have a UTC offset under 16 hours, in whole seconds.",
                       detail={name: raw})
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
