"""Sessions: the one ordered message log behind every chat-style adapter, and zero-LLM commit into entries.

Messages are ordered by ``seq`` (1, 2, 3, ... per session), assigned inside the write transaction, so messages
with identical timestamps keep insertion order. Functions here take the :class:`~agentbase.engine.AgentBase` as
``ab`` and are called by its public methods on the engine loop.
"""

from __future__ import annotations

import asyncio
import json
import unicodedata
import uuid
from typing import Any

from .errors import NotFoundError, StorageError, ValidationError
from .ingest.dedup import content_hash, harden_confidence
from .ingest.facts import KEY_DESCRIPTIONS, extract_facts, resolve_time
from .ingest.summary import summarize_session
from .models import ContextType, Message, Scope, Session, utcnow
from .ner import TAG_PREFIX, entity_tags, tag_for
from .ner.base import mention_pattern
from .ner.vocative import drop_vocatives
from .ingest.tiers import l0_abstract, l1_overview
from .storage.entries import (ENTRY_COLUMNS, delete_entry_row, entry_columns, insert_entries, insert_entry,
                             record_history, row_to_entry, update_entry_row)
from .timeutil import from_db_time, parse_time, to_db_time
from .validation import check_id, check_int, check_json, check_limit, check_metadata, check_text

__all__ = ["add_messages", "commit_session", "create_session", "get_messages", "get_session"]

_SESSION_COLS = "id, user_id, agent_id, project_id, status, metadata, created_at, updated_at, committed_seq"
_MSG_COLS = "id, session_id, seq, role, content, name, tool_calls, tool_call_id, metadata, created_at"
TURN_ROLES = ("user", "assistant")


def _session(row: tuple) -> Session:
    return Session(id=row[0], user_id=row[1], agent_id=row[2], project_id=row[3], status=row[4],
                   metadata=json.loads(row[5]), created_at=from_db_time(row[6]), updated_at=from_db_time(row[7]),
                   committed_seq=row[8])


def _message(row: tuple) -> Message:
    return Message(id=row[0], session_id=row[1], seq=row[2], role=row[3], content=row[4], name=row[5],
                   tool_calls=json.loads(row[6]) if row[6] else None, tool_call_id=row[7],
                   metadata=json.loads(row[8]), created_at=from_db_time(row[9]))


async def create_session(ab: Any, *, session_id: str | None, user_id: str | None, agent_id: str | None,
                         project_id: str | None, metadata: dict[str, Any] | None, created_at: Any) -> Session:
    db = await ab._open()
    sid = check_id(session_id, "session_id") if session_id is not None else str(uuid.uuid4())
    for key, value in (("user_id", user_id), ("agent_id", agent_id), ("project_id", project_id)):
        if value is not None:
            check_id(value, key)
    meta = check_metadata(metadata)
    now = to_db_time(parse_time(created_at) or utcnow())
    async with db.transaction() as conn:
        await conn.execute(
            f"INSERT INTO sessions({_SESSION_COLS}) VALUES (?, ?, ?, ?, 'open', ?, ?, ?, 0) "
            "ON CONFLICT(id) DO NOTHING",
            (sid, user_id, agent_id, project_id, json.dumps(meta, ensure_ascii=False), now, now))
        row = await (await conn.execute(f"SELECT {_SESSION_COLS} FROM sessions WHERE id = ?", (sid,))).fetchone()
    session = _session(row)
    # An existing id is returned as it is, but never to another owner: "get or create" must not hand user B the
    # session (and messages) of user A.
    for key, value in (("user_id", user_id), ("agent_id", agent_id), ("project_id", project_id)):
        stored = getattr(session, key)
        if value is not None and stored is not None and stored != value:
            raise ValidationError(f"session {sid!r} exists with another {key}; pick another session_id")
    return session


async def get_session(ab: Any, session_id: str) -> Session | None:
    db = await ab._open()
    row = await db.fetchone(f"SELECT {_SESSION_COLS} FROM sessions WHERE id = ?",
                            (check_id(session_id, "session_id"),))
    return _session(row) if row else None


