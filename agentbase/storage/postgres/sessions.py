"""Session and message operations on PostgreSQL: the ordered message log behind every chat adapter. Same functions,
arguments and row shapes as ``storage/sqlite/sessions.py``.

Session rows come back as :data:`SESSION_COLUMNS`, message rows as :data:`MESSAGE_COLUMNS`; times are DB time text
(UTC); metadata and tool calls are JSON text; ``committed`` is the integer 0 or 1 on both engines.

What differs from SQLite, and why:

- Lists of ids bind as one ``text[]`` parameter (``= ANY(%s::text[])``), so no chunking under a bound-parameter
  limit is needed.
- ``session_rows`` breaks ``created_at`` ties by ``sessions.rid`` (an identity column standing for SQLite's
  implicit ``rowid``): last created first, as on SQLite.
- A negative ``limit`` means no limit and a negative ``offset`` zero, as SQLite reads them (PostgreSQL would
  reject them; :mod:`.sqlutil`).
- ``enrichment_pending`` reads a boolean (PostgreSQL) where SQLite reads 0/1; both return a Python bool.
- Several writers at once: ``create_session_row``/``ensure_session`` insert with ``ON CONFLICT DO NOTHING``, so two
  hosts creating one session both succeed and read the same row; ``delete_message_row`` reads and deletes in one
  statement (``DELETE ... RETURNING``), so only one of two deleters gets the row.
- Inside a transaction ``session_exists`` and ``enrichment_pending`` (the first reads of adding, replacing,
  deleting and clearing messages) lock the session row (``FOR UPDATE``), as ``ingest.watermarks`` does for a
  commit: every transaction that changes a session's messages takes the session row first, so a commit and a
  replace of one session run one after the other instead of deadlocking over the message rows (the replace
  deleting messages the commit then flags, the commit holding the session row the replace then touches), and a
  replace's "no enrichment pending" check holds until it commits. SQLite's single writer gives both for free.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .sqlutil import limit as _limit
from .sqlutil import offset as _offset

__all__ = ["MESSAGE_COLUMNS", "SESSION_COLUMNS", "create_session_row", "delete_message_row", "delete_messages",
           "delete_session_rows", "enrichment_pending", "ensure_session", "insert_message_rows", "last_seq",
           "message_ids", "message_metadata", "message_row", "message_rows", "message_rows_by_id",
           "messages_to_align", "own_entry_rows", "session_exists", "session_row", "session_rows",
           "set_message_metadata", "set_session_metadata", "taken_message_ids", "touch_session"]

#: Session row order.
SESSION_COLUMNS = ("id", "user_id", "agent_id", "project_id", "status", "metadata", "created_at", "updated_at",
                   "committed_seq", "enriched_seq")
#: Message row order.
MESSAGE_COLUMNS = ("id", "session_id", "seq", "role", "content", "name", "tool_calls", "tool_call_id", "metadata",
                   "created_at")
_S = ", ".join(SESSION_COLUMNS)
_M = ", ".join(MESSAGE_COLUMNS)


def _lock(c: Any) -> str:
    """`` FOR UPDATE`` when ``c`` is an open transaction (``PgWriter``), else nothing (a plain read locks none)."""
    from .connection import PgWriter

    return " FOR UPDATE" if isinstance(c, PgWriter) else ""


# ------------------------------------------------------------------------------------------------ sessions
async def create_session_row(conn: Any, session_id: str, user_id: str | None, agent_id: str | None,
                             project_id: str | None, metadata_json: str, now: str) -> tuple:
    """Insert an open session unless the id exists; returns the stored row (the existing one if it did)."""
    await conn.execute(f"INSERT INTO sessions({_S}) VALUES (%s, %s, %s, %s, 'open', %s, %s, %s, 0, 0) "
                       "ON CONFLICT (id) DO NOTHING",
                       (session_id, user_id, agent_id, project_id, metadata_json, now, now))
    return await conn.fetchone(f"SELECT {_S} FROM sessions WHERE id = %s", (session_id,))


async def ensure_session(conn: Any, session_id: str, now: str) -> None:
    """Create an open session without owners unless the id exists."""
    await conn.execute("INSERT INTO sessions(id, status, metadata, created_at, updated_at) "
                       "VALUES (%s, 'open', '{}', %s, %s) ON CONFLICT (id) DO NOTHING", (session_id, now, now))


async def session_row(c: Any, session_id: str) -> tuple | None:
    """The session's row, or None."""
    return await c.fetchone(f"SELECT {_S} FROM sessions WHERE id = %s", (session_id,))


