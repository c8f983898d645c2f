"""The AgentBase JSON API under ``/api/v1``: the same operations as the MCP tools, one route each.

Owner scope: a request is scoped to one owner by the ``X-AgentBase-User`` header or, without it, by a ``user_id``
query or body parameter. A scoped request only sees entries and sessions whose ``user_id`` is that owner: anything
else answers 404 exactly like an unknown id, writes are stamped with the owner, and a ``user_id`` that contradicts
the header is a 400. Cross-owner views (traces, the entity graph, full stats) answer 403 to scoped requests. The
scope is a namespace, not authentication: bearer tokens (``AGENTBASE_AUTH__TOKENS``) authenticate, so put the
header in a trusted gateway when users must not choose it.

Bodies are JSON objects with exactly the documented fields (unknown fields are a 400, so a misspelt owner cannot
widen a query); bodies over :data:`MAX_BODY_BYTES` get 413. Errors use OpenAI's shape ``{"error": {"message",
"type", "param", "code"}}`` (see :mod:`agentbase.web.errors`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any, Literal, get_args, get_origin

from fastapi import APIRouter, Query, Request
from fastapi.exceptions import HTTPException
from fastapi.routing import APIRoute

from agentbase.errors import NotFoundError
from agentbase.models import Entry, Message, SearchResult, Session

from .api_models import (
    AddMemoryIn,
    AddMessageIn,
    AddResourceIn,
    AddSkillIn,
    CommitResult,
    ContextTypeName,
    CreateSessionIn,
    DeleteResult,
    EntryList,
    FilterIn,
    FindIn,
    FindSkillsIn,
    HistoryList,
    MessageList,
    ResourceChunks,
    ScopeName,
    SearchResults,
    SessionDetail,
    SessionList,
    UpdateIn,
)
from .errors import error_response

__all__ = ["MAX_BODY_BYTES", "OWNER_HEADER", "router"]

MAX_BODY_BYTES = 2 * 1024 * 1024
OWNER_HEADER = "X-AgentBase-User"


class _LimitedRoute(APIRoute):
    """An API route that refuses bodies over :data:`MAX_BODY_BYTES` with 413 before parsing them."""

    def get_route_handler(self) -> Callable[[Request], Any]:
        handler = super().get_route_handler()

        async def limited(request: Request) -> Any:
            length = request.headers.get("content-length")
            if length is not None:
                if not length.isdigit():
                    return error_response(400, "Invalid Content-Length header.")
                if int(length) > MAX_BODY_BYTES:
                    return _too_large()
            elif request.method in ("POST", "PUT", "PATCH"):
                body = bytearray()
                async for chunk in request.stream():
                    body += chunk
                    if len(body) > MAX_BODY_BYTES:
                        return _too_large()
                request._body = bytes(body)  # what Request.body() returns from now on
            return await handler(request)

        return limited


def _is_list(annotation: Any) -> bool:
    return get_origin(annotation) is list or any(_is_list(a) for a in get_args(annotation))


class _StrictRoute(_LimitedRoute):
    """An ``/api/v1`` route that also refuses with 400 query parameters it does not declare (a misspelt
    ``?userid=`` must not quietly turn into an unscoped read of every owner) and a parameter given twice that
    takes one value (``?user_id=alice&user_id=bob``: a gateway that appends its own ``user_id`` must not let the
    client's win)."""

    def get_route_handler(self) -> Callable[[Request], Any]:
        handler = super().get_route_handler()
        known = {p.alias for p in self.dependant.query_params} | {"user_id"}  # owner_of reads user_id itself
        lists = {p.alias for p in self.dependant.query_params if _is_list(p.field_info.annotation)}

        async def strict(request: Request) -> Any:
            unknown = sorted(set(request.query_params) - known)
            if unknown:
                return error_response(400, f"Unknown query parameter(s) {unknown}; this route takes "
                                      f"{sorted(known)}.", param=unknown[0])
            counts = Counter(k for k, _ in request.query_params.multi_items() if k not in lists)
            repeated = sorted(k for k, n in counts.items() if n > 1)
            if repeated:
                return error_response(400, f"Query parameter {repeated[0]!r} was given more than once; it takes "
                                      "one value.", param=repeated[0])
            return await handler(request)

        return strict


def _too_large() -> Any:
    return error_response(413, f"Request body too large: the limit is {MAX_BODY_BYTES} bytes.",
                          code="request_too_large")


router = APIRouter(prefix="/api/v1", tags=["agentbase"], route_class=_StrictRoute)


# ------------------------------------------------------------------------------------------------- helpers
def _db(request: Request) -> Any:
    return request.app.state.agentbase


def owner_of(request: Request, user_id: str | None = None) -> str | None:
    """The owner a request is scoped to: the ``X-AgentBase-User`` header, else the ``user_id`` it names.

    The header, a ``user_id`` query parameter and a body ``user_id`` (passed as ``user_id``) must agree.

    Args:
        request: the request. user_id: the body's ``user_id``, if any.

    Returns:
        The owner id, or None for an unscoped request.

    Raises:
        HTTPException: 400 when the header is empty or the named owners disagree.
    """
    sent = request.headers.getlist(OWNER_HEADER)
    if len(set(sent)) > 1:  # a gateway that appends instead of replacing must not let the client's value win
        raise HTTPException(400, f"{OWNER_HEADER} was sent {len(sent)} times with different values.")
    header = sent[0] if sent else None
    if header is not None and not header.strip():
        raise HTTPException(400, f"The {OWNER_HEADER} header is empty.")
    named = {v for v in (header.strip() if header else None, request.query_params.get("user_id"), user_id)
             if v is not None}
    if len(named) > 1:
        raise HTTPException(400, f"Conflicting owners {sorted(named)}: user_id does not match the "
                            f"{OWNER_HEADER} header or the other user_id.")
    return named.pop() if named else None


def _unscoped(request: Request, user_id: str | None = None) -> None:
    if owner_of(request, user_id) is not None:
        raise HTTPException(403, "This view spans every owner; it is not available to owner-scoped requests.")


async def _entry(request: Request, entry_id: str, owner: str | None) -> Entry:
    entry = await _db(request).get(entry_id, user_id=owner)
    if entry is None:
        raise NotFoundError(f"entry {entry_id!r} not found")
    return entry


async def _session(request: Request, session_id: str, owner: str | None) -> Session:
    session = await _db(request).get_session(session_id)
    if session is None or (owner is not None and session.user_id != owner):
        raise NotFoundError(f"session {session_id!r} not found")
    return session


def _results(hits: list[SearchResult]) -> SearchResults:
    return SearchResults(results=hits, trace_id=next((h.trace_id for h in hits if h.trace_id), None))


def _filters(body: FilterIn, owner: str | None) -> dict[str, Any]:
    data = body.model_dump(exclude_none=True, include=set(FilterIn.model_fields))
    data.pop("user_id", None)
    if owner is not None:
        data["user_id"] = owner
    return data


# ------------------------------------------------------------------------------------------------- entries
@router.post("/memories", response_model=Entry, status_code=201, summary="add_memory")
async def add_memory(request: Request, body: AddMemoryIn) -> Entry:
    """Store one entry (a memory by default); same arguments as ``AgentBase.add_memory``.

    Args:
        body: the ``add_memory`` arguments.

    Returns:
        The stored ``Entry`` (201).

    Raises:
        ValidationError: bad values (400).
    """
    data = body.model_dump()
    data["user_id"] = owner_of(request, body.user_id)
    return await _db(request).add_memory(data.pop("content"), **data)


@router.post("/search", response_model=SearchResults, summary="find")
async def find(request: Request, body: FindIn) -> SearchResults:
    """Hybrid search (FTS5 BM25 + vectors + entity tags, RRF); same arguments as ``AgentBase.find``.

    Args:
        body: the ``find`` arguments and filters.

    Returns:
        ``SearchResults`` best first, with the trace id.

    Raises:
        ValidationError: bad top_k, mode or filters (400).
    """
    owner = owner_of(request, body.user_id)
    hits = await _db(request).find(body.query, top_k=body.top_k, mode=body.mode, strategy=body.strategy,
                                   token_budget=body.token_budget, reference_time=body.reference_time,
                                   trace=body.trace, **_filters(body, owner))
    return _results(hits)


@router.get("/entries", response_model=EntryList, summary="list_entries")
async def list_entries(request: Request, limit: int = Query(20, ge=1, le=1000), offset: int = Query(0, ge=0),
                       order: Literal["asc", "desc"] = "desc", context_type: ContextTypeName | None = None,
                       category: str | None = None, tags: list[str] | None = Query(None),  # noqa: B008
                       scope: ScopeName | None = None, user_id: str | None = None, agent_id: str | None = None,
                       project_id: str | None = None, session_id: str | None = None,
                       date_from: str | None = None, date_to: str | None = None) -> EntryList:
    """List entries by creation time with filters (``tags`` repeatable: entries carry all of them).

    Args:
        limit, offset, order: paging. context_type, category, tags, scope, agent_id, project_id,
            session_id, date_from, date_to: filters. user_id: owner scope (query), as for every route.

    Returns:
        ``EntryList``.

    Raises:
        ValidationError: bad filters (400).
    """
    owner = owner_of(request, user_id)
    filters = {k: v for k, v in dict(context_type=context_type, category=category, tags=tags, scope=scope,
                                     user_id=owner, agent_id=agent_id, project_id=project_id,
                                     session_id=session_id, date_from=date_from, date_to=date_to).items()
               if v is not None}
    entries = await _db(request).list(limit=limit, offset=offset, order=order, **filters)
    return EntryList(entries=entries, count=len(entries), total=await _db(request).count(**filters))


@router.get("/entries/{entry_id}", response_model=Entry, summary="get_entry")
async def get_entry(request: Request, entry_id: str, user_id: str | None = None) -> Entry:
    """One entry (404 if unknown or owned by someone else).

    Args:
        entry_id: the entry. user_id: owner scope (query), as for every route.

    Returns:
        The ``Entry``.

    Raises:
        NotFoundError: unknown id or another owner's entry (404).
    """
    return await _entry(request, entry_id, owner_of(request, user_id))


@router.patch("/entries/{entry_id}", response_model=Entry, summary="update_entry")
async def update_entry(request: Request, entry_id: str, body: UpdateIn) -> Entry:
    """Change an entry; given fields replace the stored ones (content re-derives summaries, tags, vector).

    Args:
        entry_id: the entry. body: the fields to replace.

    Returns:
        The updated ``Entry``.

    Raises:
        NotFoundError: unknown id or another owner's entry (404).
    """
    data = body.model_dump(exclude={"content"})
    data["user_id"] = owner_of(request, body.user_id)
    return await _db(request).update(entry_id, body.content, **data)


@router.delete("/entries/{entry_id}", response_model=DeleteResult, summary="delete_entry")
async def delete_entry(request: Request, entry_id: str, user_id: str | None = None,
                       agent_id: str | None = None) -> DeleteResult:
    """Delete an entry from every index (history is kept); 404 if no such entry for this owner.

    Args:
        entry_id: the entry. user_id, agent_id: the entry must belong to them.

    Returns:
        ``DeleteResult``.

    Raises:
        NotFoundError: nothing matched for this owner (404).
    """
    if not await _db(request).delete(entry_id, user_id=owner_of(request, user_id), agent_id=agent_id):
        raise NotFoundError(f"entry {entry_id!r} not found")
    return DeleteResult(entry_id=entry_id, deleted=True)


@router.get("/entries/{entry_id}/history", response_model=HistoryList, summary="history")
async def history(request: Request, entry_id: str, user_id: str | None = None) -> HistoryList:
    """ADD / UPDATE / DELETE events of an entry (scoped requests: only for entries the owner still has).

    Args:
        entry_id: the entry. user_id: owner scope (query), as for every route.

    Returns:
        ``HistoryList``.

    Raises:
        NotFoundError: a scoped request for an entry it cannot see (404).
    """
    owner = owner_of(request, user_id)
    if owner is not None:
        await _entry(request, entry_id, owner)
    return HistoryList(entry_id=entry_id, events=await _db(request).history(entry_id))


@router.post("/resources", response_model=ResourceChunks, status_code=201, summary="add_resource")
async def add_resource(request: Request, body: AddResourceIn) -> ResourceChunks:
    """Store a document as searchable chunks pointing back to ``uri``.

    Args:
        body: the ``add_resource`` arguments.

    Returns:
        ``ResourceChunks`` (201).

    Raises:
        ValidationError: empty uri or content (400).
    """
    data = body.model_dump()
    data["user_id"] = owner_of(request, body.user_id)
    entries = await _db(request).add_resource(data.pop("uri"), data.pop("content"), **data)
    return ResourceChunks(uri=body.uri, entries=entries)


@router.post("/skills", response_model=Entry, status_code=201, summary="add_skill")
async def add_skill(request: Request, body: AddSkillIn) -> Entry:
    """Store a skill (name, description, instructions, optional JSON input schema).

    Args:
        body: the ``add_skill`` arguments.

    Returns:
        The skill ``Entry`` (201).

    Raises:
        ValidationError: empty name or description (400).
    """
    data = body.model_dump()
    data["user_id"] = owner_of(request, body.user_id)
    return await _db(request).add_skill(data.pop("name"), data.pop("description"), data.pop("content"), **data)


@router.post("/skills/search", response_model=SearchResults, summary="find_skills")
async def find_skills(request: Request, body: FindSkillsIn) -> SearchResults:
    """Find skills for a task.

    Args:
        body: query, top_k, tags and owners.

    Returns:
        ``SearchResults`` of skill entries.

    Raises:
        ValidationError: bad top_k or filters (400).
    """
    db = _db(request)
    owners = {k: v for k, v in dict(tags=body.tags, user_id=owner_of(request, body.user_id), agent_id=body.agent_id,
                                    project_id=body.project_id).items() if v is not None}
    native = getattr(db, "find_skills", None)
    if native is not None:
        return _results(await native(body.query, top_k=body.top_k, **owners))
    return _results(await db.find(body.query, top_k=body.top_k, context_type="skill", **owners))


# ------------------------------------------------------------------------------------------------- sessions
@router.post("/sessions", response_model=Session, status_code=201, summary="create_session")
async def create_session(request: Request, body: CreateSessionIn) -> Session:
    """Create a session (or return the existing one with this ``session_id``, if the owner may see it).

    Args:
        body: the ``create_session`` arguments.

    Returns:
        The ``Session`` (201).

    Raises:
        NotFoundError: the id belongs to another owner's session (404).
    """
    owner = owner_of(request, body.user_id)
    if body.session_id is not None and owner is not None:
        existing = await _db(request).get_session(body.session_id)
        if existing is not None:
            await _session(request, body.session_id, owner)
    data = body.model_dump()
    data["user_id"] = owner
    return await _db(request).create_session(**data)


@router.get("/sessions", response_model=SessionList, summary="list_sessions")
async def list_sessions(request: Request, user_id: str | None = None, agent_id: str | None = None,
                        limit: int = Query(100, ge=1, le=1000), offset: int = Query(0, ge=0)) -> SessionList:
    """Sessions, newest first.

    Args:
        user_id, agent_id: owners. limit, offset: paging.

    Returns:
        ``SessionList``.
    """
    owner = owner_of(request, user_id)
    return SessionList(sessions=await _db(request).list_sessions(user_id=owner, agent_id=agent_id, limit=limit,
                                                                 offset=offset))


@router.get("/sessions/{session_id}", response_model=SessionDetail, summary="get_session")
async def get_session(request: Request, session_id: str, user_id: str | None = None) -> SessionDetail:
    """A session and its messages.

    Args:
        session_id: the session. user_id: owner scope (query), as for every route.

    Returns:
        ``SessionDetail``.

    Raises:
        NotFoundError: unknown or another owner's session (404).
    """
    session = await _session(request, session_id, owner_of(request, user_id))
    return SessionDetail(session=session, messages=await _db(request).get_messages(session_id))


@router.post("/sessions/{session_id}/messages", response_model=Message, status_code=201, summary="add_message")
async def add_message(request: Request, session_id: str, body: AddMessageIn,
                      user_id: str | None = None) -> Message:
    """Append a message; its ``seq`` is the next integer of the session.

    Args:
        session_id: the session. body: the message. user_id: owner scope (query), as for every route.

    Returns:
        The ``Message`` (201).

    Raises:
        NotFoundError: unknown or another owner's session (404).
    """
    await _session(request, session_id, owner_of(request, user_id))
    data = body.model_dump()
    return await _db(request).add_message(session_id, data.pop("role"), data.pop("content"), **data)


@router.get("/sessions/{session_id}/messages", response_model=MessageList, summary="get_messages")
async def get_messages(request: Request, session_id: str, user_id: str | None = None,
                       limit: int | None = Query(None, ge=1, le=10000), order: Literal["asc", "desc"] = "asc",
                       after_seq: int | None = None, before_seq: int | None = None) -> MessageList:
    """Messages of a session in ``seq`` order.

    Args:
        session_id: the session. limit, order, after_seq, before_seq: as ``get_messages``.
        user_id: owner scope (query), as for every route.

    Returns:
        ``MessageList``.

    Raises:
        NotFoundError: unknown or another owner's session (404).
    """
    await _session(request, session_id, owner_of(request, user_id))
    msgs = await _db(request).get_messages(session_id, limit=limit, order=order, after_seq=after_seq,
                                           before_seq=before_seq)
    return MessageList(session_id=session_id, messages=msgs)


@router.post("/sessions/{session_id}/commit", response_model=CommitResult, summary="commit_session")
async def commit_session(request: Request, session_id: str, user_id: str | None = None,
                         wait: bool = True) -> CommitResult:
    """Turn the session's new messages into memories (zero LLM calls; idempotent).

    Args:
        session_id: the session. user_id: owner scope (query), as for every route.
        wait: query flag; false returns once the turns are stored and queues facts, tags and summary.

    Returns:
        ``CommitResult``.

    Raises:
        NotFoundError: unknown or another owner's session (404).
    """
    await _session(request, session_id, owner_of(request, user_id))
    return CommitResult(**await _db(request).commit_session(session_id, wait=wait))