async def list_sessions(ab: Any, *, user_id: str | None, agent_id: str | None, limit: int,
                        offset: int) -> list[Session]:
    db = await ab._open()
    check_limit(limit, "limit")
    check_int(offset, "offset", minimum=0)
    sql, params = f"SELECT {_SESSION_COLS} FROM sessions WHERE 1", []
    for key, value in (("user_id", user_id), ("agent_id", agent_id)):
        if value is not None:
            sql += f" AND {key} = ?"
            params.append(check_id(value, key))
    rows = await db.fetchall(sql + " ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?",
                             [*params, limit, offset])
    return [_session(r) for r in rows]


async def update_session(ab: Any, session_id: str, *, metadata: dict[str, Any]) -> Session:
    db = await ab._open()
    if not isinstance(metadata, dict):  # None would silently wipe it
        raise ValidationError(f"metadata must be a dict (it replaces the session's), got {type(metadata).__name__}")
    meta = check_metadata(metadata)
    async with db.transaction() as conn:
        cur = await conn.execute("UPDATE sessions SET metadata = ?, updated_at = ? WHERE id = ?",
                                 (json.dumps(meta, ensure_ascii=False), to_db_time(utcnow()),
                                  check_id(session_id, "session_id")))
        if cur.rowcount == 0:
            raise NotFoundError(f"session {session_id!r} not found")
    session = await get_session(ab, session_id)
    assert session is not None
    return session


async def delete_session(ab: Any, session_id: str, *, delete_memories: bool) -> bool:
    db = await ab._open()
    check_id(session_id, "session_id")
    async with db.transaction() as conn:
        if delete_memories:
            # Only entries no other session links to: a fact this session merely repeated (hardened) still
            # belongs to the session that stated it first.
            rows = await (await conn.execute(
                f"SELECT {ENTRY_COLUMNS} FROM entries WHERE id IN "
                f"(SELECT entry_id FROM session_memory_links WHERE session_id = ?) AND id NOT IN "
                f"(SELECT entry_id FROM session_memory_links WHERE session_id != ?)",
                (session_id, session_id))).fetchall()
            now = to_db_time(utcnow())
            for row in rows:
                await delete_entry_row(conn, row[0], row_to_entry(row), engine=db.vector_engine, now=now)
        await conn.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))
        await conn.execute("DELETE FROM session_memory_links WHERE session_id = ?", (session_id,))
        cur = await conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
        return cur.rowcount > 0


def _prepare(raw: Any) -> dict[str, Any]:
    if isinstance(raw, Message):
        raw = raw.model_dump()
    if not isinstance(raw, dict):
        raise ValidationError("each message must be a dict with 'role' and 'content'")
    role = raw.get("role")
    if not isinstance(role, str) or not role.strip() or len(role) > 64:
        raise ValidationError("message role must be a non-empty string of at most 64 characters")
    check_text(role, "message role")  # lone surrogates, NUL
    # An assistant message that only calls tools has content None in the OpenAI chat format: stored as "".
    content = raw.get("content")
    if content is None and raw.get("tool_calls"):
        content = ""
    content = check_text(content, "message content", allow_empty=True)
    tool_calls = raw.get("tool_calls")
    if tool_calls is not None and (not isinstance(tool_calls, list) or
                                   not all(isinstance(t, dict) for t in tool_calls)):
        raise ValidationError("tool_calls must be a list of dicts")
    check_json(tool_calls, "tool_calls")
    for key in ("name", "tool_call_id", "id"):
        if raw.get(key) is not None:
            check_id(raw[key], key)
    meta = check_metadata(raw.get("metadata"))
    try:
        calls = json.dumps(tool_calls, ensure_ascii=False) if tool_calls else None
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"tool_calls must be JSON-serialisable: {exc}") from None
    return {"id": raw.get("id") or f"msg_{uuid.uuid4().hex}", "role": role, "content": content,
            "name": raw.get("name"), "tool_calls": calls, "tool_call_id": raw.get("tool_call_id"), "metadata": json.dumps(meta, ensure_ascii=False),
            "created_at": to_db_time(parse_time(raw.get("created_at")) or utcnow())}


