"""Cron expressions in a time zone: checked, and their next fire time (cronsim, which follows
Debian's cron, daylight saving changes included: a time skipped by the clock fires right after
the change, a repeated hour fires once)."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from cronsim import CronSim, CronSimError


class BadSchedule(ValueError):
    """A cron expression or time zone that cannot be used, with the reason."""


def zone(name: str) -> ZoneInfo:
    if name not in _zones():
        raise BadSchedule(f"{name!r} is not an IANA time zone (such as 'Europe/Paris' or 'UTC')")
    try:
        return ZoneInfo(name)
    except ZoneInfoNotFoundError:  # listed but not loadable: the system's data is broken
        raise BadSchedule(f"the time zone {name!r} could not be loaded") from None


def check(expression: str, time_zone: str) -> None:
    """Raise :class:`BadSchedule` unless ``expression`` is a 5-field cron expression that
    fires at all."""
    next_after(expression, time_zone, datetime.now(UTC))


def next_after(expression: str, time_zone: str, after: datetime) -> datetime:
    """The first fire time strictly after ``after`` (aware), in UTC."""
    tz = zone(time_zone)
    if len(expression.split()) != 5:
        raise BadSchedule("a cron expression has 5 fields: minute hour day-of-month month "
                          "day-of-week")
    try:
        found: datetime = next(CronSim(expression, after.astimezone(tz).replace(second=0,
                                                                               microsecond=0)))
    except CronSimError as exc:
        raise BadSchedule(f"the cron expression is not valid: {exc}") from None
    except StopIteration:
        raise BadSchedule("the cron expression never fires") from None
    return found.astimezone(UTC)


_zone_names: frozenset[str] | None = None


def _zones() -> frozenset[str]:
    global _zone_names
    if _zone_names is None:
        _zone_names = frozenset(available_timezones())
    return _zone_names
