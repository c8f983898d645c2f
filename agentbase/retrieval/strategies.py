"""Query-type strategies (step 7) and session co-retrieval (step 8).

Each strategy multiplies candidate scores; the multipliers are documented here and their half-lives live in
:class:`~agentbase.config.RetrievalSettings`.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from datetime import datetime
from typing import Any

from .fusion import norm_name
from .rerank import freshness

__all__ = ["addresses_assistant", "apply_strategies", "asks_question", "assistant_turns", "co_retrieval",
           "continuations", "only_asks", "reply_scores", "speaker_boost"]

PREFERENCE_CATEGORIES = frozenset({"preference", "profile"})


def apply_strategies(cands: dict[int, dict[str, Any]], analysis: Any, now: datetime, cfg: Any) -> list[str]:
    """Shape scores by query type, in place.

    - temporal with a parsed range: entries whose time falls inside ``[date_from, date_to]`` x1.5; with no range,
      a recency factor ``0.8 + 0.2 * 0.5 ** (age / temporal_half_life_days)``.
    - knowledge_update: recency factor ``0.7 + 0.3 * 0.5 ** (age / knowledge_update_half_life_days)`` so the
      latest value of a changing fact wins (superseded facts are already filtered out).
    - preference: entries with category ``preference``/``profile`` x1.2 (the fusion step before also weights the
      vector leg with ``weight_vector_preference`` instead of ``weight_vector`` for these queries).
    - aggregation / multi_session: handled by widening the candidate pool (``aggregation_top_k_factor``).

    Args:
        cands: rowid -> candidate dict with ``entry``, ``score``, ``parts``.
        analysis: the query analysis (``intents``, ``time_range``).
        now: reference time (UTC).
        cfg: retrieval settings.

    Returns:
        Names of the strategies applied.
    """
    applied: list[str] = []
    intents = analysis.intents
    tr = analysis.time_range
    if tr is not None:
        applied.append("time_range")
        for c in cands.values():
            e = c["entry"]
            t = e.event_time or e.created_at
            if tr.date_from <= t <= tr.date_to:
                c["score"] *= 1.5
                c["parts"]["time_range_boost"] = 1.5
    elif "temporal" in intents:
        applied.append("temporal_recency")
        _recency(cands, now, cfg.temporal_half_life_days, 0.8, "temporal_recency")
    if "knowledge_update" in intents:
        applied.append("knowledge_update")
        _recency(cands, now, cfg.knowledge_update_half_life_days, 0.7, "update_recency")
    if "preference" in intents:
        applied.append("preference")
        for c in cands.values():
            if c["entry"].category in PREFERENCE_CATEGORIES:
                c["score"] *= 1.2
                c["parts"]["preference_boost"] = 1.2
    return applied


def _recency(cands: dict[int, dict[str, Any]], now: datetime, half_life: float, floor: float, name: str) -> None:
    for c in cands.values():
        e = c["entry"]
        factor = floor + (1.0 - floor) * freshness(e.event_time or e.created_at, now, half_life)
        c["score"] *= factor
        c["parts"][name] = factor


def co_retrieval(cands: dict[int, dict[str, Any]], min_hits: int = 2, boost: float = 1.1) -> int:
    """Boost candidates from sessions that contribute at least ``min_hits`` candidates among the top 50.

    A session that several independent hits point to is likely the one the question is about (the
    ``session_memory_links`` of those entries name it).

    Returns:
        Number of candidates boosted.
    """
    top = sorted(cands.values(), key=lambda c: -c["score"])[:50]
    per_session = Counter(c["entry"].session_id for c in top if c["entry"].session_id)
    boosted = 0
    for c in cands.values():
        sid = c["entry"].session_id
        if sid and per_session.get(sid, 0) >= min_hits:
            c["score"] *= boost
            c["parts"]["co_retrieval"] = boost
            boosted += 1
    return boosted


def asks_question(text: str) -> bool:
    """Whether a turn ends by asking something (its last non-space character is ``?`` or ``？``)."""
    return text.rstrip()[-1:] in ("?", "？")


_SENTENCE = re.compile(r"[^.!?。！？]+[.!?。！？]*")


def only_asks(text: str, max_statement_chars: int) -> bool:
    """Whether a turn only asks something: it ends with a question mark (before any bracketed notes such as
    ``[image: caption]``, which chat exports append for attachments) and its sentences that do not end with one
    hold fewer than ``max_statement_chars`` characters in all ("Wow, Mel! What got you into running?").

    Such turns are rarely the answer to a question about the conversation: on LoCoMo's development split, with
    60 characters, 12 % of all turns and 2 % of evidence turns; on LongMemEval_S's, 22 % of user turns and 2.4 %
    of answer turns (docs/benchmarks.md). A turn that tells something at some length before asking ("I adopted a
    greyhound from the shelter near my office last month. Any tips on crate training?") does not count.

    Args:
        text: the turn's text.
        max_statement_chars: the statement characters (stripped sentences) below which the turn counts.

    Returns:
        True for a turn that only asks.
    """
    text = _strip_trailing_notes(text)
    if not asks_question(text):
        return False
    told = 0
    for m in _SENTENCE.finditer(text):  # stops at the first max_statement_chars characters of statements
        sentence = m.group().strip()
        if not asks_question(sentence):
            told += len(sentence)
            if told >= max_statement_chars:
                break
    return told < max_statement_chars


def _strip_trailing_notes(text: str) -> str:
    """``text`` without the bracketed notes that end it ("... coming up? [image: a photo]" -> "... coming up?").

    A loop rather than a regular expression: a pattern anchored at the end backtracks from every ``[`` of a text
    that does not end in a whole note, quadratic in its length (5.7 s for 48 KB of "[a]" ending in "x]").
    Each step reads only the note it removes, so the whole is linear."""
    text = text.rstrip()
    while text.endswith("]"):
        start = text.rfind("[")
        if start < 0 or "]" in text[start + 1:-1]:
            break
        text = text[:start].rstrip()
    return text


def speaker_boost(cands: dict[int, dict[str, Any]], query_entities: set[str], boost: float, *,
                  user_turns: bool = False) -> int:
    """Multiply by ``boost`` the turns spoken by a person the query names (case-insensitive), in place.

    In a conversation between people, a question about one of them ("What books has Melanie read?") is answered
    by what that person said; the other speaker's turns that mention them ("Wow, Melanie! Which one?") match the
    same words. Only turns carry a speaker (the entry's ``name``); other entries are unchanged.

    Args:
        cands: rowid -> candidate dict with ``entry``, ``score``, ``parts``.
        query_entities: the query's entity names; compared with :func:`~.fusion.norm_name`, as the NER boost does.
        boost: the multiplier (1.0 changes nothing).
        user_turns: the query names the user (:func:`~.names.owner_names`): the user's unnamed turns (role
            ``user``, no speaker name) are spoken by that person too.

    Returns:
        Number of candidates boosted.
    """
    names = {n for n in map(norm_name, query_entities) if n}
    if boost == 1.0 or not (names or user_turns):
        return 0
    boosted = 0
    for c in cands.values():
        e = c["entry"]
        if e.category != "turn":
            continue
        if (e.name and norm_name(e.name) in names) or (user_turns and not e.name and e.role() == "user"):
            c["score"] *= boost
            c["parts"]["speaker_boost"] = boost
            boosted += 1
    return boosted


def reply_scores(cands: dict[int, dict[str, Any]], replies: dict[int, int], boost: float) -> dict[int, float]:
    """Scores the replies to the best question turns earn: ``boost`` x the question's score.

    A question turn that matches the query well is often not the evidence itself; the turn that answers it is
    (in LoCoMo, "How long have you been married?" is followed by "5 years already!"). The reply's own key holds
    the question as context (``ingest.turn_context_chars``), but its answer words dilute that match.

    The pipeline uses the same arithmetic for continuations (:func:`continuations`: source turn -> its speaker's
    next turn, with ``retrieval.continuation_boost``).

    Args:
        cands: rowid -> candidate dict (``score`` is read).
        replies: question rowid -> rowid of the next turn of its session.
        boost: the share of the question's score the reply gets (0..1).

    Returns:
        reply rowid -> earned score (the best over its questions); the caller keeps the higher of this and the
        reply's own score.
    """
    out: dict[int, float] = {}
    for q_rid, r_rid in replies.items():
        earned = boost * cands[q_rid]["score"]
        if earned > out.get(r_rid, 0.0):
            out[r_rid] = earned
    return out


def continuations(cands: dict[int, dict[str, Any]], speakers: list[int],
                  following: dict[int, list[tuple[bool, int]]], views: dict[int, Any]) -> dict[int, int]:
    """The same speaker's next turn after each of ``speakers``: the first of the (at most two) turns that follow it
    in its session with the same ``name`` and role.

    People go on with what they started after the other side's short answer ("Last week we went to a military
    memorial with my kids." - "How did they react?" - "They were awestruck and humbled."); the continuation often
    shares no word with a question about it, and the turn in between often holds only a pronoun.

    Args:
        cands: rowid -> candidate dict (``entry`` is read for the source's speaker).
        speakers: rowids of the source turns.
        following: source rowid -> ``(is_next_turn, rowid)`` of the turns after it that the query may see.
        views: rowid -> ``EntryView`` of every turn in ``following``.

    Returns:
        source rowid -> rowid of its continuation (sources without one are left out).
    """
    out: dict[int, int] = {}
    for src in speakers:
        e = cands[src]["entry"]
        for _, rid in sorted(following.get(src, ()), key=lambda t: not t[0]):
            if views[rid].name == e.name and views[rid].role() == e.role():
                out[src] = rid
                break
    return out


_SECOND_PERSON = re.compile(r"\b(?:you|your|yours|yourself|yourselves)\b|[你您妳]", re.IGNORECASE)


def addresses_assistant(query: str) -> bool:
    """Whether a query speaks to the assistant in the second person ("you", "your", 你, 您, 妳; NFKC-folded like
    indexed text, so full-width letters count), as questions about what the assistant said do ("Can you remind me
    which hotel you recommended?").

    Args:
        query: the query text.

    Returns:
        True when a second-person word occurs.
    """
    return _SECOND_PERSON.search(unicodedata.normalize("NFKC", query)) is not None


def assistant_turns(cands: dict[int, dict[str, Any]], factor: float) -> int:
    """Multiply the score of every candidate that is an assistant's turn (role ``assistant`` in its metadata) by
    ``factor``, recorded in its ``parts`` as ``assistant_turn``; the caller skips this for queries that
    :func:`addresses_assistant`.

    Args:
        cands: rowid -> candidate dict with ``entry`` (an ``EntryView``), ``score``, ``parts``.
        factor: the multiplier (``retrieval.assistant_turn_factor``).

    Returns:
        Number of candidates multiplied.
    """
    n = 0
    for c in cands.values():
        if c["entry"].category == "turn" and c["entry"].role() == "assistant":
            c["score"] *= factor
            c["parts"]["assistant_turn"] = factor
            n += 1
    return n
