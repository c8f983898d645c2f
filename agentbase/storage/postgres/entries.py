"""Entry operations on PostgreSQL: the ``entries`` rows (memories, turns, summaries, resources, skills) with their
``entry_tags``, ``entry_history`` events and the embedding jobs queued with them, plus the reads the entry API
makes (by id, duplicates by content hash, a resource's chunks by uri, filtered listing and counting). Same
functions, arguments and row shapes as ``storage/sqlite/entries.py``.

Entry rows come back in the order of :data:`agentbase.storage.entries.ENTRY_FIELDS` (``rid`` first); times are DB
time text (UTC); ``tags`` and ``metadata`` are JSON text.

What differs from SQLite, and why:

- The keyword index is kept here, not by triggers: every write of ``fts_text`` also writes ``fts`` (the
  ``tsvector`` of the tokens SQLite's FTS5 makes of that text) and ``doc_len`` (their count), computed in Python
  by :func:`.bm25.keyword_document`, and moves ``keyword_stats`` by the change (insert: +1 entry and +doc_len
  tokens; delete: -1 and -doc_len; a keyword-text change: the new minus the old doc_len, the old one read by the
  same ``UPDATE ... RETURNING old.doc_len``, PostgreSQL 18,
  https://www.postgresql.org/docs/18/dml-returning.html), in the caller's transaction, always after the entry
  write (so :func:`.meta.rebuild_keyword_index`'s table lock cannot deadlock with a writer). BM25 needs those
  totals (:mod:`.bm25`).
- Lists of ids bind as one ``text[]`` parameter (``= ANY(%s::text[])``); owner equality that matches None to None
  is ``IS NOT DISTINCT FROM`` (SQLite's ``IS``).
- ``resource_rows`` orders by ``(metadata::jsonb -> 'chunk_index')`` with missing/JSON-null first, as SQLite's
  ``json_extract`` sorts NULL first; numbers compare as numbers. Metadata text holding the escape ``\\u0000``
  (which jsonb rejects) is not cast, and sorts as a missing index (``requeue_session_summaries`` skips it), so one
  such row cannot fail the query.
- ``all_rows``, ``superseded_ids`` and the summaries ``requeue_session_summaries`` visits are ordered by ``rid``
  explicitly (SQLite returns them in rowid order without being asked).
- A negative ``limit`` means no limit and a negative ``offset`` zero, as SQLite reads them (:mod:`.sqlutil`).
- ``insert_rows`` writes the entries in batches of multi-row ``INSERT`` statements (under PostgreSQL's 65535 bound
  parameters), the tags of a batch with one ``INSERT ... SELECT`` over ``unnest`` joined on the entry id, and
  skips duplicate tags with ``ON CONFLICT DO NOTHING`` (SQLite's ``INSERT OR IGNORE``).
- Several writers at once: every statement here is a single row-locking write, and ``keyword_stats`` is sharded
  by backend (:mod:`.schema`), so concurrent inserts neither wait on one counter nor lose an update.
- PostgreSQL's ``text`` cannot hold the character U+0000: an entry whose text, tags or ids hold one fails with
  StorageError and nothing is written (SQLite stores it); the entry API's validation is the place to refuse it.
- PostgreSQL's ``jobs`` group has no ``enqueue`` yet, so ``requeue_session_summaries`` re-arms embedding jobs with
  the same ``INSERT ... ON CONFLICT (kind, target) DO UPDATE`` statement as SQLite's ``jobs.enqueue``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from ..entries import ENTRY_COLUMNS, INSERT_FIELDS, SESSION_SUMMARY
from .bm25 import LEXEMES, adjust_stats, keyword_document, note_terms
from .sqlutil import in_transaction, lock_key
from .sqlutil import limit as _limit
from .sqlutil import offset as _offset

__all__ = ["all_rows", "clear_fact_key", "count_where", "delete_row", "duplicate_row", "history_rows", "id_exists",
           "insert_rows", "list_rows", "record_history", "repoint_superseded", "requeue_session_summaries",
           "resource_rows", "row_by_id", "row_by_rid", "rows_where", "set_tags", "superseded_ids", "update_row",
           "write_tags"]

# Owner columns an entry read may be narrowed by (never user input: the entry API's keys; checked all the same).
_OWNER_COLUMNS = frozenset({"user_id", "agent_id", "project_id", "session_id"})
_NUL_ESCAPE = "\\u0000"  # the JSON escape of U+0000, which jsonb rejects
_JSON = f"(CASE WHEN strpos(metadata, '{_NUL_ESCAPE}') = 0 THEN metadata::jsonb END)"  # metadata as jsonb or NULL
_FTS_AT = INSERT_FIELDS.index("fts_text")
_INSERT_COLUMNS = ", ".join((*INSERT_FIELDS, "fts", "doc_len"))
_ROW_VALUES = "(" + ", ".join(["%s"] * len(INSERT_FIELDS) + ["%s::tsvector", "%s"]) + ")"
_BATCH = 1000  # entries per INSERT: 1000 * 31 parameters stays under PostgreSQL's 65535
_EMBED_JOB = (
    "INSERT INTO jobs(kind, target, status, attempts, next_run_at, created_at, updated_at) "
    "VALUES ('embed', %s, 'pending', 0, %s, %s, %s) ON CONFLICT (kind, target) DO UPDATE SET status = 'pending', "
    "attempts = 0, next_run_at = excluded.next_run_at, last_error = NULL, updated_at = excluded.updated_at")


def _owners(owners: Mapping[str, Any]) -> None:
    bad = set(owners) - _OWNER_COLUMNS
    if bad:
        raise ValueError(f"unknown owner columns {sorted(bad)}")


# ------------------------------------------------------------------------------------------------ reads
async def row_by_id(c: Any, entry_id: str, owners: Mapping[str, Any] | None = None) -> tuple | None:
    """The entry row with this id, or None; ``owners`` (owner column -> id, None values ignored) narrows it to
    entries of those owners. ``c`` is the PgDatabase or a PgWriter. Raises ValueError on an unknown owner column."""
    sql = f"SELECT {ENTRY_COLUMNS} FROM entries WHERE id = %s"
    params: list[Any] = [entry_id]
    if owners:
        _owners(owners)
        for key, value in owners.items():
            if value is not None:
                sql += f" AND {key} = %s"
                params.append(value)
    # in a write transaction the row is locked until COMMIT: an update and a delete of one entry on two hosts
    # run one after the other, and the second sees what the first did (a deleted row is then None)
    return await c.fetchone(sql + (" FOR UPDATE" if in_transaction(c) else ""), params)


async def row_by_rid(c: Any, rid: int) -> tuple | None:
    """The entry row at row id ``rid``, or None."""
    return await c.fetchone(f"SELECT {ENTRY_COLUMNS} FROM entries WHERE rid = %s"
                            + (" FOR UPDATE" if in_transaction(c) else ""), (rid,))


async def id_exists(c: Any, entry_id: str) -> bool:
    """Whether an entry (of any owner and status) has this id. In a write transaction the id's advisory lock is
    held until COMMIT, so two hosts adding one new id do it one after the other and the second sees it taken."""
    await lock_key(c, "agentbase.entry-id:" + entry_id)
    return await c.fetchone("SELECT 1 FROM entries WHERE id = %s", (entry_id,)) is not None


async def duplicate_row(c: Any, content_hash: str, context_type: str, owners: Mapping[str, Any]) -> tuple | None:
    """An active entry row of this ``context_type`` whose text has ``content_hash`` and whose owners are exactly
    ``owners`` (owner column -> id; None matches only None), or None (the first by row id). Raises ValueError on an
    unknown owner column."""
    _owners(owners)
    # the same text of the same owners added on two hosts at once: the second waits, then finds the first's row
    await lock_key(c, json.dumps(["agentbase.entry-text", content_hash, context_type, sorted(owners.items())],
                                 ensure_ascii=False, default=str))
    sql = (f"SELECT {ENTRY_COLUMNS} FROM entries WHERE content_hash = %s AND context_type = %s "
           f"AND status = 'active'")
    params: list[Any] = [content_hash, context_type]
    for key, value in owners.items():
        sql += f" AND {key} IS NOT DISTINCT FROM %s"
        params.append(value)
    return await c.fetchone(sql + " ORDER BY rid LIMIT 1", params)


async def resource_rows(c: Any, uri: str, user_id: str | None, agent_id: str | None, project_id: str | None,
                        session_id: str | None) -> list[tuple]:
    """Entry rows of the resource chunks stored for ``uri`` with exactly these owners (None matches only None),
    by ``metadata["chunk_index"]`` (missing first) then row id."""
    return await c.fetchall(
        f"SELECT {ENTRY_COLUMNS} FROM entries WHERE context_type = 'resource' AND uri = %s "
        f"AND user_id IS NOT DISTINCT FROM %s AND agent_id IS NOT DISTINCT FROM %s "
        f"AND project_id IS NOT DISTINCT FROM %s AND session_id IS NOT DISTINCT FROM %s "
        f"ORDER BY NULLIF({_JSON} -> 'chunk_index', 'null'::jsonb) ASC NULLS FIRST, rid",
        (uri, user_id, agent_id, project_id, session_id))


async def rows_where(c: Any, where: tuple[str, Sequence[Any]]) -> list[tuple]:
    """Every entry row passing the filter ``where`` (the ``(sql, params)`` of ``Filters.where("e", db.ops)``), by
    row id."""
    sql, params = where
    return await c.fetchall(f"SELECT {ENTRY_COLUMNS} FROM entries e WHERE {sql} ORDER BY e.rid", list(params))


async def list_rows(c: Any, where: tuple[str, Sequence[Any]], *, order: str, limit: int,
                    offset: int) -> list[tuple]:
    """Entry rows passing the filter ``where`` (``Filters.where("e", db.ops)``) by creation time ``order``
    (``asc`` or ``desc``; ties by row id the same way), ``limit`` rows (negative: all) after skipping ``offset``.
    Raises ValueError on another ``order``."""
    if order not in ("asc", "desc"):
        raise ValueError(f"order must be 'asc' or 'desc', not {order!r}")
    sql, params = where
    return await c.fetchall(
        f"SELECT {ENTRY_COLUMNS} FROM entries e WHERE {sql} ORDER BY e.created_at {order}, e.rid {order} "
        f"LIMIT %s OFFSET %s", [*params, _limit(limit), _offset(offset)])


async def count_where(c: Any, where: tuple[str, Sequence[Any]]) -> int:
    """How many entries pass the filter ``where`` (``Filters.where("e", db.ops)``)."""
    sql, params = where
    row = await c.fetchone(f"SELECT COUNT(*) FROM entries e WHERE {sql}", list(params))
    return int(row[0])


async def all_rows(c: Any) -> list[tuple]:
    """Every entry row (any owner and status), in row order."""
    return await c.fetchall(f"SELECT {ENTRY_COLUMNS} FROM entries ORDER BY rid")


async def superseded_ids(c: Any, entry_id: str) -> list[str]:
    """Ids of the entries that ``entry_id`` superseded (their ``superseded_by`` is it), by row id."""
    return [r[0] for r in await c.fetchall("SELECT id FROM entries WHERE superseded_by = %s ORDER BY rid",
                                           (entry_id,))]


# ------------------------------------------------------------------------------------------------ writes
async def insert_rows(conn: Any, rows: Sequence[tuple], tags: Sequence[tuple[str, str]],
                      added: Sequence[tuple[str, str, str]], embed: Sequence[tuple[str, str]]) -> None:
    """Insert entries and what goes with them, with their keyword vectors and the ``keyword_stats`` change.

    Args:
        conn: the writer of an open transaction.
        rows: one tuple per entry, in the order of :data:`agentbase.storage.entries.INSERT_FIELDS`.
        tags: ``(tag, entry_id)`` pairs for ``entry_tags`` (an id no entry has adds nothing; a repeated pair once).
        added: ``(entry_id, l2_full, created_at)`` of each ADD history event.
        embed: ``(entry_id, due_at)`` of each embedding job to queue (or re-arm).

    Raises:
        StorageError (at the statement or COMMIT): an id already taken; the transaction rolls back.
    """
    rows = list(rows)
    docs = 0
    tokens = 0
    for start in range(0, len(rows), _BATCH):
        batch = rows[start:start + _BATCH]
        params: list[Any] = []
        for row in batch:
            vector, length = keyword_document(row[_FTS_AT])
            params += [*row, vector, length]
            tokens += length
        docs += len(batch)
        inserted = await conn.fetchall(f"INSERT INTO entries({_INSERT_COLUMNS}) VALUES "
                                       f"{', '.join([_ROW_VALUES] * len(batch))} RETURNING {LEXEMES}", params)
        note_terms(conn, added=[r[0] for r in inserted])
    if tags:
        await conn.execute(
            "INSERT INTO entry_tags(rid, tag) SELECT e.rid, t.tag FROM unnest(%s::text[], %s::text[]) AS t(tag, id) "
            "JOIN entries e ON e.id = t.id ON CONFLICT DO NOTHING",
            ([t for t, _ in tags], [i for _, i in tags]))
    if added:
        await conn.executemany(
            "INSERT INTO entry_history(id, entry_id, event, old_value, new_value, metadata, created_at) "
            "VALUES (%s, %s, 'ADD', NULL, %s, '{}', %s)",
            [(str(uuid.uuid4()), entry_id, text, at) for entry_id, text, at in added])
    if embed:
        await conn.executemany(_EMBED_JOB, [(entry_id, at, at, at) for entry_id, at in embed])
    await adjust_stats(conn, docs, tokens)


async def _rewrite_keyword(conn: Any, sql: str, params: Sequence[Any]) -> None:
    """Run an ``UPDATE entries ... RETURNING`` :data:`KEYWORD_CHANGE` and move ``keyword_stats`` and the lexemes'
    document counts by the change."""
    row = await conn.fetchone(f"{sql} RETURNING {KEYWORD_CHANGE}", params)
    await keyword_changed(conn, row)


# What an UPDATE of an entry's keyword text returns for keyword_changed: its old and new token counts and lexemes
# (RETURNING old./new., PostgreSQL 18).
KEYWORD_CHANGE = "old.doc_len, new.doc_len, tsvector_to_array(old.fts), tsvector_to_array(new.fts)"


async def keyword_changed(conn: Any, row: tuple | None) -> None:
    """Move ``keyword_stats`` and the lexemes' document counts by the change a :data:`KEYWORD_CHANGE` row reports
    (None: no row was updated)."""
    if row is not None:
        await adjust_stats(conn, 0, int(row[1]) - int(row[0]))
        note_terms(conn, added=[row[3]], removed=[row[2]])


async def update_row(conn: Any, rid: int, values: Sequence[Any]) -> None:
    """Write the fields of :data:`agentbase.storage.entries.UPDATE_FIELDS` (``values`` in that order) over row
    ``rid`` (no row: nothing happens), with the keyword vector of the new ``fts_text``."""
    values = list(values)
    vector, length = keyword_document(values[4])
    await _rewrite_keyword(
        conn,
        "UPDATE entries SET category=%s, l0_abstract=%s, l1_overview=%s, l2_full=%s, fts_text=%s, tags=%s, "
        "metadata=%s, scope=%s, confidence=%s, importance=%s, updated_at=%s, event_time=%s, content_hash=%s, "
        "superseded_by=%s, status=%s, uri=%s, mime_type=%s, name=%s, description=%s, fts=%s::tsvector, doc_len=%s "
        "WHERE rid=%s", (*values, vector, length, rid))


async def write_tags(conn: Any, rid: int, tags: Sequence[str]) -> None:
    """Make ``entry_tags`` of row ``rid`` exactly ``tags`` (repeats once)."""
    await conn.execute("DELETE FROM entry_tags WHERE rid = %s", (rid,))
    tags = list(dict.fromkeys(tags))
    if tags:
        await conn.execute("INSERT INTO entry_tags(rid, tag) SELECT %s, t FROM unnest(%s::text[]) AS t "
                           "ON CONFLICT DO NOTHING", (rid, tags))


async def set_tags(conn: Any, rid: int, tags: Sequence[str], fts_text: str) -> None:
    """Give row ``rid`` these tags (column and ``entry_tags``) and this keyword text (with its keyword vector)."""
    vector, length = keyword_document(fts_text)
    await _rewrite_keyword(
        conn, "UPDATE entries SET tags = %s, fts_text = %s, fts = %s::tsvector, doc_len = %s WHERE rid = %s",
        (json.dumps(list(tags), ensure_ascii=False), fts_text, vector, length, rid))
    await write_tags(conn, rid, tags)


async def clear_fact_key(conn: Any, rid: int) -> None:
    """Forget row ``rid``'s knowledge-update key (its text no longer states the fact it was extracted as)."""
    await conn.execute("UPDATE entries SET fact_key = NULL WHERE rid = %s", (rid,))


