"""Entry operations on SQLite: the ``entries`` rows (memories, turns, summaries, resources, skills) with their
``entry_tags``, ``entry_history`` events and the embedding jobs queued with them, plus the reads the entry API
makes (by id, duplicates by content hash, a resource's chunks by uri, filtered listing and counting).

Entry rows come back in the order of :data:`agentbase.storage.entries.ENTRY_FIELDS` (``rid`` first), which
:func:`~agentbase.storage.entries.row_to_entry` maps to a model; times are DB time text (UTC); ``tags`` and
``metadata`` are JSON text. The keyword text (``fts_text``) is written with the row: the FTS5 index follows it
through triggers. Vectors are not written here (``agentbase/index/vector.py``).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from ..entries import ENTRY_COLUMNS, SESSION_SUMMARY
from ..ids import prefix_successor

# Owner columns an entry read may be narrowed by (never user input: the entry API's keys; checked all the same).
_OWNER_COLUMNS = frozenset({"user_id", "agent_id", "project_id", "session_id"})

_INSERT = (
    "INSERT INTO entries(id, context_type, category, l0_abstract, l1_overview, l2_full, fts_text, tags, "
    "metadata, scope, user_id, agent_id, project_id, session_id, confidence, importance, created_at, "
    "updated_at, event_time, content_hash, fact_key, access_count, last_accessed_at, superseded_by, status, "
    "uri, mime_type, name, description) "
    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
)


def _owners(owners: Mapping[str, Any]) -> None:
    bad = set(owners) - _OWNER_COLUMNS
    if bad:
        raise ValueError(f"unknown owner columns {sorted(bad)}")


# ------------------------------------------------------------------------------------------------ reads
async def row_by_id(c: Any, entry_id: str, owners: Mapping[str, Any] | None = None) -> tuple | None:
    """The entry row with this id, or None; ``owners`` (owner column -> id, None values ignored) narrows it to
    entries of those owners. ``c`` is the Database or a Writer."""
    sql = f"SELECT {ENTRY_COLUMNS} FROM entries WHERE id = ?"
    params: list[Any] = [entry_id]
    if owners:
        _owners(owners)
        for key, value in owners.items():
            if value is not None:
                sql += f" AND {key} = ?"
                params.append(value)
    return await c.fetchone(sql, params)


async def row_by_rid(c: Any, rid: int) -> tuple | None:
    """The entry row at row id ``rid``, or None."""
    return await c.fetchone(f"SELECT {ENTRY_COLUMNS} FROM entries WHERE rid = ?", (rid,))


async def id_exists(c: Any, entry_id: str) -> bool:
    """Whether an entry (of any owner and status) has this id."""
    return await c.fetchone("SELECT 1 FROM entries WHERE id = ?", (entry_id,)) is not None


async def duplicate_row(c: Any, content_hash: str, context_type: str, owners: Mapping[str, Any]) -> tuple | None:
    """An active entry row of this ``context_type`` whose text has ``content_hash`` and whose owners are exactly
    ``owners`` (owner column -> id; None matches only None), or None."""
    _owners(owners)
    sql = f"SELECT {ENTRY_COLUMNS} FROM entries WHERE content_hash = ? AND context_type = ? AND status='active'"
    params: list[Any] = [content_hash, context_type]
    for key, value in owners.items():
        sql += f" AND {key} IS ?"
        params.append(value)
    return await c.fetchone(sql + " LIMIT 1", params)


async def resource_rows(c: Any, uri: str, user_id: str | None, agent_id: str | None, project_id: str | None,
                        session_id: str | None) -> list[tuple]:
    """Entry rows of the resource chunks stored for ``uri`` with exactly these owners (None matches only None),
    by ``metadata["chunk_index"]`` then row id."""
    return await c.fetchall(
        f"SELECT {ENTRY_COLUMNS} FROM entries WHERE context_type = 'resource' AND uri = ? AND user_id IS ? "
        f"AND agent_id IS ? AND project_id IS ? AND session_id IS ? "
        f"ORDER BY json_extract(metadata, '$.chunk_index'), rid",
        (uri, user_id, agent_id, project_id, session_id))


async def rows_where(c: Any, where: tuple[str, Sequence[Any]]) -> list[tuple]:
    """Every entry row passing the filter ``where`` (the ``(sql, params)`` of ``Filters.where("e")``)."""
    sql, params = where
    return await c.fetchall(f"SELECT {ENTRY_COLUMNS} FROM entries e WHERE {sql}", params)


async def list_rows(c: Any, where: tuple[str, Sequence[Any]], *, order: str, limit: int,
                    offset: int) -> list[tuple]:
    """Entry rows passing the filter ``where`` (``Filters.where("e")``) by creation time ``order`` (``asc`` or
    ``desc``; ties by row id the same way), ``limit`` rows after skipping ``offset``."""
    if order not in ("asc", "desc"):
        raise ValueError(f"order must be 'asc' or 'desc', not {order!r}")
    sql, params = where
    return await c.fetchall(
        f"SELECT {ENTRY_COLUMNS} FROM entries e WHERE {sql} ORDER BY e.created_at {order}, e.rid {order} "
        f"LIMIT ? OFFSET ?", [*params, limit, offset])


async def count_where(c: Any, where: tuple[str, Sequence[Any]]) -> int:
    """How many entries pass the filter ``where`` (``Filters.where("e")``)."""
    sql, params = where
    row = await c.fetchone(f"SELECT COUNT(*) FROM entries e WHERE {sql}", params)
    return int(row[0])


async def all_rows(c: Any) -> list[tuple]:
    """Every entry row (any owner and status), in row order."""
    return await c.fetchall(f"SELECT {ENTRY_COLUMNS} FROM entries")


async def superseded_ids(c: Any, entry_id: str) -> list[str]:
    """Ids of the entries that ``entry_id`` superseded (their ``superseded_by`` is it)."""
    return [r[0] for r in await c.fetchall("SELECT id FROM entries WHERE superseded_by = ?", (entry_id,))]


# ------------------------------------------------------------------------------------------------ writes
async def insert_rows(conn: Any, rows: Sequence[tuple], tags: Sequence[tuple[str, str]],
                      added: Sequence[tuple[str, str, str]], embed: Sequence[tuple[str, str]]) -> None:
    """Insert entries and what goes with them, one batched statement each.

    Args:
        conn: the writer of an open transaction.
        rows: one tuple per entry, in the order of :data:`agentbase.storage.entries.INSERT_FIELDS`.
        tags: ``(tag, entry_id)`` pairs for ``entry_tags``.
        added: ``(entry_id, l2_full, created_at)`` of each ADD history event.
        embed: ``(entry_id, due_at)`` of each embedding job to queue (or re-arm).
    """
    await conn.executemany(_INSERT, rows)
    await conn.executemany("INSERT OR IGNORE INTO entry_tags(rid, tag) SELECT rid, ? FROM entries WHERE id = ?",
                           tags)
    await conn.executemany(
        "INSERT INTO entry_history(id, entry_id, event, old_value, new_value, metadata, created_at) "
        "VALUES (?, ?, 'ADD', NULL, ?, '{}', ?)",
        [(str(uuid.uuid4()), entry_id, text, at) for entry_id, text, at in added])
    await conn.executemany(
        "INSERT INTO jobs(kind, target, status, attempts, next_run_at, created_at, updated_at) "
        "VALUES ('embed', ?, 'pending', 0, ?, ?, ?) ON CONFLICT(kind, target) DO UPDATE SET status='pending', "
        "attempts=0, next_run_at=excluded.next_run_at, last_error=NULL, updated_at=excluded.updated_at",
        [(entry_id, at, at, at) for entry_id, at in embed])


async def update_row(conn: Any, rid: int, values: Sequence[Any]) -> None:
    """Write the fields of :data:`agentbase.storage.entries.UPDATE_FIELDS` (``values`` in that order) over row
    ``rid``."""
    await conn.execute(
        "UPDATE entries SET category=?, l0_abstract=?, l1_overview=?, l2_full=?, fts_text=?, tags=?, metadata=?, "
        "scope=?, confidence=?, importance=?, updated_at=?, event_time=?, content_hash=?, superseded_by=?, "
        "status=?, uri=?, mime_type=?, name=?, description=? WHERE rid=?", (*values, rid))


async def write_tags(conn: Any, rid: int, tags: Sequence[str]) -> None:
    """Make ``entry_tags`` of row ``rid`` exactly ``tags``."""
    await conn.execute("DELETE FROM entry_tags WHERE rid = ?", (rid,))
    await conn.executemany("INSERT OR IGNORE INTO entry_tags(rid, tag) VALUES (?, ?)", [(rid, t) for t in tags])


async def set_tags(conn: Any, rid: int, tags: Sequence[str], fts_text: str) -> None:
    """Give row ``rid`` these tags (column and ``entry_tags``) and this keyword text."""
    await conn.execute("UPDATE entries SET tags = ?, fts_text = ? WHERE rid = ?",
                       (json.dumps(list(tags), ensure_ascii=False), fts_text, rid))
    await write_tags(conn, rid, tags)


async def clear_fact_key(conn: Any, rid: int) -> None:
    """Forget row ``rid``'s knowledge-update key (its text no longer states the fact it was extracted as)."""
    await conn.execute("UPDATE entries SET fact_key = NULL WHERE rid = ?", (rid,))


