"""UTC time helpers: every stored time is ISO 8601 text in UTC with microseconds, so text order is time order."""

from __future__ import annotations

import functools
import math
import re
from datetime import date, datetime, time, timedelta, timezone

from dateparser.date import DateDataParser

from .errors import ValidationError

__all__ = ["from_db_time", "parse_time", "to_db_time"]

# Missing day/month are the first of the period (dateparser's default fills them from today); the period of the
# parsed text ("day", "week", "month", "year", or "time" when a clock time was given) tells a date from a moment.
# The "no-spaces-time" parser is left out (it reads digit runs as times: "20240531" -> year 4053), and so is
# "timestamp": numbers in strings are refused before dateparser sees them. Text is read as English or Chinese;
# only a text holding a four-digit year is then tried in every language: every language at once read short junk
# as dates ("bar" Monday, "die" yesterday, "set" September), and English alone cannot read LongMemEval's
# "2023/05/22 (Mon) 03:45" (dateparser reads a weekday after a date only in another language).
_SETTINGS = {
    "TIMEZONE": "UTC", "RETURN_AS_TIMEZONE_AWARE": False, "RETURN_TIME_AS_PERIOD": True,
    "PREFER_DAY_OF_MONTH": "first", "PREFER_MONTH_OF_YEAR": "first",
    "PARSERS": ["relative-time", "custom-formats", "absolute-time"],
}
_PARSER = DateDataParser(languages=["en", "zh"], settings=_SETTINGS)
_ANY_LANGUAGE = DateDataParser(settings=_SETTINGS)


@functools.lru_cache(maxsize=16)
def _parsers(now: datetime | None) -> tuple[DateDataParser, DateDataParser]:
    """The English/Chinese and every-language parsers, reading relative words ("last week") from ``now`` (naive
    UTC; None: the current time)."""
    if now is None:
        return _PARSER, _ANY_LANGUAGE
    settings = {**_SETTINGS, "RELATIVE_BASE": now}
    return DateDataParser(languages=["en", "zh"], settings=settings), DateDataParser(settings=settings)


_HAS_YEAR = re.compile(r"(?<!\d)\d{4}(?!\d)")
_ISO_SHAPED = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})")  # dateparser would read "2024-13-01" as January 13
_YEAR = re.compile(r"\d{4}")
_YEAR_MONTH = re.compile(r"(\d{4})-(\d{2})")
_TIME_ONLY = re.compile(r"(?i)(at\s+)?(\d{1,2}(:\d{2}){0,2}(\.\d+)?\s*([ap]\.?m\.?)?|noon|midnight)")
_DATE_WITH_OFFSET = re.compile(r"(\d{4}-\d{2}-\d{2})(Z|[+-]\d{2}:\d{2})")
_END = timedelta(microseconds=1)
# "2024年", "2024年5月", "2024年5月3日": dateparser reads "2024年" as year 2 and "2024年13月" as March
_CHINESE_DATE = re.compile(r"(\d{4})\s*年(?:\s*(\d{1,2})\s*月(?:\s*(\d{1,2})\s*[日号])?)?")
_WORDY = re.compile(r"\d|[^\W\d_]{3,}|[\u3400-\u9fff]")  # a digit, a word of 3+ letters, or a Han character


def _period_start(dt: datetime, period: str) -> datetime:
    if period == "time":
        return dt
    day = datetime.combine(dt.date(), time(0), tzinfo=dt.tzinfo)
    if period == "week":
        return day - timedelta(days=day.weekday())
    if period == "month":
        return day.replace(day=1)
    if period == "year":
        return day.replace(month=1, day=1)
    return day


def _period_end(start: datetime, period: str) -> datetime:
    """The last microsecond of the period that begins at ``start``."""
    try:
        if period == "time":
            return start
        if period == "week":
            return start + timedelta(days=7) - _END
        if period == "month":
            nxt = (start.replace(year=start.year + 1, month=1) if start.month == 12
                   else start.replace(month=start.month + 1))
            return nxt - _END
        if period == "year":
            return start.replace(year=start.year + 1) - _END
        return start + timedelta(days=1) - _END
    except (OverflowError, ValueError):  # the period ends after year 9999
        return datetime.max.replace(tzinfo=start.tzinfo)


