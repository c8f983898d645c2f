"""Heartbeat operations on PostgreSQL: which agent works in which session now (``agent_heartbeats``). Same
functions, arguments and row shapes as ``storage/sqlite/scopes.py``.

Heartbeat rows come back as :data:`HEARTBEAT_COLUMNS`; times are DB time text (UTC), fixed-width, so text order is
time order under any collation. What differs from SQLite: ``upsert_heartbeat`` returns the row from the upsert
itself (``RETURNING``) rather than a second read, so with several writers at once each caller gets the row its own
statement wrote.
"""

from __future__ import annotations

from typing import Any

__all__ = ["HEARTBEAT_COLUMNS", "delete_heartbeat", "heartbeats_since", "session_owners", "upsert_heartbeat"]

#: Heartbeat row order.
HEARTBEAT_COLUMNS = ("session_id", "agent_id", "project_id", "task", "metadata", "started_at", "last_seen_at")
_COLS = ", ".join(HEARTBEAT_COLUMNS)


async def session_owners(c: Any, session_id: str) -> tuple[str | None, str | None] | None:
    """``(agent_id, project_id)`` of the session, or None when no session has this id."""
    row = await c.fetchone("SELECT agent_id, project_id FROM sessions WHERE id = %s", (session_id,))
    return (row[0], row[1]) if row else None


async def upsert_heartbeat(conn: Any, session_id: str, agent_id: str | None, project_id: str | None,
                           task: str | None, metadata_json: str | None, stamp: str) -> tuple:
    """Record a heartbeat at ``stamp`` (a None agent, project, task or metadata keeps the stored one); returns the
    row."""
    return await conn.fetchone(
        f"INSERT INTO agent_heartbeats AS h({_COLS}) VALUES (%s, %s, %s, %s, COALESCE(%s, '{{}}'), %s, %s) "
        "ON CONFLICT (session_id) DO UPDATE SET agent_id = COALESCE(excluded.agent_id, h.agent_id), "
        "project_id = COALESCE(excluded.project_id, h.project_id), task = COALESCE(excluded.task, h.task), "
        "metadata = COALESCE(%s::text, h.metadata), last_seen_at = excluded.last_seen_at "
        f"RETURNING {', '.join('h.' + c for c in HEARTBEAT_COLUMNS)}",
        (session_id, agent_id, project_id, task, metadata_json, stamp, stamp, metadata_json))


async def heartbeats_since(c: Any, cutoff: str, *, project_id: str | None,
                           exclude_session_id: str | None) -> list[tuple]:
    """Heartbeat rows seen at or after ``cutoff``, optionally of one project and without one session, newest
    first."""
    sql = f"SELECT {_COLS} FROM agent_heartbeats WHERE last_seen_at >= %s"
    params: list[Any] = [cutoff]
    if project_id is not None:
        sql += " AND project_id = %s"
        params.append(project_id)
    if exclude_session_id is not None:
        sql += " AND session_id <> %s"
        params.append(exclude_session_id)
    return await c.fetchall(sql + " ORDER BY last_seen_at DESC", params)


async def delete_heartbeat(conn: Any, session_id: str) -> bool:
    """Remove the session's heartbeat; True when there was one."""
    cur = await conn.execute("DELETE FROM agent_heartbeats WHERE session_id = %s", (session_id,))
    return cur.rowcount > 0
