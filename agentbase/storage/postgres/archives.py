"""Archive operations on PostgreSQL: a consistent snapshot of every exported table, and the inserts an import makes.

The same functions, arguments and row shapes as :mod:`agentbase.storage.sqlite.archives`: the snapshot's keys are
the archive's member names and its rows dicts of column name to stored value (times as DB time text, JSON columns
as JSON text), so an archive written from either engine imports into either.

What differs from the SQLite engine, and why:

- :func:`snapshot` reads every table in one ``REPEATABLE READ READ ONLY`` transaction of a private connection
  (one MVCC snapshot: https://www.postgresql.org/docs/current/transaction-iso.html), as SQLite's read transaction
  does; writers on other hosts go on meanwhile.
- PostgreSQL has no ``rowid``: sessions, entities and relations export in ``created_at``, then id order (byte
  order, ``COLLATE "C"``), where SQLite writes insertion order. The rows are the same; only the line order of
  those three members can differ between engines (import does not depend on it). Other members are ordered by
  the same keys as on SQLite, compared in byte order.
- ``entries`` also has ``fts`` and ``doc_len`` (the keyword index's tsvector and token count): never exported,
  left out of :func:`entry_table_columns` (so callers see SQLite's column list), rebuilt on import from the keyword text (:func:`~.bm25.keyword_document`), with the keyword
  statistics moved on (:func:`~.bm25.adjust_stats`), as SQLite's FTS5 triggers do.
- ``INSERT OR IGNORE`` is ``ON CONFLICT DO NOTHING``: it skips rows whose key exists, but a value of the wrong
  type or one a CHECK refuses fails the import (SQLite's ``OR IGNORE`` skips those rows silently).
- Entity inserts take the graph's advisory lock first (:data:`~.graph.GRAPH_LOCK`), so an import and a writer on
  another host cannot both create one name.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...errors import StorageError
from .bm25 import LEXEMES, adjust_stats, keyword_document, note_terms
from .connection import redact_url
from .graph import _graph_lock

#: Columns that exist only to serve the database (rebuilt on import, never exported); the same as SQLite's.
DERIVED_ENTRY_COLUMNS = ("rid", "fts_text")
#: This engine's keyword-index columns of entries (SQLite keeps its index in FTS5 tables): never exported, not
#: listed by :func:`entry_table_columns`, computed on import.
_INDEX_COLUMNS = ("fts", "doc_len")

_C = 'COLLATE "C"'
# member -> the query that exports it in a stable order
_EXPORTS: dict[str, str] = {
    # every stored column of entries (read from the schema at export time) plus whether it has a vector, or one
    # queued (0/1, as SQLite returns it)
    "entries.jsonl": "SELECT {columns}, (EXISTS (SELECT 1 FROM embeddings m WHERE m.rid = e.rid) OR EXISTS "
                     "(SELECT 1 FROM jobs j WHERE j.kind = 'embed' AND j.target = e.id AND j.status != 'done'))"
                     "::int AS embedded FROM entries e ORDER BY e.rid",
    "history.jsonl": "SELECT id, entry_id, event, old_value, new_value, metadata, created_at FROM entry_history "
                     "ORDER BY seq",
    "sessions.jsonl": "SELECT id, user_id, agent_id, project_id, status, metadata, created_at, updated_at, "
                      f"committed_seq, enriched_seq FROM sessions ORDER BY created_at {_C}, id {_C}",
    "messages.jsonl": "SELECT id, session_id, seq, role, content, name, tool_calls, tool_call_id, metadata, "
                      f"created_at FROM messages ORDER BY session_id {_C}, seq",
    "links.jsonl": "SELECT session_id, entry_id, kind, message_seq FROM session_memory_links "
                   f"ORDER BY session_id {_C}, entry_id {_C}",
    "entities.jsonl": "SELECT id, name, norm_name, type, aliases, created_at FROM entities "
                      f"ORDER BY created_at {_C}, id {_C}",
    "entity_aliases.jsonl": f"SELECT norm_alias, entity_id FROM entity_aliases ORDER BY norm_alias {_C}",
    "relations.jsonl": "SELECT id, subject_id, predicate, object_id, valid_from, valid_to, source_entry_id, "
                       f"confidence, created_at FROM relations ORDER BY created_at {_C}, id {_C}",
    "skill_files.jsonl": "SELECT skill_id, path, content, size_bytes, sha256 FROM skill_files "
                         f"ORDER BY skill_id {_C}, path {_C}",
}
#: The members a snapshot returns, in archive order.
EXPORTED_MEMBERS = tuple(_EXPORTS)

_ENTRY_COLUMNS_SQL = ("SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
                      "AND table_name = 'entries' ORDER BY ordinal_position")


def snapshot(path: Path | str, driver: str, busy_timeout_s: float) -> dict[str, list[dict[str, Any]]]:
    """Read every exported table in one read-only repeatable-read transaction of a private connection (a
    consistent snapshot; blocking, run it in a thread). ``entries.jsonl`` rows carry ``embedded`` (0/1).

    Args:
        path: the database's ``postgresql://`` URL (the SQLite engine's file path).
        driver: unused (the SQLite engine picks its driver with it).
        busy_timeout_s: seconds to wait for the connection and for a lock (``connect_timeout``,
            ``lock_timeout``); the reads themselves have no time limit.

    Returns:
        member name -> rows (dicts of column name to stored value), for every member of :data:`EXPORTED_MEMBERS`.

    Raises:
        StorageError: the server cannot be reached or a read failed (the SQLite engine lets its driver's errors
            through for the caller to report; the caller's ``DRIVER_ERRORS`` are SQLite's, so this engine reports
            them itself).
    """
    import psycopg

    del driver
    timeout = max(1, int(busy_timeout_s))
    try:
        with psycopg.connect(str(path), connect_timeout=timeout) as conn:
            conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
            conn.read_only = True
            with conn.transaction():
                conn.execute("SET LOCAL lock_timeout = %s" % max(1, int(busy_timeout_s * 1000)))
                columns = [r[0] for r in conn.execute(_ENTRY_COLUMNS_SQL).fetchall()
                           if r[0] not in DERIVED_ENTRY_COLUMNS + _INDEX_COLUMNS]
                out: dict[str, list[dict[str, Any]]] = {}
                for member, sql in _EXPORTS.items():
                    cur = conn.execute(sql.format(columns=", ".join(f'e."{c}"' for c in columns)))
                    names = [d.name for d in cur.description]
                    out[member] = [dict(zip(names, row)) for row in cur.fetchall()]
    except psycopg.Error as exc:  # the caller's DRIVER_ERRORS are SQLite's: report it here, without the password
        raise StorageError(f"export failed reading {redact_url(str(path))}: {exc}") from exc
    return out


async def schema_version(c: Any) -> int | None:
    """The database's schema version."""
    row = await c.fetchone("SELECT MAX(version) FROM schema_version")
    return row[0] if row else None


