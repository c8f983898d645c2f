"""Session and message operations on SQLite: the ordered message log behind every chat adapter.

Session rows come back as :data:`SESSION_COLUMNS`, message rows as :data:`MESSAGE_COLUMNS`; times are DB time text
(UTC); metadata and tool calls are JSON text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

#: Session row order.
SESSION_COLUMNS = ("id", "user_id", "agent_id", "project_id", "status", "metadata", "created_at", "updated_at",
                   "committed_seq", "enriched_seq")
#: Message row order.
MESSAGE_COLUMNS = ("id", "session_id", "seq", "role", "content", "name", "tool_calls", "tool_call_id", "metadata",
                   "created_at")
_S = ", ".join(SESSION_COLUMNS)
_M = ", ".join(MESSAGE_COLUMNS)
_CHUNK = 10_000  # bound parameters per statement, well under SQLite's limit


# ------------------------------------------------------------------------------------------------ sessions
async def create_session_row(conn: Any, session_id: str, user_id: str | None, agent_id: str | None,
                             project_id: str | None, metadata_json: str, now: str) -> tuple:
    """Insert an open session unless the id exists; returns the stored row (the existing one if it did)."""
    await conn.execute(f"INSERT INTO sessions({_S}) VALUES (?, ?, ?, ?, 'open', ?, ?, ?, 0, 0) "
                       "ON CONFLICT(id) DO NOTHING",
                       (session_id, user_id, agent_id, project_id, metadata_json, now, now))
    return await conn.fetchone(f"SELECT {_S} FROM sessions WHERE id = ?", (session_id,))


async def ensure_session(conn: Any, session_id: str, now: str) -> None:
    """Create an open session without owners unless the id exists."""
    await conn.execute("INSERT INTO sessions(id, status, metadata, created_at, updated_at) "
                       "VALUES (?, 'open', '{}', ?, ?) ON CONFLICT(id) DO NOTHING", (session_id, now, now))


async def session_row(c: Any, session_id: str) -> tuple | None:
    """The session's row, or None."""
    return await c.fetchone(f"SELECT {_S} FROM sessions WHERE id = ?", (session_id,))


async def session_exists(c: Any, session_id: str) -> bool:
    """Whether a session has this id."""
    return await c.fetchone("SELECT 1 FROM sessions WHERE id = ?", (session_id,)) is not None


async def session_rows(c: Any, *, user_id: str | None, agent_id: str | None, limit: int,
                       offset: int) -> list[tuple]:
    """Sessions of these owners (None: any), newest first (ties: last created first)."""
    sql, params = f"SELECT {_S} FROM sessions WHERE 1", []
    for key, value in (("user_id", user_id), ("agent_id", agent_id)):
        if value is not None:
            sql += f" AND {key} = ?"
            params.append(value)
    return await c.fetchall(sql + " ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?", [*params, limit, offset])


async def set_session_metadata(conn: Any, session_id: str, metadata_json: str, now: str) -> bool:
    """Replace the session's metadata; False when no session has this id."""
    cur = await conn.execute("UPDATE sessions SET metadata = ?, updated_at = ? WHERE id = ?",
                             (metadata_json, now, session_id))
    return cur.rowcount > 0


async def touch_session(conn: Any, session_id: str, now: str) -> None:
    """Set the session's ``updated_at``."""
    await conn.execute("UPDATE sessions SET updated_at = ? WHERE id = ?", (now, session_id))


async def enrichment_pending(conn: Any, session_id: str) -> bool:
    """Whether the session's committed messages still wait for their queued enrichment."""
    row = await conn.fetchone("SELECT enriched_seq < committed_seq FROM sessions WHERE id = ?", (session_id,))
    return bool(row and row[0])


async def own_entry_rows(conn: Any, session_id: str) -> list[tuple]:
    """Entry rows (``ENTRY_COLUMNS``) linked to this session and to no other one."""
    from ..entries import ENTRY_COLUMNS

    return await conn.fetchall(
        f"SELECT {ENTRY_COLUMNS} FROM entries WHERE id IN "
        f"(SELECT entry_id FROM session_memory_links WHERE session_id = ?) AND id NOT IN "
        f"(SELECT entry_id FROM session_memory_links WHERE session_id != ?)", (session_id, session_id))


async def delete_session_rows(conn: Any, session_id: str) -> bool:
    """Delete the session, its messages and its memory links (not the entries); False when it did not exist."""
    await conn.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))
    await conn.execute("DELETE FROM session_memory_links WHERE session_id = ?", (session_id,))
    cur = await conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
    return cur.rowcount > 0



async def pending_sharing_owners(c: Any, entry_id: str) -> list[str]:
    """Ids of the sessions with exactly the owners (user, agent, project) of entry ``entry_id`` whose committed
    messages still wait for their queued enrichment."""
    rows = await c.fetchall(
        "SELECT s.id FROM sessions s JOIN entries e ON s.user_id IS e.user_id AND s.agent_id IS e.agent_id "
        "AND s.project_id IS e.project_id WHERE e.id = ? AND s.enriched_seq < s.committed_seq", (entry_id,))
    return [r[0] for r in rows]


