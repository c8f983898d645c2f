"""Job-queue operations on PostgreSQL: one row per (kind, target) in ``jobs``, claimed with a lease. Same functions,
arguments and row shapes as ``storage/sqlite/jobs.py``. Times are DB time text (UTC). Statuses: ``pending``,
``running`` (claimed; ``next_run_at`` is the lease's end), ``deferred``, ``done``, ``failed``.

What differs from SQLite, and why:

- Several workers (processes, hosts) claim at once: a claim locks the rows it picks with ``FOR UPDATE SKIP
  LOCKED`` (https://www.postgresql.org/docs/current/sql-select.html#SQL-FOR-UPDATE-SHARE), so two transactions
  never take the same job and neither waits for the other; a job another claimer holds is skipped, not returned
  twice. SQLite needs none of this: its single writer runs claims one after another.
- Claimed rows come back ordered by id (SQLite returns them in the order its UPDATE visits them, which is id order
  there too).
- A negative ``limit`` means no limit and a negative ``offset`` zero, as SQLite reads them (PostgreSQL would
  reject them; :mod:`.sqlutil`).
- ``postpone`` keeps the later time with ``GREATEST`` (SQLite's two-argument ``MAX``); times are fixed-width UTC
  text, so text order is time order under any collation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .sqlutil import limit as _limit

__all__ = ["any_due", "claim", "counts_by_status", "finish", "open_count", "postpone", "put_back", "release",
           "set_attempt"]

_STATUSES = frozenset({"pending", "running", "deferred", "done", "failed"})


def _statuses(statuses: Sequence[str]) -> list[str]:
    """``statuses`` as a list to bind as ``text[]``; raises ValueError on an unknown or empty set (the workers'
    constants, never user input; checked all the same, as on SQLite)."""
    bad = set(statuses) - _STATUSES
    if bad or not statuses:
        raise ValueError(f"unknown job statuses {sorted(bad)}")
    return list(statuses)


async def open_count(c: Any, kind: str) -> int:
    """Jobs of ``kind`` not yet done or failed (``pending`` or ``running``)."""
    row = await c.fetchone("SELECT COUNT(*) FROM jobs WHERE kind = %s AND status IN ('pending', 'running')", (kind,))
    return int(row[0])


async def counts_by_status(c: Any) -> dict[str, int]:
    """``{status: number of jobs}`` over every kind."""
    return {status: int(n) for status, n in await c.fetchall("SELECT status, COUNT(*) FROM jobs GROUP BY status")}


async def any_due(c: Any, kind: str, statuses: Sequence[str], now: str) -> bool:
    """Whether a job of ``kind`` in one of ``statuses`` is due at ``now`` (a read: no row lock for nothing)."""
    return await c.fetchone("SELECT 1 FROM jobs WHERE status = ANY(%s::text[]) AND next_run_at <= %s "
                            "AND kind = %s LIMIT 1", (_statuses(statuses), now, kind)) is not None


async def claim(conn: Any, kind: str, statuses: Sequence[str], now: str, lease_until: str,
                limit: int) -> list[tuple]:
    """Mark up to ``limit`` due jobs of ``kind`` (oldest first) ``running`` until ``lease_until``; returns their
    ``(id, target, attempts)`` by id. Jobs locked by another open claim are skipped (``FOR UPDATE SKIP LOCKED``),
    so concurrent claimers get disjoint jobs without waiting."""
    return await conn.fetchall(
        "WITH picked AS (SELECT id FROM jobs WHERE kind = %s AND status = ANY(%s::text[]) AND next_run_at <= %s "
        " ORDER BY id LIMIT %s FOR UPDATE SKIP LOCKED), "
        "claimed AS (UPDATE jobs SET status = 'running', next_run_at = %s, updated_at = %s FROM picked "
        " WHERE jobs.id = picked.id RETURNING jobs.id, jobs.target, jobs.attempts) "
        "SELECT id, target, attempts FROM claimed ORDER BY id",
        (kind, _statuses(statuses), now, _limit(limit), lease_until, now))


async def release(conn: Any, job_ids: Sequence[int], now: str) -> int:
    """Hand claimed (``running``) jobs back, due at once, no attempt counted; returns how many."""
    cur = await conn.execute("UPDATE jobs SET status = 'pending', next_run_at = %s, updated_at = %s "
                             "WHERE status = 'running' AND id = ANY(%s::bigint[])", (now, now, list(job_ids)))
    return cur.rowcount


async def set_attempt(conn: Any, job_id: int, *, status: str, attempts: int, next_run_at: str, error: str,
                      now: str) -> None:
    """Record a failed attempt: the new status (``pending`` to retry, ``failed``), count, due time and error."""
    await conn.execute("UPDATE jobs SET status = %s, attempts = %s, next_run_at = %s, last_error = %s, "
                       "updated_at = %s WHERE id = %s", (status, attempts, next_run_at, error, now, job_id))


async def finish(conn: Any, job_id: int, now: str, *, status: str = "done", next_run_at: str | None = None,
                 error: str | None = None) -> None:
    """End a claimed job as ``status`` (``done``, ``failed``, or ``pending`` to run again at ``next_run_at``,
    default ``now``) with ``error`` as its last error; a job no longer ``running`` (re-queued by a write meanwhile)
    is left as it is."""
    await conn.execute("UPDATE jobs SET status = %s, next_run_at = %s, updated_at = %s, last_error = %s "
                       "WHERE id = %s AND status = 'running'", (status, next_run_at or now, now, error, job_id))


async def postpone(conn: Any, job_id: int, when: str) -> None:
    """Make a ``pending`` job due no sooner than ``when``."""
    await conn.execute("UPDATE jobs SET next_run_at = GREATEST(next_run_at, %s::text) "
                       "WHERE id = %s AND status = 'pending'", (when, job_id))


async def put_back(conn: Any, due: Sequence[tuple[int, str]], now: str) -> None:
    """Return claimed jobs to ``pending`` without counting an attempt, each due at its given time."""
    rows = [(when, now, job_id) for job_id, when in due]
    if rows:
        await conn.executemany("UPDATE jobs SET status = 'pending', next_run_at = %s, updated_at = %s "
                               "WHERE id = %s AND status = 'running'", rows)