async def session_exists(c: Any, session_id: str) -> bool:
    """Whether a session has this id. Inside a transaction the session row stays locked (``FOR UPDATE``) until it
    ends (see the module docstring)."""
    return await c.fetchone(f"SELECT 1 FROM sessions WHERE id = %s{_lock(c)}", (session_id,)) is not None


async def session_rows(c: Any, *, user_id: str | None, agent_id: str | None, limit: int,
                       offset: int) -> list[tuple]:
    """Sessions of these owners (None: any), newest first (ties: last created first)."""
    sql, params = f"SELECT {_S} FROM sessions WHERE TRUE", []
    for key, value in (("user_id", user_id), ("agent_id", agent_id)):
        if value is not None:
            sql += f" AND {key} = %s"
            params.append(value)
    return await c.fetchall(sql + " ORDER BY created_at DESC, rid DESC LIMIT %s OFFSET %s",
                            [*params, _limit(limit), _offset(offset)])


async def set_session_metadata(conn: Any, session_id: str, metadata_json: str, now: str) -> bool:
    """Replace the session's metadata; False when no session has this id."""
    cur = await conn.execute("UPDATE sessions SET metadata = %s, updated_at = %s WHERE id = %s",
                             (metadata_json, now, session_id))
    return cur.rowcount > 0


async def touch_session(conn: Any, session_id: str, now: str) -> None:
    """Set the session's ``updated_at``."""
    await conn.execute("UPDATE sessions SET updated_at = %s WHERE id = %s", (now, session_id))


async def enrichment_pending(conn: Any, session_id: str) -> bool:
    """Whether the session's committed messages still wait for their queued enrichment. Inside a transaction the
    session row stays locked (``FOR UPDATE``) until it ends (see the module docstring)."""
    row = await conn.fetchone(f"SELECT enriched_seq < committed_seq FROM sessions WHERE id = %s{_lock(conn)}",
                              (session_id,))
    return bool(row and row[0])


async def own_entry_rows(conn: Any, session_id: str) -> list[tuple]:
    """Entry rows (``ENTRY_COLUMNS``) linked to this session and to no other one."""
    from ..entries import ENTRY_COLUMNS

    return await conn.fetchall(
        f"SELECT {ENTRY_COLUMNS} FROM entries WHERE id IN "
        f"(SELECT entry_id FROM session_memory_links WHERE session_id = %s) AND id NOT IN "
        f"(SELECT entry_id FROM session_memory_links WHERE session_id <> %s)", (session_id, session_id))


async def delete_session_rows(conn: Any, session_id: str) -> bool:
    """Delete the session, its messages and its memory links (not the entries); False when it did not exist."""
    await conn.execute("DELETE FROM messages WHERE session_id = %s", (session_id,))
    await conn.execute("DELETE FROM session_memory_links WHERE session_id = %s", (session_id,))
    cur = await conn.execute("DELETE FROM sessions WHERE id = %s", (session_id,))
    return cur.rowcount > 0


async def pending_sharing_owners(c: Any, entry_id: str) -> list[str]:
    """Ids of the sessions with exactly the owners (user, agent, project) of entry ``entry_id`` whose committed
    messages still wait for their queued enrichment."""
    rows = await c.fetchall(
        "SELECT s.id FROM sessions s JOIN entries e ON s.user_id IS NOT DISTINCT FROM e.user_id "
        "AND s.agent_id IS NOT DISTINCT FROM e.agent_id AND s.project_id IS NOT DISTINCT FROM e.project_id "
        "WHERE e.id = %s AND s.enriched_seq < s.committed_seq ORDER BY s.id", (entry_id,))
    return [r[0] for r in rows]


async def pending_of_owners(c: Any, owners: dict[str, Any]) -> list[str]:
    """Ids of the sessions of ``owners`` (``user_id`` / ``agent_id`` / ``project_id`` / ``session_id`` -> id; an
    empty dict: every session) whose committed messages still wait for their queued enrichment."""
    bad = set(owners) - {"user_id", "agent_id", "project_id", "session_id"}
    if bad:  # the entry API's owner keys, never user input; checked all the same
        raise ValueError(f"unknown owner keys {sorted(bad)}")
    where = "".join(f" AND {('id' if k == 'session_id' else k)} = %s" for k in owners)
    rows = await c.fetchall(f"SELECT id FROM sessions WHERE enriched_seq < committed_seq{where} ORDER BY id",
                            list(owners.values()))
    return [r[0] for r in rows]


