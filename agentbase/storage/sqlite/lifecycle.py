"""Lifecycle operations on SQLite: recall counts, strength inputs, archive status, and online backups."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...errors import StorageError


async def count_recall(conn: Any, entry_id: str, when: str) -> int:
    """``access_count`` + 1 and ``last_accessed_at`` = ``when``; returns 1, or 0 for an unknown id."""
    cur = await conn.execute("UPDATE entries SET access_count = access_count + 1, last_accessed_at = ? "
                             "WHERE id = ?", (when, entry_id))
    return cur.rowcount


async def recall_rows(c: Any, entry_ids: Sequence[str]) -> list[tuple]:
    """``(id, created_at, last_accessed_at, access_count)`` of these entries (unknown ids are absent)."""
    return await c.fetchall(f"SELECT id, created_at, last_accessed_at, access_count FROM entries WHERE id IN "
                            f"({','.join('?' * len(entry_ids))})", list(entry_ids))


async def decay_candidates(c: Any, context_types: Sequence[str], *, active_only: bool) -> list[tuple]:
    """``(rid, id, created_at, last_accessed_at, access_count, status)`` of every entry not superseded, of these
    context types (empty: all), only active ones when ``active_only``."""
    sql = "SELECT rid, id, created_at, last_accessed_at, access_count, status FROM entries WHERE superseded_by IS NULL"
    params: list[Any] = []
    if context_types:
        sql += f" AND context_type IN ({','.join('?' * len(context_types))})"
        params += list(context_types)
    if active_only:
        sql += " AND status = 'active'"
    return await c.fetchall(sql, params)


async def text_and_status(c: Any, entry_id: str) -> tuple[str, str] | None:
    """``(l2_full, status)`` of the entry, or None."""
    row = await c.fetchone("SELECT l2_full, status FROM entries WHERE id = ?", (entry_id,))
    return (row[0], row[1]) if row else None


async def set_status(conn: Any, entry_id: str, status: str, stamp: str, *, touch: bool) -> None:
    """Set the entry's status and ``updated_at`` (and ``last_accessed_at`` too when ``touch``)."""
    extra = ", last_accessed_at = ?" if touch else ""
    params: list[Any] = [status, stamp] + ([stamp] if touch else []) + [entry_id]
    await conn.execute(f"UPDATE entries SET status = ?, updated_at = ?{extra} WHERE id = ?", params)


def _connect_fn(driver: str) -> Any:
    if driver == "sqlean":
        import sqlean

        return sqlean.connect
    return sqlite3.connect


def backup_file(src_path: Path | str, target: Path, driver: str, busy_timeout_s: float) -> None:
    """Copy the live file to ``target`` with SQLite's online backup API (blocking; run it in a thread): written as
    ``<target>.partial``, checked with ``PRAGMA quick_check``, then renamed, so ``target`` is whole or absent.

    Raises:
        StorageError: the copy fails its integrity check. Driver errors and OSError pass through.
    """
    connect = _connect_fn(driver)
    partial = target.with_name(target.name + ".partial")
    src = connect(os.path.abspath(src_path), timeout=busy_timeout_s)
    try:
        dst = connect(os.path.abspath(partial))
        try:
            src.backup(dst)
            ok = dst.execute("PRAGMA quick_check").fetchone()[0]
            if ok != "ok":
                raise StorageError(f"backup {target} failed its integrity check: {ok}")
        finally:
            dst.close()
    finally:
        src.close()
    partial.replace(target)
