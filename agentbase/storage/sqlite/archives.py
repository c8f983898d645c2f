"""Archive operations on SQLite: a consistent snapshot of every exported table, and the inserts an import makes.

The snapshot's keys are the archive's member names (``entries.jsonl``, ...; see :mod:`agentbase.archive`) and its
rows are dicts of column name to stored value (times as DB time text, JSON columns as JSON text).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .lifecycle import _connect_fn

#: Columns that exist only to serve the file (rebuilt on import, never exported).
DERIVED_ENTRY_COLUMNS = ("rid", "fts_text")

# member -> the query that exports it in a stable order
_EXPORTS: dict[str, str] = {
    # every stored column of entries (read from the schema at export time) plus whether it has a vector, or one
    # queued: an export taken before the embedding queue drained still gives the importer a job for it
    "entries.jsonl": "SELECT {columns}, (EXISTS (SELECT 1 FROM embeddings m WHERE m.rid = e.rid) OR EXISTS "
                     "(SELECT 1 FROM jobs j WHERE j.kind = 'embed' AND j.target = e.id AND j.status != 'done')) "
                     "AS embedded FROM entries e ORDER BY e.rid",
    "history.jsonl": "SELECT id, entry_id, event, old_value, new_value, metadata, created_at FROM entry_history "
                     "ORDER BY seq",
    "sessions.jsonl": "SELECT id, user_id, agent_id, project_id, status, metadata, created_at, updated_at, "
                      "committed_seq, enriched_seq FROM sessions ORDER BY rowid",
    "messages.jsonl": "SELECT id, session_id, seq, role, content, name, tool_calls, tool_call_id, metadata, "
                      "created_at FROM messages ORDER BY session_id, seq",
    "links.jsonl": "SELECT session_id, entry_id, kind, message_seq FROM session_memory_links "
                   "ORDER BY session_id, entry_id",
    "entities.jsonl": "SELECT id, name, norm_name, type, aliases, created_at FROM entities ORDER BY rowid",
    "entity_aliases.jsonl": "SELECT norm_alias, entity_id FROM entity_aliases ORDER BY norm_alias",
    "relations.jsonl": "SELECT id, subject_id, predicate, object_id, valid_from, valid_to, source_entry_id, "
                       "confidence, created_at FROM relations ORDER BY rowid",
    "skill_files.jsonl": "SELECT skill_id, path, content, size_bytes, sha256 FROM skill_files ORDER BY skill_id, path",
}
#: The members a snapshot returns, in archive order.
EXPORTED_MEMBERS = tuple(_EXPORTS)


def snapshot(path: Path | str, driver: str, busy_timeout_s: float) -> dict[str, list[dict[str, Any]]]:
    """Read every exported table in one read transaction of a private connection (a consistent snapshot; blocking,
    run it in a thread). ``entries.jsonl`` rows carry ``embedded`` (0/1).

    Raises:
        the driver's errors (the caller reports them as StorageError).
    """
    conn = _connect_fn(driver)(str(path), timeout=busy_timeout_s, isolation_level=None)
    try:
        conn.execute("BEGIN")
        out: dict[str, list[dict[str, Any]]] = {}
        columns = [r[1] for r in conn.execute("PRAGMA table_info(entries)") if r[1] not in DERIVED_ENTRY_COLUMNS]
        for member, sql in _EXPORTS.items():
            cur = conn.execute(sql.format(columns=", ".join(f"e.{c}" for c in columns)))
            names = [d[0] for d in cur.description]
            out[member] = [dict(zip(names, row)) for row in cur.fetchall()]
        conn.execute("COMMIT")
        return out
    finally:
        conn.close()


async def schema_version(c: Any) -> int | None:
    """The file's schema version."""
    row = await c.fetchone("SELECT MAX(version) FROM schema_version")
    return row[0] if row else None


# ---------------------------------------------------------------------------------------------------- import
async def entry_table_columns(conn: Any) -> list[str]:
    """The columns of the entries table, in schema order."""
    return [r[1] for r in await conn.fetchall("PRAGMA table_info(entries)")]



async def insert_entry_columns(conn: Any, values: dict[str, Any], fts_text: str, tags: Sequence[str]) -> None:
    """Insert an archived entry as stored (column name -> value, derived columns left out) with its keyword
    text and tags."""
    cols = list(values)
    cur = await conn.execute(
        f"INSERT INTO entries({', '.join(cols)}, fts_text) VALUES ({', '.join('?' * (len(cols) + 1))})",
        [*values.values(), fts_text])
    await conn.executemany("INSERT OR IGNORE INTO entry_tags(rid, tag) VALUES (?, ?)",
                           [(cur.lastrowid, tag) for tag in tags])


