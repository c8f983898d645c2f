"""A LlamaIndex memory block backed by AgentBase: long-term recall for ``llama_index.core.memory.Memory``.

``Memory`` (llama-index-core 0.14) keeps a short-term FIFO queue of messages; when the queue grows past
``token_limit * chat_history_token_ratio`` it archives the oldest messages and hands them to every memory
block (``block.aput(messages, from_short_term_memory=True, session_id=...)``). On each ``Memory.get()`` it
asks every block for content (``block.aget(chat_history, session_id=...)``), renders string content into its
``memory_blocks_template`` (``<memory><block name>...</block name></memory>``) and puts it into the system
message (or the latest user message with ``insert_method="user"``).

:class:`AgentBaseMemoryBlock` stores what the queue flushes as messages of an AgentBase session and commits
them (turns, rule-based facts, entity tags and a session summary; zero LLM calls), and answers ``aget`` with a
hybrid ``find()`` over the user's memories, packed to a token budget. A later ``Memory`` with a new
``session_id`` and the same block (same file, same ``user_id``) recalls what earlier sessions said.

Why a committed session and not one memory per message: a commit gives find() everything it ranks best on --
each turn keyed to the turn it replies to (a question's answer is found through the question), third-person
facts ("User lives in Lisbon") that are deduplicated, hardened and superseded when a value changes, entity
tags, and a per-session summary with ``session_memory_links`` for session co-retrieval. ``add_memory`` per
message would give only the raw texts.
"""

from __future__ import annotations

import copy
import hashlib
from typing import Any, Callable, ClassVar, Dict, List, Optional

from agentbase.adapters._owners import foreign_owner
from agentbase.errors import MissingDependencyError, ValidationError

try:
    from llama_index.core.base.llms.types import ChatMessage, MessageRole
    from llama_index.core.bridge.pydantic import Field, PrivateAttr, field_validator, model_validator
    from llama_index.core.memory.memory import BaseMemoryBlock
    from llama_index.core.prompts import BasePromptTemplate, PromptTemplate, RichPromptTemplate
    from llama_index.core.utils import get_tokenizer

    from agentbase.adapters.llama_index import _EngineShare, message_to_row
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingDependencyError("llama-index-core", "llama-index") from exc

__all__ = ["AgentBaseMemoryBlock", "DEFAULT_FORMAT_TEMPLATE", "DEFAULT_SESSION_PREFIX"]

DEFAULT_FORMAT_TEMPLATE = "{{ text }}"  # the VectorMemoryBlock default: the retrieved texts as they are
DEFAULT_SESSION_PREFIX = "llama-memory-"
_MAX_ID = 256  # longest AgentBase id (session ids included)
# find() arguments that are fields of the block: find_kwargs may not set them.
_OWN_ARGS = frozenset({"query", "top_k", "token_budget", "user_id", "agent_id"})


def _template(value: Any) -> Any:
    """A ``str`` becomes a template as in VectorMemoryBlock: ``{{ }}`` makes a RichPromptTemplate (Jinja),
    anything else a PromptTemplate (``str.format`` fields)."""
    if isinstance(value, str):
        return RichPromptTemplate(value) if "{{" in value and "}}" in value else PromptTemplate(value)
    return value


def _check_messages(messages: Any, what: str) -> List[ChatMessage]:
    if not isinstance(messages, (list, tuple)):
        raise ValidationError(f"{what} must be a list of llama_index ChatMessage, "
                              f"got {type(messages).__name__}")
    for i, m in enumerate(messages):
        if not isinstance(m, ChatMessage):
            raise ValidationError(f"{what}[{i}] must be a llama_index ChatMessage, got {type(m).__name__}")
    return list(messages)


def _check_id(value: Any, name: str, *, optional: bool) -> Optional[str]:
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > _MAX_ID or "\x00" in value:
        raise ValueError(f"{name} must be a non-empty string of at most {_MAX_ID} characters without NUL, "
                         f"got {value!r}")
    return value


