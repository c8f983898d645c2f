"""Heartbeat operations on SQLite: which agent works in which session now (``agent_heartbeats``).

Heartbeat rows come back as :data:`HEARTBEAT_COLUMNS`; times are DB time text (UTC).
"""

from __future__ import annotations

from typing import Any

#: Heartbeat row order.
HEARTBEAT_COLUMNS = ("session_id", "agent_id", "project_id", "task", "metadata", "started_at", "last_seen_at")
_COLS = ", ".join(HEARTBEAT_COLUMNS)


async def session_owners(c: Any, session_id: str) -> tuple[str | None, str | None] | None:
    """``(agent_id, project_id)`` of the session, or None when no session has this id."""
    row = await c.fetchone("SELECT agent_id, project_id FROM sessions WHERE id = ?", (session_id,))
    return (row[0], row[1]) if row else None


async def upsert_heartbeat(conn: Any, session_id: str, agent_id: str | None, project_id: str | None,
                           task: str | None, metadata_json: str | None, stamp: str) -> tuple:
    """Record a heartbeat at ``stamp`` (a None task or metadata keeps the stored one); returns the row."""
    await conn.execute(
        f"INSERT INTO agent_heartbeats({_COLS}) VALUES (?, ?, ?, ?, COALESCE(?, '{{}}'), ?, ?) "
        "ON CONFLICT(session_id) DO UPDATE SET agent_id = COALESCE(excluded.agent_id, agent_id), "
        "project_id = COALESCE(excluded.project_id, project_id), task = COALESCE(?, task), "
        "metadata = COALESCE(?, metadata), last_seen_at = excluded.last_seen_at",
        (session_id, agent_id, project_id, task, metadata_json, stamp, stamp, task, metadata_json))
    return await conn.fetchone(f"SELECT {_COLS} FROM agent_heartbeats WHERE session_id = ?", (session_id,))


async def heartbeats_since(c: Any, cutoff: str, *, project_id: str | None,
                           exclude_session_id: str | None) -> list[tuple]:
    """Heartbeat rows seen at or after ``cutoff``, optionally of one project and without one session, newest
    first."""
    sql = f"SELECT {_COLS} FROM agent_heartbeats WHERE last_seen_at >= ?"
    params: list[Any] = [cutoff]
    if project_id is not None:
        sql += " AND project_id = ?"
        params.append(project_id)
    if exclude_session_id is not None:
        sql += " AND session_id != ?"
        params.append(exclude_session_id)
    return await c.fetchall(sql + " ORDER BY last_seen_at DESC", params)


async def delete_heartbeat(conn: Any, session_id: str) -> bool:
    """Remove the session's heartbeat; True when there was one."""
    cur = await conn.execute("DELETE FROM agent_heartbeats WHERE session_id = ?", (session_id,))
    return cur.rowcount > 0
