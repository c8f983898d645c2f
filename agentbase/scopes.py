"""Multi-agent scopes: who may see an entry, and which sibling agents are working right now.

Visibility (ARCHITECTURE.md section 2): an entry's ``scope`` names the owner id that must match the viewer.

==========  ============================================================
scope       visible to a viewer ...
==========  ============================================================
global      always
agent       whose ``agent_id`` equals the entry's ``agent_id``
project     whose ``project_id`` equals the entry's ``project_id``
session     whose ``session_id`` equals the entry's ``session_id``
==========  ============================================================

A viewer that passes ``user_id`` additionally never sees entries owned by another user (entries without a
``user_id`` stay visible). An entry scoped to an owner kind whose id is missing on the entry (``scope='agent'``,
``agent_id`` NULL) is visible to nobody but unfiltered queries.

:func:`visible_to` turns a viewer into keyword filters accepted by ``find``, ``list``, ``count`` and
``delete_all``; the clause is applied inside the candidate SQL of every leg (FTS5, vector KNN), so a top-k is never
cut before isolation::

    results = await db.find("deploy steps", **visible_to(agent_id="planner", project_id="acme"))

Heartbeats: an agent working in a session calls ``heartbeat(session_id, agent_id, task)`` every few seconds;
``active_sessions(project_id)`` lists the sessions whose last heartbeat is younger than ``stale_after_s``.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from .errors import NotFoundError, ValidationError
from .models import utcnow
from .timeutil import from_db_time, parse_time, to_db_time
from .validation import check_id, check_metadata, check_text

__all__ = ["VIEWER_KEYS", "ActiveSession", "check_viewer", "visibility_clause", "visible_to"]

VIEWER_KEYS = ("user_id", "agent_id", "project_id", "session_id")


def visibility_clause(viewer: dict[str, Any], alias: str = "e", ops: Any = None) -> tuple[str, list[Any]]:
    """SQL boolean expression over ``entries AS alias`` that keeps what ``viewer`` may see (the SQL is the engine's
    ``filters.visibility``: :func:`agentbase.storage.sqlite.filters.visibility`, or
    :func:`agentbase.storage.postgres.filters.visibility` with ``%s`` placeholders).

    Args:
        viewer: any of ``user_id``, ``agent_id``, ``project_id``, ``session_id`` (None values are ignored).
        alias: the entries table alias used by the query.
        ops: the engine's operations (``db.ops`` of the connection the SQL will run on); None means SQLite.

    Returns:
        ``(sql, params)``; values are bound parameters.

    Raises:
        ValidationError: an unknown key or a malformed id.
    """
    check_viewer(viewer, alias)
    if ops is None:
        from .storage import sqlite as ops

    return ops.filters.visibility(viewer, alias)


def check_viewer(viewer: Any, alias: str = "e") -> None:
    """Raise :class:`ValidationError` unless ``viewer`` is a dict of known owner keys with well-formed ids (None
    values allowed) and ``alias`` an identifier (what :func:`visibility_clause` checks before building its SQL)."""
    if not isinstance(viewer, dict):
        raise ValidationError("visible_to must be a dict of owner ids")
    unknown = set(viewer) - set(VIEWER_KEYS)
    if unknown:
        raise ValidationError(f"unknown visible_to keys {sorted(unknown)}; use {list(VIEWER_KEYS)}")
    if not alias.isidentifier():
        raise ValidationError("alias must be an identifier")
    for key in VIEWER_KEYS:
        if viewer.get(key) is not None:
            check_id(viewer[key], key)


def visible_to(user_id: str | None = None, agent_id: str | None = None, project_id: str | None = None,
               session_id: str | None = None) -> dict[str, Any]:
    """Keyword filters that restrict ``find``/``list``/``count`` to what one viewer may see.

    Args:
        user_id, agent_id, project_id, session_id: the viewer's ids (see the table in the module docstring).

    Returns:
        ``{"visible_to": {...the ids...}}`` for :class:`~agentbase.retrieval.filters.Filters`; spread it into
        the call: ``db.find(q, **visible_to(agent_id="a1"))``.

    Raises:
        ValidationError: a malformed id.
    """
    viewer = {"user_id": user_id, "agent_id": agent_id, "project_id": project_id, "session_id": session_id}
    check_viewer(viewer)  # a malformed id fails here, where it is given
    return {"visible_to": viewer}


class ActiveSession(BaseModel):
    """A session with a recent heartbeat: who works in it, on what, and when it was last seen (UTC)."""

    session_id: str
    agent_id: str | None = None
    project_id: str | None = None
    task: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    started_at: datetime
    last_seen_at: datetime
    age_s: float = 0.0


def _row(row: tuple, now: datetime) -> ActiveSession:
    last = from_db_time(row[6])
    return ActiveSession(session_id=row[0], agent_id=row[1], project_id=row[2], task=row[3],
                         metadata=json.loads(row[4]), started_at=from_db_time(row[5]), last_seen_at=last,
                         age_s=max(0.0, (now - last).total_seconds()))


async def heartbeat(ab: Any, session_id: str, agent_id: str | None, task: str | None, *, project_id: str | None,
                    metadata: dict[str, Any] | None, now: Any) -> ActiveSession:
    """See :meth:`AgentBase.heartbeat`."""
    check_id(session_id, "session_id")
    for key, value in (("agent_id", agent_id), ("project_id", project_id)):
        if value is not None:
            check_id(value, key)
    if task is not None:
        check_text(task, "task", allow_empty=True)
        if len(task) > 2000:
            raise ValidationError("task must be at most 2000 characters")
    meta = json.dumps(check_metadata(metadata), ensure_ascii=False) if metadata is not None else None
    when = parse_time(now) or utcnow()
    stamp = to_db_time(when)
    db = await ab._open()
    async with db.transaction() as conn:
        owners = await conn.ops.scopes.session_owners(conn, session_id)
        if owners is None:  # a typo'd id would otherwise list a session nobody can read as active
            raise NotFoundError(f"session {session_id!r} not found; create_session() it first")
        row = await conn.ops.scopes.upsert_heartbeat(conn, session_id, agent_id or owners[0],
                                                     project_id or owners[1], task, meta, stamp)
    return _row(row, when)


async def active_sessions(ab: Any, *, project_id: str | None, stale_after_s: float, exclude_session_id: str | None,
                          now: Any) -> list[ActiveSession]:
    """See :meth:`AgentBase.active_sessions`."""
    if isinstance(stale_after_s, bool) or not isinstance(stale_after_s, (int, float)) or stale_after_s <= 0:
        raise ValidationError("stale_after_s must be a positive number of seconds")
    when = parse_time(now) or utcnow()
    cutoff = to_db_time(when.timestamp() - float(stale_after_s))
    if project_id is not None:
        check_id(project_id, "project_id")
    if exclude_session_id is not None:
        check_id(exclude_session_id, "exclude_session_id")
    db = await ab._open()
    rows = await db.ops.scopes.heartbeats_since(db, cutoff, project_id=project_id,
                                                exclude_session_id=exclude_session_id)
    return [_row(r, when) for r in rows]


async def end_heartbeat(ab: Any, session_id: str) -> bool:
    """See :meth:`AgentBase.end_heartbeat`."""
    db = await ab._open()
    check_id(session_id, "session_id")
    async with db.transaction() as conn:
        return await conn.ops.scopes.delete_heartbeat(conn, session_id)
