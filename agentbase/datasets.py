"""Loaders for the public conversation benchmarks and their ingestion through the public API.

LongMemEval (Wu et al., 2024, MIT): a JSON list (optionally ``.xz``) of questions, each with a haystack of dated
sessions. LoCoMo (Maharana et al., ACL 2024, CC BY-NC 4.0): a JSON list of conversations with dated sessions and QA.
Neither file ships with AgentBase; pass their paths (the project's development split lives in ``../shared/data/``).
"""

from __future__ import annotations

import hashlib
import json
import lzma
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from .errors import ConfigError, ValidationError
from .timeutil import parse_time

__all__ = ["Conversation", "SessionData", "ingest_conversation", "load_json", "locomo_conversations",
           "longmemeval_conversation", "parse_locomo_date", "records"]


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
        hint = (" (the benchmark data ships in the shared folder beside the project checkout: run from the checkout "
                "with ../shared/data present, or pass the file's path)" if "shared" in p.parts else "")
        raise ConfigError(f"data file not found: {p}{hint}")
    opener = lzma.open if p.suffix == ".xz" else open
    try:
        with opener(p, "rt", encoding="utf-8") as fh:
            return json.load(fh)
    # UnicodeDecodeError: not UTF-8; EOFError: a truncated .xz; RecursionError: absurdly deep nesting
    except (OSError, ValueError, EOFError, RecursionError, lzma.LZMAError) as exc:
        raise ConfigError(f"cannot read {p}: {type(exc).__name__}: {exc}") from None


def records(data: Any, kind: str) -> list[dict[str, Any]]:
    """``data`` as the non-empty list of JSON objects a LongMemEval or LoCoMo file holds.

    Args:
        data: what :func:`load_json` returned.
        kind: ``"LongMemEval"`` or ``"LoCoMo"`` (for the message).

    Raises:
        ConfigError: ``data`` is not a non-empty list of objects.
    """
    if not isinstance(data, list) or not data or not all(isinstance(r, dict) for r in data):
        raise ConfigError(f"not a {kind} file: expected a non-empty JSON list of objects")
    return data


def _malformed(kind: str, exc: Exception) -> ConfigError:
    return ConfigError(f"not a {kind} record: {type(exc).__name__}: {exc}")


def longmemeval_conversation(record: dict[str, Any]) -> Conversation:
    """Turn one LongMemEval question record into a :class:`Conversation` (its haystack) with one QA item.

    Turn metadata keeps ``has_answer`` and the turn index so benchmarks can score turn-level recall. Turns of a
    session get increasing timestamps (one second apart) from the session date.
    """
    try:
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
    except (KeyError, TypeError, AttributeError) as exc:
        raise _malformed("LongMemEval question", exc) from None


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
    parsed = parse_time(text) if text.strip() else None
    if parsed is None:
        raise ValidationError(f"unparseable LoCoMo date {text!r}")
    return parsed


def locomo_conversations(data: list[dict[str, Any]]) -> Iterator[Conversation]:
    """Yield one :class:`Conversation` per LoCoMo sample; speakers become message names.

    Both speakers are people, so both get role ``user`` with their name as the message ``name``; image captions are
    appended as ``[image: caption]``. Turn metadata keeps the ``dia_id`` for evidence scoring.
    """
    for sample in records(data, "LoCoMo"):
        try:
            yield _locomo_conversation(sample)
        except (KeyError, TypeError, AttributeError) as exc:
            raise _malformed("LoCoMo conversation", exc) from None


def _locomo_conversation(sample: dict[str, Any]) -> Conversation:
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
    return Conversation(sample.get("sample_id", "conv"), sessions, sample.get("qa", []))


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
            # Message ids derived from the session id and position: when another import of the same file writes
            # this session at the same moment, one batch lands and the other is refused whole (ids are unique)
            # instead of doubling the session.
            batch = [{**{k: v for k, v in t.items() if k in ("role", "content", "name", "created_at", "metadata")},
                      "id": "msg_" + hashlib.sha1(f"{s.session_id}\x1f{i}".encode()).hexdigest()[:32]}
                     for i, t in enumerate(s.turns) if isinstance(t.get("content"), str)]
            try:
                if batch:
                    await db.add_messages(s.session_id, batch)
                counts["sessions"] += 1
            except ValidationError:
                if not await db.get_message(s.session_id, batch[0]["id"]):
                    raise
                counts["sessions_existing"] += 1
        result = await db.commit_session(s.session_id)
        counts["messages"] += result["messages"]
        counts["entries"] += result["turns"] + result["facts_added"] + (1 if result["summary_id"] else 0)
    return counts