async def repoint_superseded(conn: Any, entry_id: str, superseded_by: str | None, now: str) -> None:
    """Entries superseded by ``entry_id`` are superseded by ``superseded_by`` instead (None: current again)."""
    await conn.execute("UPDATE entries SET superseded_by = ?, updated_at = ? WHERE superseded_by = ?",
                       (superseded_by, now, entry_id))


async def delete_row(conn: Any, rid: int, entry_id: str) -> None:
    """Delete row ``rid`` (id ``entry_id``; its tags and keyword text follow), its session links and its pending
    embedding job. Its vector and graph relations are the caller's to remove."""
    await conn.execute("DELETE FROM entries WHERE rid = ?", (rid,))
    await conn.execute("DELETE FROM session_memory_links WHERE entry_id = ?", (entry_id,))
    await conn.execute("DELETE FROM jobs WHERE kind = 'embed' AND target = ?", (entry_id,))


async def requeue_session_summaries(conn: Any, session_ids: set[str], now: str, skip: set[str] = frozenset()) -> None:
    """Queue an embedding job for the session summaries (``metadata["source"] ==``
    :data:`~agentbase.storage.entries.SESSION_SUMMARY`) of ``session_ids``, except the entry ids in ``skip``: a
    summary's vector can be the mean of its session's turn vectors (``ingest.summary_vector``), which changes when
    a turn is embedded again or deleted."""
    if not session_ids:
        return
    rows = await (await conn.execute(
        f"SELECT id FROM entries WHERE category = 'summary' AND json_extract(metadata, '$.source') = ? "
        f"AND session_id IN ({','.join('?' * len(session_ids))})", [SESSION_SUMMARY, *session_ids])).fetchall()
    for (summary_id,) in rows:
        if summary_id not in skip:
            await conn.ops.jobs.enqueue(conn, "embed", summary_id, now)


