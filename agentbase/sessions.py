"""Sessions: the one ordered message log behind every chat-style adapter (commit into entries is in
:mod:`agentbase.ingest.commit`).

Messages are ordered by ``seq`` (1, 2, 3, ... per session), assigned inside the write transaction, so messages
with identical timestamps keep insertion order. Functions here take the :class:`~agentbase.engine.AgentBase` as
``ab`` and are called by its public methods on the engine loop.
"""

from __future__ import annotations

import difflib
import json
import uuid
from typing import Any

from .errors import ConflictError, NotFoundError, ValidationError
from .models import Message, Session, utcnow
from .ner import tag_for
from .storage.entries import delete_entry_row, row_to_entry
from .timeutil import from_db_time, parse_time, to_db_time
from .validation import check_id, check_int, check_json, check_limit, check_metadata, check_text

__all__ = ["add_messages", "create_session", "get_messages", "get_session"]

def _session(row: tuple) -> Session:  # a SESSION_COLUMNS row (storage/<engine>/sessions.py)
    return Session(id=row[0], user_id=row[1], agent_id=row[2], project_id=row[3], status=row[4],
                   metadata=json.loads(row[5]), created_at=from_db_time(row[6]), updated_at=from_db_time(row[7]),
                   committed_seq=row[8], enriched_seq=row[9])


def _message(row: tuple) -> Message:  # a MESSAGE_COLUMNS row
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
        row = await conn.ops.sessions.create_session_row(conn, sid, user_id, agent_id, project_id,
                                                         json.dumps(meta, ensure_ascii=False), now)
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
    row = await db.ops.sessions.session_row(db, check_id(session_id, "session_id"))
    return _session(row) if row else None


async def list_sessions(ab: Any, *, user_id: str | None, agent_id: str | None, limit: int,
                        offset: int) -> list[Session]:
    db = await ab._open()
    check_limit(limit, "limit")
    check_int(offset, "offset", minimum=0)
    for key, value in (("user_id", user_id), ("agent_id", agent_id)):
        if value is not None:
            check_id(value, key)
    rows = await db.ops.sessions.session_rows(db, user_id=user_id, agent_id=agent_id, limit=limit, offset=offset)
    return [_session(r) for r in rows]


async def update_session(ab: Any, session_id: str, *, metadata: dict[str, Any]) -> Session:
    db = await ab._open()
    if not isinstance(metadata, dict):  # None would silently wipe it
        raise ValidationError(f"metadata must be a dict (it replaces the session's), got {type(metadata).__name__}")
    meta = check_metadata(metadata)
    check_id(session_id, "session_id")
    async with db.transaction() as conn:
        if not await conn.ops.sessions.set_session_metadata(conn, session_id, json.dumps(meta, ensure_ascii=False),
                                                            to_db_time(utcnow())):
            raise NotFoundError(f"session {session_id!r} not found")
    session = await get_session(ab, session_id)
    assert session is not None
    return session


async def delete_session(ab: Any, session_id: str, *, delete_memories: bool,
                         expected_ids: list[str] | None = None) -> bool:
    db = await ab._open()
    check_id(session_id, "session_id")
    _check_expected_ids(expected_ids)
    async with db.transaction() as conn:
        await _guard_ids(conn, session_id, expected_ids)
        if delete_memories:
            # Only entries no other session links to: a fact this session merely repeated (hardened) still
            # belongs to the session that stated it first.
            rows = await conn.ops.sessions.own_entry_rows(conn, session_id)
            now = to_db_time(utcnow())
            for row in rows:
                await delete_entry_row(conn, row[0], row_to_entry(row), engine=db.vector_engine, now=now)
        return await conn.ops.sessions.delete_session_rows(conn, session_id)


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
    if raw.get("name") is not None:
        # The speaker's name becomes the turn's entity tag at commit: a name with no letter or digit ("   ", "_")
        # would fail every commit of the session, so it is refused here, before anything is written.
        try:
            tag_for(raw["name"])
        except ValidationError:
            raise ValidationError(f"message name {raw['name']!r} must contain a letter or digit") from None
    meta = check_metadata(raw.get("metadata"))
    try:
        calls = json.dumps(tool_calls, ensure_ascii=False) if tool_calls else None
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"tool_calls must be JSON-serialisable: {exc}") from None
    return {"id": raw.get("id") or f"msg_{uuid.uuid4().hex}", "role": role, "content": content,
            "name": raw.get("name"), "tool_calls": calls, "tool_call_id": raw.get("tool_call_id"), "metadata": json.dumps(meta, ensure_ascii=False),
            "created_at": to_db_time(parse_time(raw.get("created_at")) or utcnow())}


