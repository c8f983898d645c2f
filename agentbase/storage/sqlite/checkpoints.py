"""Checkpoint repository: graph-state snapshots, their channel values and pending writes (schema v10).

Every SQL statement about checkpoints lives here. Three tables, none of them entries, so checkpoints never reach
``find()``, the keyword index or the vector index:

- ``checkpoints``: one row per (thread, namespace, checkpoint id) with the serialised snapshot (without its
  channel values), its parent id, metadata as a JSON object (top-level keys are filterable), the channel versions
  it points at (JSON object of version strings) and the ``run_id`` copied out of the metadata.
- ``checkpoint_blobs``: one channel value per (thread, namespace, channel, version), shared by every checkpoint
  of that thread and namespace that points at that version, so an unchanged channel is stored once.
- ``checkpoint_writes``: pending writes per checkpoint and (task id, index).

Values are opaque ``(type, bytes)`` pairs produced by the caller's serializer. Writes go through
``Database.transaction`` (durable, one transaction per call); reads go through the reader connection.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .connection import Database, Writer

__all__ = [
    "copy_thread",
    "delete_checkpoints",
    "delete_runs",
    "delete_threads",
    "get_checkpoint",
    "list_checkpoints",
    "prune_threads",
    "put_checkpoint",
    "put_writes",
]

_COLUMNS = ("c.thread_id, c.checkpoint_ns, c.checkpoint_id, c.parent_checkpoint_id, c.type, c.checkpoint, "
            "c.metadata, c.channel_versions, c.created_at")


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _row_to_dict(row: tuple) -> dict[str, Any]:
    (thread_id, ns, checkpoint_id, parent_id, type_, payload, metadata, versions, created_at) = row
    return {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint_id,
            "parent_checkpoint_id": parent_id, "type": type_, "checkpoint": bytes(payload),
            "metadata": json.loads(metadata), "channel_versions": json.loads(versions), "created_at": created_at}


async def _gc_blobs(conn: Writer, thread_ids: Sequence[str]) -> None:
    """Delete the channel values of ``thread_ids`` that no remaining checkpoint of their namespace points at."""
    for thread_id in thread_ids:
        await conn.execute(
            "DELETE FROM checkpoint_blobs AS b WHERE b.thread_id = ? AND NOT EXISTS ("
            "SELECT 1 FROM checkpoints c, json_each(c.channel_versions) j WHERE c.thread_id = b.thread_id "
            "AND c.checkpoint_ns = b.checkpoint_ns AND j.key = b.channel AND j.value = b.version)", (thread_id,))


async def put_checkpoint(db: Database, *, thread_id: str, checkpoint_ns: str, checkpoint_id: str,
                         parent_checkpoint_id: str | None, type_: str, checkpoint: bytes,
                         metadata: dict[str, Any], channel_versions: dict[str, str], run_id: str | None,
                         blobs: Sequence[tuple[str, str, str, bytes]], created_at: str) -> None:
    """Insert (or replace) one checkpoint and the channel values it introduces, in one transaction.

    ``blobs`` holds ``(channel, version, type, value)``; a value already stored for that channel version is
    replaced. ``channel_versions`` maps channel -> version string (as stored in the blobs).
    """
    async with db.transaction() as conn:
        await conn.execute(
            "INSERT OR REPLACE INTO checkpoints(thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, "
            "checkpoint, metadata, channel_versions, run_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type_, checkpoint, _dumps(metadata),
             _dumps(channel_versions), run_id, created_at))
        if blobs:
            await conn.executemany(
                "INSERT OR REPLACE INTO checkpoint_blobs(thread_id, checkpoint_ns, channel, version, type, value) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [(thread_id, checkpoint_ns, ch, ver, t, v) for ch, ver, t, v in blobs])


async def put_writes(db: Database, *, thread_id: str, checkpoint_ns: str, checkpoint_id: str,
                     writes: Sequence[tuple[str, int, str, str, bytes, str]]) -> None:
    """Store pending writes ``(task_id, idx, channel, type, value, task_path)`` in one transaction.

    A write with ``idx >= 0`` that already exists for (checkpoint, task_id, idx) is kept (a retried task does not
    duplicate its writes); a negative ``idx`` (LangGraph's special channels: error, interrupt, ...) replaces the
    stored one.
    """
    keep = [(thread_id, checkpoint_ns, checkpoint_id, *w) for w in writes if w[1] >= 0]
    replace = [(thread_id, checkpoint_ns, checkpoint_id, *w) for w in writes if w[1] < 0]
    cols = "thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value, task_path"
    async with db.transaction() as conn:
        if keep:
            await conn.executemany(f"INSERT OR IGNORE INTO checkpoint_writes({cols}) VALUES "
                                   f"(?, ?, ?, ?, ?, ?, ?, ?, ?)", keep)
        if replace:
            await conn.executemany(f"INSERT OR REPLACE INTO checkpoint_writes({cols}) VALUES "
                                   f"(?, ?, ?, ?, ?, ?, ?, ?, ?)", replace)


async def _attach(db: Database, record: dict[str, Any]) -> dict[str, Any]:
    """Add ``blobs`` ``{channel: (type, value)}`` and ``writes`` (ordered by task path, task id, index)."""
    key = (record["thread_id"], record["checkpoint_ns"])
    rows = await db.fetchall(
        "SELECT b.channel, b.type, b.value FROM json_each(?) j JOIN checkpoint_blobs b ON b.thread_id = ? "
        "AND b.checkpoint_ns = ? AND b.channel = j.key AND b.version = j.value",
        (_dumps(record["channel_versions"]), *key))
    record["blobs"] = {ch: (t, bytes(v)) for ch, t, v in rows}
    rows = await db.fetchall(
        "SELECT task_id, idx, channel, type, value, task_path FROM checkpoint_writes WHERE thread_id = ? "
        "AND checkpoint_ns = ? AND checkpoint_id = ? ORDER BY task_path, task_id, idx",
        (*key, record["checkpoint_id"]))
    record["writes"] = [(task, idx, ch, t, bytes(v), path) for task, idx, ch, t, v, path in rows]
    return record


async def get_checkpoint(db: Database, thread_id: str, checkpoint_ns: str,
                         checkpoint_id: str | None) -> dict[str, Any] | None:
    """One checkpoint (the newest of the thread and namespace when ``checkpoint_id`` is None) with its channel
    values and writes, or None."""
    if checkpoint_id is None:
        rows = await db.fetchall(
            f"SELECT {_COLUMNS} FROM checkpoints c WHERE c.thread_id = ? AND c.checkpoint_ns = ? "
            f"ORDER BY c.checkpoint_id DESC LIMIT 1", (thread_id, checkpoint_ns))
    else:
        rows = await db.fetchall(
            f"SELECT {_COLUMNS} FROM checkpoints c WHERE c.thread_id = ? AND c.checkpoint_ns = ? "
            f"AND c.checkpoint_id = ?", (thread_id, checkpoint_ns, checkpoint_id))
    return await _attach(db, _row_to_dict(rows[0])) if rows else None


def _scalar_clause(key: str, value: Any) -> tuple[str, list[Any]] | None:
    """SQL for ``metadata[key] == value`` (Python equality) on a scalar value, or None for values SQL cannot
    compare the same way (objects, arrays, integers beyond 64 bits)."""
    each = "SELECT 1 FROM json_each(c.metadata) j WHERE j.key = ?"
    if value is None:  # a missing key also equals None, as in dict.get
        return f"NOT EXISTS ({each} AND j.type != 'null')", [key]
    if isinstance(value, str):
        return f"EXISTS ({each} AND j.type = 'text' AND j.value = ?)", [key, value]
    if isinstance(value, (bool, int, float)) and -(1 << 63) <= value < (1 << 63):
        # JSON true/false read as 1/0, and True == 1 == 1.0 in Python too
        return (f"EXISTS ({each} AND j.type IN ('integer', 'real', 'true', 'false') AND j.value = ?)",
                [key, int(value) if isinstance(value, bool) else value])
    return None


async def list_checkpoints(db: Database, *, thread_id: str | None, checkpoint_ns: str | None,
                           checkpoint_id: str | None, before_id: str | None, metadata_filter: dict[str, Any],
                           limit: int | None) -> list[dict[str, Any]]:
    """Checkpoints newest first (checkpoint id descending, then thread and namespace) with values and writes.

    ``None`` for ``thread_id`` / ``checkpoint_ns`` / ``checkpoint_id`` means any; ``before_id`` keeps ids below
    it; ``metadata_filter`` keeps checkpoints whose metadata equals every given top-level value.
    """
    where, params = ["1"], []
    for column, value in (("thread_id", thread_id), ("checkpoint_ns", checkpoint_ns),
                          ("checkpoint_id", checkpoint_id)):
        if value is not None:
            where.append(f"c.{column} = ?")
            params.append(value)
    if before_id is not None:
        where.append("c.checkpoint_id < ?")
        params.append(before_id)
    rest: dict[str, Any] = {}
    for key, value in metadata_filter.items():
        clause = _scalar_clause(key, value)
        if clause is None:
            rest[key] = value
        else:
            where.append(clause[0])
            params.extend(clause[1])
    sql = (f"SELECT {_COLUMNS} FROM checkpoints c WHERE {' AND '.join(where)} "
           f"ORDER BY c.checkpoint_id DESC, c.thread_id, c.checkpoint_ns")
    if limit is not None and not rest:
        sql += " LIMIT ?"
        params.append(limit)
    out: list[dict[str, Any]] = []
    for row in await db.fetchall(sql, params):
        if limit is not None and len(out) >= limit:
            break
        record = _row_to_dict(row)
        if all(record["metadata"].get(k) == v for k, v in rest.items()):
            out.append(await _attach(db, record))
    return out


async def delete_threads(db: Database, thread_ids: Sequence[str]) -> int:
    """Delete every checkpoint, channel value and write of ``thread_ids``; return the checkpoints deleted."""
    deleted = 0
    async with db.transaction() as conn:
        for thread_id in thread_ids:
            deleted += (await conn.execute("DELETE FROM checkpoints WHERE thread_id = ?", (thread_id,))).rowcount
            await conn.execute("DELETE FROM checkpoint_writes WHERE thread_id = ?", (thread_id,))
            await conn.execute("DELETE FROM checkpoint_blobs WHERE thread_id = ?", (thread_id,))
    return deleted


async def delete_checkpoints(db: Database, thread_id: str, checkpoint_ns: str, checkpoint_ids: Sequence[str]) -> int:
    """Delete these checkpoints of one thread and namespace with their writes and the channel values nothing points
    at any more; return the checkpoints deleted."""
    deleted = 0
    async with db.transaction() as conn:
        for checkpoint_id in checkpoint_ids:
            key = (thread_id, checkpoint_ns, checkpoint_id)
            await conn.execute("DELETE FROM checkpoint_writes WHERE thread_id = ? AND checkpoint_ns = ? "
                               "AND checkpoint_id = ?", key)
            deleted += (await conn.execute("DELETE FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? "
                                           "AND checkpoint_id = ?", key)).rowcount
        await _gc_blobs(conn, [thread_id])
    return deleted


async def delete_runs(db: Database, run_ids: Sequence[str]) -> int:
    """Delete the checkpoints whose metadata ``run_id`` is one of ``run_ids``, with their writes and the channel
    values no other checkpoint points at; return the checkpoints deleted."""
    if not run_ids:
        return 0
    marks = ", ".join("?" for _ in run_ids)
    async with db.transaction() as conn:
        threads = [r[0] for r in await (await conn.execute(
            f"SELECT DISTINCT thread_id FROM checkpoints WHERE run_id IN ({marks})", list(run_ids))).fetchall()]
        await conn.execute(
            f"DELETE FROM checkpoint_writes AS w WHERE EXISTS (SELECT 1 FROM checkpoints c WHERE c.run_id IN "
            f"({marks}) AND c.thread_id = w.thread_id AND c.checkpoint_ns = w.checkpoint_ns "
            f"AND c.checkpoint_id = w.checkpoint_id)", list(run_ids))
        deleted = (await conn.execute(f"DELETE FROM checkpoints WHERE run_id IN ({marks})", list(run_ids))).rowcount
        await _gc_blobs(conn, threads)
    return deleted


async def copy_thread(db: Database, source: str, target: str) -> int:
    """Copy every checkpoint, channel value and write of thread ``source`` to thread ``target`` (same ids; rows
    the target already has under those keys are replaced); return the checkpoints copied."""
    async with db.transaction() as conn:
        copied = (await conn.execute(
            "INSERT OR REPLACE INTO checkpoints(thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, "
            "checkpoint, metadata, channel_versions, run_id, created_at) SELECT ?, checkpoint_ns, checkpoint_id, "
            "parent_checkpoint_id, type, checkpoint, metadata, channel_versions, run_id, created_at "
            "FROM checkpoints WHERE thread_id = ?", (target, source))).rowcount
        await conn.execute(
            "INSERT OR REPLACE INTO checkpoint_blobs(thread_id, checkpoint_ns, channel, version, type, value) "
            "SELECT ?, checkpoint_ns, channel, version, type, value FROM checkpoint_blobs WHERE thread_id = ?",
            (target, source))
        await conn.execute(
            "INSERT OR REPLACE INTO checkpoint_writes(thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, "
            "type, value, task_path) SELECT ?, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value, "
            "task_path FROM checkpoint_writes WHERE thread_id = ?", (target, source))
    return copied


async def prune_threads(db: Database, thread_ids: Sequence[str], *, keep_latest: bool) -> int:
    """Delete all but the newest checkpoint of each namespace of ``thread_ids`` (``keep_latest``) or all of them,
    with the writes of the deleted checkpoints and the channel values nothing points at any more; return the
    checkpoints deleted."""
    if not keep_latest:
        return await delete_threads(db, thread_ids)
    deleted = 0
    async with db.transaction() as conn:
        for thread_id in thread_ids:
            await conn.execute(
                "DELETE FROM checkpoint_writes AS w WHERE w.thread_id = ? AND (w.checkpoint_ns, w.checkpoint_id) "
                "NOT IN (SELECT checkpoint_ns, MAX(checkpoint_id) FROM checkpoints WHERE thread_id = ? "
                "GROUP BY checkpoint_ns)", (thread_id, thread_id))
            deleted += (await conn.execute(
                "DELETE FROM checkpoints AS c WHERE c.thread_id = ? AND c.checkpoint_id < (SELECT "
                "MAX(n.checkpoint_id) FROM checkpoints n WHERE n.thread_id = c.thread_id "
                "AND n.checkpoint_ns = c.checkpoint_ns)", (thread_id,))).rowcount
        await _gc_blobs(conn, thread_ids)
    return deleted
