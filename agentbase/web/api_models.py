"""Request bodies and response models of the ``/api/v1`` routes (they are also the OpenAPI schemas).

Bodies mirror the arguments of the :class:`~agentbase.AgentBase` methods and forbid unknown fields, so a misspelt
owner (``userid``) is a 400 instead of a silently unscoped query. Types are strict (``"top_k": "5"`` or ``true``
is a 400, not 5 or 1), and an id a body creates may not hold ``/``: the routes that address it take it as one
path segment, so such an entry or session could never be read or deleted over HTTP (the Python API accepts it).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict

from agentbase.models import (CommitResult, DeleteResult, EntryList, HistoryList, Message,
                              MessageList, ResourceChunks, SearchResults, Session)

__all__ = ["AddMemoryIn", "AddMessageIn", "AddResourceIn", "AddSkillIn", "CommitResult", "ContextTypeName",
           "CreateSessionIn", "DeleteResult", "EntryList", "FindIn", "FindSkillsIn", "HistoryList",
           "MessageList", "ResourceChunks", "ScopeName", "SearchResults", "SessionDetail", "SessionList",
           "UpdateIn"]

ScopeName = Literal["global", "agent", "project", "session"]
ContextTypeName = Literal["memory", "resource", "skill"]


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


def _one_segment(value: str) -> str:
    if "/" in value:
        raise ValueError("an id created over HTTP may not contain '/': routes take it as one path segment")
    return value


#: an id a request creates: the routes that address it later take it as one path segment
NewId = Annotated[str, AfterValidator(_one_segment)]


class AddMemoryIn(_In):
    """Body of ``POST /api/v1/memories`` (arguments of :meth:`AgentBase.add_memory`)."""

    content: str
    category: str = "fact"
    tags: list[str] | None = None
    metadata: dict[str, Any] | None = None
    scope: ScopeName = "global"
    user_id: str | None = None
    agent_id: str | None = None
    project_id: str | None = None
    session_id: str | None = None
    confidence: float = 1.0
    importance: float = 0.5
    event_time: str | None = None
    context_type: ContextTypeName = "memory"
    dedup: bool = True
    entry_id: NewId | None = None


class FilterIn(_In):
    """The entry filters shared by search and list bodies (see :class:`~agentbase.retrieval.filters.Filters`)."""

    context_type: ContextTypeName | list[ContextTypeName] | None = None
    category: str | list[str] | None = None
    tags: list[str] | None = None
    scope: ScopeName | list[ScopeName] | None = None
    user_id: str | None = None
    agent_id: str | None = None
    project_id: str | None = None
    session_id: str | None = None
    metadata: dict[str, Any] | None = None
    date_from: str | None = None
    date_to: str | None = None


class FindIn(FilterIn):
    """Body of ``POST /api/v1/search`` (arguments of :meth:`AgentBase.find`)."""

    query: str
    top_k: int = 10
    mode: Literal["hybrid", "fts", "vector"] = "hybrid"
    strategy: Literal["auto", "flat", "hierarchical"] = "auto"
    token_budget: int | None = None
    reference_time: str | None = None
    trace: bool | None = None


class UpdateIn(_In):
    """Body of ``PATCH /api/v1/entries/{entry_id}`` (arguments of :meth:`AgentBase.update`)."""

    content: str | None = None
    tags: list[str] | None = None
    metadata: dict[str, Any] | None = None
    category: str | None = None
    confidence: float | None = None
    importance: float | None = None
    event_time: str | None = None
    status: Literal["active", "archived"] | None = None
    user_id: str | None = None
    agent_id: str | None = None


class CreateSessionIn(_In):
    """Body of ``POST /api/v1/sessions``."""

    session_id: NewId | None = None
    user_id: str | None = None
    agent_id: str | None = None
    project_id: str | None = None
    metadata: dict[str, Any] | None = None
    created_at: str | None = None


class AddMessageIn(_In):
    """Body of ``POST /api/v1/sessions/{session_id}/messages``."""

    role: str
    content: str
    name: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    metadata: dict[str, Any] | None = None
    created_at: str | None = None
    message_id: NewId | None = None


class _OwnersIn(_In):
    user_id: str | None = None
    agent_id: str | None = None
    project_id: str | None = None
    session_id: str | None = None
    scope: ScopeName = "global"


class AddResourceIn(_OwnersIn):
    """Body of ``POST /api/v1/resources``."""

    uri: str
    content: str
    mime_type: str = "text/plain"
    title: str | None = None
    tags: list[str] | None = None
    metadata: dict[str, Any] | None = None
    chunk_chars: int = 1500


class AddSkillIn(_OwnersIn):
    """Body of ``POST /api/v1/skills``."""

    name: str
    description: str
    content: str = ""
    tags: list[str] | None = None
    input_schema: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None


class FindSkillsIn(_In):
    """Body of ``POST /api/v1/skills/search``."""

    query: str
    top_k: int = 5
    tags: list[str] | None = None
    user_id: str | None = None
    agent_id: str | None = None
    project_id: str | None = None


# ------------------------------------------------------------------------------------------------- results
class SessionList(BaseModel):
    """Sessions, newest first."""

    sessions: list[Session]


class SessionDetail(BaseModel):
    """A session with its messages."""

    session: Session
    messages: list[Message]

