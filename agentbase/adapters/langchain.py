"""LangChain adapters: a persistent ``BaseChatMessageHistory`` and a ``BaseChatMemory`` with long-term recall.

* :class:`AgentBaseChatMessageHistory` stores one LangChain conversation as an AgentBase session. It plugs
  into ``RunnableWithMessageHistory`` (``get_session_history``) and into ``langchain_classic`` memories such
  as ``ConversationBufferMemory(chat_memory=...)``.
* :class:`LangChainMemoryAdapter` is a ``langchain_classic`` ``BaseChatMemory`` (usable as ``memory=`` of a
  ``ConversationChain`` or standalone) that can also add long-term memories found with ``db.find``.

Each message is one row of the session log (strict ``seq`` order). The columns ``role``, ``content``,
``name``, ``tool_calls`` and ``tool_call_id`` are filled for AgentBase's own use (search, ``commit_session``,
other adapters); the exact LangChain message (``message_to_dict``) is kept in ``metadata["langchain"]`` so
that type, content blocks, id, name, tool calls, ``additional_kwargs`` and ``response_metadata`` round-trip.
Messages written by other adapters (no ``metadata["langchain"]``) are rebuilt from the columns.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from agentbase import AgentBase, release_db, resolve_db, run_sync
from agentbase.adapters._keys import LANGCHAIN_MESSAGE
from agentbase.adapters._owners import foreign_owner
from agentbase.errors import MissingDependencyError, NotFoundError, ValidationError
from agentbase.models import Message

try:
    from langchain_core.chat_history import BaseChatMessageHistory
    from langchain_core.messages import (
        AIMessage,
        BaseMessage,
        ChatMessage,
        FunctionMessage,
        HumanMessage,
        SystemMessage,
        ToolMessage,
        get_buffer_string,
        message_to_dict,
        messages_from_dict,
    )
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingDependencyError("langchain-core", "langchain") from exc

try:
    from langchain_classic.memory.chat_memory import BaseChatMemory
    from langchain_classic.memory.utils import get_prompt_input_key
    from pydantic import PrivateAttr

    _HAS_CLASSIC = True
except ImportError:  # pragma: no cover - exercised only without langchain-classic
    _HAS_CLASSIC = False

__all__ = ["AgentBaseChatMessageHistory", "LangChainMemoryAdapter"]

METADATA_KEY = LANGCHAIN_MESSAGE
_ROLE_BY_TYPE = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool",
                 "function": "function"}
# entries that ``commit_session`` copies from a conversation; that conversation's buffer already holds them
_SESSION_COPIES = ("turn", "summary")


def _usable_id(value: Any) -> str | None:
    """``value`` if AgentBase accepts it in an id-like column (name, tool_call_id), else None."""
    if isinstance(value, str) and 0 < len(value) <= 256 and "\x00" not in value:
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return None
        return value
    return None


def _text_of(content: Any) -> str:
    """Plain text of a LangChain content value: a str, or the text parts of a list of content blocks."""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content or []:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
    return "\n".join(parts)


def message_to_row(message: BaseMessage) -> dict[str, Any]:
    """Convert a LangChain message to an AgentBase message dict (for ``add_messages``).

    Args:
        message: any LangChain message except ``RemoveMessage``.

    Returns:
        ``{"role", "content", "name", "tool_calls", "tool_call_id", "metadata"}``; ``tool_calls`` use the
        OpenAI shape (``{"id", "type": "function", "function": {"name", "arguments"}}``).

    Raises:
        ValidationError: ``message`` is not a storable ``BaseMessage``.
    """
    if not isinstance(message, BaseMessage) or message.type == "remove":
        raise ValidationError(f"cannot store {type(message).__name__} in a chat history")
    kind = message.type
    if kind.endswith("MessageChunk"):
        kind = kind.removesuffix("MessageChunk").lower()
    role = message.role if isinstance(message, ChatMessage) else _ROLE_BY_TYPE.get(kind, kind)
    if not isinstance(role, str) or not role.strip() or len(role) > 64:
        role = "message"
    tool_calls = None
    if isinstance(message, AIMessage) and message.tool_calls:
        tool_calls = [{"id": tc.get("id"), "type": "function",
                       "function": {"name": tc["name"], "arguments": json.dumps(tc.get("args", {}))}}
                      for tc in message.tool_calls]
    return {"role": role, "content": _text_of(message.content), "name": _usable_id(message.name),
            "tool_calls": tool_calls, "tool_call_id": _usable_id(getattr(message, "tool_call_id", None)),
            "metadata": {METADATA_KEY: message_to_dict(message)}}


def _openai_calls_to_langchain(calls: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    out = []
    for call in calls or []:
        fn = call.get("function") or {}
        try:
            args = json.loads(fn.get("arguments") or "{}")
        except (TypeError, ValueError):
            args = {}
        out.append({"name": fn.get("name") or call.get("name") or "", "id": call.get("id"),
                    "type": "tool_call", "args": args if isinstance(args, dict) else {"value": args}})
    return out


def row_to_message(row: Message) -> BaseMessage:
    """Rebuild a LangChain message from a stored AgentBase :class:`~agentbase.models.Message`.

    Messages written through this adapter come back exactly. Others (written by AgentBase directly or by
    another adapter) are mapped by role: ``user`` -> Human, ``assistant`` -> AI (OpenAI-style ``tool_calls``
    converted), ``system``, ``tool``, ``function``, anything else -> ``ChatMessage(role=...)``; their
    LangChain ``id`` is the AgentBase message id.
    """
    stored = row.metadata.get(METADATA_KEY)
    if isinstance(stored, dict) and "type" in stored and "data" in stored:
        return messages_from_dict([stored])[0]
    common: dict[str, Any] = {"content": row.content, "id": row.id}
    if row.name:
        common["name"] = row.name
    if row.role == "user":
        return HumanMessage(**common)
    if row.role == "assistant":
        return AIMessage(**common, tool_calls=_openai_calls_to_langchain(row.tool_calls))
    if row.role == "system":
        return SystemMessage(**common)
    if row.role == "tool":
        return ToolMessage(**common, tool_call_id=row.tool_call_id or "")
    if row.role == "function":
        return FunctionMessage(**{**common, "name": row.name or ""})
    return ChatMessage(**common, role=row.role)


class AgentBaseChatMessageHistory(BaseChatMessageHistory):
    """LangChain chat message history stored as an AgentBase session.

    The session is created on the first write (with ``user_id``/``agent_id`` as owners, so that
    ``db.commit_session`` files the conversation's memories under them). Every read goes to the database, so
    several history objects (or processes) on the same file and ``session_id`` see the same conversation.

    Args:
        db: an :class:`~agentbase.AgentBase`, a :class:`~agentbase.SyncAgentBase` or a database path (a path
            opens a private AgentBase with default settings; :meth:`close` closes it).
        session_id: the conversation id (the AgentBase session id).
        user_id: owner recorded on the session when it is created.
        agent_id: agent recorded on the session when it is created.
        messages: if given, the session is reset to exactly these messages (like
            ``InMemoryChatMessageHistory(messages=...)``); if None, stored messages are left as they are.

    Example:
        >>> history = AgentBaseChatMessageHistory("agent.db", "thread-1", user_id="alice")  # doctest: +SKIP
        >>> history.add_messages([HumanMessage("hi"), AIMessage("hello")])                  # doctest: +SKIP
        >>> history.messages                                                                 # doctest: +SKIP
        [HumanMessage(content='hi', ...), AIMessage(content='hello', ...)]
    """

    def __init__(self, db: Any, session_id: str, *, user_id: str | None = None, agent_id: str | None = None,
                 messages: Sequence[BaseMessage] | None = None) -> None:
        super().__init__()
        self._aio, self._owned = resolve_db(db)
        self.session_id = session_id
        self.user_id = user_id
        self.agent_id = agent_id
        if messages is not None:
            try:
                self.replace(messages)
            except BaseException:
                self.close()  # hand the engine share back: the caller never gets this object
                raise

    @property
    def db(self) -> AgentBase:
        """The underlying async :class:`~agentbase.AgentBase`."""
        return self._aio

    def _session_kwargs(self) -> dict[str, Any]:
        return {"session_id": self.session_id, "user_id": self.user_id, "agent_id": self.agent_id}

    def _foreign(self) -> str | None:
        """Which owner of the session differs from this history's ``user_id``/``agent_id`` (None: usable). A
        foreign session reads as unknown (``[]``) and writes to it raise NotFoundError."""
        if self.user_id is None and self.agent_id is None:
            return None
        return foreign_owner(self._aio.sync.get_session(self.session_id), self.user_id, self.agent_id)

    async def _aforeign(self) -> str | None:
        if self.user_id is None and self.agent_id is None:
            return None
        return foreign_owner(await self._aio.get_session(self.session_id), self.user_id, self.agent_id)

    def _refuse(self, key: str | None) -> None:
        if key:
            raise NotFoundError(f"session {self.session_id!r} belongs to another {key} than this history's")

    # ------------------------------------------------------------------ reads
    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """A new list with the session's messages in insertion order (``[]`` for an unknown session).

        A session of another ``user_id``/``agent_id`` than this history's reads as unknown (``[]``).
        """
        if self._foreign():
            return []
        return [row_to_message(m) for m in self._aio.sync.get_messages(self.session_id)]

    async def aget_messages(self) -> list[BaseMessage]:
        """Async :attr:`messages`.

        Returns:
            A new list of the session's messages in insertion order.
        """
        if await self._aforeign():
            return []
        return [row_to_message(m) for m in await self._aio.get_messages(self.session_id)]

    # ------------------------------------------------------------------ writes
    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Append messages in one transaction (all or nothing), creating the session if needed.

        Args:
            messages: LangChain messages; an empty sequence does nothing.

        Raises:
            ValidationError: a message cannot be stored (e.g. ``RemoveMessage``, or ``additional_kwargs``
                that are not JSON); nothing is written.
        """
        rows = [message_to_row(m) for m in messages]
        if not rows:
            return
        self._refuse(self._foreign())
        sync = self._aio.sync
        try:
            sync.add_messages(self.session_id, rows)
        except NotFoundError:
            sync.create_session(**self._session_kwargs())
            sync.add_messages(self.session_id, rows)

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Async :meth:`add_messages` (one transaction).

        Args:
            messages: LangChain messages; an empty sequence does nothing.
        """
        rows = [message_to_row(m) for m in messages]
        if not rows:
            return
        self._refuse(await self._aforeign())
        try:
            await self._aio.add_messages(self.session_id, rows)
        except NotFoundError:
            await self._aio.create_session(**self._session_kwargs())
            await self._aio.add_messages(self.session_id, rows)

    def replace(self, messages: Sequence[BaseMessage]) -> None:
        """Replace the whole conversation with ``messages`` in one transaction.

        Args:
            messages: the new conversation (may be empty).
        """
        rows = [message_to_row(m) for m in messages]
        self._refuse(self._foreign())
        self._aio.sync.create_session(**self._session_kwargs())
        self._aio.sync.replace_messages(self.session_id, rows)

    def clear(self) -> None:
        """Delete every message of the session (the session and its committed memories stay)."""
        self._refuse(self._foreign())
        self._aio.sync.clear_messages(self.session_id)

    async def aclear(self) -> None:
        """Async :meth:`clear`."""
        self._refuse(await self._aforeign())
        await self._aio.clear_messages(self.session_id)

    def close(self) -> None:
        """Close the database if this history opened it from a path (otherwise do nothing)."""
        if self._owned:
            self._owned = False
            run_sync(release_db(self._aio))

    # ------------------------------------------------------------------ comparisons
    def __eq__(self, other: object) -> bool:
        """Histories are equal when they hold equal message lists (as ``InMemoryChatMessageHistory``)."""
        if isinstance(other, BaseChatMessageHistory):
            return self.messages == other.messages
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"AgentBaseChatMessageHistory(path={str(self._aio.path)!r}, session_id={self.session_id!r})"


if _HAS_CLASSIC:

    class LangChainMemoryAdapter(BaseChatMemory):
        """A ``langchain_classic`` chat memory backed by AgentBase, with optional long-term recall.

        It behaves like ``ConversationBufferMemory`` over an :class:`AgentBaseChatMessageHistory` (available
        as ``chat_memory``), so it works standalone and as ``memory=`` of ``ConversationChain``. With
        ``k_long_term > 0``, :meth:`load_memory_variables` also returns up to ``k_long_term`` memories of
        ``owner_id`` relevant to the input (``db.find(query=input, user_id=owner_id)``) under
        ``long_term_key``; turns and the summary of this same session are left out because the buffer already
        holds them. Long-term memories come from ``db.add_memory(...)`` or from :meth:`commit`.

        Args:
            db: an :class:`~agentbase.AgentBase`, a :class:`~agentbase.SyncAgentBase` or a database path.
            owner_id: the user the conversation and long-term memories belong to (AgentBase ``user_id``).
            session_id: the conversation id; default ``"langchain-<owner_id>"`` (one running conversation
                per owner that survives restarts).
            agent_id: optional agent recorded on the session.
            memory_key: variable name of the history (default ``"history"``).
            return_messages: return the history as messages instead of a ``Human: ...\\nAI: ...`` string.
            human_prefix, ai_prefix: speaker labels of the string form.
            input_key, output_key: which input/output to save (default: the only one, as in LangChain).
            k_long_term: number of long-term memories to add (0 disables recall and the extra variable).
            long_term_key: variable name of the long-term memories (a ``"- text"`` line per memory).

        Example:
            >>> memory = LangChainMemoryAdapter(db, owner_id="alice", k_long_term=3)      # doctest: +SKIP
            >>> memory.save_context({"input": "I live in Oslo"}, {"output": "Nice!"})   # doctest: +SKIP
            >>> memory.load_memory_variables({"input": "where do I live?"})           # doctest: +SKIP
            {'history': 'Human: I live in Oslo\\nAI: Nice!', 'long_term': '...'}
        """

        owner_id: str
        session_id: str
        agent_id: str | None = None
        memory_key: str = "history"
        human_prefix: str = "Human"
        ai_prefix: str = "AI"
        k_long_term: int = 0
        long_term_key: str = "long_term"
        _db: Any = PrivateAttr(default=None)

        def __init__(self, db: Any, *, owner_id: str, session_id: str | None = None,
                     agent_id: str | None = None, **kwargs: Any) -> None:
            if "chat_memory" in kwargs:
                raise TypeError("LangChainMemoryAdapter builds its own chat_memory; pass db and session_id")
            sid = session_id or f"langchain-{owner_id}"
            history = AgentBaseChatMessageHistory(db, sid, user_id=owner_id, agent_id=agent_id)
            try:
                super().__init__(chat_memory=history, owner_id=owner_id, session_id=sid, agent_id=agent_id,
                                 **kwargs)
                if self.k_long_term < 0:
                    raise ValueError("k_long_term must be >= 0")
            except BaseException:
                history.close()  # hand the engine share back: the caller never gets this object
                raise
            self._db = history.db

        @property
        def db(self) -> AgentBase:
            """The underlying async :class:`~agentbase.AgentBase`."""
            return self._db

        def close(self) -> None:
            """Close the database if this memory's history opened it from a path (otherwise do nothing)."""
            self.chat_memory.close()

        @property
        def memory_variables(self) -> list[str]:
            """``[memory_key]``, plus ``long_term_key`` when ``k_long_term > 0``."""
            return [self.memory_key, self.long_term_key] if self.k_long_term > 0 else [self.memory_key]

        def _format(self, messages: list[BaseMessage]) -> Any:
            if self.return_messages:
                return messages
            return get_buffer_string(messages, human_prefix=self.human_prefix, ai_prefix=self.ai_prefix)

        def _query(self, inputs: dict[str, Any]) -> str:
            key = self.input_key
            if key is None:
                try:
                    key = get_prompt_input_key(inputs, self.memory_variables)
                except ValueError:
                    return ""
            value = inputs.get(key)
            if isinstance(value, BaseMessage):
                return _text_of(value.content)
            return value if isinstance(value, str) else ("" if value is None else str(value))

        def _search_args(self, inputs: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
            query = self._query(inputs)
            if not query.strip():
                return None
            # A chain input can be a pasted document: recall searches with its beginning, as find() refuses
            # queries over retrieval.max_query_chars. Over-fetch so that leaving out this session's own copies
            # still leaves k results.
            return query[: self._db.settings.retrieval.max_query_chars], {
                "top_k": min(1000, self.k_long_term * 3), "user_id": self.owner_id}

        def _long_term(self, results: list[Any]) -> str:
            """The long-term text: one ``- text`` line per relevant memory of the owner."""
            texts = [" ".join((r.text or r.entry.content).split()) for r in results
                     if not (r.entry.category in _SESSION_COPIES and r.entry.session_id == self.session_id)]
            return "\n".join(f"- {t}" for t in texts[: self.k_long_term])

        def _recall(self, inputs: dict[str, Any]) -> str:
            args = self._search_args(inputs)
            return self._long_term(self._db.sync.find(args[0], **args[1])) if args else ""

        async def _arecall(self, inputs: dict[str, Any]) -> str:
            args = self._search_args(inputs)
            return self._long_term(await self._db.find(args[0], **args[1])) if args else ""

        def load_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
            """Return the conversation (and relevant long-term memories when ``k_long_term > 0``).

            Args:
                inputs: the chain inputs; the input text is the long-term query.

            Returns:
                ``{memory_key: str | list[BaseMessage]}`` plus ``{long_term_key: str}`` when enabled.
            """
            out = {self.memory_key: self._format(self.chat_memory.messages)}
            if self.k_long_term > 0:
                out[self.long_term_key] = self._recall(inputs)
            return out

        async def aload_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
            """Async :meth:`load_memory_variables`."""
            out = {self.memory_key: self._format(await self.chat_memory.aget_messages())}
            if self.k_long_term > 0:
                out[self.long_term_key] = await self._arecall(inputs)
            return out

        def save_context(self, inputs: dict[str, Any], outputs: dict[str, str]) -> None:
            """Append the input as a human message and the output as an AI message (one transaction).

            Args:
                inputs: chain inputs (one key besides memory variables and ``stop``, or ``input_key``).
                outputs: chain outputs (one key, or ``"output"``, or ``output_key``).
            """
            super().save_context(inputs, outputs)

        async def asave_context(self, inputs: dict[str, Any], outputs: dict[str, str]) -> None:
            """Async :meth:`save_context`."""
            await super().asave_context(inputs, outputs)

        def clear(self) -> None:
            """Delete the conversation's messages (long-term memories stay)."""
            self.chat_memory.clear()

        async def aclear(self) -> None:
            """Async :meth:`clear`."""
            await self.chat_memory.aclear()

        def commit(self) -> dict[str, Any]:
            """Turn the conversation's new messages into long-term memories (``db.commit_session``).

            Returns:
                The commit report (``turns``, ``facts_added``, ...); ``messages == 0`` when nothing is new.
            """
            if self._db.sync.get_session(self.session_id) is None:
                return {"session_id": self.session_id, "messages": 0}
            return self._db.sync.commit_session(self.session_id)

        async def acommit(self) -> dict[str, Any]:
            """Async :meth:`commit`."""
            if await self._db.get_session(self.session_id) is None:
                return {"session_id": self.session_id, "messages": 0}
            return await self._db.commit_session(self.session_id)

else:  # pragma: no cover - only without langchain-classic

    def __getattr__(name: str) -> Any:
        if name == "LangChainMemoryAdapter":
            raise MissingDependencyError("langchain-classic", "langchain")
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
