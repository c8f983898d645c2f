"""Retrieval-trace and debug-view operations on SQLite: traces and their steps, recall counts, and the read-only
views behind the dashboard (session memories, entity-tag co-occurrence).

Trace rows come back as :data:`TRACE_COLUMNS` with steps as :data:`STEP_COLUMNS`; trace summaries as
:data:`SUMMARY_COLUMNS`. JSON columns are JSON text, times DB time text (UTC).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

#: Trace row order.
TRACE_COLUMNS = ("id", "query", "params", "created_at", "total_ms", "result_ids", "degrade_reason")
#: Step row order (a trace's steps come in ``idx`` order).
STEP_COLUMNS = ("name", "latency_ms", "candidates_in", "candidates_out", "details")
#: Trace summary row order.
SUMMARY_COLUMNS = ("id", "query", "created_at", "total_ms", "result_ids", "degrade_reason", "steps")

_SUMMARY = ("SELECT t.id, t.query, t.created_at, t.total_ms, t.result_ids, t.degrade_reason, "
            "(SELECT COUNT(*) FROM trace_steps s WHERE s.trace_id = t.id) FROM retrieval_traces t")
# an active, current entry of an entry_tags row t
_ACTIVE = "JOIN entries e ON e.rid = t.rid AND e.status = 'active' AND e.superseded_by IS NULL"
_NER_TAG = "LIKE 'ner\\_%' ESCAPE '\\'"


async def count_recalls(conn: Any, recalls: Sequence[tuple[str, str]]) -> None:
    """``access_count`` + 1 and ``last_accessed_at`` = when, for each ``(when, entry_id)``."""
    await conn.executemany("UPDATE entries SET access_count = access_count + 1, last_accessed_at = ? WHERE id = ?",
                           list(recalls))


async def insert_traces(conn: Any, traces: Sequence[tuple], steps: Sequence[tuple]) -> None:
    """Insert trace rows (:data:`TRACE_COLUMNS`) and step rows ``(trace_id, idx, *STEP_COLUMNS)``."""
    await conn.executemany(
        "INSERT INTO retrieval_traces(id, query, params, created_at, total_ms, result_ids, degrade_reason) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)", list(traces))
    await conn.executemany(
        "INSERT INTO trace_steps(trace_id, idx, name, latency_ms, candidates_in, candidates_out, details) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)", list(steps))


async def trace_row(c: Any, trace_id: str) -> tuple[tuple, list[tuple]] | None:
    """``(trace row, step rows)`` of one trace, or None."""
    row = await c.fetchone("SELECT id, query, params, created_at, total_ms, result_ids, degrade_reason "
                           "FROM retrieval_traces WHERE id = ?", (trace_id,))
    if row is None:
        return None
    steps = await c.fetchall("SELECT name, latency_ms, candidates_in, candidates_out, details FROM trace_steps "
                             "WHERE trace_id = ? ORDER BY idx", (trace_id,))
    return row, steps


async def trace_summaries(c: Any, limit: int, offset: int) -> list[tuple]:
    """Trace summaries, newest first."""
    return await c.fetchall(_SUMMARY + " ORDER BY t.created_at DESC, t.id LIMIT ? OFFSET ?", (limit, offset))


async def session_trace_summaries(c: Any, session_id: str, limit: int = 100) -> list[tuple]:
    """Summaries of the traces that returned an entry linked to the session, newest first."""
    return await c.fetchall(
        _SUMMARY + " WHERE EXISTS (SELECT 1 FROM json_each(t.result_ids) j JOIN session_memory_links l "
        "ON l.entry_id = j.value WHERE l.session_id = ?) ORDER BY t.created_at DESC LIMIT ?", (session_id, limit))


async def session_memory_rows(c: Any, session_id: str) -> list[tuple]:
    """``(kind, message_seq, *ENTRY_COLUMNS)`` of the entries linked to the session, in message order (links
    without a message last)."""
    from ..entries import entry_columns

    return await c.fetchall(
        f"SELECT l.kind, l.message_seq, {entry_columns('e')} FROM session_memory_links l "
        "JOIN entries e ON e.id = l.entry_id WHERE l.session_id = ? "
        "ORDER BY COALESCE(l.message_seq, 1e9), e.created_at, e.rid", (session_id,))


# --------------------------------------------------------------------------------------------- entity graph
async def stored_tag(c: Any, tag: str) -> str | None:
    """The stored spelling of an entry tag (tags keep their first-seen case; matched case-insensitively)."""
    row = await c.fetchone("SELECT tag FROM entry_tags WHERE tag = ? COLLATE NOCASE LIMIT 1", (tag,))
    return row[0] if row else None


async def entity_tag_counts(c: Any, limit: int, *, with_tag: str | None = None) -> list[tuple[str, int]]:
    """``(ner_ tag, active entries)``, most first: over all active entries, or over those tagged ``with_tag``."""
    if with_tag is not None:
        return await c.fetchall(
            f"SELECT t2.tag, COUNT(*) FROM entry_tags t {_ACTIVE} JOIN entry_tags t2 ON t2.rid = t.rid "
            f"WHERE t.tag = ? AND t2.tag {_NER_TAG} GROUP BY t2.tag ORDER BY COUNT(*) DESC, t2.tag LIMIT ?",
            (with_tag, limit))
    return await c.fetchall(
        f"SELECT t.tag, COUNT(*) FROM entry_tags t {_ACTIVE} WHERE t.tag {_NER_TAG} "
        "GROUP BY t.tag ORDER BY COUNT(*) DESC, t.tag LIMIT ?", (limit,))


async def all_entities(c: Any) -> list[tuple]:
    """``(id, name, type, aliases)`` of every graph entity."""
    return await c.fetchall("SELECT id, name, type, aliases FROM entities")


async def latest_relations(c: Any, limit: int = 2000) -> list[tuple]:
    """``(subject_id, predicate, object_id, valid_from, valid_to, source_entry_id, confidence)``, newest first."""
    return await c.fetchall("SELECT subject_id, predicate, object_id, valid_from, valid_to, source_entry_id, "
                            "confidence FROM relations ORDER BY created_at DESC LIMIT ?", (limit,))


async def tag_pairs(c: Any, tags: Sequence[str], limit: int = 500) -> list[tuple[str, str, int]]:
    """``(tag a, tag b, active entries carrying both)`` for pairs of these tags (a < b), most first."""
    marks = ",".join("?" * len(tags))
    return await c.fetchall(
        f"SELECT t.tag, t2.tag, COUNT(*) FROM entry_tags t {_ACTIVE} JOIN entry_tags t2 ON t2.rid = t.rid "
        f"AND t.tag < t2.tag WHERE t.tag IN ({marks}) AND t2.tag IN ({marks}) GROUP BY t.tag, t2.tag "
        "ORDER BY COUNT(*) DESC LIMIT ?", [*tags, *tags, limit])


async def entries_tagged(c: Any, tag: str, limit: int = 50) -> list[tuple]:
    """Entry rows (``ENTRY_COLUMNS``) of the active entries carrying ``tag``, newest event first."""
    from ..entries import entry_columns

    return await c.fetchall(
        f"SELECT {entry_columns('e')} FROM entry_tags t {_ACTIVE} WHERE t.tag = ? "
        "ORDER BY COALESCE(e.event_time, e.created_at) DESC LIMIT ?", (tag, limit))


async def ids_with_prefix(c: Any, prefix: str, limit: int) -> list[str]:
    """Persisted trace ids starting with ``prefix``, smallest first in code point order, at most ``limit`` (a range
    scan on the ``id`` primary key, as ``entries.ids_with_prefix``)."""
    from .entries import _ids_with_prefix

    return await _ids_with_prefix(c, "retrieval_traces", prefix, limit)
