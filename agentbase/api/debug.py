"""Debug APIs used by the dashboard: traces per session, entity graph, entry diffs."""

from __future__ import annotations

from typing import Any

from .. import observability as _obs
from .._loop import bridged
from ..storage.ids import ids_with_prefix as _ids_with_prefix
from ..validation import check_id, check_int, check_limit

__all__ = ["DebugAPI"]


class DebugAPI:
    """Methods mixed into :class:`~agentbase.engine.AgentBase`; see its docstring for construction."""

    # ------------------------------------------------------------------ debug APIs
    # (issue 5: trace_session, entity_graph, diff_entries delegate to observability.py; add them in this section)

    @bridged
    async def list_traces(self, limit: int = 50, offset: int = 0) -> list[dict[str, Any]]:
        """Persisted retrieval traces, newest first, without their steps (load one with :meth:`get_trace`).

        Args:
            limit: 1..1000 rows. offset: rows to skip.

        Returns:
            Dicts ``{"id", "query", "created_at" (UTC), "total_ms", "result_ids", "results", "steps",
            "degrade_reason"}``.

        Raises:
            ValidationError: bad limit or offset.
        """
        check_limit(limit, "limit", maximum=1000)
        check_int(offset, "offset", minimum=0)
        db = await self._open()
        await self._drain_background()
        return await _obs.list_traces(db, limit, offset)

    @bridged
    async def trace_ids_with_prefix(self, prefix: str, *, limit: int = 10) -> list[str]:
        """Persisted trace ids that start with ``prefix`` (a short id, as ``git`` takes one), smallest first.

        Args:
            prefix: the start of a trace id (validated like an id).
            limit: most ids to return (1..10,000); ask for 2 to tell "unique" from "ambiguous".

        Returns:
            Up to ``limit`` full trace ids (traces still queued in this process are stored first).

        Raises:
            ValidationError: a malformed prefix or a bad ``limit``.
        """
        check_id(prefix, "prefix")
        check_limit(limit, "limit", maximum=10_000)
        db = await self._open()
        await self._drain_background()
        return await _ids_with_prefix(db, "traces", prefix, limit)

    @bridged
    async def trace_session(self, session_id: str) -> dict[str, Any]:
        """Debug view of one session: messages, the entries committed from it, and the traces that found them.

        Returns:
            ``{"session", "messages", "memories": [{"entry", "kind", "message_seq"}], "traces", "counts"}``
            (see :func:`agentbase.observability.trace_session`).

        Raises:
            NotFoundError: unknown session. ValidationError: a malformed id.
        """
        db = await self._open()
        await self._drain_background()
        return await _obs.trace_session(db, check_id(session_id, "session_id"))

    @bridged
    async def entity_graph(self, entity: str | None = None, *, limit: int = 60) -> dict[str, Any]:
        """Entity graph around ``entity`` (or the whole database): graph relations plus tag co-occurrence.

        Args:
            entity: a name such as ``"Caroline"`` or a tag ``"ner_Caroline"``; None for the top entities.
            limit: 1..500 nodes.

        Returns:
            ``{"entity", "nodes", "edges", "entries"}`` (see :func:`agentbase.observability.entity_graph`).

        Raises:
            NotFoundError: an entity that is nowhere in the database. ValidationError: bad name or limit.
        """
        check_limit(limit, "limit", maximum=500)
        db = await self._open()
        return await _obs.entity_graph(db, entity, limit=limit)

    @bridged
    async def diff_entries(self, a: str, b: str) -> dict[str, Any]:
        """Field-by-field comparison of two entries with a unified diff of their text.

        Returns:
            ``{"a", "b", "fields", "tags_added", "tags_removed", "metadata", "text_diff", "similarity"}``
            (see :func:`agentbase.observability.diff_entries`).

        Raises:
            NotFoundError: either id is unknown. ValidationError: a malformed id.
        """
        db = await self._open()
        return await _obs.diff_entries(db, check_id(a, "entry_id"), check_id(b, "entry_id"))