async def _guard_metadata(conn: Any, session_id: str, message_id: str, expected: dict[str, Any] | None) -> None:
    """Inside a write transaction: raise ConflictError if the message's metadata is not ``expected`` (no guard
    when it is None; a missing message passes, the write then finds nothing)."""
    if expected is None:
        return
    stored = await conn.ops.sessions.message_metadata(conn, session_id, message_id)
    if stored is not None and _canonical(json.loads(stored)) != _canonical(expected):
        raise ConflictError(f"message {message_id!r} changed since it was read; read it again")


def _canonical(value: Any) -> str:
    """JSON text that tells ``True`` from ``1`` (Python's ``==`` does not) and ignores key order."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


async def _insert_messages(conn: Any, session_id: str, prepared: list[dict[str, Any]]) -> None:
    # A seq is never reused within a session: after the last message was deleted, or the messages cleared or
    # replaced, new ones still number after everything committed, so commit_session takes them (it reads seq >
    # committed_seq) and the turn links of earlier commits keep their order.
    ops = conn.ops.sessions
    seq = await ops.last_seq(conn, session_id)
    for m in prepared:
        seq += 1
        m["seq"] = seq
    await ops.insert_message_rows(conn, [{"committed": 0, **m, "session_id": session_id} for m in prepared])
    await ops.touch_session(conn, session_id, to_db_time(utcnow()))


async def add_messages(ab: Any, session_id: str, messages: list[Any]) -> list[Message]:
    db = await ab._open()
    check_id(session_id, "session_id")
    if not isinstance(messages, list):
        raise ValidationError("messages must be a list")
    if not messages:
        return []
    prepared = [_prepare(m) for m in messages]
    async with db.transaction() as conn:
        if not await conn.ops.sessions.session_exists(conn, session_id):
            raise NotFoundError(f"session {session_id!r} not found")
        ids = [m["id"] for m in prepared]
        taken = await conn.ops.sessions.taken_message_ids(conn, ids)
        if taken or len(set(ids)) != len(ids):
            raise ValidationError(f"message id already used: {taken[0] if taken else 'duplicate in batch'}")
        await _insert_messages(conn, session_id, prepared)
    ids = [m["id"] for m in prepared]
    return [_message(r) for r in await db.ops.sessions.message_rows_by_id(db, ids)]


class Unsettled(Exception):
    """Raised inside a message edit's transaction when the session has queued enrichment: it reads the messages
    by seq, so the caller settles it (``ingest.commit.settle``) and runs the edit again."""


async def _refuse_unsettled(conn: Any, session_id: str) -> None:
    if await conn.ops.sessions.enrichment_pending(conn, session_id):
        raise Unsettled(session_id)


def _aligned(current: list[tuple], raws: list[Any], prepared: list[dict[str, Any]]) -> None:
    """Give the replacing messages that equal current ones the current ids and times, in place.

    A message without an ``id`` of its own that has the role, content, name and tool calls of the current message
    at the same place in the common head or tail of the two lists (a conversation sent again with a message
    inserted, removed or appended, as LlamaIndex ``set_messages`` does; or in a run both lists share, in order,
    between them: a sliding window) is that message: it keeps its id, and its
    time unless it gives one, so a later commit skips what it already committed. ``current`` rows are
    ``(id, role, content, name, tool_calls, tool_call_id, created_at)`` in seq order."""
    def key(m: dict[str, Any]) -> tuple:
        return m["role"], m["content"], m["name"], m["tool_calls"], m["tool_call_id"]

    def take(i: int, j: int) -> None:
        if isinstance(raws[j], dict) and raws[j].get("id") is None:
            prepared[j]["id"] = current[i][0]
            if raws[j].get("created_at") is None:
                prepared[j]["created_at"] = current[i][6]

    head = 0
    while head < min(len(current), len(prepared)) and current[head][1:6] == key(prepared[head]):
        take(head, head)
        head += 1
    tail = 0
    while tail < min(len(current), len(prepared)) - head and \
            current[-1 - tail][1:6] == key(prepared[-1 - tail]):
        take(len(current) - 1 - tail, len(prepared) - 1 - tail)
        tail += 1
    # between them, the longest runs the two lists share in order (a sliding window: [A, B, C, D] -> [B, C, D, E])
    old_mid, new_mid = current[head:len(current) - tail], prepared[head:len(prepared) - tail]
    if old_mid and new_mid and len(old_mid) * len(new_mid) <= 25_000_000:
        matcher = difflib.SequenceMatcher(None, [r[1:6] for r in old_mid], [key(m) for m in new_mid],
                                          autojunk=False)
        for block in matcher.get_matching_blocks():
            for k in range(block.size):
                take(head + block.a + k, head + block.b + k)


def _check_expected_ids(expected_ids: Any) -> None:
    if expected_ids is not None and (not isinstance(expected_ids, list)
                                     or not all(isinstance(i, str) for i in expected_ids)):
        raise ValidationError("expected_ids must be a list of message id strings")


async def _guard_ids(conn: Any, session_id: str, expected_ids: list[str] | None) -> None:
    """Inside a write transaction: raise ConflictError unless the session's message ids, in order, are
    ``expected_ids`` (no guard when it is None)."""
    if expected_ids is None:
        return
    current = await conn.ops.sessions.message_ids(conn, session_id)
    if current != expected_ids:
        raise ConflictError(f"session {session_id!r} changed since its messages were read "
                            f"({len(expected_ids)} expected, {len(current)} now); read them again")


async def replace_messages(ab: Any, session_id: str, messages: list[Any],
                           expected_ids: list[str] | None = None) -> list[Message]:
    db = await ab._open()
    check_id(session_id, "session_id")
    if not isinstance(messages, list):
        raise ValidationError(f"messages must be a list, got {type(messages).__name__}")
    _check_expected_ids(expected_ids)
    prepared = [_prepare(m) for m in messages]
    given = [m["id"] for m, raw in zip(prepared, messages) if isinstance(raw, dict) and raw.get("id") is not None]
    if len(set(given)) != len(given):
        raise ValidationError(f"message id used twice in messages: {next(i for i in given if given.count(i) > 1)!r}")
    now = to_db_time(utcnow())
    async with db.transaction() as conn:
        await _refuse_unsettled(conn, session_id)
        await _guard_ids(conn, session_id, expected_ids)
        taken = await conn.ops.sessions.taken_message_ids(conn, given, other_than=session_id)
        if taken:
            raise ValidationError(f"message id already used in another session: {taken[0]!r}")
        rows = await conn.ops.sessions.messages_to_align(conn, session_id)
        kept = set(given)
        _aligned([r[:7] for r in rows if r[0] not in kept], messages, prepared)
        # a kept message that a commit has read stays committed, unless its text changed (an edit)
        done = {r[0]: r[2] for r in rows if r[7]}
        for m in prepared:
            m["committed"] = int(done.get(m["id"]) == m["content"])
        await conn.ops.sessions.ensure_session(conn, session_id, now)
        await conn.ops.sessions.delete_messages(conn, session_id)
        if prepared:
            await _insert_messages(conn, session_id, prepared)
    return await get_messages(ab, session_id, limit=None, order="asc", after_seq=None, before_seq=None)


async def get_messages(ab: Any, session_id: str, *, limit: int | None, order: str, after_seq: int | None,
                       before_seq: int | None) -> list[Message]:
    db = await ab._open()
    if order not in ("asc", "desc"):
        raise ValidationError("order must be 'asc' or 'desc'")
    check_id(session_id, "session_id")
    if after_seq is not None:
        check_int(after_seq, "after_seq")
    if before_seq is not None:
        check_int(before_seq, "before_seq")
    if limit is not None:
        check_limit(limit, "limit", maximum=1_000_000)
    rows = await db.ops.sessions.message_rows(db, session_id, after_seq=after_seq, before_seq=before_seq,
                                              order=order, limit=limit)
    return [_message(r) for r in rows]


async def get_message(ab: Any, session_id: str, message_id: str) -> Message | None:
    db = await ab._open()
    row = await db.ops.sessions.message_row(db, check_id(session_id, "session_id"),
                                            check_id(message_id, "message_id"))
    return _message(row) if row else None


async def update_message(ab: Any, session_id: str, message_id: str, *, metadata: dict[str, Any],
                         expected_metadata: dict[str, Any] | None = None) -> Message:
    db = await ab._open()
    meta = check_metadata(metadata)
    expected = None if expected_metadata is None else check_metadata(expected_metadata)
    async with db.transaction() as conn:
        await _guard_metadata(conn, check_id(session_id, "session_id"), check_id(message_id, "message_id"),
                              expected)
        if not await conn.ops.sessions.set_message_metadata(conn, session_id, message_id,
                                                            json.dumps(meta, ensure_ascii=False)):
            raise NotFoundError(f"message {message_id!r} not found in session {session_id!r}")
    msg = await get_message(ab, session_id, message_id)
    assert msg is not None
    return msg


async def delete_message(ab: Any, session_id: str, message_id: str,
                         expected_metadata: dict[str, Any] | None = None) -> Message | None:
    db = await ab._open()
    check_id(session_id, "session_id")
    check_id(message_id, "message_id")
    expected = None if expected_metadata is None else check_metadata(expected_metadata)
    # Read and delete in one statement: of two callers deleting the same message, only the one whose DELETE
    # removed the row gets it back.
    async with db.transaction() as conn:
        await _refuse_unsettled(conn, session_id)
        await _guard_metadata(conn, session_id, message_id, expected)
        row = await conn.ops.sessions.delete_message_row(conn, session_id, message_id)
    return _message(row) if row else None


async def clear_messages(ab: Any, session_id: str) -> int:
    db = await ab._open()
    async with db.transaction() as conn:
        await _refuse_unsettled(conn, check_id(session_id, "session_id"))
        return await conn.ops.sessions.delete_messages(conn, session_id)