async def pending_of_owners(c: Any, owners: dict[str, Any]) -> list[str]:
    """Ids of the sessions of ``owners`` (``user_id`` / ``agent_id`` / ``project_id`` / ``session_id`` -> id; an
    empty dict: every session) whose committed messages still wait for their queued enrichment."""
    bad = set(owners) - {"user_id", "agent_id", "project_id", "session_id"}
    if bad:  # the entry API's owner keys, never user input; checked all the same
        raise ValueError(f"unknown owner keys {sorted(bad)}")
    where = "".join(f" AND {('id' if k == 'session_id' else k)} = ?" for k in owners)
    rows = await c.fetchall(f"SELECT id FROM sessions WHERE enriched_seq < committed_seq{where}",
                            list(owners.values()))
    return [r[0] for r in rows]

# ------------------------------------------------------------------------------------------------ messages
async def taken_message_ids(conn: Any, ids: Sequence[str], *, other_than: str | None = None) -> list[str]:
    """The ``ids`` that already name a message (of a session other than ``other_than``, when given)."""
    taken: list[str] = []
    for i in range(0, len(ids), _CHUNK):
        chunk = list(ids[i:i + _CHUNK])
        sql = f"SELECT id FROM messages WHERE id IN ({','.join('?' * len(chunk))})"
        if other_than is not None:
            sql += " AND session_id != ?"
        taken += [r[0] for r in await conn.fetchall(sql, [*chunk, other_than] if other_than is not None else chunk)]
    return taken


async def last_seq(conn: Any, session_id: str) -> int:
    """The highest seq the session has used: its messages' and everything committed (0 for none)."""
    row = await conn.fetchone(
        "SELECT MAX(COALESCE((SELECT MAX(seq) FROM messages WHERE session_id = ?), 0), committed_seq) "
        "FROM sessions WHERE id = ?", (session_id, session_id))
    return row[0] if row and row[0] is not None else 0


async def insert_message_rows(conn: Any, rows: Sequence[dict[str, Any]]) -> None:
    """Insert messages given as dicts with every :data:`MESSAGE_COLUMNS` key and ``committed`` (0 or 1)."""
    await conn.executemany(
        f"INSERT INTO messages({_M}, committed) VALUES (:id, :session_id, :seq, :role, :content, :name, "
        ":tool_calls, :tool_call_id, :metadata, :created_at, :committed)", list(rows))


async def message_rows_by_id(c: Any, ids: Sequence[str]) -> list[tuple]:
    """Message rows of these ids, by seq."""
    rows: list[tuple] = []
    for i in range(0, len(ids), _CHUNK):
        chunk = list(ids[i:i + _CHUNK])
        rows += await c.fetchall(f"SELECT {_M} FROM messages WHERE id IN ({','.join('?' * len(chunk))}) ORDER BY seq",
                                 chunk)
    return sorted(rows, key=lambda r: r[2]) if len(ids) > _CHUNK else rows


async def message_ids(conn: Any, session_id: str) -> list[str]:
    """The session's message ids by seq."""
    return [r[0] for r in await conn.fetchall("SELECT id FROM messages WHERE session_id = ? ORDER BY seq",
                                              (session_id,))]


async def messages_to_align(conn: Any, session_id: str) -> list[tuple]:
    """``(id, role, content, name, tool_calls, tool_call_id, created_at, committed)`` of the session's messages by
    seq (what a replacement is aligned against)."""
    return await conn.fetchall(
        "SELECT id, role, content, name, tool_calls, tool_call_id, created_at, committed FROM messages "
        "WHERE session_id = ? ORDER BY seq", (session_id,))


async def delete_messages(conn: Any, session_id: str) -> int:
    """Delete every message of the session; returns how many."""
    cur = await conn.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))
    return cur.rowcount


async def message_rows(c: Any, session_id: str, *, after_seq: int | None, before_seq: int | None, order: str,
                       limit: int | None) -> list[tuple]:
    """The session's messages with ``after_seq < seq < before_seq`` (None: unbounded), by seq ``order``
    (``asc`` or ``desc``), at most ``limit`` (None: all)."""
    sql, params = f"SELECT {_M} FROM messages WHERE session_id = ?", [session_id]
    if after_seq is not None:
        sql += " AND seq > ?"
        params.append(after_seq)
    if before_seq is not None:
        sql += " AND seq < ?"
        params.append(before_seq)
    sql += " ORDER BY seq DESC" if order == "desc" else " ORDER BY seq ASC"
    if limit is not None:
        sql += " LIMIT ?"
        params.append(limit)
    return await c.fetchall(sql, params)


async def message_row(c: Any, session_id: str, message_id: str) -> tuple | None:
    """One message of the session, or None."""
    return await c.fetchone(f"SELECT {_M} FROM messages WHERE session_id = ? AND id = ?", (session_id, message_id))


async def message_metadata(conn: Any, session_id: str, message_id: str) -> str | None:
    """The message's metadata (JSON text), or None when the session has no such message."""
    row = await conn.fetchone("SELECT metadata FROM messages WHERE session_id = ? AND id = ?",
                              (session_id, message_id))
    return row[0] if row else None


async def set_message_metadata(conn: Any, session_id: str, message_id: str, metadata_json: str) -> bool:
    """Replace the message's metadata; False when the session has no such message."""
    cur = await conn.execute("UPDATE messages SET metadata = ? WHERE session_id = ? AND id = ?",
                             (metadata_json, session_id, message_id))
    return cur.rowcount > 0


async def delete_message_row(conn: Any, session_id: str, message_id: str) -> tuple | None:
    """Delete one message and return its row, read and deleted in one statement (None: nothing was deleted), so
    of two callers deleting it only one gets it back."""
    return await conn.fetchone(f"DELETE FROM messages WHERE session_id = ? AND id = ? RETURNING {_M}",
                               (session_id, message_id))