async def _insert_messages(conn: Any, session_id: str, prepared: list[dict[str, Any]]) -> None:
    # A seq is never reused within a session: after the last message was deleted, or the messages cleared or
    # replaced, new ones still number after everything committed, so commit_session takes them (it reads seq >
    # committed_seq) and the turn links of earlier commits keep their order.
    row = await (await conn.execute(
        "SELECT MAX(COALESCE((SELECT MAX(seq) FROM messages WHERE session_id = ?), 0), committed_seq) "
        "FROM sessions WHERE id = ?", (session_id, session_id))).fetchone()
    seq = row[0] if row and row[0] is not None else 0
    for m in prepared:
        seq += 1
        m["seq"] = seq
    await conn.executemany(
        f"INSERT INTO messages({_MSG_COLS}) VALUES (:id, :session_id, :seq, :role, :content, :name, :tool_calls, "
        ":tool_call_id, :metadata, :created_at)", [{**m, "session_id": session_id} for m in prepared])
    await conn.execute("UPDATE sessions SET updated_at = ? WHERE id = ?", (to_db_time(utcnow()), session_id))


async def add_messages(ab: Any, session_id: str, messages: list[Any]) -> list[Message]:
    db = await ab._open()
    check_id(session_id, "session_id")
    if not isinstance(messages, list):
        raise ValidationError("messages must be a list")
    if not messages:
        return []
    prepared = [_prepare(m) for m in messages]
    async with db.transaction() as conn:
        if await (await conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,))).fetchone() is None:
            raise NotFoundError(f"session {session_id!r} not found")
        ids = [m["id"] for m in prepared]
        taken = await (await conn.execute(f"SELECT id FROM messages WHERE id IN ({','.join('?' * len(ids))})",
                                          ids)).fetchall()
        if taken or len(set(ids)) != len(ids):
            raise ValidationError(f"message id already used: {taken[0][0] if taken else 'duplicate in batch'}")
        await _insert_messages(conn, session_id, prepared)
    ids = [m["id"] for m in prepared]
    rows = await db.fetchall(f"SELECT {_MSG_COLS} FROM messages WHERE id IN ({','.join('?' * len(ids))}) "
                             "ORDER BY seq", ids)
    return [_message(r) for r in rows]


async def replace_messages(ab: Any, session_id: str, messages: list[Any]) -> list[Message]:
    db = await ab._open()
    check_id(session_id, "session_id")
    if not isinstance(messages, list):
        raise ValidationError(f"messages must be a list, got {type(messages).__name__}")
    prepared = [_prepare(m) for m in messages]
    now = to_db_time(utcnow())
    async with db.transaction() as conn:
        await conn.execute("INSERT INTO sessions(id, status, metadata, created_at, updated_at) "
                           "VALUES (?, 'open', '{}', ?, ?) ON CONFLICT(id) DO NOTHING", (session_id, now, now))
        await conn.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))
        if prepared:
            await _insert_messages(conn, session_id, prepared)
    return await get_messages(ab, session_id, limit=None, order="asc", after_seq=None, before_seq=None)


async def get_messages(ab: Any, session_id: str, *, limit: int | None, order: str, after_seq: int | None,
                       before_seq: int | None) -> list[Message]:
    db = await ab._open()
    if order not in ("asc", "desc"):
        raise ValidationError("order must be 'asc' or 'desc'")
    sql, params = f"SELECT {_MSG_COLS} FROM messages WHERE session_id = ?", [check_id(session_id, "session_id")]
    if after_seq is not None:
        sql += " AND seq > ?"
        params.append(check_int(after_seq, "after_seq"))
    if before_seq is not None:
        sql += " AND seq < ?"
        params.append(check_int(before_seq, "before_seq"))
    sql += f" ORDER BY seq {order}"
    if limit is not None:
        sql += " LIMIT ?"
        params.append(check_limit(limit, "limit", maximum=1_000_000))
    return [_message(r) for r in await db.fetchall(sql, params)]


