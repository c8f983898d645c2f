"""Entry repository: row mapping and the single-transaction write operations (entry, tags, FTS, history, job).

Engine-neutral: the SQL is the engine's (``conn.ops.entries``, ``conn.ops.jobs``); this module turns models into
row values and back and decides what a write entails. Every function that writes takes the open writer connection
of a transaction; the FTS rows follow through triggers, the vector row is removed in the same transaction when the
text changes, and an embedding job is queued in the same transaction so that the vector catches up after a crash.
"""

from __future__ import annotations

import json
from typing import Any

from ..index.fts import fts_document
from ..models import ContextType, Entry, HistoryEvent, Scope
from ..timeutil import from_db_time, to_db_time

__all__ = [
    "ENTRY_COLUMNS",
    "ENTRY_FIELDS",
    "INSERT_FIELDS",
    "SESSION_SUMMARY",
    "UPDATE_FIELDS",
    "EntryView",
    "delete_entry_row",
    "entry_columns",
    "fts_source",
    "insert_entries",
    "insert_entry",
    "row_to_entry",
    "row_to_history",
    "update_entry_row",
]

#: The order of an entry row as every engine's entry reads return it (``rid``, the row id, first).
ENTRY_FIELDS = (
    "rid", "id", "context_type", "category", "l0_abstract", "l1_overview", "l2_full", "tags", "metadata", "scope",
    "user_id", "agent_id", "project_id", "session_id", "confidence", "importance", "created_at", "updated_at",
    "event_time", "content_hash", "access_count", "last_accessed_at", "superseded_by", "status", "uri", "mime_type",
    "name", "description",
)
#: :data:`ENTRY_FIELDS` as a column list, for the engine modules' entry reads (``storage/sqlite/*``).
ENTRY_COLUMNS = ", ".join(ENTRY_FIELDS)
#: The values of a new entry row, in the order ``ops.entries.insert_rows`` takes them.
INSERT_FIELDS = (
    "id", "context_type", "category", "l0_abstract", "l1_overview", "l2_full", "fts_text", "tags", "metadata",
    "scope", "user_id", "agent_id", "project_id", "session_id", "confidence", "importance", "created_at",
    "updated_at", "event_time", "content_hash", "fact_key", "access_count", "last_accessed_at", "superseded_by",
    "status", "uri", "mime_type", "name", "description",
)
#: The fields an edit rewrites, in the order ``ops.entries.update_row`` takes them.
UPDATE_FIELDS = (
    "category", "l0_abstract", "l1_overview", "l2_full", "fts_text", "tags", "metadata", "scope", "confidence",
    "importance", "updated_at", "event_time", "content_hash", "superseded_by", "status", "uri", "mime_type", "name",
    "description",
)
_NAMES = list(ENTRY_FIELDS)
_AT = {name: i for i, name in enumerate(_NAMES)}  # column name -> position in a row

SESSION_SUMMARY = "session_summary"  # metadata["source"] of the session summaries commit_session writes


def entry_columns(alias: str) -> str:
    """:data:`ENTRY_FIELDS` qualified with a table alias (``e.rid, e.id, ...``) for joins."""
    return ", ".join(f"{alias}.{c}" for c in _NAMES)


def row_to_entry(row: tuple) -> Entry:
    """Map a row selected with :data:`ENTRY_COLUMNS` (with the ``e.`` alias or none) to an :class:`Entry`."""
    d = dict(zip(_NAMES, row))
    d.pop("rid")
    d["tags"] = json.loads(d["tags"])
    d["metadata"] = json.loads(d["metadata"])
    d["context_type"] = ContextType(d["context_type"])
    d["scope"] = Scope(d["scope"])
    for key in ("created_at", "updated_at", "event_time", "last_accessed_at"):
        d[key] = from_db_time(d[key])
    return Entry(**d)


