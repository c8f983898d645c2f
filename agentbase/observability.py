"""Retrieval tracing: a step timer for the ``find()`` pipeline, trace persistence and loading."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import logging
import time
import uuid
from typing import Any

from .errors import AgentBaseError, NotFoundError
from .models import Trace, TraceStep, utcnow
from .timeutil import from_db_time, to_db_time

log = logging.getLogger("agentbase.traces")

__all__ = ["TraceBuffer", "Tracer", "diff_entries", "entity_graph", "list_traces", "load_trace", "save_traces",
           "trace_session"]


class Tracer:
    """Collects :class:`TraceStep` records; ``step()`` measures wall time in milliseconds since the last mark."""

    def __init__(self, query: str, params: dict[str, Any]):
        self.id = str(uuid.uuid4())
        self.query = query
        self.params = params
        self.steps: list[TraceStep] = []
        self.degrade_reason: str | None = None
        self._start = self._mark = time.perf_counter()

    def step(self, name: str, candidates_in: int = 0, candidates_out: int = 0, **details: Any) -> None:
        """Record a step that ended now; its latency runs from the previous step's end."""
        now = time.perf_counter()
        self.steps.append(TraceStep(name=name, latency_ms=round((now - self._mark) * 1000, 3),
                                    candidates_in=candidates_in, candidates_out=candidates_out, details=details))
        self._mark = now

    def fork(self) -> Tracer:
        """A tracer for one of several branches that may run concurrently: its steps go to this trace (in the order
        they end), each timed from the branch's previous step, its first from now. Call :meth:`join` on this
        tracer once the branches are done."""
        branch = copy.copy(self)  # shares ``steps``
        branch._mark = time.perf_counter()
        return branch

    def join(self) -> None:
        """After :meth:`fork`'s branches: the next step is timed from now."""
        self._mark = time.perf_counter()

    def finish(self, result_ids: list[str]) -> Trace:
        """Freeze into a :class:`Trace` with the total latency in milliseconds."""
        return Trace(id=self.id, query=self.query, created_at=utcnow(),
                     total_ms=round((time.perf_counter() - self._start) * 1000, 3), steps=self.steps,
                     result_ids=result_ids, params=self.params, degrade_reason=self.degrade_reason)


async def save_traces(db: Any, batch: list[tuple[Trace | None, list[str], Any]]) -> None:
    """Persist traces and recall counts from several ``find()`` calls in one transaction.

    Args:
        db: the open database.
        batch: ``(trace or None, recalled entry ids, when (UTC datetime))`` per call. Each recalled id counts as a
            recall (``access_count`` + 1, ``last_accessed_at`` = when), which slows the entry's decay (see
            :mod:`agentbase.lifecycle`).

    The transaction is not fsync'd (``durable=False``): it survives a process crash, and a power loss can lose
    the last traces, never the file's consistency.

    Raises:
        StorageError: the write failed (nothing of the batch is stored).
    """
    async with db.transaction(durable=False) as conn:
        recalls = [(to_db_time(when), i) for _, ids, when in batch for i in ids]
        if recalls:
            await conn.ops.traces.count_recalls(conn, recalls)
        traces = [t for t, _, _ in batch if t is not None]
        if not traces:
            return
        await conn.ops.traces.insert_traces(
            conn,
            [(t.id, t.query, json.dumps(t.params, default=str, ensure_ascii=False), to_db_time(t.created_at),
              t.total_ms, json.dumps(t.result_ids), t.degrade_reason) for t in traces],
            [(t.id, i, s.name, s.latency_ms, s.candidates_in, s.candidates_out,
              json.dumps(s.details, default=str, ensure_ascii=False)) for t in traces for i, s in enumerate(t.steps)])


class TraceBuffer:
    """Collects what ``find()`` writes as bookkeeping (its trace, the recall counts) and stores it in batches.

    Every write transaction makes the reader connection drop its page cache, which cost the next ``find()`` 2-3 ms
    when each call wrote its own trace. Items wait at most ``delay_s`` seconds and are written together in one
    transaction (:func:`save_traces`); :meth:`flush` writes them at once (``get_trace``, ``stats`` and ``close``
    call it, so nothing read back is ever missing).
    """

    def __init__(self, db: Any, delay_s: float = 0.2):
        self.db = db
        self.delay_s = delay_s
        self._items: list[tuple[Trace | None, list[str], Any]] = []
        self._task: asyncio.Task | None = None
        self._wake = asyncio.Event()

    def add(self, trace: Trace | None, recalled: list[str] | None) -> None:
        """Queue one call's trace (or None) and recalled entry ids; must run on the engine loop."""
        self._items.append((trace, list(recalled or []), utcnow()))
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), self.delay_s)
        self._wake.clear()
        items, self._items = self._items, []
        self._task = None
        try:
            await save_traces(self.db, items)
        except AgentBaseError as exc:  # bookkeeping: report, never fail a later call for it
            log.warning("could not store %d retrieval trace(s): %s", len(items), exc)

    async def flush(self) -> None:
        """Write everything queued now and wait for it."""
        while self._task is not None:
            task = self._task
            self._wake.set()
            await asyncio.gather(task, return_exceptions=True)


