"""Retrieval-trace and debug-view operations on PostgreSQL: traces and their steps, recall counts, and the
read-only views behind the dashboard (session memories, entity-tag co-occurrence). Same functions, arguments and
row shapes as ``storage/sqlite/traces.py``.

Trace rows come back as :data:`TRACE_COLUMNS` with steps as :data:`STEP_COLUMNS`; trace summaries as
:data:`SUMMARY_COLUMNS`. JSON columns are JSON text, times DB time text (UTC).

What differs from SQLite, and why:

- Tag text is compared and ordered with ``COLLATE "C"`` (code-point order), which is SQLite's BINARY order, so
  ties and ``a < b`` tag pairs come out the same whatever the database's default collation is.
- A negative ``limit`` means no limit and a negative ``offset`` zero, as SQLite reads them (PostgreSQL would
  reject them; :mod:`.sqlutil`).
- ``stored_tag`` matches with ``lower(a) = lower(b)`` (SQLite: ``COLLATE NOCASE``), which uses the
  ``lower(tag)`` index; it also folds non-ASCII letters (``Ä``/``ä``), which SQLite's NOCASE leaves distinct.
- The ``ner_`` prefix test is ``ILIKE 'ner\\_%'``: SQLite's LIKE ignores ASCII case, PostgreSQL's does not.
- ``session_trace_summaries`` walks ``result_ids`` with ``jsonb_array_elements_text`` (SQLite: ``json_each``).
- Ties that SQLite leaves in no stated order (equal counts in ``tag_pairs``) are broken by the tags, so the
  result is deterministic here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..ids import like_prefix
from .sqlutil import limit as _limit
from .sqlutil import offset as _offset

__all__ = ["STEP_COLUMNS", "SUMMARY_COLUMNS", "TRACE_COLUMNS", "all_entities", "count_recalls", "entity_tag_counts",
           "entries_tagged", "ids_with_prefix", "insert_traces", "latest_relations", "session_memory_rows", "session_trace_summaries",
           "stored_tag", "tag_pairs", "trace_row", "trace_summaries"]

#: Trace row order.
TRACE_COLUMNS = ("id", "query", "params", "created_at", "total_ms", "result_ids", "degrade_reason")
#: Step row order (a trace's steps come in ``idx`` order).
STEP_COLUMNS = ("name", "latency_ms", "candidates_in", "candidates_out", "details")
#: Trace summary row order.
SUMMARY_COLUMNS = ("id", "query", "created_at", "total_ms", "result_ids", "degrade_reason", "steps")

_SUMMARY = ("SELECT t.id, t.query, t.created_at, t.total_ms, t.result_ids, t.degrade_reason, "
            "(SELECT COUNT(*)::int FROM trace_steps s WHERE s.trace_id = t.id) FROM retrieval_traces t")
# an active, current entry of an entry_tags row t
_ACTIVE = "JOIN entries e ON e.rid = t.rid AND e.status = 'active' AND e.superseded_by IS NULL"
_NER_TAG = "ILIKE 'ner\\_%%' ESCAPE '\\'"  # %% : a literal % in a statement with parameters


async def count_recalls(conn: Any, recalls: Sequence[tuple[str, str]]) -> None:
    """``access_count`` + 1 and ``last_accessed_at`` = when, for each ``(when, entry_id)``."""
    recalls = list(recalls)
    if recalls:
        await conn.executemany("UPDATE entries SET access_count = access_count + 1, last_accessed_at = %s "
                               "WHERE id = %s", recalls)


async def insert_traces(conn: Any, traces: Sequence[tuple], steps: Sequence[tuple]) -> None:
    """Insert trace rows (:data:`TRACE_COLUMNS`) and step rows ``(trace_id, idx, *STEP_COLUMNS)``."""
    if traces:
        await conn.executemany(
            "INSERT INTO retrieval_traces(id, query, params, created_at, total_ms, result_ids, degrade_reason) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s)", list(traces))
    if steps:
        await conn.executemany(
            "INSERT INTO trace_steps(trace_id, idx, name, latency_ms, candidates_in, candidates_out, details) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s)", list(steps))


async def trace_row(c: Any, trace_id: str) -> tuple[tuple, list[tuple]] | None:
    """``(trace row, step rows)`` of one trace, or None."""
    row = await c.fetchone("SELECT id, query, params, created_at, total_ms, result_ids, degrade_reason "
                           "FROM retrieval_traces WHERE id = %s", (trace_id,))
    if row is None:
        return None
    steps = await c.fetchall("SELECT name, latency_ms, candidates_in, candidates_out, details FROM trace_steps "
                             "WHERE trace_id = %s ORDER BY idx", (trace_id,))
    return row, steps


async def trace_summaries(c: Any, limit: int, offset: int) -> list[tuple]:
    """Trace summaries, newest first (ties by id)."""
    return await c.fetchall(_SUMMARY + ' ORDER BY t.created_at DESC, t.id COLLATE "C" LIMIT %s OFFSET %s',
                            (_limit(limit), _offset(offset)))


async def session_trace_summaries(c: Any, session_id: str, limit: int = 100) -> list[tuple]:
    """Summaries of the traces that returned an entry linked to the session, newest first."""
    return await c.fetchall(
        _SUMMARY + " WHERE EXISTS (SELECT 1 FROM jsonb_array_elements_text(t.result_ids::jsonb) j(value) "
        "JOIN session_memory_links l ON l.entry_id = j.value WHERE l.session_id = %s) "
        "ORDER BY t.created_at DESC LIMIT %s", (session_id, _limit(limit)))


async def session_memory_rows(c: Any, session_id: str) -> list[tuple]:
    """``(kind, message_seq, *ENTRY_COLUMNS)`` of the entries linked to the session, in message order (links
    without a message last)."""
    from ..entries import entry_columns

    return await c.fetchall(
        f"SELECT l.kind, l.message_seq, {entry_columns('e')} FROM session_memory_links l "
        "JOIN entries e ON e.id = l.entry_id WHERE l.session_id = %s "
        "ORDER BY COALESCE(l.message_seq, 1e9), e.created_at, e.rid", (session_id,))


# --------------------------------------------------------------------------------------------- entity graph
async def stored_tag(c: Any, tag: str) -> str | None:
    """The stored spelling of an entry tag (tags keep their first-seen case; matched case-insensitively)."""
    row = await c.fetchone("SELECT tag FROM entry_tags WHERE lower(tag) = lower(%s) LIMIT 1", (tag,))
    return row[0] if row else None


async def entity_tag_counts(c: Any, limit: int, *, with_tag: str | None = None) -> list[tuple[str, int]]:
    """``(ner_ tag, active entries)``, most first (ties by tag): over all active entries, or over those tagged
    ``with_tag``."""
    if with_tag is not None:
        return await c.fetchall(
            f"SELECT t2.tag, COUNT(*)::int FROM entry_tags t {_ACTIVE} JOIN entry_tags t2 ON t2.rid = t.rid "
            f'WHERE t.tag = %s AND t2.tag {_NER_TAG} GROUP BY t2.tag ORDER BY COUNT(*) DESC, t2.tag COLLATE "C" '
            "LIMIT %s", (with_tag, _limit(limit)))
    return await c.fetchall(
        f"SELECT t.tag, COUNT(*)::int FROM entry_tags t {_ACTIVE} WHERE t.tag {_NER_TAG} "
        'GROUP BY t.tag ORDER BY COUNT(*) DESC, t.tag COLLATE "C" LIMIT %s', (_limit(limit),))


async def all_entities(c: Any) -> list[tuple]:
    """``(id, name, type, aliases)`` of every graph entity."""
    return await c.fetchall("SELECT id, name, type, aliases FROM entities")


async def latest_relations(c: Any, limit: int = 2000) -> list[tuple]:
    """``(subject_id, predicate, object_id, valid_from, valid_to, source_entry_id, confidence)``, newest first."""
    return await c.fetchall("SELECT subject_id, predicate, object_id, valid_from, valid_to, source_entry_id, "
                            "confidence FROM relations ORDER BY created_at DESC LIMIT %s", (_limit(limit),))


async def tag_pairs(c: Any, tags: Sequence[str], limit: int = 500) -> list[tuple[str, str, int]]:
    """``(tag a, tag b, active entries carrying both)`` for pairs of these tags (a < b in code-point order), most
    first (ties by the tags)."""
    if not tags:
        return []
    return await c.fetchall(
        f"SELECT t.tag, t2.tag, COUNT(*)::int FROM entry_tags t {_ACTIVE} JOIN entry_tags t2 ON t2.rid = t.rid "
        'AND t.tag COLLATE "C" < t2.tag WHERE t.tag = ANY(%s::text[]) AND t2.tag = ANY(%s::text[]) '
        'GROUP BY t.tag, t2.tag ORDER BY COUNT(*) DESC, t.tag COLLATE "C", t2.tag COLLATE "C" LIMIT %s',
        (list(tags), list(tags), _limit(limit)))


async def entries_tagged(c: Any, tag: str, limit: int = 50) -> list[tuple]:
    """Entry rows (``ENTRY_COLUMNS``) of the active entries carrying ``tag``, newest event first."""
    from ..entries import entry_columns

    return await c.fetchall(
        f"SELECT {entry_columns('e')} FROM entry_tags t {_ACTIVE} WHERE t.tag = %s "
        "ORDER BY COALESCE(e.event_time, e.created_at) DESC LIMIT %s", (tag, _limit(limit)))


async def ids_with_prefix(c: Any, prefix: str, limit: int) -> list[str]:
    """Persisted trace ids starting with ``prefix``, smallest first in code point order, at most ``limit`` (as
    ``entries.ids_with_prefix``: ``LIKE`` with the wildcards escaped, ordered ``COLLATE "C"``)."""
    return await _ids_like(c, "retrieval_traces", prefix, limit)


async def _ids_like(c: Any, table: str, prefix: str, limit: int) -> list[str]:
    """``ids_with_prefix`` over ``table`` (``entries`` or ``retrieval_traces``, never user input)."""
    if table not in ("entries", "retrieval_traces"):
        raise ValueError(table)
    rows = await c.fetchall(f"SELECT id FROM {table} WHERE id LIKE %s ESCAPE '\\' ORDER BY id COLLATE \"C\" "
                            "LIMIT %s", (like_prefix(prefix), _limit(limit)))
    return [r[0] for r in rows]