# ------------------------------------------------------------------------------------------------ messages
async def taken_message_ids(conn: Any, ids: Sequence[str], *, other_than: str | None = None) -> list[str]:
    """The ``ids`` that already name a message (of a session other than ``other_than``, when given)."""
    sql, params = "SELECT id FROM messages WHERE id = ANY(%s::text[])", [list(ids)]
    if other_than is not None:
        sql += " AND session_id <> %s"
        params.append(other_than)
    return [r[0] for r in await conn.fetchall(sql, params)] if ids else []


async def last_seq(conn: Any, session_id: str) -> int:
    """The highest seq the session has used: its messages' and everything committed (0 for none)."""
    row = await conn.fetchone(
        "SELECT GREATEST(COALESCE((SELECT MAX(seq) FROM messages WHERE session_id = %s), 0), committed_seq) "
        "FROM sessions WHERE id = %s", (session_id, session_id))
    return row[0] if row and row[0] is not None else 0


async def insert_message_rows(conn: Any, rows: Sequence[dict[str, Any]]) -> None:
    """Insert messages given as dicts with every :data:`MESSAGE_COLUMNS` key and ``committed`` (0 or 1)."""
    rows = list(rows)
    if rows:
        await conn.executemany(
            f"INSERT INTO messages({_M}, committed) VALUES (%(id)s, %(session_id)s, %(seq)s, %(role)s, %(content)s, "
            "%(name)s, %(tool_calls)s, %(tool_call_id)s, %(metadata)s, %(created_at)s, %(committed)s)", rows)


async def message_rows_by_id(c: Any, ids: Sequence[str]) -> list[tuple]:
    """Message rows of these ids, by seq."""
    if not ids:
        return []
    return await c.fetchall(f"SELECT {_M} FROM messages WHERE id = ANY(%s::text[]) ORDER BY seq", (list(ids),))


async def message_ids(conn: Any, session_id: str) -> list[str]:
    """The session's message ids by seq."""
    return [r[0] for r in await conn.fetchall("SELECT id FROM messages WHERE session_id = %s ORDER BY seq",
                                              (session_id,))]


async def messages_to_align(conn: Any, session_id: str) -> list[tuple]:
    """``(id, role, content, name, tool_calls, tool_call_id, created_at, committed)`` of the session's messages by
    seq (what a replacement is aligned against)."""
    return await conn.fetchall(
        "SELECT id, role, content, name, tool_calls, tool_call_id, created_at, committed FROM messages "
        "WHERE session_id = %s ORDER BY seq", (session_id,))


async def delete_messages(conn: Any, session_id: str) -> int:
    """Delete every message of the session; returns how many."""
    cur = await conn.execute("DELETE FROM messages WHERE session_id = %s", (session_id,))
    return cur.rowcount


async def message_rows(c: Any, session_id: str, *, after_seq: int | None, before_seq: int | None, order: str,
                       limit: int | None) -> list[tuple]:
    """The session's messages with ``after_seq < seq < before_seq`` (None: unbounded), by seq ``order``
    (``asc`` or ``desc``), at most ``limit`` (None: all)."""
    sql, params = f"SELECT {_M} FROM messages WHERE session_id = %s", [session_id]
    if after_seq is not None:
        sql += " AND seq > %s"
        params.append(after_seq)
    if before_seq is not None:
        sql += " AND seq < %s"
        params.append(before_seq)
    sql += " ORDER BY seq DESC" if order == "desc" else " ORDER BY seq ASC"
    if limit is not None:
        sql += " LIMIT %s"
        params.append(_limit(limit))
    return await c.fetchall(sql, params)


async def message_row(c: Any, session_id: str, message_id: str) -> tuple | None:
    """One message of the session, or None."""
    return await c.fetchone(f"SELECT {_M} FROM messages WHERE session_id = %s AND id = %s",
                            (session_id, message_id))


async def message_metadata(conn: Any, session_id: str, message_id: str) -> str | None:
    """The message's metadata (JSON text), or None when the session has no such message."""
    row = await conn.fetchone("SELECT metadata FROM messages WHERE session_id = %s AND id = %s",
                              (session_id, message_id))
    return row[0] if row else None


async def set_message_metadata(conn: Any, session_id: str, message_id: str, metadata_json: str) -> bool:
    """Replace the message's metadata; False when the session has no such message."""
    cur = await conn.execute("UPDATE messages SET metadata = %s WHERE session_id = %s AND id = %s",
                             (metadata_json, session_id, message_id))
    return cur.rowcount > 0


async def delete_message_row(conn: Any, session_id: str, message_id: str) -> tuple | None:
    """Delete one message and return its row, read and deleted in one statement (None: nothing was deleted), so
    of two callers deleting it only one gets it back."""
    return await conn.fetchone(f"DELETE FROM messages WHERE session_id = %s AND id = %s RETURNING {_M}",
                               (session_id, message_id))