async def load_trace(db: Any, trace_id: str) -> Trace:
    """Load a trace by id.

    Raises:
        NotFoundError: unknown id.
    """
    found = await db.ops.traces.trace_row(db, trace_id)
    if found is None:
        raise NotFoundError(f"trace {trace_id!r} not found")
    row, steps = found
    return Trace(id=row[0], query=row[1], params=json.loads(row[2]), created_at=from_db_time(row[3]),
                 total_ms=row[4], result_ids=json.loads(row[5]), degrade_reason=row[6],
                 steps=[TraceStep(name=s[0], latency_ms=s[1], candidates_in=s[2], candidates_out=s[3],
                                  details=json.loads(s[4])) for s in steps])


# ---------------------------------------------------------------------------------------------- debug APIs
# Read-only views behind AgentBase.list_traces / trace_session / entity_graph / diff_entries. They take the
# storage Database (``ab.db``) and run on the engine loop; every value is a bound parameter.

def _trace_summary(row: tuple) -> dict[str, Any]:  # a SUMMARY_COLUMNS row (storage/<engine>/traces.py)
    result_ids = json.loads(row[4])
    return {"id": row[0], "query": row[1], "created_at": from_db_time(row[2]), "total_ms": row[3],
            "result_ids": result_ids, "results": len(result_ids), "degrade_reason": row[5], "steps": row[6]}


async def list_traces(db: Any, limit: int = 50, offset: int = 0) -> list[dict[str, Any]]:
    """Newest persisted retrieval traces first, without their steps.

    Args:
        db: the storage :class:`~agentbase.storage.Database`.
        limit: maximum rows. offset: rows to skip.

    Returns:
        Dicts ``{"id", "query", "created_at" (UTC datetime), "total_ms", "result_ids", "results", "steps",
        "degrade_reason"}``.
    """
    return [_trace_summary(r) for r in await db.ops.traces.trace_summaries(db, limit, offset)]


async def trace_session(db: Any, session_id: str) -> dict[str, Any]:
    """Everything a session produced: its messages, the entries committed from it, and the traces that found them.

    Args:
        db: the storage :class:`~agentbase.storage.Database`.
        session_id: the session.

    Returns:
        ``{"session": Session, "messages": [Message], "memories": [{"entry": Entry, "kind", "message_seq"}],
        "traces": [trace summary as in :func:`list_traces`], "counts": {"messages", "memories", "by_kind",
        "traces"}}``; ``kind`` is ``turn``, ``fact`` or ``summary`` (the ``session_memory_links`` row).

    Raises:
        NotFoundError: unknown session.
    """
    from .sessions import _message, _session
    from .storage.entries import row_to_entry

    row = await db.ops.sessions.session_row(db, session_id)
    if row is None:
        raise NotFoundError(f"session {session_id!r} not found")
    messages = [_message(r) for r in await db.ops.sessions.message_rows(db, session_id, after_seq=None,
                                                                         before_seq=None, order="asc", limit=None)]
    links = await db.ops.traces.session_memory_rows(db, session_id)
    memories = [{"entry": row_to_entry(r[2:]), "kind": r[0], "message_seq": r[1]} for r in links]
    traces = [_trace_summary(r) for r in await db.ops.traces.session_trace_summaries(db, session_id, 100)]
    by_kind: dict[str, int] = {}
    for m in memories:
        by_kind[m["kind"]] = by_kind.get(m["kind"], 0) + 1
    return {"session": _session(row), "messages": messages, "memories": memories, "traces": traces,
            "counts": {"messages": len(messages), "memories": len(memories), "by_kind": by_kind,
                       "traces": len(traces)}}


def _tag_name(tag: str) -> str:
    return tag[4:].replace("_", " ") if tag.startswith("ner_") else tag