async def get_message(ab: Any, session_id: str, message_id: str) -> Message | None:
    db = await ab._open()
    row = await db.fetchone(f"SELECT {_MSG_COLS} FROM messages WHERE session_id = ? AND id = ?",
                            (check_id(session_id, "session_id"), check_id(message_id, "message_id")))
    return _message(row) if row else None


async def update_message(ab: Any, session_id: str, message_id: str, *, metadata: dict[str, Any]) -> Message:
    db = await ab._open()
    meta = check_metadata(metadata)
    async with db.transaction() as conn:
        cur = await conn.execute("UPDATE messages SET metadata = ? WHERE session_id = ? AND id = ?",
                                 (json.dumps(meta, ensure_ascii=False), check_id(session_id, "session_id"),
                                  check_id(message_id, "message_id")))
        if cur.rowcount == 0:
            raise NotFoundError(f"message {message_id!r} not found in session {session_id!r}")
    msg = await get_message(ab, session_id, message_id)
    assert msg is not None
    return msg


async def delete_message(ab: Any, session_id: str, message_id: str) -> Message | None:
    db = await ab._open()
    msg = await get_message(ab, session_id, message_id)
    if msg is None:
        return None
    async with db.transaction() as conn:
        await conn.execute("DELETE FROM messages WHERE session_id = ? AND id = ?", (session_id, message_id))
    return msg


async def clear_messages(ab: Any, session_id: str) -> int:
    db = await ab._open()
    async with db.transaction() as conn:
        cur = await conn.execute("DELETE FROM messages WHERE session_id = ?", (check_id(session_id, "session_id"),))
        return cur.rowcount


# ---------------------------------------------------------------------------------------------------- commit
class _CommitRaced(Exception):
    """Another commit of the same session landed between reading the new messages and writing them."""


async def commit_session(ab: Any, session_id: str) -> dict[str, Any]:
    """See :meth:`AgentBase.commit_session`. Concurrent commits of one session (tasks, threads or processes)
    store each message once: the one that loses the race re-reads what is still new and commits only that."""
    for _attempt in range(20):
        try:
            return await _commit_once(ab, session_id)
        except _CommitRaced:
            continue
    raise StorageError(f"session {session_id!r} kept changing during commit; try again")


