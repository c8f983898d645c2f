"""OpenAI Agents SDK adapter: :class:`AgentBaseSession`, an ``agents.memory.Session`` stored in AgentBase.

``Runner.run(agent, input, session=AgentBaseSession("thread-1", db, user_id="alice"))`` keeps the conversation
in an AgentBase session instead of the SDK's ``SQLiteSession``. Reads return the items exactly as
``SQLiteSession`` returns them: each item is stored as ``json.dumps(item)`` and read back with ``json.loads``, as
``SQLiteSession`` does (``agents/memory/sqlite_session.py`` in openai-agents 0.24.0), so tuples come back as lists
and non-string keys as strings there too.

Each item is one message of the session log (strict ``seq`` order). The columns are filled for AgentBase's own
use (``commit_session``, ``find``, the other adapters): a message item (``{"role": "user", "content": ...}``, or
an output message with ``output_text`` parts) gets its role and its text; a ``function_call`` /
``custom_tool_call`` item is an ``assistant`` message with OpenAI-style ``tool_calls`` and no text; a
``*_call_output`` item is a ``tool`` message with the output text and ``tool_call_id``; any other item
(``reasoning``, ``web_search_call``...) gets its ``type`` as role. The exact item is the JSON text in
``metadata["openai_agents"]``. Messages written by other adapters on the same session id (no such key) are read
as items built from the columns (``user``/``system``/``developer``/``assistant`` text, tool calls as
``function_call`` items, ``tool`` messages as ``function_call_output`` items; other roles are left out).

Memory: with ``auto_commit=True`` (the default) every :meth:`AgentBaseSession.add_items` is followed by
``db.commit_session(session_id, wait=False)``, so what was said becomes user/assistant turn memories of the
session's owners that ``db.find(...)`` searches at once (facts, entity tags and the summary follow from the job
queue; ``db.flush()`` waits for them). With ``auto_commit=False`` call :meth:`AgentBaseSession.commit`.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

from agentbase import AgentBase, release_db, resolve_db, run_sync
from agentbase.adapters._keys import OPENAI_AGENTS_ITEM
from agentbase.adapters._owners import foreign_owner
from agentbase.errors import AgentBaseError, MissingDependencyError, NotFoundError, UsageError, ValidationError
from agentbase.models import Message

try:
    from agents.exceptions import UserError
    from agents.memory.session_settings import SessionSettings, coerce_session_settings, resolve_session_limit
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingDependencyError("openai-agents", "openai-agents") from exc

__all__ = ["AgentBaseSession", "OpenAIAgentsValidationError", "item_to_row", "row_to_items"]

log = logging.getLogger(__name__)

METADATA_KEY = OPENAI_AGENTS_ITEM
_MAX_READ = 1_000_000  # largest ``limit`` AgentBase.get_messages accepts
_MAX_ID = 256  # AgentBase id columns (session, user, agent, tool_call_id): 1-256 characters
_MESSAGE_ROLES = frozenset({"user", "assistant", "system", "developer"})
_CALLS = {"function_call": "arguments", "custom_tool_call": "input"}  # call item type -> its arguments key
_ROLE_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_ALIASES = {"human": "user", "ai": "assistant"}  # LangChain's message types as OpenAI roles


class OpenAIAgentsValidationError(UserError, ValidationError):
    """Bad input to :class:`AgentBaseSession` (an item that is not a JSON-serialisable dict, an empty
    ``session_id``, a ``limit`` that is not an int); nothing was written.

    It is the SDK's ``agents.exceptions.UserError`` and AgentBase's
    :class:`~agentbase.errors.ValidationError` (a ``ValueError``), so either ``except`` catches it.
    """


def _check_id(value: Any, what: str, *, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value or len(value) > _MAX_ID or "\x00" in value \
            or _SURROGATE.search(value):
        raise OpenAIAgentsValidationError(
            f"{what} must be a non-empty string of at most {_MAX_ID} characters without NUL or lone surrogates, "
            f"got {value!r}")
    return value


def _check_limit(limit: Any) -> int | None:
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool)):
        raise OpenAIAgentsValidationError(f"limit must be an int or None, got {type(limit).__name__}")
    return limit


def _usable_id(value: Any) -> str | None:
    """``value`` if AgentBase accepts it in an id column (``tool_call_id``), else None."""
    if isinstance(value, str) and 0 < len(value) <= _MAX_ID and "\x00" not in value \
            and not _SURROGATE.search(value):
        return value
    return None


def _clean(text: str) -> str:
    """Text as AgentBase can store it in the ``content`` column (lone surrogates become U+FFFD; the exact item
    is kept in the metadata)."""
    return _SURROGATE.sub("\ufffd", text)


def _text(content: Any) -> str:
    """The text of an item's ``content`` / ``output`` / ``summary``: a string, or the ``text`` (or
    ``refusal``) of each part of a list, one per line. Images, files and audio have no text."""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for part in content if isinstance(content, list) else []:
        if isinstance(part, str):
            parts.append(part)
        elif isinstance(part, dict):
            value = part.get("text", part.get("refusal"))
            if isinstance(value, str):
                parts.append(value)
    return "\n".join(parts)


def item_to_row(item: Any) -> dict[str, Any]:
    """Convert one SDK input item (``TResponseInputItem``) to an AgentBase message dict for ``add_messages``.

    Args:
        item: a JSON-serialisable dict (a message, a tool call, its output, a reasoning item...).

    Returns:
        ``{"role", "content", "tool_calls", "tool_call_id", "metadata": {"openai_agents": json.dumps(item)}}``
        (the mapping is in the module docstring).

    Raises:
        OpenAIAgentsValidationError: ``item`` is not a dict, or ``json.dumps`` cannot serialise it.
    """
    if not isinstance(item, dict):
        raise OpenAIAgentsValidationError(
            f"a session item must be a dict (a TResponseInputItem), got {type(item).__name__}")
    try:
        stored = json.dumps(item)  # the encoding SQLiteSession uses, so reads give what it gives
    except (TypeError, ValueError, RecursionError) as exc:
        raise OpenAIAgentsValidationError(f"a session item must be JSON-serialisable: {exc}") from None
    kind = item.get("type")
    row: dict[str, Any] = {"content": "", "tool_calls": None, "tool_call_id": None,
                           "metadata": {METADATA_KEY: stored}}
    if kind in (None, "message") and item.get("role") in _MESSAGE_ROLES:
        row.update(role=item["role"], content=_clean(_text(item.get("content"))))
    elif kind in _CALLS:
        call_id, name, arguments = item.get("call_id"), item.get("name"), item.get(_CALLS[kind])
        row["role"] = "assistant"
        if _usable_id(call_id) and isinstance(name, str) and isinstance(arguments, str):
            row["tool_calls"] = [{"id": call_id, "type": "function",
                                  "function": {"name": _clean(name), "arguments": _clean(arguments)}}]
    elif isinstance(kind, str) and kind.endswith("_call_output"):
        row.update(role="tool", content=_clean(_text(item.get("output"))),
                   tool_call_id=_usable_id(item.get("call_id")))
    else:
        is_name = isinstance(kind, str) and _ROLE_NAME.fullmatch(kind) and kind not in _MESSAGE_ROLES | {"tool"}
        row.update(role=kind if is_name else "item", content=_clean(_text(item.get("summary"))))
    return row


def row_to_items(message: Message) -> list[Any]:
    """The SDK items of a stored message: the item this adapter stored, exactly; for a message written by
    another adapter, items built from its columns (``[]`` for a role that has no item form).

    Args:
        message: an AgentBase :class:`~agentbase.models.Message`.

    Returns:
        A list of items (``json.loads`` of the stored JSON: normally one dict).
    """
    stored = message.metadata.get(METADATA_KEY)
    if isinstance(stored, str):
        try:
            return [json.loads(stored)]
        except ValueError:
            return []  # unreadable, as SQLiteSession skips a row whose JSON does not decode
    if isinstance(stored, dict):
        return [json.loads(json.dumps(stored))]
    role = _ALIASES.get(message.role, message.role)
    if role in ("user", "system", "developer"):
        return [{"role": role, "content": message.content}]
    if role == "assistant":
        items: list[Any] = [{"role": "assistant", "content": message.content}] \
            if message.content.strip() or not message.tool_calls else []
        for call in message.tool_calls or []:
            fn = call.get("function") or {}
            args = fn.get("arguments", call.get("args", ""))
            items.append({"type": "function_call", "call_id": str(call.get("id") or ""),
                          "name": str(fn.get("name") or call.get("name") or ""),
                          "arguments": args if isinstance(args, str) else json.dumps(args)})
        return items
    if role == "tool" and message.tool_call_id:
        return [{"type": "function_call_output", "call_id": message.tool_call_id, "output": message.content}]
    return []


class AgentBaseSession:
    """An OpenAI Agents SDK session (the ``agents.memory.Session`` protocol) stored as an AgentBase session.

    Pass it as ``Runner.run(agent, input, session=...)``. One conversation per ``session_id``; the AgentBase
    session is created on the first write with ``user_id`` / ``agent_id`` as its owners. Every call reads or
    writes the database, so several objects (or processes) on one file and one ``session_id`` see the same
    items. Behaviour matches ``agents.SQLiteSession`` (openai-agents 0.24.0) for valid input; the differences
    are listed in docs/openai_agents.md.

    Args:
        session_id: the conversation id (the AgentBase session id): 1-256 characters.
        db: an :class:`~agentbase.AgentBase`, a :class:`~agentbase.SyncAgentBase` or a database path (a path
            opens a shared engine for the file; :meth:`close` hands it back).
        user_id: the owner (an AgentBase user id): the session is created with it, its committed memories are
            this user's, and a session of another user reads as empty and refuses writes.
        agent_id: optional agent owner, checked the same way.
        session_settings: ``SessionSettings`` or a dict (``{"limit": 20}``): ``limit`` is the default of
            :meth:`get_items` (as in ``SQLiteSession``); default ``SessionSettings()`` (no limit).
        auto_commit: commit the session after every :meth:`add_items` (``commit_session(wait=False)``), so
            ``db.find`` finds what was said at once. False: call :meth:`commit` yourself.

    Raises:
        OpenAIAgentsValidationError: a bad ``session_id``, ``user_id`` or ``agent_id``, or ``auto_commit`` not
            a bool. ConfigError: a ``db`` that cannot be opened (empty path, ``":memory:"``, a folder).

    Example:
        >>> session = AgentBaseSession("thread-1", "agent.db", user_id="alice")   # doctest: +SKIP
        >>> await Runner.run(agent, "I moved to Lisbon", session=session)         # doctest: +SKIP
        >>> await session.db.find("where does alice live", user_id="alice")       # doctest: +SKIP
    """

    session_settings: SessionSettings | None = None

    def __init__(self, session_id: str, db: Any, *, user_id: str | None = None, agent_id: str | None = None,
                 session_settings: SessionSettings | dict[str, Any] | None = None,
                 auto_commit: bool = True) -> None:
        self.session_id = _check_id(session_id, "session_id")
        self.user_id = _check_id(user_id, "user_id", optional=True)
        self.agent_id = _check_id(agent_id, "agent_id", optional=True)
        if not isinstance(auto_commit, bool):
            raise OpenAIAgentsValidationError(f"auto_commit must be a bool, got {type(auto_commit).__name__}")
        self.auto_commit = auto_commit
        self.session_settings = (coerce_session_settings(session_settings) if session_settings is not None
                                 else SessionSettings())
        self._aio, self._owned = resolve_db(db)
        self._closed = False

    @property
    def db(self) -> AgentBase:
        """The underlying async :class:`~agentbase.AgentBase`."""
        return self._aio

    # ------------------------------------------------------------------ plumbing
    def _check_open(self) -> None:
        if self._closed:
            raise UsageError("AgentBaseSession is closed")

    async def _foreign(self) -> str | None:
        """Which owner of the stored session differs from this object's (None: usable)."""
        if self.user_id is None and self.agent_id is None:
            return None
        return foreign_owner(await self._aio.get_session(self.session_id), self.user_id, self.agent_id)

    async def _refuse_foreign(self) -> None:
        key = await self._foreign()
        if key:
            raise NotFoundError(f"session {self.session_id!r} belongs to another {key} than this session's")

    async def _latest(self, count: int) -> list[tuple[Message, Any]]:
        """The latest ``count`` (>= 1) items with their messages, oldest first; fewer when the session holds
        fewer. The read window doubles while unreadable messages sit among the newest (as SQLiteSession's)."""
        window = min(count, _MAX_READ)
        while True:
            rows = await self._aio.get_messages(self.session_id, limit=window, order="desc")
            pairs = [(m, item) for m in reversed(rows) for item in row_to_items(m)]
            if len(pairs) >= count or len(rows) < window or window >= _MAX_READ:
                return pairs[-count:]
            window = min(window * 2, _MAX_READ)

    # ------------------------------------------------------------------ the Session protocol
    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The conversation's items in the order they were added.

        Args:
            limit: the latest ``limit`` items, still oldest first; None uses ``session_settings.limit`` (None
                there: all). As ``SQLiteSession``: 0 gives ``[]`` and a negative limit gives all items.

        Returns:
            A new list of items (``[]`` for an unknown session or one of another owner).

        Raises:
            OpenAIAgentsValidationError: ``limit`` (or ``session_settings.limit``) is not an int or None.
            UsageError: the session was closed.
        """
        self._check_open()
        _check_limit(limit)
        effective = _check_limit(resolve_session_limit(limit, self.session_settings))  # as SQLiteSession
        if effective == 0 or await self._foreign():
            return []
        if effective is None or effective < 0:
            return [item for m in await self._aio.get_messages(self.session_id) for item in row_to_items(m)]
        return [item for _, item in await self._latest(effective)]

    async def add_items(self, items: list[Any]) -> None:
        """Append items in one transaction (all or nothing), creating the session if needed; then, with
        ``auto_commit``, commit the session (``commit_session(wait=False)``: turns are searchable on return).

        Args:
            items: a list (or tuple) of item dicts; empty does nothing.

        Raises:
            OpenAIAgentsValidationError: ``items`` is not a list or tuple, or an item is not a
                JSON-serialisable dict (nothing is written).
            NotFoundError: the session belongs to another ``user_id``/``agent_id`` (nothing is written).
            UsageError: the session was closed.
        """
        self._check_open()
        if not isinstance(items, (list, tuple)):
            raise OpenAIAgentsValidationError(f"items must be a list of item dicts, got {type(items).__name__}")
        rows = [item_to_row(item) for item in items]
        if not rows:
            return
        await self._refuse_foreign()
        try:
            await self._aio.add_messages(self.session_id, rows)
        except NotFoundError:
            await self._aio.create_session(session_id=self.session_id, user_id=self.user_id,
                                           agent_id=self.agent_id)
            await self._aio.add_messages(self.session_id, rows)
        if self.auto_commit:
            try:
                await self._aio.commit_session(self.session_id, wait=False)
            except AgentBaseError as exc:  # the items are stored; the next commit picks them up
                log.warning("items of session %r are stored but their commit failed: %s", self.session_id, exc)

    async def pop_item(self) -> Any | None:
        """Remove and return the latest item (None when the session is empty, unknown or another owner's).

        The turn memory committed from that item is deleted with it (facts already extracted from it stay). A
        message written by another adapter that reads as several items (an assistant text with tool calls) is
        removed whole; its last item is returned. Of concurrent pops each gets a different item.

        Raises:
            UsageError: the session was closed.
        """
        self._check_open()
        if await self._foreign():
            return None
        while True:
            latest = await self._latest(1)
            if not latest:
                return None
            message, item = latest[-1]
            if await self._aio.delete_message(self.session_id, message.id) is None:
                continue  # another caller popped it first
            if message.role in ("user", "assistant"):
                await self._aio.delete_all(session_id=self.session_id, category="turn",
                                           metadata={"message_id": message.id})
            return item

    async def clear_session(self) -> None:
        """Delete every item of the session. The AgentBase session (its owners) and the memories already
        committed from it stay; ``db.delete_session(session_id, delete_memories=True)`` removes those too.

        Raises:
            NotFoundError: the session belongs to another ``user_id``/``agent_id``.
            UsageError: the session was closed.
        """
        self._check_open()
        await self._refuse_foreign()
        await self._aio.clear_messages(self.session_id)

    # ------------------------------------------------------------------ AgentBase extras
    async def commit(self, *, wait: bool = True) -> dict[str, Any]:
        """Turn the session's new items into memories (``db.commit_session``); needed with
        ``auto_commit=False``, and with ``wait=True`` to have facts and the summary written before returning.

        Returns:
            The commit report (``turns``, ``facts_added``...); ``{"session_id", "messages": 0}`` for a session
            with no items yet.

        Raises:
            NotFoundError: the session belongs to another ``user_id``/``agent_id``.
            UsageError: the session was closed.
        """
        self._check_open()
        await self._refuse_foreign()
        if await self._aio.get_session(self.session_id) is None:
            return {"session_id": self.session_id, "messages": 0}
        return await self._aio.commit_session(self.session_id, wait=wait)

    def close(self) -> None:
        """Close the session (later calls raise ``UsageError``, as ``SQLiteSession`` raises ``RuntimeError``)
        and hand the engine back when it was opened from a path. Idempotent."""
        self._closed = True
        if self._owned:
            self._owned = False
            run_sync(release_db(self._aio))

    def __repr__(self) -> str:
        return f"AgentBaseSession(session_id={self.session_id!r}, path={str(self._aio.path)!r})"
