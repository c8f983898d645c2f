"""OpenAI Threads (Assistants v2) and Conversations objects stored in AgentBase sessions.

A thread or a conversation is a session (id ``thread_…`` / ``conv_…``); a message or item is a session
message (id ``msg_…``, ``fc_…``, ``fco_…``). Methods return JSON-ready dicts shaped exactly like the API
objects of OpenAI SDK 3.57, which :mod:`agentbase.web.openai_routes` serves unchanged. OpenAI-only fields
(attachments, rich content parts, assistant/run ids, item type) live under the reserved ``"_openai"``
metadata key. Sessions written by other adapters are visible too: a thread shows their user/assistant text
messages, a conversation shows every message.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from agentbase.errors import StorageError, UsageError
from agentbase.sync import release_db, resolve_db, run_sync

from ._owners import foreign_owner
from ._openai_rules import (RESERVED, THREAD_MESSAGE_KEYS, OpenAIValidationError, _check_keys, _check_metadata,
                            _check_object, _check_page, _conversation_obj, _envelope, _item_obj, _items_input,
                            _join, _message_obj, _new_id, _NotFound, _require, _split, _thread_message_input,
                            _thread_obj, _thread_visible, _ts)

__all__ = ["AsyncOpenAIAssistantAdapter", "OpenAIAssistantAdapter", "OpenAIValidationError"]


# ---------------------------------------------------------------------------------------------- adapters
def _resolve(db: Any) -> tuple[Any, bool]:
    """``(engine, owned)``: a path opens a new AgentBase that the adapter closes (``owned``), as the other
    adapters do."""
    if isinstance(db, (str, os.PathLike)):
        return resolve_db(db)
    aio = getattr(db, "aio", db)  # a SyncAgentBase wraps an AgentBase as .aio
    if not hasattr(aio, "create_session") or not hasattr(aio, "get_messages"):
        raise TypeError(f"db must be an AgentBase, a SyncAgentBase or a path, got {type(db).__name__}")
    return aio, False


class AsyncOpenAIAssistantAdapter:
    """OpenAI Threads and Conversations over an :class:`~agentbase.engine.AgentBase` (async).

    Args:
        db: an :class:`~agentbase.engine.AgentBase`, a :class:`~agentbase.sync.SyncAgentBase`, or a database path
            (opened with the default settings; :meth:`aclose` closes it).
        user_id: owner of new threads/conversations unless a call passes one (else the ``user_id`` key of
            their metadata, if any). The owner scopes :meth:`retrieve_context` and the memories a commit
            writes.
        agent_id: agent id recorded on new sessions.
        exclusive: with ``user_id``/``agent_id``, threads whose session has no owner are another owner's too
            (404): the HTTP server sets it for requests scoped by ``X-AgentBase-User``, whose owner must see only
            their own threads, as on ``/api/v1``.

    Raises:
        TypeError: ``db`` is not an AgentBase, a SyncAgentBase or a path.
    """

    def __init__(self, db: Any, *, user_id: str | None = None, agent_id: str | None = None,
                 exclusive: bool = False):
        self._aio, self._owned = _resolve(db)
        self._blocking: Any = None  # set by the sync adapter: db.sync, whose calls never suspend
        self.user_id = user_id
        self.agent_id = agent_id
        self.exclusive = exclusive

    async def aclose(self) -> None:
        """Close the database if this adapter opened it from a path (idempotent)."""
        if self._owned:
            self._owned = False
            await release_db(self._aio)

    async def __aenter__(self) -> AsyncOpenAIAssistantAdapter:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    async def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        if self._blocking is not None:
            return getattr(self._blocking, name)(*args, **kwargs)
        return await getattr(self._aio, name)(*args, **kwargs)

    async def _session(self, session_id: Any, what: str = "thread") -> Any:
        if not isinstance(session_id, str) or not session_id:
            raise OpenAIValidationError(f"Invalid '{what}_id': expected a non-empty string.", f"{what}_id")
        session = await self._call("get_session", session_id)
        # Another user's (or agent's) thread is as unknown to this adapter as a missing one.
        if session is None or foreign_owner(session, self.user_id, self.agent_id, unowned_is_foreign=self.exclusive):
            raise _NotFound(f"No {what} found with id '{session_id}'.")
        return session

    async def _message(self, session_id: str, message_id: Any, what: str = "message",
                       thread: bool = True) -> Any:
        if not isinstance(message_id, str) or not message_id:
            raise OpenAIValidationError(f"Invalid '{what}_id': expected a non-empty string.", f"{what}_id")
        msg = await self._call("get_message", session_id, message_id)
        if msg is None or (thread and not _thread_visible(msg)):
            raise _NotFound(f"No {what} found with id '{message_id}'.")
        return msg

    async def _new_session(self, prefix: str, metadata: dict[str, str] | None, extra: dict[str, Any],
                           user_id: str | None) -> Any:
        owner = user_id or self.user_id or (metadata or {}).get("user_id")
        return await self._call("create_session", session_id=_new_id(prefix), user_id=owner,
                                agent_id=self.agent_id, metadata=_join(metadata or {}, extra))

    async def _page(self, session_id: str, *, limit: Any, order: Any, after: Any, before: Any, keep: Any,
                    what: str) -> tuple[list[Any], bool]:
        """One cursor page of ``keep``-visible messages in ``order`` (insertion order = created_at order)."""
        limit, order = _check_page(limit, order)
        lo = hi = None  # exclusive seq bounds
        for name, cursor in (("after", after), ("before", before)):
            if cursor is not None:
                valid = isinstance(cursor, str) and cursor
                msg = await self._call("get_message", session_id, cursor) if valid else None
                if msg is None:
                    raise _NotFound(f"No {what} found with id '{cursor}' (the '{name}' cursor).", name)
                lo, hi = (msg.seq, hi) if (name == "after") == (order == "asc") else (lo, msg.seq)
        backwards = before is not None and after is None  # read the items nearest the cursor, then flip
        scan = order if not backwards else ("desc" if order == "asc" else "asc")
        found: list[Any] = []
        while len(found) <= limit:
            batch = await self._call("get_messages", session_id, limit=limit + 1, order=scan, after_seq=lo,
                                     before_seq=hi)
            found.extend(m for m in batch if keep(m))
            if len(batch) <= limit:
                break
            lo, hi = (batch[-1].seq, hi) if scan == "asc" else (lo, batch[-1].seq)
        page = found[:limit]
        return (page[::-1] if backwards else page), len(found) > limit

    # ------------------------------------------------------------------------------------------ threads
    async def create_thread(self, messages: list[dict[str, Any]] | None = None,
                            metadata: dict[str, str] | None = None, *,
                            tool_resources: dict[str, Any] | None = None,
                            user_id: str | None = None) -> dict[str, Any]:
        """Create a thread (``POST /v1/threads``), optionally with initial messages.

        Args:
            messages: ``[{"role", "content", "attachments"?, "metadata"?}]`` as in :meth:`create_message`.
            metadata: up to 16 string pairs. tool_resources: stored and returned unchanged.
            user_id: the owner (default: the adapter's, else ``metadata["user_id"]``).

        Returns:
            A ``Thread``: ``{id, object: "thread", created_at, metadata, tool_resources}``.

        Raises:
            OpenAIValidationError: bad messages or metadata (nothing is written).
        """
        meta = _check_metadata(metadata)
        if messages is not None and not isinstance(messages, list):
            raise OpenAIValidationError("Invalid 'messages': expected an array.", "messages")
        rows = []
        for i, m in enumerate(messages or []):
            if not isinstance(m, dict):
                raise OpenAIValidationError(f"Invalid 'messages[{i}]': expected an object.", f"messages[{i}]")
            _check_keys(m, THREAD_MESSAGE_KEYS, f"messages[{i}].")
            rows.append(_thread_message_input(m.get("role"), m.get("content"), m.get("metadata"),
                                              m.get("attachments"), f"messages[{i}]."))
        _check_object(tool_resources, "tool_resources")
        extra = {"object": "thread", "tool_resources": tool_resources}
        session = await self._new_session("thread", meta, extra, user_id)
        if rows:
            await self._call("add_messages", session.id, rows)
        return _thread_obj(session)

    async def retrieve_thread(self, thread_id: str) -> dict[str, Any]:
        """Return a ``Thread`` (``GET /v1/threads/{thread_id}``).

        Raises:
            NotFoundError: unknown thread.
        """
        return _thread_obj(await self._session(thread_id))

    async def modify_thread(self, thread_id: str, *, metadata: dict[str, str] | None = None,
                            tool_resources: dict[str, Any] | None = None) -> dict[str, Any]:
        """Replace a thread's metadata and/or tool resources (``POST /v1/threads/{id}``).

        Returns the updated ``Thread``.

        Raises:
            NotFoundError: unknown thread. OpenAIValidationError: bad metadata.
        """
        meta = _check_metadata(metadata)
        _check_object(tool_resources, "tool_resources")
        session = await self._session(thread_id)
        if meta is None and tool_resources is None:
            return _thread_obj(session)
        _, extra = _split(session.metadata)
        if tool_resources is not None:
            extra["tool_resources"] = tool_resources
        old_meta = {k: v for k, v in session.metadata.items() if k != RESERVED}  # unchanged values, not shown ones
        return _thread_obj(await self._call("update_session", thread_id,
                                            metadata=_join(old_meta if meta is None else meta, extra,
                                                           session.metadata)))

    async def delete_thread(self, thread_id: str) -> dict[str, Any]:
        """Delete a thread and its messages (``DELETE /v1/threads/{id}``); committed memories stay.

        Returns ``{id, object: "thread.deleted", deleted: True}``.

        Raises:
            NotFoundError: unknown thread.
        """
        await self._session(thread_id)
        await self._call("delete_session", thread_id)
        return {"id": thread_id, "object": "thread.deleted", "deleted": True}

    async def create_message(self, thread_id: str, role: str, content: str | list[dict[str, Any]],
                             metadata: dict[str, str] | None = None,
                             attachments: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """Append a message (``POST /v1/threads/{thread_id}/messages``).

        Args:
            thread_id: the thread. role: ``"user"`` or ``"assistant"``.
            content: a string or a list of ``text`` / ``image_file`` / ``image_url`` parts.
            metadata: up to 16 string pairs. attachments: ``[{file_id, tools: [{type}]}]`` (stored only).

        Returns:
            A ``Message`` (``object: "thread.message"``, text parts with empty annotations).

        Raises:
            NotFoundError: unknown thread. OpenAIValidationError: bad role, content, metadata or attachments.
        """
        row = _thread_message_input(role, content, metadata, attachments)
        await self._session(thread_id)
        return _message_obj((await self._call("add_messages", thread_id, [row]))[0])

    async def list_messages(self, thread_id: str, *, limit: int = 20, order: str = "desc",
                            after: str | None = None, before: str | None = None,
                            run_id: str | None = None) -> dict[str, Any]:
        """One page of a thread's messages (``GET /v1/threads/{thread_id}/messages``).

        Args:
            thread_id: the thread. limit: 1-100. order: ``"desc"`` (newest first, the default) or ``"asc"``.
            after / before: message ids; return the messages that follow / precede it in ``order`` (``before``
                returns the ones nearest to it). run_id: only messages created by this run.

        Returns:
            ``{object: "list", data, first_id, last_id, has_more}``; ``has_more``: more lie beyond the page
            in the direction read.

        Raises:
            NotFoundError: unknown thread or cursor. OpenAIValidationError: bad limit or order.
        """
        await self._session(thread_id)

        def keep(m: Any) -> bool:
            return _thread_visible(m) and (run_id is None or _split(m.metadata)[1].get("run_id") == run_id)

        page, more = await self._page(thread_id, limit=limit, order=order, after=after, before=before,
                                      keep=keep, what="message")
        return _envelope([_message_obj(m) for m in page], more)

    async def retrieve_message(self, thread_id: str, message_id: str) -> dict[str, Any]:
        """Return a ``Message`` (``GET /v1/threads/{thread_id}/messages/{message_id}``).

        Raises:
            NotFoundError: unknown thread or message.
        """
        await self._session(thread_id)
        return _message_obj(await self._message(thread_id, message_id))

    async def modify_message(self, thread_id: str, message_id: str, *,
                             metadata: dict[str, str] | None = None) -> dict[str, Any]:
        """Replace a message's metadata (``POST /v1/threads/{id}/messages/{msg_id}``).

        Returns the updated ``Message``.

        Raises:
            NotFoundError: unknown thread or message. OpenAIValidationError: bad metadata.
        """
        meta = _check_metadata(metadata)
        await self._session(thread_id)
        msg = await self._message(thread_id, message_id)
        if meta is None:
            return _message_obj(msg)
        _, extra = _split(msg.metadata)
        msg = await self._call("update_message", thread_id, message_id, metadata=_join(meta, extra, msg.metadata))
        return _message_obj(msg)

    async def delete_message(self, thread_id: str, message_id: str) -> dict[str, Any]:
        """Delete a message (``DELETE /v1/threads/{id}/messages/{msg_id}``).

        Returns ``{id, object: "thread.message.deleted", deleted: True}``.

        Raises:
            NotFoundError: unknown thread or message.
        """
        await self._session(thread_id)
        await self._message(thread_id, message_id)
        if await self._call("delete_message", thread_id, message_id) is None:  # another caller deleted it first
            raise _NotFound(f"No message found with id '{message_id}'.")
        return {"id": message_id, "object": "thread.message.deleted", "deleted": True}

    async def retrieve_context(self, thread_id: str, query: str, top_k: int = 5, *, scope: str = "thread",
                               commit: bool = True,
                               flush_timeout: float | None = 10.0) -> list[dict[str, Any]]:
        """Find the context most relevant to ``query`` with AgentBase ``find`` (one call, comparable scores).

        Args:
            thread_id: the thread. query: the text to search for. top_k: results to return (1-100).
            scope: ``"thread"``: the thread's session and its owner (``find(session_id=, user_id=)``): its
                turns, facts and summary. ``"owner"``: everything of the thread's owner across sessions,
                including memories stored by other adapters (as ``"thread"`` when the thread has no owner).
            commit: first commit the thread's new messages (``commit_session``: idempotent, zero LLM calls)
                so that they are searchable as turns and facts.
            flush_timeout: seconds to wait for new vectors after a commit (keyword search needs none).

        Returns:
            Best first: ``{entry_id, source ("thread" or "memory"), category, role, message_id, content,
            score, matched_by, created_at}``; ``message_id``/``role`` are set for entries made from a thread
            message.

        Raises:
            NotFoundError: unknown thread. OpenAIValidationError: bad top_k or scope.
        """
        _require(not isinstance(top_k, bool) and isinstance(top_k, int) and 1 <= top_k <= 100,
                 "Invalid 'top_k': must be an integer between 1 and 100.", "top_k")
        _require(scope in ("thread", "owner"), "Invalid 'scope': must be 'thread' or 'owner'.", "scope")
        session = await self._session(thread_id)
        if commit and (await self._call("commit_session", thread_id))["messages"]:
            await self._call("flush", timeout=flush_timeout)
        filters = {"user_id": session.user_id} if session.user_id else {}
        if scope == "thread" or not filters:
            filters["session_id"] = thread_id
        try:
            results = await self._call("find", query, top_k=top_k, **filters)
        except StorageError:  # core gap: no vector table until the first embedding lands; keywords still work
            results = await self._call("find", query, top_k=top_k, mode="fts", **filters)
        return [{"entry_id": r.entry.id, "source": "thread" if r.entry.session_id == thread_id else "memory",
                 "category": r.entry.category, "role": r.entry.metadata.get("role"),
                 "message_id": r.entry.metadata.get("message_id"), "content": r.text or r.entry.content,
                 "score": float(r.score), "matched_by": r.matched_by, "created_at": _ts(r.entry.created_at)}
                for r in results]

    # ------------------------------------------------------------------------------------------ conversations
    async def create_conversation(self, items: list[dict[str, Any]] | None = None,
                                  metadata: dict[str, str] | None = None, *,
                                  user_id: str | None = None) -> dict[str, Any]:
        """Create a conversation (``POST /v1/conversations``) with up to 20 initial items.

        Args:
            items: ``message`` items (content a string or ``input_text``/``output_text`` parts),
                ``function_call`` or ``function_call_output`` items. metadata: up to 16 string pairs.
            user_id: the owner (as in :meth:`create_thread`).

        Returns:
            A ``Conversation``: ``{id, object: "conversation", created_at, metadata}``.

        Raises:
            OpenAIValidationError: bad items or metadata (nothing is written).
        """
        meta = _check_metadata(metadata)
        rows = _items_input(items, allow_empty=True)
        session = await self._new_session("conv", meta, {"object": "conversation"}, user_id)
        if rows:
            await self._call("add_messages", session.id, rows)
        return _conversation_obj(session)

    async def retrieve_conversation(self, conversation_id: str) -> dict[str, Any]:
        """Return a ``Conversation`` (``GET /v1/conversations/{conversation_id}``).

        Raises:
            NotFoundError: unknown conversation.
        """
        return _conversation_obj(await self._session(conversation_id, "conversation"))

    async def update_conversation(self, conversation_id: str, *, metadata: dict[str, str] | None) -> dict[str, Any]:
        """Replace a conversation's metadata (``POST /v1/conversations/{conversation_id}``).

        Args:
            conversation_id: the conversation. metadata: up to 16 string pairs, replacing the old ones; ``None``
                (the SDK's ``metadata=None``, sent as null) clears them.

        Raises:
            NotFoundError: unknown conversation. OpenAIValidationError: bad metadata.
        """
        meta = _check_metadata(metadata) or {}
        session = await self._session(conversation_id, "conversation")
        _, extra = _split(session.metadata)
        session = await self._call("update_session", conversation_id, metadata=_join(meta, extra, session.metadata))
        return _conversation_obj(session)

    async def delete_conversation(self, conversation_id: str) -> dict[str, Any]:
        """Delete a conversation and its items (``DELETE /v1/conversations/{id}``).

        Returns ``{id, object: "conversation.deleted", deleted: True}``.

        Raises:
            NotFoundError: unknown conversation.
        """
        await self._session(conversation_id, "conversation")
        await self._call("delete_session", conversation_id)
        return {"id": conversation_id, "object": "conversation.deleted", "deleted": True}

    async def create_items(self, conversation_id: str, items: list[dict[str, Any]]) -> dict[str, Any]:
        """Append 1-20 items in one transaction (``POST /v1/conversations/{id}/items``).

        Returns a ``ConversationItemList``: ``{object: "list", data, first_id, last_id, has_more: False}``.

        Raises:
            NotFoundError: unknown conversation. OpenAIValidationError: bad items (none is written).
        """
        rows = _items_input(items, allow_empty=False)
        await self._session(conversation_id, "conversation")
        added = await self._call("add_messages", conversation_id, rows)
        return _envelope([_item_obj(m) for m in added], False)

    async def list_items(self, conversation_id: str, *, limit: int = 20, order: str = "desc",
                         after: str | None = None) -> dict[str, Any]:
        """One page of a conversation's items (``GET /v1/conversations/{conversation_id}/items``).

        Args:
            conversation_id: the conversation. limit: 1-100. order: ``"desc"`` (default) or ``"asc"``.
            after: return the items that follow this item id in ``order``.

        Returns:
            ``{object: "list", data, first_id, last_id, has_more}``.

        Raises:
            NotFoundError: unknown conversation or cursor. OpenAIValidationError: bad limit or order.
        """
        await self._session(conversation_id, "conversation")
        page, more = await self._page(conversation_id, limit=limit, order=order, after=after, before=None,
                                      keep=lambda m: True, what="item")
        return _envelope([_item_obj(m) for m in page], more)

    async def retrieve_item(self, conversation_id: str, item_id: str) -> dict[str, Any]:
        """Return one item (``GET /v1/conversations/{conversation_id}/items/{item_id}``).

        Raises:
            NotFoundError: unknown conversation or item.
        """
        await self._session(conversation_id, "conversation")
        return _item_obj(await self._message(conversation_id, item_id, "item", thread=False))

    async def delete_item(self, conversation_id: str, item_id: str) -> dict[str, Any]:
        """Delete one item (``DELETE /v1/conversations/{id}/items/{item_id}``); returns the ``Conversation``.

        Raises:
            NotFoundError: unknown conversation or item.
        """
        session = await self._session(conversation_id, "conversation")
        await self._message(conversation_id, item_id, "item", thread=False)
        await self._call("delete_message", conversation_id, item_id)
        return _conversation_obj(session)


PUBLIC_METHODS = ("create_thread", "retrieve_thread", "modify_thread", "delete_thread", "create_message",
                  "list_messages", "retrieve_message", "modify_message", "delete_message", "retrieve_context",
                  "create_conversation", "retrieve_conversation", "update_conversation",
                  "delete_conversation", "create_items", "list_items", "retrieve_item", "delete_item")


class OpenAIAssistantAdapter:
    """Blocking twin of :class:`AsyncOpenAIAssistantAdapter`: same methods, arguments and return values.

    Works in scripts and inside a running event loop (every call goes through ``db.sync``).

    Args:
        db: an :class:`~agentbase.engine.AgentBase`, a :class:`~agentbase.sync.SyncAgentBase`, or a database path
            (opened with the default settings; :meth:`close` closes it).
        user_id: default owner of new threads and conversations. agent_id: recorded on new sessions.

    Raises:
        TypeError: ``db`` is not an AgentBase, a SyncAgentBase or a path.
    """

    def __init__(self, db: Any, *, user_id: str | None = None, agent_id: str | None = None):
        self._impl = AsyncOpenAIAssistantAdapter(db, user_id=user_id, agent_id=agent_id)
        self._impl._blocking = self._impl._aio.sync

    def close(self) -> None:
        """Close the database if this adapter opened it from a path (idempotent)."""
        if self._impl._owned:
            self._impl._owned = False
            run_sync(release_db(self._impl._aio))

    def __enter__(self) -> OpenAIAssistantAdapter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def aio(self) -> AsyncOpenAIAssistantAdapter:
        """An :class:`AsyncOpenAIAssistantAdapter` over the same database and defaults."""
        return AsyncOpenAIAssistantAdapter(self._impl._aio, user_id=self._impl.user_id,
                                           agent_id=self._impl.agent_id)


def _blocking(name: str) -> Any:
    fn = getattr(AsyncOpenAIAssistantAdapter, name)

    @functools.wraps(fn)
    def method(self: OpenAIAssistantAdapter, *args: Any, **kwargs: Any) -> Any:
        coro = fn(self._impl, *args, **kwargs)
        try:
            coro.send(None)  # every await inside goes to db.sync, so the coroutine finishes in one step
        except StopIteration as done:
            return done.value
        coro.close()
        raise UsageError(f"{name} suspended unexpectedly")  # pragma: no cover - defensive

    method.__qualname__ = f"OpenAIAssistantAdapter.{name}"
    return method


for _name in PUBLIC_METHODS:
    setattr(OpenAIAssistantAdapter, _name, _blocking(_name))
