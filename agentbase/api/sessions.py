"""Session methods: conversations as ordered message logs and their zero-LLM commit."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, TypeVar

from .. import sessions as _sessions
from .._loop import bridged
from ..errors import StorageError
from ..ingest import commit as _commit
from ..models import Message, Session
from ..validation import check_bool, check_id

T = TypeVar("T")

__all__ = ["SessionsAPI"]


class SessionsAPI:
    """Methods mixed into :class:`~agentbase.engine.AgentBase`; see its docstring for construction."""

    # ------------------------------------------------------------------ sessions
    @bridged
    async def create_session(self, *, session_id: str | None = None, user_id: str | None = None,
                             agent_id: str | None = None, project_id: str | None = None,
                             metadata: dict[str, Any] | None = None,
                             created_at: datetime | str | None = None) -> Session:
        """Create a conversation session, or return the existing one with the same ``session_id`` (unchanged).

        Returns:
            The :class:`Session`.

        Args:
            session_id: the id (default a new uuid4). user_id, agent_id, project_id: owner ids.
            metadata: a JSON object (str keys; no NaN/infinity, sets or lone surrogates).
            created_at: the session's creation time (see :func:`~agentbase.timeutil.parse_time`; default now).

        Returns:
            The :class:`Session`.

        Raises:
            ValidationError: bad ids, metadata or created_at, or ``session_id`` exists with another ``user_id``,
                ``agent_id`` or ``project_id`` than one given here (an owner stored as None matches any).
        """
        return await _sessions.create_session(self, session_id=session_id, user_id=user_id, agent_id=agent_id,
                                              project_id=project_id, metadata=metadata, created_at=created_at)

    @bridged
    async def get_session(self, session_id: str) -> Session | None:
        """Return the session or None."""
        return await _sessions.get_session(self, session_id)

    @bridged
    async def list_sessions(self, *, user_id: str | None = None, agent_id: str | None = None,
                            limit: int = 100, offset: int = 0) -> list[Session]:
        """Sessions, newest first, optionally for one owner.

        Args:
            user_id, agent_id: only this owner's sessions. limit: 1..10000. offset: sessions to skip (an int,
                0..2**63-1).

        Returns:
            :class:`Session` objects.

        Raises:
            ValidationError: bad ids, limit or offset.
        """
        return await _sessions.list_sessions(self, user_id=user_id, agent_id=agent_id, limit=limit, offset=offset)

    @bridged
    async def update_session(self, session_id: str, *, metadata: dict[str, Any]) -> Session:
        """Replace a session's metadata (a JSON object, checked as in :meth:`create_session`).

        Returns:
            The updated :class:`Session`.

        Raises:
            NotFoundError: unknown id. ValidationError: bad id or metadata.
        """
        return await _sessions.update_session(self, session_id, metadata=metadata)

    @bridged
    async def delete_session(self, session_id: str, *, delete_memories: bool = False,
                             expected_ids: list[str] | None = None) -> bool:
        """Delete a session and its messages, in one transaction; with ``delete_memories`` also the entries
        committed from it (turns, summary, facts) that no other session links to: a fact another session also
        stated (hardened there) stays. A deleted fact's previous value becomes current again.

        Args:
            session_id: the session.
            delete_memories: also delete the entries committed from it (see above).
            expected_ids: optional guard, as for :meth:`replace_messages`: the session's message ids as the
                caller read them; if it holds others, nothing is deleted and :class:`ConflictError` is raised
                (so a caller that returns the messages it deleted never deletes one it did not read).

        Returns:
            True if the session existed.

        Raises:
            ValidationError: a malformed id, or ``expected_ids`` not a list of strings.
            ConflictError: ``expected_ids`` differs from the stored ids (nothing is deleted).
        """
        delete_memories = check_bool(delete_memories, "delete_memories")
        # Queued enrichment first: if the memories stay, this session's own is written; if they go, a fact another
        # session of these owners repeats (and so links to, once enriched) must stay.
        if delete_memories:
            await _commit.settle_owners_of(self, check_id(session_id, "session_id"))
        else:
            await _commit.settle(self, [check_id(session_id, "session_id")])
        return await _sessions.delete_session(self, session_id, delete_memories=delete_memories,
                                              expected_ids=expected_ids)

    @bridged
    async def add_message(self, session_id: str, role: str, content: str, *, name: str | None = None,
                          tool_calls: list[dict[str, Any]] | None = None, tool_call_id: str | None = None,
                          metadata: dict[str, Any] | None = None, created_at: datetime | str | None = None,
                          message_id: str | None = None) -> Message:
        """Append one message; its ``seq`` is the next integer in the session (strict insertion order).

        Args:
            session_id: the session. role: e.g. ``user``, ``assistant``, ``tool``. content: the text.
            name, tool_call_id, message_id: ids. tool_calls: a list of JSON objects. metadata: a JSON object
                (str keys; no NaN/infinity, sets or lone surrogates). created_at: default now.

        Returns:
            The stored :class:`Message`.

        Raises:
            NotFoundError: unknown session. ValidationError: bad role, content or fields.
        """
        try:
            msgs = await _sessions.add_messages(self, session_id, [dict(
                role=role, content=content, name=name, tool_calls=tool_calls, tool_call_id=tool_call_id,
                metadata=metadata, created_at=created_at, id=message_id)])
        finally:
            self._wrote()
        return msgs[0]

    @bridged
    async def add_messages(self, session_id: str, messages: list[dict[str, Any]]) -> list[Message]:
        """Append several messages in one transaction (all or nothing); an empty list does nothing.

        Args:
            messages: dicts with ``role``, ``content`` and optional ``name``, ``tool_calls``, ``tool_call_id``,
                ``metadata``, ``created_at``, ``id``.

        Raises:
            NotFoundError: unknown session. ValidationError: any bad message (none is written).
        """
        try:
            return await _sessions.add_messages(self, session_id, messages)
        finally:
            self._wrote()

    @bridged
    async def get_messages(self, session_id: str, *, limit: int | None = None, order: str = "asc",
                           after_seq: int | None = None, before_seq: int | None = None) -> list[Message]:
        """Messages of a session in ``seq`` order (``asc`` or ``desc``); unknown session gives ``[]``.

        Args:
            session_id: the session. limit: at most this many (1..1,000,000; None for all). order: ``asc``/``desc``.
            after_seq, before_seq: only messages with ``seq`` above / below these ints (64-bit range).

        Returns:
            :class:`Message` objects.

        Raises:
            ValidationError: a bad id, order or limit, or a seq bound that is not an int in the 64-bit range.
        """
        return await _sessions.get_messages(self, session_id, limit=limit, order=order, after_seq=after_seq,
                                            before_seq=before_seq)

    @bridged
    async def get_message(self, session_id: str, message_id: str) -> Message | None:
        """One message by id, or None."""
        return await _sessions.get_message(self, session_id, message_id)

    @bridged
    async def update_message(self, session_id: str, message_id: str, *, metadata: dict[str, Any],
                             expected_metadata: dict[str, Any] | None = None) -> Message:
        """Replace a message's metadata (a JSON object, checked as in :meth:`add_message`).

        Args:
            session_id, message_id: the message.
            metadata: the new metadata (replaces the old whole).
            expected_metadata: optional compare-and-set guard: the metadata as the caller read it; if another
                writer changed it meanwhile, nothing is written and :class:`ConflictError` is raised.

        Returns:
            The updated :class:`Message`.

        Raises:
            NotFoundError: unknown message. ValidationError: bad ids or metadata.
            ConflictError: the stored metadata differs from ``expected_metadata`` (nothing is written).
        """
        return await _sessions.update_message(self, session_id, message_id, metadata=metadata,
                                              expected_metadata=expected_metadata)

    @bridged
    async def delete_message(self, session_id: str, message_id: str, *,
                             expected_metadata: dict[str, Any] | None = None) -> Message | None:
        """Delete one message; returns it, or None if it did not exist (or another caller deleted it first: of
        concurrent deletes of one message exactly one gets it back). Other messages keep their order.

        Args:
            session_id, message_id: the message.
            expected_metadata: optional guard, as for :meth:`update_message`: the metadata as the caller read it.

        Raises:
            ValidationError: bad ids or metadata.
            ConflictError: the stored metadata differs from ``expected_metadata`` (nothing is deleted).
        """
        # queued enrichment reads the message: it runs first
        return await self._settled(session_id, lambda: _sessions.delete_message(
            self, session_id, message_id, expected_metadata))

    @bridged
    async def replace_messages(self, session_id: str, messages: list[dict[str, Any]], *,
                               expected_ids: list[str] | None = None) -> list[Message]:
        """Replace all messages of a session (created if missing) in one transaction.

        A replacing message without an ``id`` that equals a current one (role, content, name, tool calls) in the
        same order (the lists' common head or tail, or a run both share between them) keeps that message's id and
        time; a kept message that a commit has read is not committed again (unless its text changed), so sending
        a conversation again with a change (LlamaIndex ``set_messages``) commits only the change.

        Args:
            session_id: the session. messages: a list of message dicts as for :meth:`add_messages`.
            expected_ids: optional compare-and-replace guard: the session's message ids, in order, as the
                caller read them (``[]`` for a missing or empty session). If the session holds other ids when
                the write starts (another writer, perhaps in another process, added or removed a message),
                nothing is written and :class:`ConflictError` is raised, so a read-modify-write never drops a
                message it did not see. ``None`` (default) replaces unconditionally.

        Returns:
            The session's messages after the replacement, in order.

        Raises:
            ValidationError: a bad id, ``messages`` not a list, ``expected_ids`` not a list of strings, or
                any bad message (nothing is changed).
            ConflictError: ``expected_ids`` differs from the stored ids (nothing is changed).
        """
        return await self._settled(
            session_id, lambda: _sessions.replace_messages(self, session_id, messages, expected_ids))

    @bridged
    async def clear_messages(self, session_id: str) -> int:
        """Delete every message of a session; returns how many were deleted."""
        return await self._settled(session_id, lambda: _sessions.clear_messages(self, session_id))

    @bridged
    async def commit_session(self, session_id: str, *, wait: bool = True) -> dict[str, Any]:
        """Turn the session's new messages into entries with zero LLM calls.

        Writes one entry per user/assistant turn (with its FTS row and its embedding job) and
        ``session_memory_links``, then the enrichment: entity tags on those turns, extracted facts (deduplicated and
        hardened against the owner's existing facts; a changed value supersedes the old entry, and the value stated
        last by message time wins, so a fact from a session committed late with older dates is stored already
        superseded), temporal graph relations and a rule-based session summary. Idempotent: messages already
        committed are skipped, so a second commit with no new messages writes nothing.

        Args:
            session_id: the session.
            wait: True (default) writes turns and enrichment in one transaction before returning. False returns
                once the turns are committed (durable, keyword-searchable, embedding queued) and queues the
                enrichment as a durable ``enrich`` job that the background worker runs next (``flush()`` waits for
                it; a crash leaves it queued for the next process). Either way each message is enriched once,
                in message order: a waiting commit first runs any enrichment still queued for the session.

        Returns:
            ``{"session_id", "messages", "turns", "facts_added", "facts_hardened", "facts_superseded",
            "summary_id", "enriched"}``; with ``wait=False`` the fact counts are 0, ``summary_id`` is None and
            ``enriched`` is False (True when nothing was left to enrich).

        Raises:
            NotFoundError: unknown session.
            ValidationError: ``wait`` is not a bool.
        """
        try:
            result = await _commit.commit_session(self, session_id, wait=check_bool(wait, "wait"))
        finally:
            self._wrote()
        self._notify()
        return result

    async def _settled(self, session_id: str, edit: Callable[[], Awaitable[T]]) -> T:
        """Run a message edit after the session's queued enrichment, which reads messages by seq. The edit's
        transaction refuses to run while enrichment is queued (a commit in another process may queue it after
        the settle), and is then run again after another settle."""
        check_id(session_id, "session_id")
        for _ in range(20):
            await _commit.settle(self, [session_id])
            try:
                return await edit()
            except _sessions.Unsettled:
                continue
        raise StorageError(f"session {session_id!r} kept being committed during the edit; try again")

    def _wrote(self) -> None:
        """Note a session write: the background enrichment waits for a pause in these (``ingest.enrich_idle_s``)."""
        self._last_write = asyncio.get_running_loop().time()
