"""Retrieval tracing: a step timer for the ``find()`` pipeline, trace persistence and loading."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from .errors import NotFoundError
from .models import Trace, TraceStep, utcnow
from .timeutil import from_db_time, to_db_time

__all__ = ["Tracer", "load_trace", "save_trace"]


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

    def finish(self, result_ids: list[str]) -> Trace:
        """Freeze into a :class:`Trace` with the total latency in milliseconds."""
        return Trace(id=self.id, query=self.query, created_at=utcnow(),
                     total_ms=round((time.perf_counter() - self._start) * 1000, 3), steps=self.steps,
                     result_ids=result_ids, params=self.params, degrade_reason=self.degrade_reason)


async def save_trace(db: Any, trace: Trace) -> None:
    """Persist a trace and its steps in one transaction."""
    async with db.transaction() as conn:
        await conn.execute(
            "INSERT INTO retrieval_traces(id, query, params, created_at, total_ms, result_ids, degrade_reason) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (trace.id, trace.query, json.dumps(trace.params, default=str, ensure_ascii=False),
             to_db_time(trace.created_at), trace.total_ms, json.dumps(trace.result_ids), trace.degrade_reason))
        await conn.executemany(
            "INSERT INTO trace_steps(trace_id, idx, name, latency_ms, candidates_in, candidates_out, details) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(trace.id, i, s.name, s.latency_ms, s.candidates_in, s.candidates_out,
              json.dumps(s.details, default=str, ensure_ascii=False)) for i, s in enumerate(trace.steps)])


async def load_trace(db: Any, trace_id: str) -> Trace:
    """Load a trace by id.

    Raises:
        NotFoundError: unknown id.
    """
    row = await db.fetchone("SELECT id, query, params, created_at, total_ms, result_ids, degrade_reason "
                            "FROM retrieval_traces WHERE id = ?", (trace_id,))
    if row is None:
        raise NotFoundError(f"trace {trace_id!r} not found")
    steps = await db.fetchall("SELECT name, latency_ms, candidates_in, candidates_out, details FROM trace_steps "
                              "WHERE trace_id = ? ORDER BY idx", (trace_id,))
    return Trace(id=row[0], query=row[1], params=json.loads(row[2]), created_at=from_db_time(row[3]),
                 total_ms=row[4], result_ids=json.loads(row[5]), degrade_reason=row[6],
                 steps=[TraceStep(name=s[0], latency_ms=s[1], candidates_in=s[2], candidates_out=s[3],
                                  details=json.loads(s[4])) for s in steps])
