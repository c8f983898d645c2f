"""The observability and graph part of the JSON API under ``/api/v1``: stats, traces, debug views, temporal graph.

Same conventions as :mod:`agentbase.web.api_routes` (owner scope, OpenAI error shape). Views that span every owner
(traces, the entity graph, the temporal graph) answer 403 to owner-scoped requests.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.exceptions import HTTPException

from agentbase.errors import NotFoundError
from agentbase.models import Trace

from .api_routes import _db, _entry, _session, _StrictRoute, _unscoped, owner_of

__all__ = ["router"]

router = APIRouter(prefix="/api/v1", tags=["agentbase"], route_class=_StrictRoute)


# ------------------------------------------------------------------------------------------------- observability
@router.get("/stats", summary="stats")
async def stats(request: Request, user_id: str | None = None) -> dict[str, Any]:
    """Counts and engine facts; a scoped request gets its own entry counts only.

    Args:
        user_id: owner scope (query), as for every route.

    Returns:
        The ``stats()`` dict, or ``{user_id, entries, entries_total}`` for a scoped request.
    """
    owner = owner_of(request, user_id)
    db = _db(request)
    if owner is not None:
        by_type = {t: await db.count(context_type=t, user_id=owner) for t in ("memory", "resource", "skill")}
        return {"user_id": owner, "entries": by_type, "entries_total": sum(by_type.values())}
    return await db.stats()


@router.get("/traces", summary="list_traces")
async def list_traces(request: Request, limit: int = Query(50, ge=1, le=1000),
                      offset: int = Query(0, ge=0)) -> dict[str, Any]:
    """Persisted retrieval traces, newest first (unscoped requests only).

    Args:
        limit, offset: paging.

    Returns:
        ``{"traces": [...]}``.

    Raises:
        HTTPException: 403 for a scoped request.
    """
    _unscoped(request)
    return {"traces": await _db(request).list_traces(limit, offset)}


@router.get("/traces/{trace_id}", response_model=Trace, summary="get_trace")
async def get_trace(request: Request, trace_id: str) -> Trace:
    """One retrieval trace: every step with latency, candidate counts and the final per-result ``why``.

    Args:
        trace_id: the trace.

    Returns:
        The ``Trace``.

    Raises:
        NotFoundError: unknown id (404). HTTPException: 403 for a scoped request.
    """
    _unscoped(request)
    return await _db(request).get_trace(trace_id)


@router.get("/debug/sessions/{session_id}", summary="trace_session")
async def trace_session(request: Request, session_id: str, user_id: str | None = None) -> dict[str, Any]:
    """A session's messages, the memories committed from it and the traces that found them.

    Args:
        session_id: the session. user_id: owner scope (query), as for every route.

    Returns:
        The ``trace_session`` dict (traces omitted for a scoped request).

    Raises:
        NotFoundError: unknown or another owner's session (404).
    """
    owner = owner_of(request, user_id)
    await _session(request, session_id, owner)
    out = await _db(request).trace_session(session_id)
    if owner is not None:
        out["traces"] = []
    return out


@router.get("/debug/graph", summary="entity_graph")
async def entity_graph(request: Request, entity: str | None = None,
                       limit: int = Query(60, ge=1, le=500)) -> dict[str, Any]:
    """Entity graph around ``entity`` (or the most-mentioned entities): relations and co-occurrence.

    Args:
        entity: a name or ``ner_`` tag (default: the whole graph). limit: most nodes.

    Returns:
        The ``entity_graph`` dict.

    Raises:
        NotFoundError: unknown entity (404). HTTPException: 403 for a scoped request.
    """
    _unscoped(request)
    return await _db(request).entity_graph(entity, limit=limit)


@router.get("/debug/diff", summary="diff_entries")
async def diff_entries(request: Request, a: str, b: str, user_id: str | None = None) -> dict[str, Any]:
    """Compare two entries field by field with a unified diff of their text.

    Args:
        a, b: entry ids. user_id: owner scope (query), as for every route.

    Returns:
        The ``diff_entries`` dict.

    Raises:
        NotFoundError: either entry unknown or not the owner's (404).
    """
    owner = owner_of(request, user_id)
    if owner is not None:
        await _entry(request, a, owner)
        await _entry(request, b, owner)
    return await _db(request).diff_entries(a, b)


# ------------------------------------------------------------------------------------------------- temporal graph
def _graph(request: Request, name: str) -> Any:
    _unscoped(request)
    method = getattr(_db(request), name, None)
    if method is None:  # pragma: no cover - an engine without the temporal graph
        raise HTTPException(501, f"{name} is not available in this AgentBase build.")
    return method


@router.get("/graph/facts", summary="facts")
async def facts(request: Request, entity: str, as_of: str | None = None, predicate: str | None = None,
                direction: Literal["out", "in", "both"] = "both") -> dict[str, Any]:
    """What was true about ``entity`` at ``as_of`` (default now): relations valid at that time.

    Args:
        entity: name or alias. as_of: ISO time (default now). predicate: only this predicate.
        direction: ``out``, ``in`` or ``both``.

    Returns:
        ``{"entity", "relations"}``.

    Raises:
        HTTPException: 403 for a scoped request.
    """
    rels = await _graph(request, "facts")(entity, as_of=as_of, predicate=predicate, direction=direction)
    return {"entity": entity, "relations": rels}


@router.get("/graph/timeline", summary="timeline")
async def timeline(request: Request, entity: str) -> dict[str, Any]:
    """Every relation of ``entity`` (open and closed) ordered by ``valid_from``.

    Args:
        entity: name or alias.

    Returns:
        ``{"entity", "relations"}``.

    Raises:
        HTTPException: 403 for a scoped request.
    """
    return {"entity": entity, "relations": await _graph(request, "timeline")(entity)}


@router.get("/graph/neighbors", summary="neighbors")
async def neighbors(request: Request, entity: str, depth: int = Query(1, ge=1, le=5), as_of: str | None = None,
                    include_expired: bool = False, limit: int = Query(200, ge=1, le=5000)) -> Any:
    """Entities within ``depth`` hops of ``entity`` with the relations between them (404 for an unknown entity).

    Args:
        entity: name or alias. depth: hops (1..5). as_of: ISO time. include_expired: follow closed
            relations too. limit: most entities.

    Returns:
        The ``Neighborhood``.

    Raises:
        NotFoundError: unknown entity (404). HTTPException: 403 for a scoped request.
    """
    found = await _graph(request, "neighbors")(entity, depth=depth, as_of=as_of, include_expired=include_expired,
                                                limit=limit)
    if found is None:
        raise NotFoundError(f"entity {entity!r} not found")
    return found
