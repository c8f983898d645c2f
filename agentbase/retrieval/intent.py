"""Rule-based query intents (en + zh) and the combined query analysis (ARCHITECTURE.md section 6, steps 1-3).

The five intents mirror the question types of LongMemEval (Wu et al. 2024, arXiv:2410.10813): temporal
reasoning, knowledge update, multi-session reasoning and single-session preference, plus ``aggregation`` for
counting/summing/listing questions. A query can have several intents or none. The rules are keyword patterns;
they decide which strategy the pipeline applies (recency half-lives, top_k boost, preference signals), so a
false positive costs a little ranking quality, never a result.

* ``aggregation``: count, sum or list ("how many", "in total", "all the", "list", 多少, 几次, 一共).
* ``multi_session``: needs facts from several conversations: every aggregation cue plus cross-session cues
  ("so far", "every time", "compared to", 每次, 所有, 到目前为止).
* ``temporal``: asks about time or order ("when", "what date", "how long ago", "before/after", "first/last
  time", 什么时候), or contains a date expression that :mod:`.temporal` recognises.
* ``knowledge_update``: asks for the current state of something that may have changed ("current", "now",
  "still", "latest", "anymore", 现在, 目前).
* ``preference``: asks for a recommendation or the user's taste ("recommend", "suggest", "favorite",
  "prefer", "what should I", 喜欢, 推荐); "recommended", "suggested" and "did you suggest" do not count: "you
  suggested ...", "what did you recommend" and "the recommended ratio" recall an earlier statement.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime, timezone
from enum import StrEnum
from typing import Any

from .decompose import keywords, sub_queries
from .temporal import TimeRange, has_time_expression, parse_time_range

__all__ = ["INTENTS", "Intent", "QueryAnalysis", "analyze_query", "detect_intents", "normalize_query"]


class Intent(StrEnum):
    """The query intents ``detect_intents`` can return (members compare equal to their string values)."""

    TEMPORAL = "temporal"
    KNOWLEDGE_UPDATE = "knowledge_update"
    MULTI_SESSION = "multi_session"
    PREFERENCE = "preference"
    AGGREGATION = "aggregation"


INTENTS: frozenset[str] = frozenset(i.value for i in Intent)

_NOT_TIME_UNIT = r"(?!\s+(?:days?|weeks?|months?|years?|hours?|minutes?)\b)"  # "how many days" is temporal
_AGGREGATION = (
    rf"\bhow\s+many\b{_NOT_TIME_UNIT}"
    r"|\bhow\s+much\b[^?.!]*\b(?:total|altogether|combined|spen[dt]|in\s+all)\b"
    r"|\b(?:in\s+total|total(?:ly)?|altogether|combined|sum\s+of|count\s+of|average|number\s+of"
    r"|list(?:\s+all)?|all\s+(?:the|of\s+the|my)|each\s+of)\b"
    r"|多少|几次|几个|几种|几本|几家|几位|一共|总共|合计|总计|平均|列出|列举|所有|全部"
)
_RULES: dict[str, re.Pattern[str]] = {
    Intent.AGGREGATION.value: re.compile(_AGGREGATION, re.IGNORECASE),
    Intent.MULTI_SESSION.value: re.compile(
        _AGGREGATION + r"|\b(?:so\s+far|every\s+time|each\s+time|(?:how\s+many|all\s+the)\s+times|across"
        r"|over\s+(?:the\s+)?(?:past|last)|compared?\s+(?:to|with)|difference\s+between"
        r"|how\s+(?:much|many)\s+more|throughout)\b|每次|每一次|到目前为止|至今|相比|区别", re.IGNORECASE),
    Intent.TEMPORAL.value: re.compile(
        r"\b(?:when|what\s+(?:date|day|time|year|month)|which\s+(?:date|day|year|month)|how\s+long"
        r"|how\s+many\s+(?:days|weeks|months|years|hours)|before|after|since|until|ago|first\s+time"
        r"|last\s+time|earliest"
        r"|(?:in\s+)?what\s+order|happened\s+first)\b|\bwhich\b[^?]*\bfirst\b"
        r"|什么时候|何时|哪天|哪一天|哪年|哪一年|几月|几号|几天|多久|多长时间"
        r"|之前|之后|以前|以后|第一次|最后一次|先后|顺序",
        re.IGNORECASE),
    Intent.KNOWLEDGE_UPDATE.value: re.compile(
        r"\b(?:current(?:ly)?|now|still|latest|most\s+recent(?:ly)?|any\s*more|at\s+the\s+moment|these\s+days"
        r"|nowadays|at\s+present|presently|up\s+to\s+date)\b"
        r"|现在|目前|当前|最新|还在|仍然|依然|如今|不再|最近一次",
        re.IGNORECASE),
    Intent.PREFERENCE.value: re.compile(
        r"\b(?:(?<!did\syou\s)recommend(?!ed\b)\w*|(?<!did\syou\s)suggest(?!ed\b)\w*|favou?rite|prefer\w*"
        r"|what\s+should\s+i|should\s+i"
        r"|any\s+(?:tips|ideas|advice)|ideas?\s+for|advice|would\s+i\s+(?:like|enjoy|love)"
        r"|do\s+i\s+(?:like|enjoy|love|hate)"
        r"|my\s+tastes?)\b|喜欢|推荐|建议|偏好|最爱|爱好|口味|我该|应该",
        re.IGNORECASE),
}


def normalize_query(query: str) -> str:
    """Normalise a query (pipeline step 1).

    Args:
        query: the raw query text.

    Returns:
        The text NFKC-normalised (full-width letters, digits and punctuation become ASCII), runs of whitespace
        collapsed to one space, ends stripped. ``""`` means "no query".
    """
    return " ".join(unicodedata.normalize("NFKC", query).split())


def detect_intents(query: str) -> set[str]:
    """Detect the intents of an English or Chinese query with keyword rules.

    Args:
        query: the user's query (normalised or not).

    Returns:
        A subset of :data:`INTENTS` as plain strings, e.g. ``detect_intents("How many books did I buy?") ==
        {"aggregation", "multi_session"}``; empty when no rule fires. ``temporal`` is also set when the query
        holds a date expression (:func:`agentbase.retrieval.temporal.has_time_expression`).
    """
    found = {name for name, rx in _RULES.items() if rx.search(query)}
    if Intent.TEMPORAL.value not in found and has_time_expression(query):
        found.add(Intent.TEMPORAL.value)
    return found


@dataclass(frozen=True)
class QueryAnalysis:
    """Everything the pipeline derives from the query text before touching the database.

    Attributes:
        query: the normalised query (:func:`normalize_query`).
        intents: detected intents (see :func:`detect_intents`).
        time_range: the date filter parsed from the query, or ``None``.
        keywords: stop-word-free keywords with the temporal expression removed (the date filter covers it).
        sub_queries: the original query first, then zero-LLM sub-queries (at most 4 in all).
        reference_time: the aware UTC "now" the time range is relative to.
    """

    query: str
    intents: frozenset[str] = frozenset()
    time_range: TimeRange | None = None
    keywords: list[str] = field(default_factory=list)
    sub_queries: list[str] = field(default_factory=list)
    reference_time: datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict (sorted intents, ISO 8601 times) for traces."""
        tr = self.time_range
        return {
            "query": self.query,
            "intents": sorted(self.intents),
            "time_range": None if tr is None else {
                "date_from": tr.date_from.isoformat(), "date_to": tr.date_to.isoformat(),
                "matched_text": tr.matched_text, "granularity": tr.granularity},
            "keywords": list(self.keywords),
            "sub_queries": list(self.sub_queries),
            "reference_time": None if self.reference_time is None else self.reference_time.isoformat(),
        }