async def _commit_once(ab: Any, session_id: str) -> dict[str, Any]:
    db = await ab._open()
    session = await get_session(ab, session_id)
    if session is None:
        raise NotFoundError(f"session {session_id!r} not found")
    new = await get_messages(ab, session_id, limit=None, order="asc", after_seq=session.committed_seq,
                             before_seq=None)
    result = {"session_id": session_id, "messages": len(new), "turns": 0, "facts_added": 0, "facts_hardened": 0,
              "facts_superseded": 0, "summary_id": None}
    if not new:
        return result
    owners = {"user_id": session.user_id, "agent_id": session.agent_id, "project_id": session.project_id}
    turns = [m for m in new if m.role in TURN_ROLES and m.content.strip()]
    entity_lists = await _turn_entities(ab, turns)
    participants = [r[0] for r in await db.fetchall(
        "SELECT DISTINCT name FROM messages WHERE session_id = ? AND name IS NOT NULL", (session_id,))] \
        if ab.settings.ingest.drop_vocatives else []
    if participants:  # "Thanks, Caroline!" addresses Caroline; it is not about her
        entity_lists = [drop_vocatives(m.content, ents, participants) for m, ents in zip(turns, entity_lists)]
    contexts = await _reply_contexts(ab, session_id, turns)
    embed_roles = set(ab.settings.ingest.embed_roles)
    now = utcnow()
    links: list[tuple[str, str, str, int | None]] = []
    turn_entries = []
    turn_tags = []
    for msg, ents, context in zip(turns, entity_lists, contexts):
        # A named speaker is the turn's first entity: "When did Caroline ..." is about what Caroline said, not
        # about turns where someone else addresses her. The name also joins the keyword and vector text
        # (the entry's ``name`` field, which for turns holds the speaker).
        tags = entity_tags(ents)
        if msg.name:
            tags = list(dict.fromkeys([tag_for(msg.name), *tags]))
        turn_tags.append(tags)
        turn_entries.append(ab._build_entry(
            msg.content, category="turn", tags=tags, metadata={"role": msg.role, "speaker": msg.name,
                                                               "message_id": msg.id, "message_seq": msg.seq},
            scope=Scope.SESSION, owners={**owners, "session_id": session_id}, confidence=1.0, importance=0.3,
            event_time=msg.created_at, context_type=ContextType.MEMORY, entry_id=None,
            extra={k: v for k, v in (("name", msg.name), ("description", context)) if v}, extract_entities=False))
    async with db.transaction() as conn:
        row = await (await conn.execute("SELECT committed_seq FROM sessions WHERE id = ?", (session_id,))).fetchone()
        if row is None or row[0] != session.committed_seq:
            raise _CommitRaced
        await insert_entries(conn, turn_entries, embed=[m.role in embed_roles for m in turns])
        result["turns"] = len(turn_entries)
        for msg, entry, tags in zip(turns, turn_entries, turn_tags):
            links.append((session_id, entry.id, "turn", msg.seq))
            if msg.role == "user":
                for fact in extract_facts(msg.content, subject=msg.name or "User"):
                    counts, eid = await _store_fact(ab, conn, fact, owners, session_id, msg, tags, now)
                    for key, n in counts.items():
                        result[key] += n
                    links.append((session_id, eid, "fact", msg.seq))
        from .graph import ingest_session_relations  # temporal graph relations from the committed turns
        await ingest_session_relations(ab, conn, session, turns, entity_lists, links)
        summary_id = await _store_summary(ab, conn, session, owners)
        if summary_id:
            links.append((session_id, summary_id, "summary", None))
            result["summary_id"] = summary_id
        await conn.executemany("INSERT OR IGNORE INTO session_memory_links(session_id, entry_id, kind, message_seq) "
                               "VALUES (?, ?, ?, ?)", links)
        await conn.execute("UPDATE sessions SET committed_seq = ?, status = 'committed', updated_at = ? WHERE id = ?",
                           (new[-1].seq, to_db_time(now), session_id))
    return result


async def _reply_contexts(ab: Any, session_id: str, turns: list[Message]) -> list[str | None]:
    """For each turn, the turn before it in the session (``"Speaker: text"`` cut to ``ingest.turn_context_chars``).

    The same whether the session is committed at once or in steps: the first new turn looks back past tool and
    system messages and empty turns to the last earlier turn with content.
    """
    limit = ab.settings.ingest.turn_context_chars
    if not limit or not turns:
        return [None] * len(turns)
    db = await ab._open()
    roles = sorted(TURN_ROLES)
    row = await db.fetchone(
        f"SELECT role, content, name FROM messages WHERE session_id = ? AND seq < ? AND role IN "
        f"({','.join('?' * len(roles))}) AND TRIM(content) != '' ORDER BY seq DESC LIMIT 1",
        [session_id, turns[0].seq, *roles])
    prev: tuple[str, str, str | None] | None = (row[0], row[1], row[2]) if row else None
    out: list[str | None] = []
    for msg in turns:
        out.append(None if prev is None else f"{prev[2] or prev[0]}: {_cut(' '.join(prev[1].split()), limit)}")
        prev = (msg.role, msg.content, msg.name)
    return out