# ---------------------------------------------------------------------------------------------------- import
async def entry_table_columns(conn: Any) -> list[str]:
    """The columns of the entries table, in schema order: derived ones included (as SQLite's ``table_info``),
    this engine's keyword-index columns (``fts``, ``doc_len``) left out, so the list is the SQLite one."""
    return [r[0] for r in await conn.fetchall(_ENTRY_COLUMNS_SQL) if r[0] not in _INDEX_COLUMNS]


async def insert_entry_columns(conn: Any, values: dict[str, Any], fts_text: str, tags: Sequence[str]) -> None:
    """Insert an archived entry as stored (column name -> value, derived columns left out; the names come from
    :func:`entry_table_columns`) with its keyword text, keyword index and tags.

    Raises:
        StorageError: the id exists, or a value does not fit its column's type.
    """
    cols = [c for c in values if c not in DERIVED_ENTRY_COLUMNS + _INDEX_COLUMNS]
    vector, length = keyword_document(fts_text)
    names = ", ".join(f'"{c}"' for c in cols)
    marks = ", ".join(["%s"] * len(cols))
    row = await conn.fetchone(
        f"INSERT INTO entries({names}{', ' if cols else ''}fts_text, fts, doc_len) "
        f"VALUES ({marks}{', ' if cols else ''}%s, %s::tsvector, %s) RETURNING rid, {LEXEMES}",
        [*(values[c] for c in cols), fts_text, vector, length])
    await adjust_stats(conn, 1, length)
    note_terms(conn, added=[row[1]])
    if tags:
        await conn.executemany("INSERT INTO entry_tags(rid, tag) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                               [(row[0], tag) for tag in tags])


_HISTORY_DEFAULTS = {"old_value": None, "new_value": None, "metadata": "{}"}


async def insert_history_events(conn: Any, events: Sequence[dict[str, Any]]) -> None:
    """Insert history events (``id``, ``entry_id``, ``event``, ``created_at``; ``old_value``, ``new_value``,
    ``metadata`` optional), keeping any already stored (same ``id``)."""
    if events:
        await conn.executemany(
            "INSERT INTO entry_history(id, entry_id, event, old_value, new_value, metadata, created_at) "
            "VALUES (%(id)s, %(entry_id)s, %(event)s, %(old_value)s, %(new_value)s, %(metadata)s, %(created_at)s) "
            "ON CONFLICT DO NOTHING", [{**_HISTORY_DEFAULTS, **e} for e in events])


async def insert_session(conn: Any, row: dict[str, Any]) -> None:
    """Insert an archived session row (every sessions column as a key; other keys are ignored)."""
    await conn.execute(
        "INSERT INTO sessions(id, user_id, agent_id, project_id, status, metadata, created_at, updated_at, "
        "committed_seq, enriched_seq) VALUES (%(id)s, %(user_id)s, %(agent_id)s, %(project_id)s, %(status)s, "
        "%(metadata)s, %(created_at)s, %(updated_at)s, %(committed_seq)s, %(enriched_seq)s)", row)


async def insert_messages(conn: Any, rows: Sequence[dict[str, Any]]) -> None:
    """Insert archived messages (every messages column but ``committed`` as a key)."""
    if rows:
        await conn.executemany(
            "INSERT INTO messages(id, session_id, seq, role, content, name, tool_calls, tool_call_id, metadata, "
            "created_at) VALUES (%(id)s, %(session_id)s, %(seq)s, %(role)s, %(content)s, %(name)s, %(tool_calls)s, "
            "%(tool_call_id)s, %(metadata)s, %(created_at)s)", list(rows))


async def insert_links(conn: Any, rows: Sequence[dict[str, Any]]) -> None:
    """Insert session-memory links (``session_id``, ``entry_id``, ``kind``, ``message_seq``), keeping existing ones."""
    if rows:
        await conn.executemany(
            "INSERT INTO session_memory_links(session_id, entry_id, kind, message_seq) "
            "VALUES (%(session_id)s, %(entry_id)s, %(kind)s, %(message_seq)s) ON CONFLICT DO NOTHING", list(rows))


async def entity_collides(conn: Any, entity_id: str, norm_name: str) -> bool:
    """Whether a local entity has this id or this normalised name (under the graph lock in a write transaction:
    the caller inserts the entity when there is none)."""
    await _graph_lock(conn)
    return await conn.fetchone("SELECT 1 FROM entities WHERE id = %s OR norm_name = %s",
                               (entity_id, norm_name)) is not None


async def insert_entity_row(conn: Any, entity_id: str, name: str, norm_name: str, type: str | None,
                            aliases_json: str, created_at: str) -> None:
    """Insert an archived entity as stored (under the graph lock)."""
    await _graph_lock(conn)
    await conn.execute("INSERT INTO entities(id, name, norm_name, type, aliases, created_at) "
                       "VALUES (%s, %s, %s, %s, %s, %s)", (entity_id, name, norm_name, type, aliases_json, created_at))


async def set_entity_alias_list(conn: Any, entity_id: str, aliases_json: str) -> None:
    """Replace the entity's alias list (JSON text)."""
    await conn.execute("UPDATE entities SET aliases = %s WHERE id = %s", (aliases_json, entity_id))


async def index_aliases(conn: Any, entity_id: str, norm_aliases: Sequence[str]) -> None:
    """Index these normalised aliases for the entity, keeping aliases already indexed."""
    if norm_aliases:
        await conn.executemany("INSERT INTO entity_aliases(norm_alias, entity_id) VALUES (%s, %s) "
                               "ON CONFLICT DO NOTHING", [(k, entity_id) for k in norm_aliases])


async def relation_end(conn: Any, relation_id: str) -> tuple[bool, str | None]:
    """``(exists, valid_to)`` of the relation with this id."""
    row = await conn.fetchone("SELECT valid_to FROM relations WHERE id = %s", (relation_id,))
    return (row is not None, row[0] if row else None)


async def set_relation_end(conn: Any, relation_id: str, valid_to: str) -> None:
    """End the relation at ``valid_to``."""
    await conn.execute("UPDATE relations SET valid_to = %s WHERE id = %s", (valid_to, relation_id))


async def upsert_skill_files(conn: Any, rows: Sequence[tuple]) -> None:
    """Store ``(skill_id, path, content, size_bytes, sha256)`` rows, replacing a file at the same path."""
    if rows:
        await conn.executemany(
            "INSERT INTO skill_files(skill_id, path, content, size_bytes, sha256) VALUES (%s, %s, %s, %s, %s) "
            "ON CONFLICT (skill_id, path) DO UPDATE SET content = EXCLUDED.content, size_bytes = "
            "EXCLUDED.size_bytes, sha256 = EXCLUDED.sha256", list(rows))