def analyze_query(query: str, reference_time: datetime | None = None) -> QueryAnalysis:
    """Run steps 1-3 of the pipeline: normalise, detect intents, parse the time range, decompose.

    Args:
        query: the raw user query.
        reference_time: "now" for relative dates (aware; naive is taken as UTC); defaults to the current UTC
            time. Pass the conversation date to replay old questions (e.g. LongMemEval's ``question_date``).

    Returns:
        A :class:`QueryAnalysis`. A blank query gives empty intents, keywords and sub-queries and no time
        range (the pipeline then returns no results without embedding anything).
    """
    ref = reference_time or datetime.now(timezone.utc)
    ref = ref if ref.tzinfo else ref.replace(tzinfo=timezone.utc)
    text = normalize_query(query)
    if not text:
        return QueryAnalysis(query="", reference_time=ref.astimezone(timezone.utc))
    time_range = parse_time_range(text, ref)
    core = text
    for start, end in sorted(time_range.spans if time_range else (), reverse=True):
        core = core[:start] + " " + core[end:]
    subs = [text] + [s for s in sub_queries(core)[1:] if s.casefold() != text.casefold()]
    return QueryAnalysis(
        query=text,
        intents=frozenset(detect_intents(text)),
        time_range=time_range,
        keywords=keywords(core),
        sub_queries=subs[:4],
        reference_time=ref.astimezone(timezone.utc),
    )
