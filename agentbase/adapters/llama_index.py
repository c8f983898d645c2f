"""LlamaIndex adapters: chat stores whose keys are AgentBase sessions.

* :class:`AgentBaseChatStore` is a ``BaseChatStore`` with ``SimpleChatStore`` semantics, for
  ``ChatMemoryBuffer.from_defaults(chat_store=..., chat_store_key=...)`` and the chat engines built on it.
* :class:`AgentBaseDBChatStore` is an ``AsyncDBChatStore`` (active/archived FIFO queue) for the newer
  ``llama_index.core.memory.Memory`` (``Memory.from_defaults(chat_store=...)``).

A key is a session id; each ``ChatMessage`` is one row of the session log (strict ``seq`` order). The
``role``, ``content`` (the text blocks), ``name``, ``tool_calls`` and ``tool_call_id`` columns are filled for
AgentBase's own use, and the exact message (``ChatMessage.model_dump(mode="json")``) is kept in
``metadata["llama_index"]``, so role, blocks and ``additional_kwargs`` round-trip. Messages written by other
adapters are rebuilt from the columns. Both stores see the same sessions; the queue status lives in
``metadata["llama_index_status"]``.
"""

from __future__ import annotations

import asyncio
import json
import operator
import random
from typing import Any, Awaitable, Callable, List, Optional, TypeVar

from agentbase import AgentBase, release_db, resolve_db, run_sync
from agentbase.adapters._keys import LLAMA_INDEX_MESSAGE, LLAMA_INDEX_SESSION, LLAMA_INDEX_STATUS
from agentbase.adapters._owners import foreign_owner
from agentbase.errors import ConflictError, MissingDependencyError, NotFoundError, ValidationError
from agentbase.models import Message

try:
    from llama_index.core.base.llms.types import ChatMessage, MessageRole, TextBlock, ToolCallBlock
    from llama_index.core.bridge.pydantic import PrivateAttr
    from llama_index.core.storage.chat_store.base import BaseChatStore
    from llama_index.core.storage.chat_store.base_db import AsyncDBChatStore, MessageStatus
    from pydantic_core import PydanticSerializationError
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingDependencyError("llama-index-core", "llama-index") from exc

__all__ = ["AgentBaseChatStore", "AgentBaseDBChatStore"]

T = TypeVar("T")
METADATA_KEY = LLAMA_INDEX_MESSAGE
STATUS_KEY = LLAMA_INDEX_STATUS
SESSION_MARK = LLAMA_INDEX_SESSION  # session metadata flag: the session is a key of these stores
_ROLES = {r.value for r in MessageRole}
_MAX_READ = 1_000_000  # largest ``limit`` AgentBase.get_messages accepts
_TRIES = 100  # attempts of a guarded read-then-write (insert, pop, drop, archive) before ConflictError


# ------------------------------------------------------------------------------------------------ plumbing
def _usable_id(value: Any) -> str | None:
    if isinstance(value, str) and 0 < len(value) <= 256 and "\x00" not in value:
        return value
    return None


def _position(idx: Any) -> int:
    """A list position as ``list`` reads it (``operator.index``: ints and bools; ``1.0`` or ``"0"`` is a
    ``TypeError`` naming ``idx``)."""
    try:
        return operator.index(idx)
    except TypeError:
        raise TypeError(f"idx must be an integer list position, got {type(idx).__name__}") from None


def message_to_row(message: ChatMessage, status: str | None = None) -> dict[str, Any]:
    """Convert a ``ChatMessage`` to an AgentBase message dict.

    Args:
        message: the LlamaIndex message.
        status: queue status stored for :class:`AgentBaseDBChatStore` (None: not recorded, reads as active).

    Returns:
        ``{"role", "content", "name", "tool_calls", "tool_call_id", "metadata"}``.
    """
    if not isinstance(message, ChatMessage):
        raise TypeError(f"expected a llama_index ChatMessage, got {type(message).__name__}")
    kwargs = message.additional_kwargs
    calls = [{"id": b.tool_call_id, "type": "function",
              "function": {"name": b.tool_name, "arguments": b.tool_kwargs if isinstance(b.tool_kwargs, str)
                           else json.dumps(b.tool_kwargs)}}
             for b in message.blocks if isinstance(b, ToolCallBlock)]
    try:
        dumped = message.model_dump(mode="json")
    except PydanticSerializationError as exc:  # a value in additional_kwargs JSON cannot hold
        raise ValidationError(f"message cannot be stored as JSON: {exc}") from None
    if not calls and isinstance(dumped["additional_kwargs"].get("tool_calls"), list):
        calls = [c for c in dumped["additional_kwargs"]["tool_calls"] if isinstance(c, dict)]
    metadata: dict[str, Any] = {METADATA_KEY: dumped}
    if status is not None:
        metadata[STATUS_KEY] = status
    return {"role": message.role.value, "content": message.content or "",
            "name": _usable_id(kwargs.get("name")), "tool_calls": calls or None,
            "tool_call_id": _usable_id(kwargs.get("tool_call_id")), "metadata": metadata}