def _parse_text(value: str, now: datetime | None = None) -> tuple[datetime, str]:
    text = value.strip()
    if _YEAR.fullmatch(text) and int(text) > 0:
        return datetime(int(text), 1, 1), "year"
    ym = _YEAR_MONTH.fullmatch(text)
    if ym:  # ISO year-month; dateparser would read "2024-13" as 13 January
        if int(ym[1]) == 0 or not 1 <= int(ym[2]) <= 12:
            _fail(value)
        return datetime(int(ym[1]), int(ym[2]), 1), "month"
    try:
        return datetime.combine(date.fromisoformat(text), time(0)), "day"
    except ValueError:
        pass
    if _TIME_ONLY.fullmatch(text):  # dateparser would pick a day itself (the current day number in January)
        raise ValidationError(f"cannot parse time {value!r}: a time of day needs a date")
    if len(text) > 10 and text[10] in "Tt ":  # fromisoformat takes any character there: "2024-05-31+02:00"
        try:                                 # would be 02:00, not a date with an offset
            return datetime.fromisoformat(text.replace("Z", "+00:00")), "time"
        except ValueError:
            pass
    offset_date = _DATE_WITH_OFFSET.fullmatch(text)
    if offset_date:  # a date in a given zone: that day there
        when = datetime.fromisoformat(f"{offset_date[1]}T00:00{offset_date[2].replace('Z', '+00:00')}")
        return when, "day"
    try:
        float(text)
    except ValueError:
        pass
    else:  # "1e10", "12", "nan": dateparser reads them as month/day guesses; numbers are Unix seconds, not text
        raise ValidationError(f"cannot parse time {value!r}: a number in a string is not a date; pass Unix seconds "
                              "as an int or float")
    ymd = _ISO_SHAPED.fullmatch(text)
    if ymd:  # year-month-day with one-digit parts ("2024-5-3"); an impossible one is an error, not swapped
        try:
            return datetime(int(ymd[1]), int(ymd[2]), int(ymd[3])), "day"
        except ValueError:
            _fail(value)
    if not _WORDY.search(text) or (re.sub(r"\W", "", text).isdigit() and not _HAS_YEAR.search(text)):
        _fail(value)  # "a" ("x" was October), a number in signs ("#42" was 2042); "2024/5/3" is a date
    cn = _CHINESE_DATE.fullmatch(text)
    if cn:
        try:
            return datetime(int(cn[1]), int(cn[2] or 1), int(cn[3] or 1)), \
                "day" if cn[3] else "month" if cn[2] else "year"
        except ValueError:
            _fail(value)
    plain = text.replace("(", " ").replace(")", " ")
    some_languages, any_language = _parsers(now)
    data = some_languages.get_date_data(plain)
    if data.date_obj is None and _HAS_YEAR.search(plain):
        data = any_language.get_date_data(plain)
    if data.date_obj is None:
        _fail(value)
    years = {int(y) for y in _HAS_YEAR.findall(plain)}
    if years and min(abs(data.date_obj.year - y) for y in years) > 1:
        _fail(value)  # a four-digit year the parser did not keep is a misreading ("2024年" as year 2); one year
        # off is a zone offset at New Year ("31 Dec 2018 23:30 -0800" is 2019 in UTC)
    return data.date_obj, data.period or "time"


def _fail(value: object) -> datetime:
    raise ValidationError(f"cannot parse time {value!r}")


def parse_time(value: datetime | date | str | int | float | None, *, end: bool = False,
               now: datetime | None = None) -> datetime | None:
    """Coerce a user-supplied time to an aware UTC datetime.

    A value without a clock time names a period: a date (``"2024-05-31"``, ``datetime.date``, ``"31 May 2024"``,
    ``"yesterday"``), a month (``"2024-05"``, ``"May 2024"``), a year (``"2024"``) or a week (``"last week"``,
    Monday to Sunday). It stands for the period's first moment (00:00 UTC on its first day), or with ``end`` for
    its last microsecond, so an inclusive upper bound ``"2024-05-31"`` covers the whole day. A value with a clock
    time (``"2024-05-31T18:00Z"``, a ``datetime``, Unix seconds) is exact either way.

    Args:
        value: an aware or naive datetime (naive is taken as UTC), a ``datetime.date``, an ISO 8601 / human date
            string (parsed with ``dateparser``, e.g. ``"2023/05/20 (Sat) 02:21"``), or Unix seconds (int/float).
        end: return the end of a period instead of its start (for upper bounds).
        now: the moment relative words are read from (``"yesterday"``, ``"last week"``, ``"3 days ago"``); an
            aware datetime (naive is UTC); default the current time.

    Returns:
        Aware UTC datetime, or None for None.

    Raises:
        ValidationError: the value cannot be parsed (including numbers in strings such as ``"1e10"``, NaN,
            infinity, Unix seconds outside years 1-9999, and other types).
    """
    if value is None:
        return None
    period = "time"
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, date):
        dt, period = datetime.combine(value, time(0)), "day"
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        if not math.isfinite(value):
            raise ValidationError(f"cannot parse time {value!r}: not a finite number of Unix seconds")
        try:
            dt = datetime.fromtimestamp(float(value), tz=timezone.utc)
        except (OverflowError, OSError, ValueError):
            raise ValidationError(f"Unix seconds {value!r} are outside years 1-9999") from None
    elif isinstance(value, str):
        base = None if now is None else (now.astimezone(timezone.utc).replace(tzinfo=None) if now.tzinfo else now)
        dt, period = _parse_text(value, base)
        dt = _period_start(dt, period)
    else:
        raise ValidationError(f"cannot parse time {value!r}")
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    try:
        dt = dt.astimezone(timezone.utc)
    except (OverflowError, ValueError):
        raise ValidationError(f"time {value!r} is outside years 1-9999 in UTC") from None
    return _period_end(dt, period) if end else dt


def to_db_time(value: datetime | date | str | int | float, *, end: bool = False) -> str:
    """Format a time for storage or comparison: ``YYYY-MM-DDTHH:MM:SS.ffffff+00:00`` in UTC.

    Args:
        value: anything :func:`parse_time` accepts (not None). end: as for :func:`parse_time`.

    Returns:
        The ISO 8601 text.

    Raises:
        ValidationError: as :func:`parse_time`.
    """
    dt = parse_time(value, end=end)
    if dt is None:
        raise ValidationError("a time is required, got None")
    return dt.isoformat(timespec="microseconds")


def from_db_time(text: str | None) -> datetime | None:
    """Parse a stored time back into an aware UTC datetime."""
    if text is None:
        return None
    return datetime.fromisoformat(text)