async def repoint_superseded(conn: Any, entry_id: str, superseded_by: str | None, now: str) -> None:
    """Entries superseded by ``entry_id`` are superseded by ``superseded_by`` instead (None: current again)."""
    await conn.execute("UPDATE entries SET superseded_by = %s, updated_at = %s WHERE superseded_by = %s",
                       (superseded_by, now, entry_id))


async def delete_row(conn: Any, rid: int, entry_id: str) -> None:
    """Delete row ``rid`` (id ``entry_id``; its tags follow by cascade, its keyword tokens leave ``keyword_stats``),
    its session links and its pending embedding job. Its vector and graph relations are the caller's to remove."""
    row = await conn.fetchone(f"DELETE FROM entries WHERE rid = %s RETURNING doc_len, {LEXEMES}", (rid,))
    await conn.execute("DELETE FROM session_memory_links WHERE entry_id = %s", (entry_id,))
    await conn.execute("DELETE FROM jobs WHERE kind = 'embed' AND target = %s", (entry_id,))
    if row is not None:
        await adjust_stats(conn, -1, -int(row[0]))
        note_terms(conn, removed=[row[1]])


async def requeue_session_summaries(conn: Any, session_ids: set[str], now: str, skip: set[str] = frozenset()) -> None:
    """Queue an embedding job for the session summaries (``metadata["source"] ==``
    :data:`~agentbase.storage.entries.SESSION_SUMMARY`) of ``session_ids``, except the entry ids in ``skip``: a
    summary's vector can be the mean of its session's turn vectors (``ingest.summary_vector``), which changes when
    a turn is embedded again or deleted."""
    if not session_ids:
        return
    rows = await conn.fetchall(
        f"SELECT id FROM entries WHERE category = 'summary' AND ({_JSON} ->> 'source') = %s "
        f"AND session_id = ANY(%s::text[]) ORDER BY rid", (SESSION_SUMMARY, list(session_ids)))
    jobs = [(summary_id, now, now, now) for (summary_id,) in rows if summary_id not in skip]
    if jobs:
        await conn.executemany(_EMBED_JOB, jobs)