async def insert_history_events(conn: Any, events: Sequence[dict[str, Any]]) -> None:
    """Insert history events (``id``, ``entry_id``, ``event``, ``created_at``; ``old_value``, ``new_value``,
    ``metadata`` optional), keeping any already stored."""
    await conn.executemany(
        "INSERT OR IGNORE INTO entry_history(id, entry_id, event, old_value, new_value, metadata, created_at) "
        "VALUES (:id, :entry_id, :event, :old_value, :new_value, :metadata, :created_at)",
        [{"old_value": None, "new_value": None, "metadata": "{}", **e} for e in events])


async def insert_session(conn: Any, row: dict[str, Any]) -> None:
    """Insert an archived session row (every sessions column as a key)."""
    await conn.execute(
        "INSERT INTO sessions(id, user_id, agent_id, project_id, status, metadata, created_at, updated_at, "
        "committed_seq, enriched_seq) VALUES (:id, :user_id, :agent_id, :project_id, :status, :metadata, "
        ":created_at, :updated_at, :committed_seq, :enriched_seq)", row)


async def insert_messages(conn: Any, rows: Sequence[dict[str, Any]]) -> None:
    """Insert archived messages (every messages column but ``committed`` as a key)."""
    await conn.executemany(
        "INSERT INTO messages(id, session_id, seq, role, content, name, tool_calls, tool_call_id, metadata, "
        "created_at) VALUES (:id, :session_id, :seq, :role, :content, :name, :tool_calls, :tool_call_id, "
        ":metadata, :created_at)", list(rows))


async def insert_links(conn: Any, rows: Sequence[dict[str, Any]]) -> None:
    """Insert session-memory links (``session_id``, ``entry_id``, ``kind``, ``message_seq``), keeping existing ones."""
    await conn.executemany(
        "INSERT OR IGNORE INTO session_memory_links(session_id, entry_id, kind, message_seq) "
        "VALUES (:session_id, :entry_id, :kind, :message_seq)", list(rows))


async def entity_collides(conn: Any, entity_id: str, norm_name: str) -> bool:
    """Whether a local entity has this id or this normalised name."""
    return await conn.fetchone("SELECT 1 FROM entities WHERE id = ? OR norm_name = ?",
                               (entity_id, norm_name)) is not None


async def insert_entity_row(conn: Any, entity_id: str, name: str, norm_name: str, type: str | None,
                            aliases_json: str, created_at: str) -> None:
    """Insert an archived entity as stored."""
    await conn.execute("INSERT INTO entities(id, name, norm_name, type, aliases, created_at) "
                       "VALUES (?, ?, ?, ?, ?, ?)", (entity_id, name, norm_name, type, aliases_json, created_at))


async def set_entity_alias_list(conn: Any, entity_id: str, aliases_json: str) -> None:
    """Replace the entity's alias list (JSON text)."""
    await conn.execute("UPDATE entities SET aliases = ? WHERE id = ?", (aliases_json, entity_id))


async def index_aliases(conn: Any, entity_id: str, norm_aliases: Sequence[str]) -> None:
    """Index these normalised aliases for the entity, keeping aliases already indexed."""
    await conn.executemany("INSERT OR IGNORE INTO entity_aliases(norm_alias, entity_id) VALUES (?, ?)",
                           [(k, entity_id) for k in norm_aliases])


async def relation_end(conn: Any, relation_id: str) -> tuple[bool, str | None]:
    """``(exists, valid_to)`` of the relation with this id."""
    row = await conn.fetchone("SELECT valid_to FROM relations WHERE id = ?", (relation_id,))
    return (row is not None, row[0] if row else None)


async def set_relation_end(conn: Any, relation_id: str, valid_to: str) -> None:
    """End the relation at ``valid_to``."""
    await conn.execute("UPDATE relations SET valid_to = ? WHERE id = ?", (valid_to, relation_id))


async def upsert_skill_files(conn: Any, rows: Sequence[tuple]) -> None:
    """Store ``(skill_id, path, content, size_bytes, sha256)`` rows, replacing a file at the same path."""
    await conn.executemany(
        "INSERT INTO skill_files(skill_id, path, content, size_bytes, sha256) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT(skill_id, path) DO UPDATE SET content = excluded.content, size_bytes = "
        "excluded.size_bytes, sha256 = excluded.sha256", list(rows))