def row_to_message(row: Message) -> ChatMessage:
    """Rebuild a ``ChatMessage`` from a stored AgentBase :class:`~agentbase.models.Message`.

    Messages written through these stores come back exactly; others are built from the columns (unknown roles
    become ``user``; ``name``, ``tool_call_id`` and OpenAI-style ``tool_calls`` go to ``additional_kwargs``).
    """
    stored = row.metadata.get(METADATA_KEY)
    if isinstance(stored, dict):
        return ChatMessage.model_validate(stored)
    extra: dict[str, Any] = {}
    for key in ("name", "tool_call_id", "tool_calls"):
        if getattr(row, key):
            extra[key] = getattr(row, key)
    role = row.role if row.role in _ROLES else MessageRole.USER.value
    return ChatMessage(role=role, blocks=[TextBlock(text=row.content)], additional_kwargs=extra)


def _row_dict(m: Message) -> dict[str, Any]:
    """A stored message as an ``add_messages`` dict that keeps its id, timestamp and metadata."""
    return {"id": m.id, "role": m.role, "content": m.content, "name": m.name, "tool_calls": m.tool_calls,
            "tool_call_id": m.tool_call_id, "metadata": m.metadata, "created_at": m.created_at}


def _status(m: Message) -> str:
    return m.metadata.get(STATUS_KEY, MessageStatus.ACTIVE.value)


class _EngineShare:
    """The engine a LlamaIndex pydantic object holds: given as an AgentBase or a path (``db_path``), reopened from the
    path after unpickling, one share per copy.

    Users declare the field ``db_path`` and the private ``_db`` and ``_owned``; ``_what`` names them in errors.
    """

    _what = "adapter"

    def _bind(self, db: Any) -> None:
        ab, owned = resolve_db(db)
        self._db, self._owned = ab, owned
        self._rebound()
        if self.db_path is None or owned:
            self.db_path = str(ab.path)  # absolute once opened from a path: an unpickled copy finds the same file

    def _rebound(self) -> None:
        """Hook: reset what belonged to the previous engine."""

    def _copied(self, clone: Any) -> None:
        """Hook: give a copy its own private state (pydantic's copy shares the private attributes)."""

    def __copy__(self) -> Any:
        # pydantic's copy shares the private attributes: a copy's close() would hand back the original's share
        # of the engine (and close it under other adapters). Each copy takes a share of its own.
        clone = super().__copy__()  # type: ignore[misc]
        self._copied(clone)
        if self._owned:
            clone._bind(self.db_path)
        return clone

    @property
    def db(self) -> AgentBase:
        """The underlying async :class:`~agentbase.AgentBase` (reopened from ``db_path`` after unpickling)."""
        if self._db is None:
            if not self.db_path:
                raise RuntimeError(f"this {self._what} has no database")
            self._bind(self.db_path)
        return self._db

    def close(self) -> None:
        """Hand back the database if this object opened it from a path (otherwise do nothing)."""
        if self._db is not None and self._owned:
            self._owned = False
            run_sync(release_db(self._db))


