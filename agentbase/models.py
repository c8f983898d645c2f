"""Typed, serialisable records: entries, history, sessions, messages, search results and traces.

All timestamps are timezone-aware UTC ``datetime`` objects; they are stored as ISO 8601 text in UTC
(``YYYY-MM-DDTHH:MM:SS.ffffff+00:00``) so that text order equals time order inside SQLite.
"""

from __future__ import annotations

from datetime import datetime, timezone
from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "CheckpointRecord",
    "CheckpointWrite",
    "CommitResult",
    "ContextType",
    "DeleteResult",
    "EntryList",
    "HistoryList",
    "MessageList",
    "ResourceChunks",
    "SearchResults",
    "Entry",
    "HistoryEvent",
    "Message",
    "Scope",
    "SearchResult",
    "Session",
    "Trace",
    "TraceStep",
    "utcnow",
]


def utcnow() -> datetime:
    """Return the current time as an aware UTC datetime."""
    return datetime.now(timezone.utc)


class ContextType(str, Enum):
    """What an entry is: a remembered fact, a resource chunk (document, URL, API) or a skill."""

    MEMORY = "memory"
    RESOURCE = "resource"
    SKILL = "skill"


class Scope(str, Enum):
    """Visibility of an entry: everyone, one agent, one project or one session."""

    GLOBAL = "global"
    AGENT = "agent"
    PROJECT = "project"
    SESSION = "session"


class Entry(BaseModel):
    """One stored unit of context with three content layers.

    ``l0_abstract`` is at most 50 characters, ``l1_overview`` at most 300; ``l2_full`` is the whole text.
    """

    model_config = ConfigDict(use_enum_values=False)

    id: str
    context_type: ContextType = ContextType.MEMORY
    category: str = "fact"
    l0_abstract: str = ""
    l1_overview: str = ""
    l2_full: str = ""
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    scope: Scope = Scope.GLOBAL
    user_id: str | None = None
    agent_id: str | None = None
    project_id: str | None = None
    session_id: str | None = None
    confidence: float = 1.0
    importance: float = 0.5
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
    event_time: datetime | None = None
    content_hash: str = ""
    access_count: int = 0
    last_accessed_at: datetime | None = None
    superseded_by: str | None = None
    status: Literal["active", "archived"] = "active"
    uri: str | None = None
    mime_type: str | None = None
    name: str | None = None
    description: str | None = None

    @property
    def content(self) -> str:
        """The full text (``l2_full``)."""
        return self.l2_full


class HistoryEvent(BaseModel):
    """One change to an entry: ``ADD``, ``UPDATE`` or ``DELETE`` with the old and new text."""

    id: str
    entry_id: str
    event: Literal["ADD", "UPDATE", "DELETE"]
    old_value: str | None = None
    new_value: str | None = None
    created_at: datetime
    metadata: dict[str, Any] = Field(default_factory=dict)


class Session(BaseModel):
    """A conversation: an ordered message log owned by a user/agent/project."""

    id: str
    user_id: str | None = None
    agent_id: str | None = None
    project_id: str | None = None
    status: Literal["open", "committed"] = "open"
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
    committed_seq: int = 0
    enriched_seq: int = 0  # messages up to this seq have facts, entity tags and summary (see commit_session)


class Message(BaseModel):
    """One message in a session; ``seq`` is the strict order (1-based), independent of timestamps."""

    id: str
    session_id: str
    seq: int
    role: str
    content: str
    name: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime = Field(default_factory=utcnow)


class SearchResult(BaseModel):
    """One ``find()`` hit.

    Attributes:
        entry: the matched entry.
        score: final score after fusion, boosts, strategy and rerank (higher is better; not a probability).
        matched_by: which signals found it, e.g. ``"fts"``, ``"vector"``, ``"hybrid"``, ``"ner+hybrid"``.
        score_parts: named components (``rrf``, ``fts_rank``, ``vector_rank``, ``ner_boost``, ``freshness`` ...).
        level: which content layer the result carries for the caller (``l0``, ``l1`` or ``l2``).
        text: the content at that level.
        trace_id: id of the persisted retrieval trace (``None`` when tracing is off).
    """

    entry: Entry
    score: float
    matched_by: str
    score_parts: dict[str, float] = Field(default_factory=dict)
    level: Literal["l0", "l1", "l2"] = "l2"
    text: str = ""
    trace_id: str | None = None


