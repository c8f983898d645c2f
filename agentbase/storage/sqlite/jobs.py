"""Job-queue operations on SQLite: one row per (kind, target) in ``jobs``, claimed with a lease.

SQLite has one writer at a time, so a claim is one ``UPDATE ... RETURNING`` inside the writer's transaction; an
engine with concurrent writers claims with ``FOR UPDATE SKIP LOCKED`` instead. Times are DB time text (UTC).
Statuses: ``pending``, ``running`` (claimed; ``next_run_at`` is the lease's end), ``deferred``, ``done``, ``failed``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

_STATUSES = frozenset({"pending", "running", "deferred", "done", "failed"})


def _in(statuses: Sequence[str]) -> str:
    bad = set(statuses) - _STATUSES
    if bad or not statuses:  # statuses are the workers' constants, never user input; checked all the same
        raise ValueError(f"unknown job statuses {sorted(bad)}")
    return ", ".join(f"'{s}'" for s in statuses)


async def open_count(c: Any, kind: str) -> int:
    """Jobs of ``kind`` not yet done or failed (``pending`` or ``running``)."""
    row = await c.fetchone("SELECT COUNT(*) FROM jobs WHERE kind = ? AND status IN ('pending', 'running')", (kind,))
    return int(row[0])


async def counts_by_status(c: Any) -> dict[str, int]:
    """``{status: number of jobs}`` over every kind."""
    return dict(await c.fetchall("SELECT status, COUNT(*) FROM jobs GROUP BY status"))


async def any_due(c: Any, kind: str, statuses: Sequence[str], now: str) -> bool:
    """Whether a job of ``kind`` in one of ``statuses`` is due at ``now`` (a read: no write lock for nothing)."""
    return await c.fetchone(f"SELECT 1 FROM jobs WHERE status IN ({_in(statuses)}) AND next_run_at <= ? "
                            "AND kind = ? LIMIT 1", (now, kind)) is not None


async def claim(conn: Any, kind: str, statuses: Sequence[str], now: str, lease_until: str,
                limit: int) -> list[tuple]:
    """Mark up to ``limit`` due jobs of ``kind`` (oldest first) ``running`` until ``lease_until``; returns their
    ``(id, target, attempts)``."""
    return await conn.fetchall(
        "UPDATE jobs SET status = 'running', next_run_at = ?, updated_at = ? WHERE id IN ("
        f" SELECT id FROM jobs WHERE kind = ? AND status IN ({_in(statuses)})"
        " AND next_run_at <= ? ORDER BY id LIMIT ?) RETURNING id, target, attempts",
        (lease_until, now, kind, now, limit))


async def release(conn: Any, job_ids: Sequence[int], now: str) -> int:
    """Hand claimed (``running``) jobs back, due at once, no attempt counted; returns how many."""
    cur = await conn.execute(
        f"UPDATE jobs SET status = 'pending', next_run_at = ?, updated_at = ? WHERE status = 'running' "
        f"AND id IN ({','.join('?' * len(job_ids))})", [now, now, *job_ids])
    return cur.rowcount


async def set_attempt(conn: Any, job_id: int, *, status: str, attempts: int, next_run_at: str, error: str,
                      now: str) -> None:
    """Record a failed attempt: the new status (``pending`` to retry, ``failed``), count, due time and error."""
    await conn.execute("UPDATE jobs SET status = ?, attempts = ?, next_run_at = ?, last_error = ?, updated_at = ? "
                       "WHERE id = ?", (status, attempts, next_run_at, error, now, job_id))


async def finish(conn: Any, job_id: int, now: str, *, status: str = "done", next_run_at: str | None = None,
                 error: str | None = None) -> None:
    """End a claimed job as ``status`` (``done``, ``failed``, or ``pending`` to run again at ``next_run_at``,
    default ``now``) with ``error`` as its last error; a job no longer ``running`` (re-queued by a write meanwhile)
    is left as it is."""
    await conn.execute("UPDATE jobs SET status = ?, next_run_at = ?, updated_at = ?, last_error = ? "
                       "WHERE id = ? AND status = 'running'", (status, next_run_at or now, now, error, job_id))


async def postpone(conn: Any, job_id: int, when: str) -> None:
    """Make a ``pending`` job due no sooner than ``when``."""
    await conn.execute("UPDATE jobs SET next_run_at = MAX(next_run_at, ?) WHERE id = ? AND status = 'pending'",
                       (when, job_id))


async def put_back(conn: Any, due: Sequence[tuple[int, str]], now: str) -> None:
    """Return claimed jobs to ``pending`` without counting an attempt, each due at its given time."""
    await conn.executemany("UPDATE jobs SET status = 'pending', next_run_at = ?, updated_at = ? "
                           "WHERE id = ? AND status = 'running'", [(when, now, job_id) for job_id, when in due])


async def enqueue(conn: Any, kind: str, target: str, now: str) -> None:
    """Queue a job of ``kind`` for ``target`` due at ``now``, or re-arm the existing one (one row per (kind,
    target): back to ``pending``, attempts and error cleared)."""
    await conn.execute(
        "INSERT INTO jobs(kind, target, status, attempts, next_run_at, created_at, updated_at) "
        "VALUES (?, ?, 'pending', 0, ?, ?, ?) "
        "ON CONFLICT(kind, target) DO UPDATE SET status='pending', attempts=0, next_run_at=excluded.next_run_at, "
        "last_error=NULL, updated_at=excluded.updated_at",
        (kind, target, now, now, now),
    )