class _SessionsMixin(_EngineShare):
    """Key <-> session plumbing shared by both stores.

    The stores declare the fields ``db_path``, ``user_id``, ``agent_id`` and the private ``_db``, ``_owned``,
    ``_known``.
    """

    _what = "chat store"

    def _rebound(self) -> None:
        self._known = set()

    def _copied(self, clone: Any) -> None:
        clone._known = set(self._known)

    def __deepcopy__(self, memo: Any = None) -> Any:
        return self.__copy__()  # the fields are strings; the engine is shared, never copied

    async def _foreign(self, key: str) -> bool:
        """Whether ``key`` is a session of another user_id/agent_id than this store's: it reads as unknown, and
        writes to it raise (the store never touches another owner's conversation)."""
        if self.user_id is None and self.agent_id is None:
            return False  # checked on every call: a key this store wrote may since belong to someone else
        return foreign_owner(await self.db.get_session(key), self.user_id, self.agent_id) is not None

    async def _messages(self, key: str, **kwargs: Any) -> list[Message]:
        """``db.get_messages(key, ...)``, or ``[]`` for another owner's session."""
        return [] if await self._foreign(key) else await self.db.get_messages(key, **kwargs)

    async def _ensure(self, key: str) -> None:
        """Create the session for ``key`` (owned by user_id/agent_id) and flag it as a chat-store key."""
        session = await self.db.create_session(session_id=key, user_id=self.user_id, agent_id=self.agent_id,
                                               metadata={SESSION_MARK: True})
        if not session.metadata.get(SESSION_MARK):
            await self.db.update_session(key, metadata={**session.metadata, SESSION_MARK: True})
        self._known.add(key)

    async def _append(self, key: str, rows: list[dict[str, Any]]) -> None:
        if not rows:
            return
        if await self._foreign(key):
            raise ValidationError(f"chat store key {key!r} is a session of another user_id/agent_id")
        if key not in self._known:
            await self._ensure(key)
        try:
            await self.db.add_messages(key, rows)
        except NotFoundError:  # the session was deleted meanwhile (e.g. through another store object)
            await self._ensure(key)
            await self.db.add_messages(key, rows)

    async def _replace(self, key: str, rows: list[dict[str, Any]],
                       expected_ids: list[str] | None = None) -> None:
        await self._ensure(key)
        await self.db.replace_messages(key, rows, expected_ids=expected_ids)

    async def _retry(self, attempt: Callable[[], Awaitable[T]]) -> T:
        """Run ``attempt`` (a read, then a write guarded by what it read) until no other writer changed the
        data in between, at most :data:`_TRIES` times; the last ConflictError propagates."""
        for _ in range(_TRIES - 1):
            try:
                return await attempt()
            except ConflictError:
                await asyncio.sleep(random.uniform(0, 0.005))  # jitter: racing writers fall out of step
        return await attempt()

    async def _drop(self, key: str) -> Optional[List[Message]]:
        """Delete the session of ``key``; return its messages, or None if it did not exist (or is another
        owner's). The delete is guarded by the ids read, so every message deleted is one returned."""
        async def attempt() -> Optional[List[Message]]:
            session = await self.db.get_session(key)
            if session is None or foreign_owner(session, self.user_id, self.agent_id):
                return None
            rows = await self.db.get_messages(key)
            if not await self.db.delete_session(key, expected_ids=[m.id for m in rows]):
                return None  # another store deleted it meanwhile
            return rows

        rows = await self._retry(attempt)
        self._known.discard(key)
        return rows

    async def _pop(self, key: str, idx: int, status: str | None = None) -> Optional[Message]:
        """Delete and return the message at list position ``idx`` (among ``status`` messages if given), or None
        if there is none. Of callers popping at once, each gets a different message: a target another caller
        deleted first is picked again."""
        idx = _position(idx)
        for _ in range(_TRIES):
            target = await self._pick(key, idx, status)
            if target is None:
                return None
            removed = await self._delete_as_read(key, target)
            if removed is not None:
                return removed
            await asyncio.sleep(random.uniform(0, 0.005))
        raise ConflictError(f"chat store key {key!r}: other writers removed the message at {idx} {_TRIES} times")

    async def _delete_as_read(self, key: str, m: Message) -> Optional[Message]:
        """Delete ``m`` if it is still as read (its status unchanged: not archived meanwhile by another store);
        the deleted message, or None when another writer deleted or changed it first."""
        try:
            return await self.db.delete_message(key, m.id, expected_metadata=m.metadata)
        except ConflictError:
            return None

    async def _pick(self, key: str, idx: int, status: str | None = None) -> Optional[Message]:
        """The message at list position ``idx`` (Python semantics, negatives count from the end) or None."""
        if status is None and -_MAX_READ <= idx < _MAX_READ:  # read only as far as the position
            if idx >= 0:
                rows = await self._messages(key, limit=idx + 1)
                return rows[idx] if len(rows) > idx else None
            rows = await self._messages(key, order="desc", limit=-idx)
            return rows[-1] if len(rows) >= -idx else None
        rows = [m for m in await self._messages(key) if status is None or _status(m) == status]
        return rows[idx] if -len(rows) <= idx < len(rows) else None

    async def _keys(self) -> List[str]:
        sessions, offset = [], 0
        while True:
            page = await self.db.list_sessions(user_id=self.user_id, agent_id=self.agent_id, limit=1000,
                                               offset=offset)
            sessions.extend(page)
            if len(page) < 1000:
                break
            offset += len(page)
        return [s.id for s in reversed(sessions) if s.metadata.get(SESSION_MARK)]  # creation order


