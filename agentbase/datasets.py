"""Loaders for the public conversation benchmarks and their ingestion through the public API.

LongMemEval (Wu et al., 2024, MIT): a JSON list (optionally ``.xz``) of questions, each with a haystack of dated
sessions. LoCoMo (Maharana et al., ACL 2024, CC BY-NC 4.0): a JSON list of conversations with dated sessions and QA.
Neither file ships with AgentBase; pass their paths (the project's development split lives in ``../shared/data/``).
"""

from __future__ import annotations

import json
import lzma
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .timeutil import parse_time

__all__ = ["Conversation", "SessionData", "ingest_conversation", "load_json", "locomo_conversations",
           "longmemeval_conversation", "parse_locomo_date"]


@dataclass
class SessionData:
    """One dated session: ``turns`` are dicts with ``role``, ``content`` and optional ``name``/``metadata``."""

    session_id: str
    date: datetime
    turns: list[dict[str, Any]]


@dataclass
class Conversation:
    """A multi-session conversation plus benchmark questions (``qa``)."""

    conversation_id: str
    sessions: list[SessionData]
    qa: list[dict[str, Any]] = field(default_factory=list)
    user_id: str = "user"


def load_json(path: str | Path) -> Any:
    """Read a JSON file, transparently decompressing ``.xz``.

    Raises:
        ConfigError: the file is missing or not JSON.
    """
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"data file not found: {p}")
    opener = lzma.open if p.suffix == ".xz" else open
    try:
        with opener(p, "rt", encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, json.JSONDecodeError, lzma.LZMAError) as exc:
        raise ConfigError(f"cannot read {p}: {exc}") from exc


def longmemeval_conversation(record: dict[str, Any]) -> Conversation:
    """Turn one LongMemEval question record into a :class:`Conversation` (its haystack) with one QA item.

    Turn metadata keeps ``has_answer`` and the turn index so benchmarks can score turn-level recall. Turns of a
    session get increasing timestamps (one second apart) from the session date.
    """
    sessions = []
    for sid, date, turns in zip(record["haystack_session_ids"], record["haystack_dates"],
                                record["haystack_sessions"]):
        base = parse_time(date)
        sessions.append(SessionData(sid, base, [
            {"role": t["role"], "content": t["content"], "created_at": base + timedelta(seconds=i),
             "metadata": {"turn_index": i, "has_answer": bool(t.get("has_answer"))}}
            for i, t in enumerate(turns)]))
    qa = {k: record[k] for k in ("question_id", "question_type", "question", "answer", "question_date",
                                  "answer_session_ids")}
    return Conversation(record["question_id"], sessions, [qa])


_LOCOMO_DATE = re.compile(r"(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+(\w+),?\s+(\d{4})", re.I)


def parse_locomo_date(text: str) -> datetime:
    """Parse LoCoMo's ``"1:56 pm on 8 May, 2023"`` as UTC.

    Raises:
        ValidationError: unparseable text.
    """
    m = _LOCOMO_DATE.search(text)
    if m:
        hour, minute, ampm, day, month, year = m.groups()
        text = f"{day} {month} {year} {int(hour) % 12 + (12 if ampm.lower() == 'pm' else 0):02d}:{minute}"
    parsed = parse_time(text)
    assert parsed is not None
    return parsed


def locomo_conversations(data: list[dict[str, Any]]) -> Iterator[Conversation]:
    """Yield one :class:`Conversation` per LoCoMo sample; speakers become message names.

    Both speakers are people, so both get role ``user`` with their name as the message ``name``; image captions are
    appended as ``[image: caption]``. Turn metadata keeps the ``dia_id`` for evidence scoring.
    """
    for sample in data:
        conv = sample["conversation"]
        keys = sorted((k for k in conv if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k.split("_")[1]))
        sessions = []
        for key in keys:
            date = parse_locomo_date(conv.get(f"{key}_date_time", ""))
            turns = []
            for i, t in enumerate(conv[key]):
                text = t.get("text", "")
                if t.get("blip_caption"):
                    text = f"{text} [image: {t['blip_caption']}]"
                turns.append({"role": "user", "content": text,
                              "name": t.get("speaker"), "created_at": date + timedelta(seconds=i),
                              "metadata": {"dia_id": t.get("dia_id")}})
            sessions.append(SessionData(f"{sample.get('sample_id', 'conv')}:{key}", date, turns))
        yield Conversation(sample.get("sample_id", "conv"), sessions, sample.get("qa", []))


async def ingest_conversation(db: Any, conv: Conversation, *, user_id: str | None = None) -> dict[str, int]:
    """Write every session of ``conv`` through the public API (create, add_messages, commit).

    Args:
        db: an :class:`~agentbase.AgentBase`.
        conv: the conversation.
        user_id: owner id (default ``conv.user_id``).

    Importing the same conversation again adds nothing: a session that already holds messages is not written
    again (only committed, which stores what an interrupted import left uncommitted) and is counted in
    ``sessions_existing``.

    Returns:
        ``{"sessions": n, "messages": n, "entries": n, "sessions_existing": n}``: sessions, messages and entries
        written by this call.
    """
    owner = user_id or conv.user_id
    counts = {"sessions": 0, "messages": 0, "entries": 0, "sessions_existing": 0}
    for s in conv.sessions:
        if await db.get_session(s.session_id) is not None and await db.get_messages(s.session_id, limit=1):
            counts["sessions_existing"] += 1
        else:
            await db.create_session(session_id=s.session_id, user_id=owner, created_at=s.date,
                                    metadata={"source_session_id": s.session_id, "date": s.date.isoformat()})
            if s.turns:
                await db.add_messages(s.session_id, [
                    {k: v for k, v in t.items() if k in ("role", "content", "name", "created_at", "metadata")}
                    for t in s.turns if isinstance(t.get("content"), str)])
            counts["sessions"] += 1
        result = await db.commit_session(s.session_id)
        counts["messages"] += result["messages"]
        counts["entries"] += result["turns"] + result["facts_added"] + (1 if result["summary_id"] else 0)
    return counts