# ------------------------------------------------------------------------------------------------ history
async def record_history(conn: Any, entry_id: str, event: str, old: str | None, new: str | None, now: str,
                         metadata: dict[str, Any] | None = None) -> None:
    """Append one ``ADD`` / ``UPDATE`` / ``DELETE`` event (old and new text, ``metadata`` a JSON object, ``now``
    DB time text) to the entry's history; events outlive the entry. Another event name fails the table's CHECK
    (StorageError)."""
    await conn.execute(
        "INSERT INTO entry_history(id, entry_id, event, old_value, new_value, metadata, created_at) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s)",
        (str(uuid.uuid4()), entry_id, event, old, new, json.dumps(metadata or {}), now),
    )


async def history_rows(c: Any, entry_id: str) -> list[tuple]:
    """``(id, entry_id, event, old_value, new_value, metadata, created_at)`` of the entry's events, oldest first
    (the order they were recorded)."""
    return await c.fetchall(
        "SELECT id, entry_id, event, old_value, new_value, metadata, created_at FROM entry_history "
        "WHERE entry_id = %s ORDER BY seq", (entry_id,))


# ------------------------------------------------------------------------------------------------ id prefixes
__all__ += ["ids_with_prefix"]


async def ids_with_prefix(c: Any, prefix: str, limit: int) -> list[str]:
    """Entry ids starting with ``prefix`` (any owner and status), smallest first in code point order
    (``COLLATE "C"``, SQLite's BINARY), at most ``limit``. ``id LIKE prefix% ESCAPE '\\'`` with ``\\``, ``%``
    and ``_`` escaped (SQLite: a range on the id index; a range in a locale collation would miss ids). Only a
    database in the ``C`` collation can use the unique ``id`` index for it; elsewhere (``C.UTF-8`` included) it
    reads the ``id`` column (8 ms at 50,000 entries)."""
    from .traces import _ids_like

    return await _ids_like(c, "entries", prefix, limit)