# -------------------------------------------------------------------------------------------------- stores
class AgentBaseChatStore(_SessionsMixin, BaseChatStore):
    """A LlamaIndex ``BaseChatStore`` on an AgentBase file, with ``SimpleChatStore`` semantics.

    Each key is a session (created on first write with ``user_id``/``agent_id`` as owners, so
    ``db.commit_session(key)`` files its memories under them). Unknown keys read as ``[]``;
    ``delete_messages`` removes the key (its session); ``idx`` arguments are list positions. Every method has
    a real async twin.

    Args:
        db: an :class:`~agentbase.AgentBase`, a :class:`~agentbase.SyncAgentBase` or a database path (a path
            opens a private AgentBase with default settings; :meth:`close` closes it).
        user_id: owner recorded on new sessions; also restricts :meth:`get_keys` to that owner's sessions.
        agent_id: agent recorded on new sessions; also restricts :meth:`get_keys`.

    Example:
        >>> store = AgentBaseChatStore("agent.db", user_id="alice")  # doctest: +SKIP
        >>> memory = ChatMemoryBuffer.from_defaults(chat_store=store,  # doctest: +SKIP
        ...                                         chat_store_key="alice-1")
    """

    db_path: Optional[str] = None
    user_id: Optional[str] = None
    agent_id: Optional[str] = None
    _db: Any = PrivateAttr(default=None)
    _owned: bool = PrivateAttr(default=False)
    _known: set = PrivateAttr(default_factory=set)

    def __init__(self, db: Any = None, **data: Any) -> None:
        super().__init__(**data)
        if db is None and self.db_path is None:
            raise TypeError("AgentBaseChatStore needs db (an AgentBase, a SyncAgentBase or a path)")
        self._bind(self.db_path if db is None else db)  # a bad path fails here, not at first use

    @classmethod
    def class_name(cls) -> str:
        """Serialization name of the class."""
        return "AgentBaseChatStore"

    # -- async (the real implementations)
    async def aset_messages(self, key: str, messages: List[ChatMessage]) -> None:
        """Replace the messages of ``key`` (one transaction); the key exists afterwards even if empty."""
        await self._replace(key, [message_to_row(m) for m in messages])

    async def aget_messages(self, key: str) -> List[ChatMessage]:
        """Messages of ``key`` in insertion order; ``[]`` for an unknown key."""
        return [row_to_message(m) for m in await self._messages(key)]

    async def async_add_message(self, key: str, message: ChatMessage, idx: Optional[int] = None) -> None:
        """Append ``message`` (or insert it at list position ``idx``, as ``list.insert`` does).

        An insert rewrites the key's messages guarded by the ids it read
        (``replace_messages(expected_ids=...)``), so a message another store or process added meanwhile is
        never lost: the insert is redone on a fresh read.

        Raises:
            ConflictError: other writers changed ``key`` during each of 100 insert attempts (nothing written).
        """
        row = message_to_row(message)
        if idx is None:
            await self._append(key, [row])
            return
        idx = _position(idx)
        # Read-modify-write guarded by the ids read: a message another store (or process) appended
        # meanwhile makes the replace raise ConflictError instead of deleting it; the insert is redone.
        await self._retry(lambda: self._insert_at(key, idx, row))

    async def _insert_at(self, key: str, idx: int, row: dict[str, Any]) -> None:
        current = await self._messages(key)
        rows = [_row_dict(m) for m in current]
        rows.insert(idx, row)
        await self._replace(key, rows, expected_ids=[m.id for m in current])

    async def adelete_messages(self, key: str) -> Optional[List[ChatMessage]]:
        """Remove ``key`` and return its messages, or None if the key does not exist."""
        rows = await self._drop(key)
        return None if rows is None else [row_to_message(m) for m in rows]

    async def adelete_message(self, key: str, idx: int) -> Optional[ChatMessage]:
        """Remove and return the message at list position ``idx``; None if the key or position does not exist.

        Negative positions count from the end (``-1`` is the last message); the others keep their order.
        """
        removed = await self._pop(key, idx)
        return row_to_message(removed) if removed is not None else None

    async def adelete_last_message(self, key: str) -> Optional[ChatMessage]:
        """Remove and return the last message; None for an unknown or empty key."""
        return await self.adelete_message(key, -1)

    async def aget_keys(self) -> List[str]:
        """Keys written through the LlamaIndex stores (of ``user_id``/``agent_id`` if set), oldest first."""
        return await self._keys()

    # -- sync twins
    def set_messages(self, key: str, messages: List[ChatMessage]) -> None:
        """Replace the messages of ``key`` (see :meth:`aset_messages`)."""
        run_sync(self.aset_messages(key, messages))

    def get_messages(self, key: str) -> List[ChatMessage]:
        """Messages of ``key`` in insertion order (see :meth:`aget_messages`)."""
        return run_sync(self.aget_messages(key))

    def add_message(self, key: str, message: ChatMessage, idx: Optional[int] = None) -> None:
        """Append ``message`` or insert it at ``idx`` (see :meth:`async_add_message`)."""
        run_sync(self.async_add_message(key, message, idx))

    def delete_messages(self, key: str) -> Optional[List[ChatMessage]]:
        """Remove ``key`` and return its messages (see :meth:`adelete_messages`)."""
        return run_sync(self.adelete_messages(key))

    def delete_message(self, key: str, idx: int) -> Optional[ChatMessage]:
        """Remove and return the message at ``idx`` (see :meth:`adelete_message`)."""
        return run_sync(self.adelete_message(key, idx))

    def delete_last_message(self, key: str) -> Optional[ChatMessage]:
        """Remove and return the last message (see :meth:`adelete_last_message`)."""
        return run_sync(self.adelete_last_message(key))

    def get_keys(self) -> List[str]:
        """Keys of this store, oldest first (see :meth:`aget_keys`)."""
        return run_sync(self.aget_keys())