class EntryView:
    """The fields of an entry row that ranking reads (``find()`` steps 6-9), parsed without building an
    :class:`Entry`; only the returned results become models (:meth:`entry`). On LongMemEval haystacks this took
    candidate loading from 3.7 to 1.8 ms p50 (docs/benchmarks.md).

    Attributes:
        row: the row selected with :data:`ENTRY_COLUMNS`.
        id, category, name, l2_full, session_id, agent_id, confidence: as in :class:`Entry` (a turn's ``name``
            is its speaker's name, or None).
        context_type: a :class:`ContextType`.
        tags: the tag list.
        created_at, event_time: aware UTC datetimes (``event_time`` may be None).
    """

    __slots__ = ("row", "id", "context_type", "category", "name", "l2_full", "tags", "session_id", "agent_id",
                 "confidence", "created_at", "event_time")

    def __init__(self, row: tuple):
        self.row = row
        self.id: str = row[_AT["id"]]
        self.context_type = ContextType(row[_AT["context_type"]])
        self.category: str = row[_AT["category"]]
        self.name: str | None = row[_AT["name"]]
        self.l2_full: str = row[_AT["l2_full"]]
        self.tags: list[str] = json.loads(row[_AT["tags"]])
        self.agent_id: str | None = row[_AT["agent_id"]]
        self.session_id: str | None = row[_AT["session_id"]]
        self.confidence: float = row[_AT["confidence"]]
        self.created_at = from_db_time(row[_AT["created_at"]])
        self.event_time = from_db_time(row[_AT["event_time"]])

    def entry(self) -> Entry:
        """The full :class:`Entry` of this row."""
        return row_to_entry(self.row)

    def role(self) -> str | None:
        """A turn's message role (``metadata["role"]``), parsed on demand; None for other entries."""
        if self.category != "turn":
            return None
        role = json.loads(self.row[_AT["metadata"]]).get("role")
        return role if isinstance(role, str) else None

    def message_seq(self) -> int | None:
        """A turn's message seq when it was committed (``metadata["message_seq"]``, the seq its session links
        and its facts' links record), parsed on demand; None for other entries."""
        if self.category != "turn":
            return None
        value = json.loads(self.row[_AT["metadata"]]).get("message_seq")
        return value if isinstance(value, int) and not isinstance(value, bool) else None


def row_to_history(row: tuple) -> HistoryEvent:
    """Map ``(id, entry_id, event, old_value, new_value, metadata, created_at)`` to a :class:`HistoryEvent`."""
    return HistoryEvent(id=row[0], entry_id=row[1], event=row[2], old_value=row[3], new_value=row[4],
                        metadata=json.loads(row[5]), created_at=from_db_time(row[6]))


RETRIEVAL_KEY = "retrieval_key"  # metadata: an LLM-written one-line key of the entry (agentbase/llm/ingest.py)
RETRIEVAL_KEY_FOR = "retrieval_key_for"  # metadata: the content_hash of the text the key was written for


def retrieval_key(entry: Entry) -> str | None:
    """The entry's LLM-written retrieval key (``metadata["retrieval_key"]``) while it describes the current
    text (``metadata["retrieval_key_for"]`` equals ``content_hash``); None otherwise (no key, or the text was
    edited since)."""
    key = entry.metadata.get(RETRIEVAL_KEY)
    if isinstance(key, str) and key.strip() and entry.metadata.get(RETRIEVAL_KEY_FOR) == entry.content_hash:
        return key
    return None


def _fts_source(entry: Entry) -> str:
    return fts_source(entry.name, entry.description, entry.l2_full, entry.tags, key=retrieval_key(entry))


def fts_source(name: str | None, description: str | None, l2_full: str, tags: list[str],
               key: str | None = None) -> str:
    """The ``entries.fts_text`` of an entry: its name, description, text and entity names (so keyword search
    reaches a resource's title and the entities of its tags), and its LLM retrieval key when it has one (see
    :func:`retrieval_key`), through :func:`~agentbase.index.fts.fts_document`."""
    extra = " ".join(t.removeprefix("ner_").replace("_", " ") for t in tags)
    parts = [name or "", description or "", l2_full, extra, key or ""]
    return fts_document("\n".join(p for p in parts if p))


def _insert_row(entry: Entry, fact_key: str | None) -> tuple:
    return (
        entry.id, entry.context_type.value, entry.category, entry.l0_abstract, entry.l1_overview,
        entry.l2_full, _fts_source(entry), json.dumps(entry.tags, ensure_ascii=False),
        json.dumps(entry.metadata, ensure_ascii=False), entry.scope.value, entry.user_id, entry.agent_id,
        entry.project_id, entry.session_id, entry.confidence, entry.importance,
        to_db_time(entry.created_at), to_db_time(entry.updated_at),
        to_db_time(entry.event_time) if entry.event_time else None, entry.content_hash, fact_key,
        entry.access_count, None, entry.superseded_by, entry.status, entry.uri, entry.mime_type,
        entry.name, entry.description,
    )


