"""UTC time helpers: every stored time is ISO 8601 text in UTC with microseconds, so text order is time order."""

from __future__ import annotations

from datetime import datetime, timezone

import dateparser

from .errors import ValidationError

__all__ = ["from_db_time", "parse_time", "to_db_time"]


def parse_time(value: datetime | str | int | float | None) -> datetime | None:
    """Coerce a user-supplied time to an aware UTC datetime.

    Args:
        value: an aware or naive datetime (naive is taken as UTC), an ISO 8601 / human date string (parsed with
            ``dateparser``, e.g. ``"2023/05/20 (Sat) 02:21"``), or Unix seconds.

    Returns:
        Aware UTC datetime, or None for None.

    Raises:
        ValidationError: the value cannot be parsed.
    """
    if value is None:
        return None
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        dt = datetime.fromtimestamp(float(value), tz=timezone.utc)
    elif isinstance(value, str):
        text = value.strip()
        try:
            dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            cleaned = text.replace("(", " ").replace(")", " ")
            dt = dateparser.parse(cleaned, settings={"TIMEZONE": "UTC", "RETURN_AS_TIMEZONE_AWARE": False})
            if dt is None:
                raise ValidationError(f"cannot parse time {value!r}") from None
    else:
        raise ValidationError(f"cannot parse time {value!r}")
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.astimezone(timezone.utc)


def to_db_time(value: datetime | str | int | float) -> str:
    """Format a time for storage: ``YYYY-MM-DDTHH:MM:SS.ffffff+00:00`` in UTC."""
    dt = parse_time(value)
    assert dt is not None
    return dt.isoformat(timespec="microseconds")


def from_db_time(text: str | None) -> datetime | None:
    """Parse a stored time back into an aware UTC datetime."""
    if text is None:
        return None
    return datetime.fromisoformat(text)