def _cut(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters: at the last space in the final fifth, else hard."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    space = head.rfind(" ")
    return (head[:space] if space >= limit * 4 // 5 else head) + " ..."


async def _turn_entities(ab: Any, turns: list[Message]) -> list[list[Any]]:
    """Entities of each turn: the configured extractor for roles in ``ingest.ner_roles``, regex for the rest."""
    limit = ab.settings.ingest.ner_max_chars
    ner_roles = set(ab.settings.ingest.ner_roles)
    main = [i for i, m in enumerate(turns) if m.role in ner_roles or ab.extractor.name == "regex"]
    out: list[list[Any]] = [[] for _ in turns]
    if main:
        texts = [turns[i].content[:limit] for i in main]
        # spaCy costs milliseconds per message: run it off the engine loop so other calls keep flowing.
        found = ab.extractor.extract_many(texts) if ab.extractor.name == "regex" else \
            await asyncio.to_thread(ab.extractor.extract_many, texts)
        for i, ents in zip(main, found):
            out[i] = ents
    chosen = set(main)
    rest = [i for i in range(len(turns)) if i not in chosen]
    if rest:
        for i, ents in zip(rest, ab.regex_extractor.extract_many([turns[i].content[:limit] for i in rest])):
            out[i] = ents
    return out


async def _store_fact(ab: Any, conn: Any, fact: Any, owners: dict[str, Any], session_id: str, msg: Message,
                      tags: list[str], now: Any) -> tuple[str, str]:
    """Insert, harden or supersede one extracted fact. Returns (counter increments, entry id)."""
    owner_sql = " AND ".join(f"{k} IS ?" for k in owners)
    owner_params = list(owners.values())
    text_hash = content_hash(fact.text)
    row = await (await conn.execute(
        f"SELECT {ENTRY_COLUMNS} FROM entries WHERE content_hash = ? AND category = ? AND status = 'active' "
        f"AND superseded_by IS NULL AND {owner_sql} LIMIT 1", [text_hash, fact.category, *owner_params])).fetchone()
    if row is not None:
        old = row_to_entry(row)
        hardened = old.model_copy(update={"confidence": harden_confidence(old.confidence,
                                                                          ab.settings.ingest.confidence_step),
                                          "updated_at": now})
        await update_entry_row(conn, row[0], old, hardened, engine=ab.db.vector_engine)
        return {"facts_hardened": 1}, old.id
    meta = {"source": "session", "message_id": msg.id, "fact_key": fact.subject_key, "value": fact.value}
    resolved = resolve_time(fact, msg.created_at)  # "last month" said on 15 Nov 2026: October 2026
    if resolved:
        meta["when"] = resolved
    entry = ab._build_entry(
        fact.text, category=fact.category, tags=tags, metadata=meta,
        scope=Scope.GLOBAL, owners={**owners, "session_id": session_id}, confidence=float(fact.confidence),
        importance=0.6, event_time=msg.created_at, context_type=ContextType.MEMORY, entry_id=None,
        extra={"description": KEY_DESCRIPTIONS[fact.subject_key]} if fact.subject_key in KEY_DESCRIPTIONS else {},
        extract_entities=False)
    counts = {"facts_added": 1, "facts_superseded": 0}
    # A named speaker's facts are theirs: in a chat between two people, Ann's "I live in Boston" must not replace
    # Bob's "I live in Seattle", so the supersession key carries the speaker's name.
    fact_key = f"{msg.name.casefold()}|{fact.subject_key}" if fact.subject_key and msg.name else fact.subject_key
    if fact_key:
        # The value stated last in time wins, whatever the commit order: a session imported late with an older
        # date ("I live in Boston", 2020, after "We moved to Austin", 2024) is stored already superseded.
        when = to_db_time(msg.created_at)
        prev = await (await conn.execute(
            f"SELECT rid, id, l2_full, COALESCE(event_time, created_at) AS t FROM entries WHERE fact_key = ? "
            f"AND status = 'active' AND superseded_by IS NULL AND {owner_sql} ORDER BY t DESC",
            [fact_key, *owner_params])).fetchall()
        newer = [row for row in prev if row[3] > when]
        if newer:
            entry = entry.model_copy(update={"superseded_by": newer[-1][1]})  # the next value in time
            counts["facts_superseded"] += 1
        for rid, old_id, old_text, _t in prev[len(newer):]:
            await conn.execute("UPDATE entries SET superseded_by = ?, updated_at = ? WHERE rid = ?",
                               (entry.id, to_db_time(now), rid))
            await record_history(conn, old_id, "UPDATE", old_text, old_text, to_db_time(now),
                                 {"superseded_by": entry.id})
            counts["facts_superseded"] += 1
    await insert_entry(conn, entry, fact_key=fact_key)
    return counts, entry.id


def _summary_tags(text: str, turn_tags: list[str], old_tags: list[str]) -> list[str]:
    """A session summary's tags: the ones a user gave it (not ``ner_``) kept, plus the entity tags of the session's
    turns whose name the summary mentions (whole words, case as written, after NFKC normalisation like
    :func:`~agentbase.ner.tag_for`). The summary is built from the turns' own sentences, so a second extractor
    pass over it would find the same names (with spaCy it was a fifth of a commit's time), plus noise such as the
    "Topics" and "User asked" headings. Taking the names from every turn of the session, not only the ones just
    committed, makes the tags the same however the session was committed.
    """
    norm = unicodedata.normalize("NFKC", text)
    tags: dict[str, str] = {}  # case-folded -> first spelling
    for tag in old_tags:
        if not tag.startswith(TAG_PREFIX):
            tags.setdefault(tag.casefold(), tag)
    for tag in turn_tags:
        if not tag.startswith(TAG_PREFIX) or tag.casefold() in tags:
            continue
        name = tag[len(TAG_PREFIX):]
        if any(mention_pattern(form).search(norm) for form in dict.fromkeys((name.replace("_", " "), name))):
            tags[tag.casefold()] = tag
    return list(tags.values())


async def _store_summary(ab: Any, conn: Any, session: Session, owners: dict[str, Any]) -> str | None:
    rows = await (await conn.execute("SELECT role, content, name FROM messages WHERE session_id = ? ORDER BY seq",
                                     (session.id,))).fetchall()
    text = summarize_session([(r[0], r[1], r[2]) for r in rows if r[0] in TURN_ROLES])
    if not text.strip():
        return None
    tag_rows = await (await conn.execute("SELECT tags FROM entries WHERE session_id = ? AND category = 'turn' "
                                         "ORDER BY rid", (session.id,))).fetchall()
    turn_tags = list(dict.fromkeys(t for (raw,) in tag_rows for t in json.loads(raw)))
    existing = await (await conn.execute(
        f"SELECT {entry_columns('e')} FROM entries e JOIN session_memory_links l ON l.entry_id = e.id "
        "WHERE l.session_id = ? AND l.kind = 'summary'", (session.id,))).fetchone()
    last_time = await (await conn.execute("SELECT MAX(created_at) FROM messages WHERE session_id = ?",
                                          (session.id,))).fetchone()
    if existing is not None:
        old = row_to_entry(existing)
        new = old.model_copy(update={"l2_full": text, "l0_abstract": l0_abstract(text), "l1_overview": l1_overview(text),
                                     "content_hash": content_hash(text), "updated_at": utcnow(),
                                     "event_time": from_db_time(last_time[0]),
                                     "tags": _summary_tags(text, turn_tags, old.tags)})
        await update_entry_row(conn, existing[0], old, new, engine=ab.db.vector_engine)
        return old.id
    entry = ab._build_entry(text, category="summary", tags=_summary_tags(text, turn_tags, []),
                            metadata={"source": "session_summary"}, scope=Scope.SESSION,
                            owners={**owners, "session_id": session.id}, confidence=1.0, importance=0.5,
                            event_time=from_db_time(last_time[0]), context_type=ContextType.MEMORY, entry_id=None,
                            extra={}, extract_entities=False)
    await insert_entry(conn, entry, fact_key=None)
    return entry.id