async def insert_entries(conn: Any, entries: list[Entry], *, fact_keys: list[str | None] | None = None,
                         embed: list[bool] | bool = True) -> None:
    """Insert entries with their tags, ADD history events and embedding jobs, batched (one statement each).

    Args:
        conn: the writer of an open transaction.
        entries: new entries (ids must be unused).
        fact_keys: per entry, the knowledge-update key of an extracted fact (or None).
        embed: per entry (or for all), whether to queue an embedding job.
    """
    if not entries:
        return
    keys = fact_keys or [None] * len(entries)
    flags = embed if isinstance(embed, list) else [embed] * len(entries)
    await conn.ops.entries.insert_rows(
        conn, [_insert_row(e, k) for e, k in zip(entries, keys)], [(t, e.id) for e in entries for t in e.tags],
        [(e.id, e.l2_full, to_db_time(e.updated_at)) for e in entries],
        [(e.id, to_db_time(e.updated_at)) for e, f in zip(entries, flags) if f])


async def insert_entry(conn: Any, entry: Entry, *, fact_key: str | None) -> None:
    """Insert one entry with its tags, an ADD history event and an embedding job."""
    await insert_entries(conn, [entry], fact_keys=[fact_key])


async def set_derived_tags(conn: Any, rid: int, entry: Entry, tags: list[str]) -> None:
    """Give row ``rid`` (holding ``entry``) the tags its ingest derived later (a queued session enrichment's entity
    tags): tags, ``entry_tags`` and keyword text change; no history event (not a user edit) and no new vector
    (the embedded text does not hold tags)."""
    tagged = entry.model_copy(update={"tags": tags})
    await conn.ops.entries.set_tags(conn, rid, tags, _fts_source(tagged))


async def update_entry_row(conn: Any, rid: int, old: Entry, new: Entry, *, engine: str, embed: bool = True) -> None:
    """Write ``new`` over row ``rid``; if the text changed, drop the stale vector and queue a new one (unless
    ``embed`` is False: a turn of a role that ``ingest.embed_roles`` leaves without a vector keeps none)."""
    ops = conn.ops
    now = to_db_time(new.updated_at)
    await ops.entries.update_row(conn, rid, (
        new.category, new.l0_abstract, new.l1_overview, new.l2_full, _fts_source(new),
        json.dumps(new.tags, ensure_ascii=False), json.dumps(new.metadata, ensure_ascii=False),
        new.scope.value, new.confidence, new.importance, now,
        to_db_time(new.event_time) if new.event_time else None, new.content_hash, new.superseded_by,
        new.status, new.uri, new.mime_type, new.name, new.description,
    ))
    if new.tags != old.tags:
        await ops.entries.write_tags(conn, rid, new.tags)
    if new.l2_full != old.l2_full:
        # New text no longer states the extracted fact it came from: a later value of that fact must not
        # supersede it.
        await ops.entries.clear_fact_key(conn, rid)
        await ops.entries.record_history(conn, new.id, "UPDATE", old.l2_full, new.l2_full, now)
        await ops.vectors.delete(conn, engine, rid)
        if embed:
            await ops.jobs.enqueue(conn, "embed", new.id, now)
    else:
        changed = [f for f in ("metadata", "tags", "category", "status") if getattr(new, f) != getattr(old, f)]
        if changed:
            await ops.entries.record_history(conn, new.id, "UPDATE", old.l2_full, new.l2_full, now,
                                             {"fields": changed})
    if "turn" in (old.category, new.category) and old.category != new.category:  # joins or leaves a turn mean
        await ops.entries.requeue_session_summaries(conn, {s for s in (old.session_id, new.session_id) if s}, now)


async def delete_entry_row(conn: Any, rid: int, entry: Entry, *, engine: str, now: str) -> None:
    """Delete the entry, its tags, vector, links, pending job and the graph relations read from it, and record a
    DELETE event.

    Facts this entry superseded point at what superseded it instead (None when it was the current value), so
    deleting the newest value of a fact makes the previous one current again rather than hiding it for good;
    each such entry gets an UPDATE history event.
    """
    ops = conn.ops
    replaced = await ops.entries.superseded_ids(conn, entry.id)
    if replaced:
        await ops.entries.repoint_superseded(conn, entry.id, entry.superseded_by, now)
        for old_id in replaced:
            await ops.entries.record_history(conn, old_id, "UPDATE", None, None, now,
                                             {"superseded_by": entry.superseded_by, "reason": f"{entry.id} deleted"})
    await ops.vectors.delete(conn, engine, rid)
    await ops.graph.forget_source(conn, entry.id)  # what was read from it goes with it
    await ops.entries.delete_row(conn, rid, entry.id)
    if entry.category == "turn" and entry.session_id:  # the session summary's vector may be its turns' mean
        await ops.entries.requeue_session_summaries(conn, {entry.session_id}, now)
    await ops.entries.record_history(conn, entry.id, "DELETE", entry.l2_full, None, now)
