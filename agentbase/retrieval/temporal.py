"""Temporal expressions in a query -> a ``date_from``/``date_to`` filter (ARCHITECTURE.md section 6, step 2).

Precompiled regexes (English, Chinese) find the expressions; ``dateparser`` only parses numeric dates such as
``5/3/2023`` (``dateparser.search`` is slow and finds "dates" in ordinary words). Rules, relative to
``reference_time`` in its own time zone (naive means UTC); results are UTC and both bounds **inclusive**, like
:class:`~agentbase.retrieval.filters.Filters` (a period ends 1 us before the next one starts):

* ISO weeks (Monday first). "last week"/上周, "last month"/上个月: the previous calendar week/month ("last
  week" at Sat 2023-05-20 = Mon 05-08 00:00 .. Sun 05-14 23:59:59.999999). "N days (weeks, months) ago": the
  calendar unit holding ``ref - N units``; "a few", "several", "a couple of", 几: fuzzy, 2-5, 3-7, 1-3 units.
  "last Saturday" or a bare weekday: the latest such day before today; 上周六: Saturday of the previous
  calendar week. "in May": the latest May that has begun. "2023-12" (ISO 8601 year-month) and "2023/12": that
  month.
* Rolling windows end at ``reference_time``: "the past 3 days", 最近三天, "recently"/最近 (:data:`RECENT_DAYS`
  days). "since/after X": X .. ref (an "after" date past ref: X .. the far future); "before/until X": 1970 (year 1
  for X before 1970) .. X; several: hull, intersected with those.
* A query that names a calendar date as a point or an end ("on 3 June, 2023", "before April 10, 2023") reads its
  relative words from that date instead of ``reference_time``: "last weekend before April 10, 2023" is 8-9 April.
* Never raises: a date or reference time at the edge of datetime's range (years 1-9999), or numerals the rules
  cannot read, give no match.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

__all__ = ["RECENT_DAYS", "TimeRange", "has_time_expression", "parse_time_range"]

RECENT_DAYS = 14  #: days that "recently"/"lately"/最近 cover (our choice: no standard exists)
_DP = {"PREFER_DATES_FROM": "past", "RETURN_AS_TIMEZONE_AWARE": True}  # dateparser settings
_EPOCH, _US = datetime(1970, 1, 1, tzinfo=timezone.utc), timedelta(microseconds=1)


@dataclass(frozen=True, slots=True)
class TimeRange:
    """A date filter parsed from a query.

    Attributes:
        date_from: inclusive lower bound, aware UTC datetime.
        date_to: inclusive upper bound, aware UTC datetime (the last microsecond of the period).
        matched_text: the first (leftmost) temporal expression as written, including its since/before word.
        granularity: ``day``, ``week``, ``weekend``, ``month``, ``year``, ``window``, ``open`` or ``span``.
        spans: ``(start, end)`` character offsets of every expression in the query (to strip them).
        absolute: whether an expression names a calendar date that any reference time reads the same way
            ("on 3 June, 2023", "two weeks before August 11, 2023"); ``False`` for relative words alone
            ("recently", "last weekend", "in June").
    """

    date_from: datetime
    date_to: datetime
    matched_text: str
    granularity: str = "day"
    spans: tuple[tuple[int, int], ...] = ()
    absolute: bool = False


_MONTHS = "january february march april may june july august september october november december".split()
_MON = {m: i + 1 for i, m in enumerate(_MONTHS)} | {m[:3]: i + 1 for i, m in enumerate(_MONTHS)} | {"sept": 9}
_MON_ANY, _MON_FULL = "|".join(sorted(_MON, key=len, reverse=True)), "|".join(_MONTHS) + "|sept"
_EN_N = dict(zip("a an one two three four five six seven eight nine ten eleven twelve".split(),
                 [1, 1, *range(1, 13)], strict=True))
_FUZZY = {"couple": (1, 3), "few": (2, 5), "several": (3, 7), "几": (2, 5)}
_NUM = r"\d{1,3}|" + "|".join(_EN_N) + r"|(?:a\s+)?couple(?:\s+of)?|(?:a\s+)?few|several"
_WD, _UNIT = "monday tuesday wednesday thursday friday saturday sunday".split(), "(day|week|month|year)"
_ZH_D = dict(zip("零〇一二两三四五六七八九", [0, 0, 1, 2, 2, 3, 4, 5, 6, 7, 8, 9], strict=True))
_ZH_UNIT = dict(天="day", 日="day", 周="week", 星期="week", 礼拜="week", 月="month", 年="year")
_ZN, _ZU = r"\d{1,2}|[零〇一二两三四五六七八九十]{1,3}", "(天|日|周|星期|礼拜|月|年)"
_OFF = {"上上": -2, "上": -1, "这": 0, "本": 0, "下": 1, "去": -1, "今": 0, "明": 1, "前": -2, "last": -1,
        "previous": -1, "this": 0, "current": 0, "next": 1, "coming": 1, "past": None}
# Words, CJK characters and date-like numbers one of which every expression contains (a cheap pre-check).
_TRIG = frozenset("day days week weeks weekend month months year years yesterday today tonight tomorrow "
                  "night morning afternoon evening recently lately late recent ago".split() + _WD + [*_MON])
_ZHT, _NRE, _WORD = frozenset("天日周期拜月年晚早近"), re.compile(r"\d/\d|[12]\d{3}"), re.compile("[a-z]+")
_RELDAY = {"the day before yesterday": -2, "yesterday": -1, "last night": -1, "tomorrow": 1, "大前天": -3,
           "前天": -2, "昨天": -1, "昨日": -1, "昨晚": -1, "明天": 1, "后天": 2}  # days; today, 今天 ...: 0


def _zh_int(s: str) -> int:
    if s.isdigit() or "十" not in s:
        return int(s if s.isdigit() else "".join(str(_ZH_D[c]) for c in s))
    tens, _, units = s.partition("十")
    return (_ZH_D[tens[-1]] if tens else 1) * 10 + (_ZH_D[units[0]] if units else 0)


def _count(token: str) -> tuple[int, int]:  # (fewest, most) units
    t = token.lower()
    return next((b for k, b in _FUZZY.items() if k in t), None) or (_EN_N.get(t) or _zh_int(t),) * 2


def _start(ref: datetime, unit: str) -> datetime:
    d = ref.replace(hour=0, minute=0, second=0, microsecond=0)
    return {"week": d - timedelta(days=d.weekday()), "month": d.replace(day=1),
            "year": d.replace(month=1, day=1)}.get(unit, d)


def _add(dt: datetime, unit: str, n: int) -> datetime:
    if unit in ("day", "week"):
        return dt + timedelta(days=n * (7 if unit == "week" else 1))
    m = dt.month - 1 + n * (12 if unit == "year" else 1)
    y, m = dt.year + m // 12, m % 12 + 1
    return dt.replace(year=y, month=m, day=min(dt.day, calendar.monthrange(y, m)[1]))


def _units(ref: datetime, unit: str, lo: int, hi: int):  # calendar units lo..hi away (0: the one holding ref)
    s = _start(ref, unit)
    return _add(s, unit, lo), _add(s, unit, hi + 1), unit


def _period(ref: datetime, off: int | None, unit: str):  # calendar unit off away; None: rolling past one
    if unit == "weekend":
        s = _start(ref, "week") + timedelta(days=5 + 7 * (-1 if off is None else off))
        return s, s + timedelta(days=2), "weekend"
    return (_add(ref, unit, -1), ref + _US, "window") if off is None else _units(ref, unit, off, off)


def _weekday(ref: datetime, wd: int, off: int | None):
    """Weekday ``wd`` (0 = Monday) of the week ``off`` weeks away; ``None``: the latest one before today."""
    d = _start(ref, "day")
    d += timedelta(days=-((d.weekday() - wd) % 7 or 7) if off is None else 7 * off + wd - d.weekday())
    return d, d + timedelta(days=1), "day"


def _day(ref: datetime, y: int | None, mo: int, d: int = 0):
    """Day ``d`` (the whole month when 0) of month ``mo`` of year ``y``; no year: the latest one begun."""
    y = y or (ref.year if (mo, d or 1) <= (ref.month, ref.day) else ref.year - 1)
    if not (1 <= mo <= 12 and d <= calendar.monthrange(y, mo)[1]):
        return None
    s = ref.replace(year=y, month=mo, day=d or 1, hour=0, minute=0, second=0, microsecond=0)
    return (s, s + timedelta(days=1), "day") if d else (s, _add(s, "month", 1), "month")


def _month(m, ref: datetime):
    mo, pre = _MON[m["mon"].lower()], (m["pre"] or "").lower()
    if m["year"] or pre not in ("this", "next", "last"):
        return _day(ref, int(m["year"]) if m["year"] else None, mo)
    return _day(ref, ref.year + {"this": 0, "next": mo <= ref.month, "last": -(mo >= ref.month)}[pre], mo)


def _month_range(m, ref: datetime):
    mo1, end = _MON[m["m1"].lower()], _day(ref, int(m["y2"]) if m["y2"] else None, _MON[m["m2"].lower()])
    y1 = int(m["y1"]) if m["y1"] else end[0].year - (mo1 > end[0].month)
    return _day(ref, y1, mo1)[0], end[1], "span"


def _numeric_date(m, ref: datetime):
    import dateparser  # lazy: ~0.1 s to import, and only numeric dates need it
    dt = dateparser.parse(m[0], languages=["en"], settings={"RELATIVE_BASE": ref.replace(tzinfo=None), **_DP})
    return _day(ref, dt.year, dt.month, dt.day) if dt else None


_PATTERNS = [(re.compile(p, re.IGNORECASE), fn) for p, fn in [
    (r"\b(?:the day before yesterday|yesterday|last night|today|tonight|this (?:morning|afternoon|evening)"
     r"|tomorrow)\b|大前天|前天|昨天|昨日|昨晚|今天|今日|今晚|今早|明天|后天",
     lambda m, r: _units(r, "day", *[_RELDAY.get(" ".join(m[0].lower().split()), 0)] * 2)),
    (r"\b(last|previous|past|this|current|next|coming|earlier\s+this)\s+(week|weekend|month|year)\b",
     lambda m, r: _period(r, _OFF[m[1].lower().split()[-1]], m[2].lower())),
    (r"\bthe\s+(day|week|month|year)\s+before\s+last\b", lambda m, r: _units(r, m[1].lower(), -2, -2)),
    (rf"\b({_NUM})\s+{_UNIT}s?\s+ago\b",
     lambda m, r: _units(r, m[2].lower(), *sorted(-n for n in _count(m[1])))),
    (rf"\b(?:(?:in|over|during|within)\s+)?(?:the\s+)?(?:last|past|previous)\s+({_NUM})\s+{_UNIT}s?\b",
     lambda m, r: (_add(r, m[2].lower(), -_count(m[1])[1]), r + _US, "window")),
    (r"\b(?:(?<!most )recently|lately|of\s+late|in\s+recent\s+(?:days|weeks))\b|最近|近来|近期|近日|这几天",
     lambda m, r: (r - timedelta(days=RECENT_DAYS), r + _US, "window")),
    (rf"\b(?:(last|previous|this\s+past|past|this|next|coming|on)\s+)?({'|'.join(_WD)})\b",
     lambda m, r: _weekday(r, _WD.index(m[2].lower()), {"this": 0, "coming": 0, "next": 1}.get(
         (m[1] or "").lower()))),
    (rf"\b(?:on\s+)?(?:({_MON_ANY})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?|(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?"
     rf"({_MON_ANY})\b\.?)(?:,?\s+(\d{{4}}))?\b(?!:)", lambda m, r: _day(
         r, int(m[5]) if m[5] else None, _MON[(m[1] or m[4]).lower()], int(m[2] or m[3]))),
    (rf"\b(?P<pre>in|during|since|after|before|until|till|from|of|early|late|mid|throughout|last|this|next)"
     rf"(?:\s+|-)(?P<mon>{_MON_FULL})\b(?!\.?\s+\d{{1,2}}(?:st|nd|rd|th)?\b)(?:,?\s+(?:of\s+)?(?P<year>\d{{4}})\b)?",
     _month),
    (rf"\b(?:(?:between|from|in|during)\s+)?(?P<m1>{_MON_FULL})(?:\s+(?P<y1>\d{{4}}))?\s*(?:-|–|to|through"
     rf"|till|until|and)\s*(?P<m2>{_MON_FULL})\b(?:,?\s+(?P<y2>\d{{4}})\b)?", _month_range),
    (rf"\b(?P<pre>)(?P<mon>{_MON_ANY})\.?,?\s+(?P<year>(?:19|20)\d{{2}})\b", _month),
    (r"\b(?:in|during|since|after|before|until|till|from|throughout)\s+((?:19|20)\d{2})\b(?![-/.]\d)"
     r"|((?:19|20)\d{2})年", lambda m, r: _units(r.replace(year=int(m[1] or m[2]), month=1), "year", 0, 0)),
    (r"\b((?:19|20)\d{2})[-/.](\d{1,2})[-/.](\d{1,2})\b", lambda m, r: _day(r, *map(int, m.groups()))),
    # ISO 8601's calendar month (YYYY-MM, "2023-12"; also 2023/12); not a day, which the pattern above reads
    (r"\b((?:19|20)\d{2})[-/](0?[1-9]|1[0-2])\b(?![-/.]\d)", lambda m, r: _day(r, int(m[1]), int(m[2]))),
    (r"\b\d{1,2}/\d{1,2}/(?:\d{4}|\d{2})\b", _numeric_date),
    (r"(上上|上|这|本|下)一?个?(周末|周|星期|礼拜|月)",
     lambda m, r: _period(r, _OFF[m[1]], "weekend" if m[2] == "周末" else _ZH_UNIT[m[2]])),
    (r"(去|今|明|前)年", lambda m, r: _units(r, "year", *[_OFF[m[1]]] * 2)),
    (rf"({_ZN}|几)个?{_ZU}(?:之|以)?前|前(几)(天)",
     lambda m, r: _units(r, _ZH_UNIT[m[2] or m[4]], *sorted(-n for n in _count(m[1] or m[3])))),
    (rf"(?:最近|过去|近)的?({_ZN}|几)个?{_ZU}",
     lambda m, r: (_add(r, _ZH_UNIT[m[2]], -_count(m[1])[1]), r + _US, "window")),
    (r"(上上|上|这|本|下)?个?(?:周|星期|礼拜)([一二三四五六日天1-7])", lambda m, r: _weekday(
        r, ("一二三四五六日1234567".find(m[2]) if m[2] != "天" else 6) % 7, _OFF.get(m[1]))),
    (rf"(?:((?:19|20)\d{{2}}|[零〇一二三四五六七八九]{{4}}|去|今|明|前)年)?({_ZN})月(?:({_ZN})[日号])?",
     lambda m, r: _day(r, m[1] and (r.year + _OFF[m[1]] if m[1] in _OFF else _zh_int(m[1])), _zh_int(m[2]),
                       _zh_int(m[3] or "0"))),
]]
_MOD_BEFORE = re.compile(r"\b(since|after|before|until|till|prior\s+to)\s+$", re.IGNORECASE)
_MOD_HEAD = re.compile(r"(since|after|before|until|till)\b", re.IGNORECASE)
# "the week before June 10, 2023", "two weeks before ...", "3 days after ...": a period that far from the date
_OFFSET = re.compile(rf"\b(the|a|an|{_NUM})\s+{_UNIT}s?\s+(before|after|prior\s+to)\s+$", re.IGNORECASE)
_MOD_ZH = re.compile(r"\s*(以来|之后|以后|之前|以前)")
_MOD_KIND = {"以来": "since", "之后": "after", "以后": "after", "之前": "before", "以前": "before",
             "prior": "before", "till": "until"}


_FIRST = datetime(1, 1, 2, tzinfo=timezone.utc)  # the earliest open start (a day in, so any time zone can hold it)
_SHIFT = timedelta(days=400)  # moves every relative expression (a day, week, month and year all differ)


def _offset(m: re.Match, res):
    """The period ``m`` ("two weeks before") names from a date's range ``res``: the unit that lies N units before
    the date's start or after its end ("the week before June 10" is June 3-9, "3 days after June 3" June 6); a
    fuzzy count spans its units ("a few days before June 10" is June 5-8)."""
    if res is None:
        return None
    fewest, most = (1, 1) if m[1].lower() in ("the", "a", "an") else _count(m[1])  # "a few": 2 to 5
    unit = m[2].lower()
    if m[3].lower() == "after":
        return _add(res[1], unit, fewest - 1), _add(res[1], unit, most), unit
    return _add(res[0], unit, -most), _add(res[0], unit, 1 - fewest), unit


def _evaluate(i: int, m: re.Match, ref: datetime):
    try:  # a date outside datetime's range (years 1-9999), or numerals the rules cannot read, count as no match
        return _PATTERNS[i][1](m, ref)
    except (ValueError, OverflowError, KeyError):
        return None


def has_time_expression(query: str) -> bool:
    """Return whether a query holds a temporal expression this module recognises.

    Args:
        query: any text.

    Returns:
        Whether a pattern matches; a set lookup of trigger words rejects most queries first (~3 us).
    """
    if _ZHT.isdisjoint(query) and _TRIG.isdisjoint(_WORD.findall(query.lower())) and not _NRE.search(query):
        return False
    return any(rx.search(query) for rx, _ in _PATTERNS)


def parse_time_range(query: str, reference_time: datetime) -> TimeRange | None:
    """Parse the temporal expressions of an English or Chinese query into an inclusive date range.

    Args:
        query: the user's query, e.g. ``"what did I do last week"`` or ``"我昨天吃了什么"``.
        reference_time: "now" for the query (aware; naive is taken as UTC). Calendar days, weeks (Monday
            first), months and years are computed in its time zone.

    Returns:
        A :class:`TimeRange` with inclusive aware-UTC bounds (rules in the module docstring; where two
        expressions overlap the longer wins), or ``None`` when the query has no recognised expression.
    """
    if not has_time_expression(query):
        return None
    ref = reference_time if reference_time.tzinfo else reference_time.replace(tzinfo=timezone.utc)
    try:
        return _parse(query, ref)
    except OverflowError:  # a reference time or date at the edge of datetime's range (years 1-9999)
        return None


def _parse(query: str, ref: datetime) -> TimeRange | None:
    found = sorted((m.start(), -len(m[0]), i, m) for i, (rx, _) in enumerate(_PATTERNS)
                   for m in rx.finditer(query))
    other = ref - _SHIFT if ref.year > 5000 else ref + _SHIFT
    kept, last_end = [], -1  # [start, pattern, match, (lo, hi, granularity), absolute, modifier kind]
    for start, _, i, m in found:
        res = None if start < last_end else _evaluate(i, m, ref)
        if res is None:
            continue
        zh, head = _MOD_ZH.match(query, m.end()), _MOD_HEAD.match(m[0])
        offset = None if zh or head else _OFFSET.search(query, max(0, start - 40), start)
        if offset:  # a period N units from the date: a plain range, absolute when the date is
            res, alt = _offset(offset, res), _offset(offset, _evaluate(i, m, other))
            kept.append([offset.start(), i, m, res, res == alt, None, m.end()])
            last_end = m.end()
            continue
        pre = None if zh or head else _MOD_BEFORE.search(query, max(0, start - 12), start)
        mod = head or zh or pre
        kind = _MOD_KIND.get(w := mod[1].lower().split()[0], w) if mod else None
        # An expression is absolute when another reference time gives it the same range ("on 3 June, 2023").
        kept.append([pre.start() if pre else start, i, m, res, res == _evaluate(i, m, other), kind,
                     zh.end() if zh else m.end()])
        last_end = zh.end() if zh else m.end()
    # A weekday written with the date it names ("on Saturday, June 3, 2023") is that day's name, not a day of
    # its own.
    days = [k for k in kept if k[4] and k[3][2] == "day"]
    kept = [k for k in kept if k[4] or k[2][0].lower().removeprefix("on ").strip() not in _WD
            or not any(re.fullmatch(r"[\s,(]{0,3}", query[a:b]) for d in days
                       for a, b in ((k[6], d[0]), (d[6], k[0])) if a <= b)]
    # Relative words are read from the latest date the question names as a point or an end ("last weekend before
    # April 10, 2023" is the weekend before that day, "recently, as mentioned on 3 June, 2023" the days before
    # 3 June); a since/after date starts a period that runs to the reference time, so it anchors nothing.
    anchors = [k[3][1] for k in kept if k[4] and k[5] not in ("since", "after")]
    if anchors and not all(k[4] for k in kept):
        anchor = max(anchors).astimezone(ref.tzinfo) - _US
        for k in kept:
            if not k[4]:
                k[3] = _evaluate(k[1], k[2], anchor) or k[3]
    if not kept:
        return None
    now, future = ref + _US, datetime.max.replace(tzinfo=timezone.utc) - timedelta(days=2)
    plain, bounds = [], []
    for _, _, _, (lo, hi, _), _, kind, _ in kept:
        if kind is None:
            plain.append((lo, hi))
            continue
        early = _EPOCH if lo > _EPOCH else _FIRST  # open start: 1970, or year 1 for a date before 1970
        bounds.append({"since": (lo, max(now, hi)), "after": (hi, now if now > hi else future),
                       "before": (early, lo), "until": (early, hi)}[kind])
    lo = min([p[0] for p in plain] or [b[0] for b in bounds])
    hi = max((p[1] for p in plain), default=future)
    for b_lo, b_hi in bounds:
        lo, hi = max(lo, b_lo), min(hi, b_hi)
    if lo >= hi:  # contradictory bounds: fall back to the hull of everything found
        lo, hi = min(p[0] for p in plain + bounds), max(p[1] for p in plain + bounds)
    grans = ["open" if k[5] else k[3][2] for k in kept]
    spans = tuple((k[0], k[6]) for k in kept)
    return TimeRange(lo.astimezone(timezone.utc), (hi - _US).astimezone(timezone.utc),
                     query[spans[0][0]:spans[0][1]], grans[0] if len(grans) == 1 else "span", spans,
                     any(k[4] for k in kept))