class TraceStep(BaseModel):
    """One pipeline step: its latency in milliseconds, candidates in and out, and free-form details."""

    name: str
    latency_ms: float
    candidates_in: int = 0
    candidates_out: int = 0
    details: dict[str, Any] = Field(default_factory=dict)


class Trace(BaseModel):
    """A persisted ``find()`` run."""

    id: str
    query: str
    created_at: datetime
    total_ms: float
    steps: list[TraceStep] = Field(default_factory=list)
    result_ids: list[str] = Field(default_factory=list)
    params: dict[str, Any] = Field(default_factory=dict)
    degrade_reason: str | None = None


# Result envelopes shared by the transports (MCP tools and the /api/v1 HTTP routes), so both publish one schema.
class EntryList(BaseModel):
    """A page of entries."""

    entries: list[Entry]
    count: int = Field(description="number of entries in this page")
    total: int | None = Field(None, description="number of entries matching the filters, over every page")


class SearchResults(BaseModel):
    """Ranked hits of ``find`` / ``find_skills``; ``trace_id`` names the persisted retrieval trace."""

    results: list[SearchResult]
    trace_id: str | None = None


class DeleteResult(BaseModel):
    """Outcome of a delete."""

    entry_id: str
    deleted: bool


class HistoryList(BaseModel):
    """ADD / UPDATE / DELETE events of one entry, oldest first."""

    entry_id: str
    events: list[HistoryEvent]


class MessageList(BaseModel):
    """Messages of a session in ``seq`` order."""

    session_id: str
    messages: list[Message]


class ResourceChunks(BaseModel):
    """The chunk entries written by ``add_resource``."""

    uri: str
    entries: list[Entry]


class CommitResult(BaseModel):
    """What ``commit_session`` wrote (zero LLM calls)."""

    model_config = ConfigDict(extra="allow")

    session_id: str
    messages: int = 0
    turns: int = 0
    facts_added: int = 0
    facts_hardened: int = 0
    facts_superseded: int = 0
    summary_id: str | None = None
    enriched: bool = True  # False: facts, entity tags and summary were queued (commit_session(wait=False))


class CheckpointWrite(BaseModel):
    """One pending write of a checkpoint (LangGraph ``put_writes``): a task's value for one channel.

    ``type``/``value`` are the caller's serialised form (e.g. a serializer's ``dumps_typed`` pair); AgentBase
    stores them unread. ``idx`` is the write's position in the task's list, negative for special channels.
    """

    task_id: str
    idx: int
    channel: str
    type: str
    value: bytes
    task_path: str = ""


class CheckpointRecord(BaseModel):
    """A stored graph-state checkpoint (see :meth:`~agentbase.engine.AgentBase.put_checkpoint`).

    ``checkpoint`` is the serialised snapshot without channel values; ``blobs`` maps each channel of
    ``channel_versions`` whose value is stored to its ``(type, value)`` pair; ``writes`` are ordered by
    ``(task_path, task_id, idx)``. ``created_at`` is when it was stored (UTC).
    """

    thread_id: str
    checkpoint_ns: str = ""
    checkpoint_id: str
    parent_checkpoint_id: str | None = None
    type: str
    checkpoint: bytes
    metadata: dict[str, Any] = Field(default_factory=dict)
    channel_versions: dict[str, str] = Field(default_factory=dict)
    blobs: dict[str, tuple[str, bytes]] = Field(default_factory=dict)
    writes: list[CheckpointWrite] = Field(default_factory=list)
    created_at: datetime