# ------------------------------------------------------------------------------------------------ history
async def record_history(conn: Any, entry_id: str, event: str, old: str | None, new: str | None, now: str,
                         metadata: dict[str, Any] | None = None) -> None:
    """Append one ``ADD`` / ``UPDATE`` / ``DELETE`` event (old and new text, ``metadata`` a JSON object, ``now``
    DB time text) to the entry's history; events outlive the entry."""
    await conn.execute(
        "INSERT INTO entry_history(id, entry_id, event, old_value, new_value, metadata, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        (str(uuid.uuid4()), entry_id, event, old, new, json.dumps(metadata or {}), now),
    )


async def history_rows(c: Any, entry_id: str) -> list[tuple]:
    """``(id, entry_id, event, old_value, new_value, metadata, created_at)`` of the entry's events, oldest first
    (the order they were recorded)."""
    return await c.fetchall(
        "SELECT id, entry_id, event, old_value, new_value, metadata, created_at FROM entry_history "
        "WHERE entry_id = ? ORDER BY seq", (entry_id,))


# ------------------------------------------------------------------------------------------------ id prefixes
async def ids_with_prefix(c: Any, prefix: str, limit: int) -> list[str]:
    """Entry ids starting with ``prefix`` (any owner and status), smallest first in code point order, at most
    ``limit``. ``prefix <= id < successor(prefix)`` on the unique ``id`` index (BINARY collation), so it costs the
    same at any size; ``prefix`` is a bound parameter, LIKE wildcards in it are plain characters."""
    return await _ids_with_prefix(c, "entries", prefix, limit)


async def _ids_with_prefix(c: Any, table: str, prefix: str, limit: int) -> list[str]:
    """``ids_with_prefix`` over ``table`` (``entries`` or ``retrieval_traces``, never user input)."""
    upper = prefix_successor(prefix)
    if upper is None:  # the prefix is all U+10FFFF: every id from it on starts with it
        rows = await c.fetchall(f"SELECT id FROM {table} WHERE id >= ? ORDER BY id LIMIT ?", (prefix, limit))
    else:
        rows = await c.fetchall(f"SELECT id FROM {table} WHERE id >= ? AND id < ? ORDER BY id LIMIT ?",
                                (prefix, upper, limit))
    return [r[0] for r in rows]