class AgentBaseMemoryBlock(_EngineShare, BaseMemoryBlock[str]):
    """A ``Memory`` block whose long-term store is an AgentBase file, scoped to one user.

    ``aput`` (what ``Memory`` flushes from its short-term queue) appends the messages to the AgentBase session
    ``session_prefix + <Memory session_id>`` (owned by ``user_id``/``agent_id``; created on first flush) and
    commits it, so the turns, facts and summary become memories of the user. ``aget`` searches the user's
    memories with the text of the latest user message(s) (hybrid ``find()``, best first) and returns them
    joined by blank lines and rendered with ``format_template``, or ``""`` when nothing matches.

    Args:
        db: an :class:`~agentbase.AgentBase`, a :class:`~agentbase.SyncAgentBase` or a database path (a path
            opens a shared engine with default settings; :meth:`close` hands it back).
        user_id: whose memory this is (required; 1-256 characters): owner of the sessions written, and the
            ``find()`` filter.
        agent_id: optional agent recorded on the sessions written; when set, ``find()`` also filters on it.
        name: the block's name, the tag it gets in ``Memory``'s template (default ``"AgentBaseMemory"``);
            block names must be unique within one ``Memory``.
        priority: ``Memory``'s truncation order: 0 (the default) is never truncated; otherwise, when the chat
            history plus the blocks exceed ``token_limit``, blocks of lower priority are truncated first, and
            this block drops its lowest-ranked results (:meth:`atruncate`).
        top_k: most results to return (1-1000, default 5).
        token_budget: most tokens the block's text may hold (>= 1, default 1000; ``None``: no budget).
            ``find()`` packs results by AgentBase's estimate (``ceil(len(text) / 4)``); then the lowest-ranked
            results are dropped until the rendered text fits when counted with ``tokenizer_fn``.
        query_messages: how many of the latest user messages form the query (>= 1, default 1: the question
            being asked); with none, the latest message with text is used.
        format_template: a template with a ``text`` variable (the retrieved texts, joined by blank lines) and
            a ``results`` variable (a list of dicts with ``text``, ``score``, ``category``, ``context_type``,
            ``created_at``, ``event_time``, ``session_id``, ``id``); a ``str`` with ``{{ }}`` is a Jinja
            ``RichPromptTemplate``, another ``str`` a ``PromptTemplate``, as in ``VectorMemoryBlock``.
        find_kwargs: further ``find()`` arguments (``mode``, ``strategy``, ``context_type``, ``category``,
            ``tags``, ``project_id``, ``metadata``, ``date_from``...); ``query``, ``top_k``, ``token_budget``,
            ``user_id`` and ``agent_id`` are fields and may not appear here.
        session_prefix: prefix of the AgentBase session id each ``Memory`` session is stored under (default
            ``"llama-memory-"``; an id over 256 characters is replaced by the prefix plus its SHA-256).
            Messages put without a session id go to ``session_prefix + user_id``.
        commit_wait: ``True`` (default): ``aput`` returns after the facts and summary are written;
            ``False``: once the turns are durable, facts and summary follow in the background
            (``db.flush()`` waits for them).
        tokenizer_fn: counts tokens for the budget and for :meth:`atruncate` (default LlamaIndex's
            ``get_tokenizer()``, the one ``Memory`` uses by default: tiktoken ``cl100k_base``).
        accept_short_term_memory: ``False`` makes the block ignore what ``Memory`` flushes (read-only recall).

    Raises:
        pydantic.ValidationError: (a ``ValueError``) an empty or too long ``user_id``, ``top_k`` outside
            1-1000, ``token_budget`` or ``query_messages`` below 1, ``find_kwargs`` naming a field.
        TypeError: ``db`` missing.
        ConfigError: a path AgentBase cannot open (empty, a directory, ``":memory:"``).

    Example:
        >>> block = AgentBaseMemoryBlock("agent.db", user_id="alice")                 # doctest: +SKIP
        >>> memory = Memory.from_defaults(session_id="chat-2", token_limit=4000,   # doctest: +SKIP
        ...                               memory_blocks=[block])
    """

    name: str = Field(default="AgentBaseMemory", description="The name of the memory block.")
    db_path: Optional[str] = Field(default=None, description="The AgentBase file (set from db).")
    user_id: str = Field(description="Whose memory: owner of what is stored and the find() filter.")
    agent_id: Optional[str] = Field(default=None, description="Optional agent owner and find() filter.")
    top_k: int = Field(default=5, ge=1, le=1000, description="Most results returned.")
    token_budget: Optional[int] = Field(default=1000, ge=1, description="Most tokens of the block's text.")
    query_messages: int = Field(default=1, ge=1, description="Latest user messages that form the query.")
    format_template: BasePromptTemplate = Field(
        default_factory=lambda: RichPromptTemplate(DEFAULT_FORMAT_TEMPLATE),
        description="Template for the retrieved texts (variables: text, results).")
    find_kwargs: Dict[str, Any] = Field(default_factory=dict, description="Further find() arguments.")
    session_prefix: str = Field(default=DEFAULT_SESSION_PREFIX, min_length=1, max_length=64,
                                description="Prefix of the AgentBase session ids this block writes.")
    commit_wait: bool = Field(default=True, description="Commit facts and summary inside aput.")
    tokenizer_fn: Callable[[str], List] = Field(default_factory=get_tokenizer, exclude=True,
                                                description="Token counter for the budget and truncation.")
    _db: Any = PrivateAttr(default=None)
    _owned: bool = PrivateAttr(default=False)
    _rendered: Dict[str, List[Dict[str, Any]]] = PrivateAttr(default_factory=dict)

    def __init__(self, db: Any = None, **data: Any) -> None:
        super().__init__(**data)
        if db is None and self.db_path is None:
            raise TypeError("AgentBaseMemoryBlock needs db (an AgentBase, a SyncAgentBase or a path)")
        self._bind(self.db_path if db is None else db)  # a bad path fails here, not at the first flush

    # ------------------------------------------------------------------------------------------ validation
    @field_validator("user_id", mode="before")
    @classmethod
    def _valid_user(cls, v: Any) -> str:
        return _check_id(v, "user_id", optional=False)

    @field_validator("agent_id", mode="before")
    @classmethod
    def _valid_agent(cls, v: Any) -> Optional[str]:
        return _check_id(v, "agent_id", optional=True)

    @field_validator("format_template", mode="before")
    @classmethod
    def _valid_template(cls, v: Any) -> Any:
        return _template(v)

    @field_validator("find_kwargs", mode="after")
    @classmethod
    def _valid_find_kwargs(cls, v: Dict[str, Any]) -> Dict[str, Any]:
        clash = sorted(_OWN_ARGS & set(v))
        if clash:
            raise ValueError(f"find_kwargs may not set {', '.join(clash)}: they are fields of the block")
        return v

    @model_validator(mode="after")
    def _valid_prefix(self) -> "AgentBaseMemoryBlock":
        if "\x00" in self.session_prefix or not self.session_prefix.strip():
            raise ValueError("session_prefix must be non-empty text without NUL")
        return self

    # ------------------------------------------------------------------------------------------ database
    # (_bind, db, close and copying with a share of its own: _EngineShare)
    _what: ClassVar[str] = "memory block"

    def _copied(self, clone: Any) -> None:
        clone._rendered = {}

    def __deepcopy__(self, memo: Any = None) -> Any:
        clone = self.__copy__()  # the engine is shared, never copied
        clone.find_kwargs = copy.deepcopy(self.find_kwargs, memo)
        return clone

    def __getstate__(self) -> Dict[Any, Any]:
        # A pickled block carries db_path, not the engine (threads and connections): it reopens the file with
        # default settings on first use, as the LlamaIndex chat stores do.
        state = super().__getstate__()
        state["__pydantic_private__"] = {**(state.get("__pydantic_private__") or {}),
                                         "_db": None, "_owned": False, "_rendered": {}}
        return state

    def session_for(self, session_id: Optional[str]) -> str:
        """The AgentBase session id that stores the messages of a ``Memory`` session.

        Args:
            session_id: the ``Memory``'s ``session_id``, or None (messages put without one).

        Returns:
            ``session_prefix + session_id`` (``session_prefix + user_id`` for None); when that is longer than
            256 characters, ``session_prefix`` plus the SHA-256 hex digest of the session id.
        """
        key = self.user_id if session_id is None else str(session_id)
        sid = self.session_prefix + key
        if len(sid) > _MAX_ID or "\x00" in sid:
            sid = self.session_prefix + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
        return sid

    # ------------------------------------------------------------------------------------------ get
    def _query(self, messages: List[ChatMessage]) -> str:
        texts = [m.content for m in messages if m.role == MessageRole.USER and (m.content or "").strip()]
        if texts:
            query = " ".join(texts[-self.query_messages:])
        else:
            query = next((m.content for m in reversed(messages) if (m.content or "").strip()), "")
        # A pasted document is searched by its end (the latest words), as find() refuses longer queries.
        return query[-self.db.settings.retrieval.max_query_chars:]

    def _render(self, items: List[Dict[str, Any]]) -> str:
        if not items:
            return ""
        return self.format_template.format(text="\n\n".join(i["text"] for i in items), results=items)

    def _count(self, text: str) -> int:
        return len(self.tokenizer_fn(text)) if text else 0

    def _fit(self, items: List[Dict[str, Any]], budget: Optional[int]) -> tuple[List[Dict[str, Any]], str]:
        """The longest head of ``items`` whose rendering has at most ``budget`` tokens, and that rendering."""
        while True:
            text = self._render(items)
            if budget is None or not items or self._count(text) <= budget:
                return items, text
            items = items[:-1]

    async def _aget(self, messages: Optional[List[ChatMessage]] = None, **block_kwargs: Any) -> str:
        """The user's memories relevant to the latest user message(s), rendered; ``""`` when none.

        Args:
            messages: the chat history ``Memory`` passes (its active queue, plus ``input`` as a user message).
            **block_kwargs: ``session_id`` and anything given to ``Memory.get()``; ignored (recall spans every
                session of the user, not only the current one).

        Returns:
            The rendered text, at most ``token_budget`` tokens by ``tokenizer_fn``. Results whose text is a
            message of ``messages`` (already in the prompt) are left out.

        Raises:
            ValidationError: ``messages`` is not a list of ``ChatMessage``, or ``find_kwargs`` holds a bad
                filter (AgentBase's ``find()`` errors).
        """
        if messages is None:
            return ""
        messages = _check_messages(messages, "messages")
        query = self._query(messages)
        if not query.strip():
            return ""
        filters: Dict[str, Any] = {"user_id": self.user_id, **self.find_kwargs}
        if self.agent_id is not None:
            filters["agent_id"] = self.agent_id
        in_prompt = {" ".join(m.content.split()) for m in messages if m.content}
        results = await self.db.find(query, top_k=min(1000, 2 * self.top_k),  # room for in-prompt ones
                                     token_budget=self.token_budget, **filters)
        items = [{"text": r.text, "score": r.score, "category": r.entry.category,
                  "context_type": r.entry.context_type.value, "created_at": r.entry.created_at.isoformat(),
                  "event_time": r.entry.event_time.isoformat() if r.entry.event_time else None,
                  "session_id": r.entry.session_id, "id": r.entry.id}
                 for r in results if r.text and " ".join(r.text.split()) not in in_prompt][: self.top_k]
        items, text = self._fit(items, self.token_budget)
        if text:
            if len(self._rendered) > 32:  # only the latest renderings can come back to atruncate
                self._rendered.clear()
            self._rendered[text] = items
        return text

    async def atruncate(self, content: str, tokens_to_truncate: int) -> Optional[str]:
        """Shorten this block's content by at least ``tokens_to_truncate`` tokens (``Memory`` calls it for a
        block with ``priority`` > 0 when the prompt is over ``token_limit``).

        Args:
            content: a text this block's ``aget`` returned.
            tokens_to_truncate: tokens to remove, counted with ``tokenizer_fn``.

        Returns:
            The content re-rendered without its lowest-ranked results, or None when nothing is left (or the
            content is not one this block rendered recently: the whole block is dropped, as the base class
            does).
        """
        items = self._rendered.get(content)
        if not items or tokens_to_truncate <= 0:
            return None if not items else content
        budget = self._count(content) - tokens_to_truncate
        if budget <= 0:
            return None
        kept, text = self._fit(items, budget)
        return text if kept else None

    # ------------------------------------------------------------------------------------------ put
    async def aput(self, messages: List[ChatMessage], from_short_term_memory: bool = False,
                   session_id: Optional[str] = None) -> None:
        """Store ``messages`` as the user's long-term memory (see :meth:`_aput`).

        ``Memory`` calls it with the messages it flushed from the short-term queue, ``from_short_term_memory``
        True and its ``session_id``. Every item is checked before anything is written.

        Raises:
            ValidationError: ``messages`` is not a list of ``ChatMessage`` or ``session_id`` not a string
                (nothing written), a message cannot be stored as JSON, or the target session belongs to
                another user_id/agent_id.
        """
        messages = _check_messages(messages, "messages")
        if session_id is not None and not isinstance(session_id, str):
            raise ValidationError(f"session_id must be a string or None, got {type(session_id).__name__}")
        await super().aput(messages, from_short_term_memory=from_short_term_memory, session_id=session_id)

    async def _aput(self, messages: List[ChatMessage]) -> None:
        """Append the messages with text to their AgentBase session and commit it.

        The session is ``session_for(message.additional_kwargs["session_id"])`` (the base class puts the
        ``Memory``'s session id there; it is not stored with the message). Messages without text (e.g. a tool
        call alone) are skipped. Only ``user`` and ``assistant`` messages become turns and facts; other roles
        stay in the session log.
        """
        groups: Dict[str, List[Dict[str, Any]]] = {}
        for m in messages:
            if not (m.content or "").strip():
                continue
            copy = m.model_copy(deep=True)
            key = copy.additional_kwargs.pop("session_id", None)
            groups.setdefault(self.session_for(key if isinstance(key, str) else None), []).append(
                message_to_row(copy))
        if not groups:
            return
        for sid in groups:  # every target is checked before the first write
            owner = foreign_owner(await self.db.get_session(sid), self.user_id, self.agent_id)
            if owner:
                raise ValidationError(f"session {sid!r} belongs to another {owner} than this memory block's")
        for sid, rows in groups.items():
            await self.db.create_session(session_id=sid, user_id=self.user_id, agent_id=self.agent_id,
                                         metadata={"llama_index_memory_block": self.name})
            await self.db.add_messages(sid, rows)
            await self.db.commit_session(sid, wait=self.commit_wait)