class AgentBaseDBChatStore(_SessionsMixin, AsyncDBChatStore):
    """A LlamaIndex ``AsyncDBChatStore`` on an AgentBase file, for ``llama_index.core.memory.Memory``.

    Messages carry a status (``active``/``archived``, default active); ``Memory`` archives the oldest active
    messages when its queue is full. Reads return insertion order. ``delete_message(key, idx)`` takes a list
    position among the *active* messages (SQLAlchemyChatStore takes a row id, which AgentBase does not
    expose).

    Args:
        db: an :class:`~agentbase.AgentBase`, a :class:`~agentbase.SyncAgentBase` or a database path.
        user_id: owner recorded on new sessions; also restricts :meth:`get_keys`.
        agent_id: agent recorded on new sessions; also restricts :meth:`get_keys`.

    Example:
        >>> store = AgentBaseDBChatStore(db)                                   # doctest: +SKIP
        >>> memory = Memory.from_defaults(session_id="alice-1", chat_store=store)  # doctest: +SKIP
    """

    db_path: Optional[str] = None
    user_id: Optional[str] = None
    agent_id: Optional[str] = None
    _db: Any = PrivateAttr(default=None)
    _owned: bool = PrivateAttr(default=False)
    _known: set = PrivateAttr(default_factory=set)

    def __init__(self, db: Any = None, **data: Any) -> None:
        super().__init__(**data)
        if db is None and self.db_path is None:
            raise TypeError("AgentBaseDBChatStore needs db (an AgentBase, a SyncAgentBase or a path)")
        self._bind(self.db_path if db is None else db)  # a bad path fails here, not at first use

    @classmethod
    def class_name(cls) -> str:
        """Serialization name of the class."""
        return "AgentBaseDBChatStore"

    async def _rows(self, key: str, status: Optional[MessageStatus]) -> List[Message]:
        rows = await self._messages(key)
        return rows if status is None else [m for m in rows if _status(m) == MessageStatus(status).value]

    async def get_messages(self, key: str, status: Optional[MessageStatus] = MessageStatus.ACTIVE,
                           limit: Optional[int] = None, offset: Optional[int] = None) -> List[ChatMessage]:
        """Messages of ``key`` with ``status`` (None: all), oldest first, from ``offset``, up to ``limit``."""
        rows = (await self._rows(key, status))[offset or 0:]
        return [row_to_message(m) for m in (rows if limit is None else rows[:limit])]

    async def count_messages(self, key: str, status: Optional[MessageStatus] = MessageStatus.ACTIVE) -> int:
        """Number of messages of ``key`` with ``status`` (None: all)."""
        return len(await self._rows(key, status))

    async def add_message(self, key: str, message: ChatMessage,
                          status: MessageStatus = MessageStatus.ACTIVE) -> None:
        """Append one message with ``status``."""
        await self._append(key, [message_to_row(message, MessageStatus(status).value)])

    async def add_messages(self, key: str, messages: List[ChatMessage],
                           status: MessageStatus = MessageStatus.ACTIVE) -> None:
        """Append messages with ``status`` in one transaction."""
        await self._append(key, [message_to_row(m, MessageStatus(status).value) for m in messages])

    async def set_messages(self, key: str, messages: List[ChatMessage],
                           status: MessageStatus = MessageStatus.ACTIVE) -> None:
        """Replace every message of ``key`` (all statuses, as SQLAlchemyChatStore) in one transaction."""
        await self._replace(key, [message_to_row(m, MessageStatus(status).value) for m in messages])

    async def delete_message(self, key: str, idx: int) -> Optional[ChatMessage]:
        """Remove and return the active message at list position ``idx``; None if there is none."""
        removed = await self._pop(key, idx, MessageStatus.ACTIVE.value)
        return row_to_message(removed) if removed is not None else None

    async def delete_messages(self, key: str, status: Optional[MessageStatus] = None) -> None:
        """Delete the messages of ``key`` with ``status``; with None remove the key (its session) entirely."""
        if status is None:
            await self._drop(key)
            return
        for m in await self._rows(key, status):
            await self.db.delete_message(key, m.id)

    async def _take_oldest(self, key: str, n: int, take: Callable[[Message], Awaitable[bool]]) -> List[Message]:
        """Apply ``take`` to the oldest active messages until ``n`` were taken or none is left; ``take`` returns
        False for a message another writer took first, and the next oldest is read in its place."""
        taken: List[Message] = []
        for _ in range(_TRIES):
            rows = (await self._rows(key, MessageStatus.ACTIVE))[:max(0, n - len(taken))]
            if not rows:
                break
            taken += [m for m in rows if await take(m)]
            if len(taken) >= n:
                break
        return taken

    async def delete_oldest_messages(self, key: str, n: int) -> List[ChatMessage]:
        """Delete the ``n`` oldest active messages and return them (each message goes to one caller only)."""
        async def take(m: Message) -> bool:
            return await self._delete_as_read(key, m) is not None

        return [row_to_message(m) for m in await self._take_oldest(key, n, take)]

    async def archive_oldest_messages(self, key: str, n: int) -> List[ChatMessage]:
        """Mark the ``n`` oldest active messages archived (they stay in the session log) and return them; the
        change is guarded by the metadata read, so each message is archived by one caller only."""
        async def take(m: Message) -> bool:
            try:
                await self.db.update_message(key, m.id, metadata={**m.metadata, STATUS_KEY: "archived"},
                                             expected_metadata=m.metadata)
                return True
            except (ConflictError, NotFoundError):  # archived or deleted by another writer meanwhile
                return False

        return [row_to_message(m) for m in await self._take_oldest(key, n, take)]

    async def get_keys(self) -> List[str]:
        """Keys written through the LlamaIndex stores (of ``user_id``/``agent_id`` if set), oldest first."""
        return await self._keys()