async def entity_graph(db: Any, entity: str | None = None, *, limit: int = 60) -> dict[str, Any]:
    """The entity graph: graph tables (``entities``/``relations``) merged with entity-tag co-occurrence.

    Nodes come from the ``entities`` table and from ``ner_<Entity>`` entry tags (so a database without graph
    rows still has a graph); edges are ``relations`` rows (with their validity interval) plus ``co_occurs``
    edges between two entity tags on the same active entry, weighted by the number of such entries.

    Args:
        db: the storage :class:`~agentbase.storage.Database`.
        entity: a name (``"Caroline"``) or tag (``"ner_Caroline"``) for the neighbourhood of one entity;
            None for the most-mentioned entities of the whole database.
        limit: maximum number of nodes.

    Returns:
        ``{"entity", "nodes": [{"id", "name", "type", "mentions", "source"}], "edges": [{"source", "target",
        "predicate", "weight", "valid_from", "valid_to", "source_entry_id"}], "entries": [Entry] (those tagged
        with ``entity``; empty for the whole graph)}``. Node ids are entity tags (``ner_Name``).

    Raises:
        NotFoundError: ``entity`` is given but appears neither in the graph tables nor in any tag.
    """
    from .ner.base import tag_for
    from .storage.entries import row_to_entry

    ops = db.ops.traces
    center = tag_for(entity) if entity is not None else None
    nodes: dict[str, dict[str, Any]] = {}
    if center is not None:  # the stored spelling of the tag (tags keep their first-seen case)
        center = await ops.stored_tag(db, center) or center
    rows = await ops.entity_tag_counts(db, limit, with_tag=center)
    for tag, n in rows:
        nodes[tag] = {"id": tag, "name": _tag_name(tag), "type": None, "mentions": n, "source": "tags"}
    # Graph tables (written by the temporal graph); names normalise to the same ``ner_`` ids as the tags.
    ent_rows = await ops.all_entities(db)
    ent_ids: dict[str, str] = {}
    types: dict[str, str | None] = {}
    for eid, name, etype, _aliases in ent_rows:
        try:
            ent_ids[eid] = tag_for(name)
        except AgentBaseError:  # a name without letters or digits cannot be a node
            continue
        types[ent_ids[eid]] = etype
    rel_rows = await ops.latest_relations(db, 2000)
    edges: list[dict[str, Any]] = []
    for subj, pred, obj, vfrom, vto, src, conf in rel_rows:
        a, b = ent_ids.get(subj), ent_ids.get(obj)
        if a is None or b is None or (center is not None and center.casefold() not in (a.casefold(), b.casefold())):
            continue
        edges.append({"source": a, "target": b, "predicate": pred, "weight": conf, "valid_from": vfrom,
                      "valid_to": vto, "source_entry_id": src})
    for e in edges:
        for key in ("source", "target"):
            node = nodes.setdefault(e[key], {"id": e[key], "name": _tag_name(e[key]), "type": None, "mentions": 0,
                                             "source": "graph"})
            node["type"] = node["type"] or types.get(e[key])
    if center is not None and not nodes:
        raise NotFoundError(f"entity {entity!r} not found")
    tags = list(nodes)[: max(1, limit)]
    if len(tags) > 1:
        pairs = await ops.tag_pairs(db, tags, 500)
        edges += [{"source": a, "target": b, "predicate": "co_occurs", "weight": n, "valid_from": None,
                   "valid_to": None, "source_entry_id": None} for a, b, n in pairs]
    entries = []
    if center is not None:
        entries = [row_to_entry(r) for r in await ops.entries_tagged(db, center, 50)]
    return {"entity": center, "nodes": list(nodes.values()), "edges": edges, "entries": entries}


_DIFF_FIELDS = ("context_type", "category", "scope", "user_id", "agent_id", "project_id", "session_id",
                "confidence", "importance", "event_time", "status", "superseded_by", "uri", "mime_type", "name",
                "description", "created_at", "updated_at")


async def diff_entries(db: Any, a: str, b: str) -> dict[str, Any]:
    """Compare two entries field by field, with a unified diff of their full text.

    Args:
        db: the storage :class:`~agentbase.storage.Database`.
        a, b: entry ids (e.g. an old fact and the entry that superseded it).

    Returns:
        ``{"a": Entry, "b": Entry, "fields": {name: {"a", "b"}} (differing fields only), "tags_added",
        "tags_removed", "metadata": {"added", "removed", "changed": {key: {"a", "b"}}}, "text_diff": [lines of a
        unified diff of l2_full], "similarity": difflib ratio 0..1 of the two texts}``.

    Raises:
        NotFoundError: either id is unknown.
    """
    import difflib

    from .storage.entries import row_to_entry

    found = []
    for entry_id in (a, b):
        row = await db.ops.entries.row_by_id(db, entry_id)
        if row is None:
            raise NotFoundError(f"entry {entry_id!r} not found")
        found.append(row_to_entry(row))
    ea, eb = found
    fields = {}
    for name in _DIFF_FIELDS:
        va, vb = getattr(ea, name), getattr(eb, name)
        if va != vb:
            fields[name] = {"a": getattr(va, "value", va), "b": getattr(vb, "value", vb)}
    ma, mb = ea.metadata, eb.metadata
    text_diff = list(difflib.unified_diff(ea.l2_full.splitlines(), eb.l2_full.splitlines(), fromfile=ea.id,
                                          tofile=eb.id, lineterm="", n=2))
    return {"a": ea, "b": eb, "fields": fields,
            "tags_added": [t for t in eb.tags if t not in ea.tags],
            "tags_removed": [t for t in ea.tags if t not in eb.tags],
            "metadata": {"added": {k: v for k, v in mb.items() if k not in ma},
                         "removed": {k: v for k, v in ma.items() if k not in mb},
                         "changed": {k: {"a": ma[k], "b": mb[k]} for k in ma if k in mb and ma[k] != mb[k]}},
            "text_diff": text_diff,
            "similarity": round(difflib.SequenceMatcher(None, ea.l2_full, eb.l2_full).ratio(), 4)}
