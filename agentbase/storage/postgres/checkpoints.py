"""Checkpoint repository on PostgreSQL: graph-state snapshots, their channel values and pending writes.

The same functions, arguments and return shapes as :mod:`agentbase.storage.sqlite.checkpoints` (read its docstring
for the three tables). Snapshots and values are ``BYTEA`` here (``BLOB`` there); psycopg binds ``bytes`` as
``bytea`` and reads it back as ``bytes``, so every value round-trips byte for byte.

What differs from the SQLite engine, and why:

- ``INSERT OR REPLACE`` / ``INSERT OR IGNORE`` become ``ON CONFLICT (primary key) DO UPDATE`` / ``DO NOTHING``,
  so two hosts writing the same checkpoint or the same pending write at once end with one row, never a
  unique-violation error (which would abort the whole PostgreSQL transaction).
- JSON columns stay TEXT (the SQLite engine's format); queries that look inside them cast to ``jsonb``
  (``jsonb_each_text`` for the channel versions, ``json`` for metadata filters). PostgreSQL's JSON functions
  refuse the ``\\u0000`` escape a NUL in a stored string is written as, so rows holding one skip the SQL
  comparison and are compared in Python (every candidate is checked in Python anyway, and a ``limit`` reads
  further pages when Python turned candidates down).
  A metadata number filter compares as ``numeric`` against the value's ``repr`` (the same decimal text
  ``json.dumps`` writes), so ``1 == 1.0 == True`` as in Python and no float is rounded on the way.
- A channel value is stored once per version and shared by later checkpoints, so deleting a checkpoint collects
  the values nothing points at. With several hosts, a checkpoint another host is writing (not yet committed,
  so invisible) may point at a value only a deleted checkpoint also pointed at: collected, it would be lost.
  So a write (``put_checkpoint``, ``copy_thread``) holds a shared transaction-level advisory lock on its thread
  (:data:`CHECKPOINT_LOCK`, ``hashtext(thread_id)``) and every delete holds it exclusively, taken first and in
  sorted order: deletes wait for the writes in flight and see them, writes of other threads never wait. SQLite
  gets the same from its single writer.
- Channel values and writes are written in key order, so two hosts writing overlapping keys lock them in the
  same order and cannot deadlock.
- Checkpoint ids and thread/namespace names are ordered and compared with ``COLLATE "C"`` (byte order, which is
  code point order in UTF-8): SQLite's ``BINARY`` order, whatever collation the database was created with, so
  "newest" and ``before_id`` pick the same checkpoints on both engines.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the annotations name this engine's connections as the SQLite module names its own
    from .connection import PgDatabase as Database
    from .connection import PgWriter as Writer

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
_CP_COLS = ("thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata, "
            "channel_versions, run_id, created_at")
_CP_UPDATE = ("parent_checkpoint_id = EXCLUDED.parent_checkpoint_id, type = EXCLUDED.type, checkpoint = "
              "EXCLUDED.checkpoint, metadata = EXCLUDED.metadata, channel_versions = EXCLUDED.channel_versions, "
              "run_id = EXCLUDED.run_id, created_at = EXCLUDED.created_at")
_BLOB_UPSERT = ("ON CONFLICT (thread_id, checkpoint_ns, channel, version) DO UPDATE SET type = EXCLUDED.type, "
                "value = EXCLUDED.value")
_WRITE_COLS = "thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value, task_path"
_WRITE_UPSERT = ("ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx) DO UPDATE SET channel = "
                 "EXCLUDED.channel, type = EXCLUDED.type, value = EXCLUDED.value, task_path = EXCLUDED.task_path")
_C = 'COLLATE "C"'


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _row_to_dict(row: tuple) -> dict[str, Any]:
    (thread_id, ns, checkpoint_id, parent_id, type_, payload, metadata, versions, created_at) = row
    return {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint_id,
            "parent_checkpoint_id": parent_id, "type": type_, "checkpoint": bytes(payload),
            "metadata": json.loads(metadata), "channel_versions": json.loads(versions), "created_at": created_at}


#: First key of the transaction-level advisory locks on a thread's checkpoints ("agbc"; the second key is
#: ``hashtext(thread_id)``). Writers take it shared, deleters exclusive: see the module docstring.
CHECKPOINT_LOCK = 0x61676263


async def _lock_threads(conn: Writer, thread_ids: Sequence[str], *, shared: bool) -> None:
    """Hold the advisory lock of each thread until COMMIT, in sorted order (two deleters cannot deadlock)."""
    fn = "pg_advisory_xact_lock_shared" if shared else "pg_advisory_xact_lock"
    for thread_id in sorted(set(thread_ids)):
        await conn.execute(f"SELECT {fn}(%s, hashtext(%s))", (CHECKPOINT_LOCK, thread_id))


async def _gc_blobs(conn: Writer, thread_ids: Sequence[str]) -> None:
    """Delete the channel values of ``thread_ids`` that no remaining checkpoint of their namespace points at."""
    if not thread_ids:
        return
    await conn.execute(
        "DELETE FROM checkpoint_blobs AS b WHERE b.thread_id = ANY(%s) AND NOT EXISTS ("
        "SELECT 1 FROM checkpoints c, jsonb_each_text(c.channel_versions::jsonb) j WHERE c.thread_id = b.thread_id "
        "AND c.checkpoint_ns = b.checkpoint_ns AND j.key = b.channel AND j.value = b.version)", (list(thread_ids),))


async def put_checkpoint(db: Database, *, thread_id: str, checkpoint_ns: str, checkpoint_id: str,
                         parent_checkpoint_id: str | None, type_: str, checkpoint: bytes,
                         metadata: dict[str, Any], channel_versions: dict[str, str], run_id: str | None,
                         blobs: Sequence[tuple[str, str, str, bytes]], created_at: str) -> None:
    """Insert (or replace) one checkpoint and the channel values it introduces, in one transaction.

    Args:
        db: the :class:`~agentbase.storage.postgres.connection.PgDatabase` (this op opens its transaction).
        blobs: ``(channel, version, type, value)``; a value already stored for that channel version is replaced.
        channel_versions: channel -> version string (as stored in the blobs).
        created_at: DB time text (UTC).

    Raises:
        StorageError: the driver failed (the transaction is rolled back).
    """
    async with db.transaction() as conn:
        await _lock_threads(conn, [thread_id], shared=True)
        await conn.execute(
            f"INSERT INTO checkpoints({_CP_COLS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
            f"ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET {_CP_UPDATE}",
            (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type_, bytes(checkpoint),
             _dumps(metadata), _dumps(channel_versions), run_id, created_at))
        if blobs:
            await conn.executemany(
                "INSERT INTO checkpoint_blobs(thread_id, checkpoint_ns, channel, version, type, value) "
                f"VALUES (%s, %s, %s, %s, %s, %s) {_BLOB_UPSERT}",
                sorted(((thread_id, checkpoint_ns, ch, ver, t, bytes(v)) for ch, ver, t, v in blobs),
                       key=lambda r: (r[2], r[3])))  # stable: of two values for one key the last still wins


async def put_writes(db: Database, *, thread_id: str, checkpoint_ns: str, checkpoint_id: str,
                     writes: Sequence[tuple[str, int, str, str, bytes, str]]) -> None:
    """Store pending writes ``(task_id, idx, channel, type, value, task_path)`` in one transaction.

    A write with ``idx >= 0`` that already exists for (checkpoint, task_id, idx) is kept (``ON CONFLICT DO
    NOTHING``: a retried task does not duplicate its writes); a negative ``idx`` (LangGraph's special channels:
    error, interrupt, ...) replaces the stored one.

    Raises:
        StorageError: the driver failed (the transaction is rolled back).
    """
    # rows in key order, so concurrent writers lock the same keys in the same order (no deadlock)
    keep = sorted(((thread_id, checkpoint_ns, checkpoint_id, w[0], w[1], w[2], w[3], bytes(w[4]), w[5])
                   for w in writes if w[1] >= 0), key=lambda r: (r[3], r[4]))
    replace = sorted(((thread_id, checkpoint_ns, checkpoint_id, w[0], w[1], w[2], w[3], bytes(w[4]), w[5])
                      for w in writes if w[1] < 0), key=lambda r: (r[3], r[4]))
    marks = ", ".join(["%s"] * 9)
    async with db.transaction() as conn:
        if keep:
            await conn.executemany(f"INSERT INTO checkpoint_writes({_WRITE_COLS}) VALUES ({marks}) "
                                   "ON CONFLICT DO NOTHING", keep)
        if replace:
            await conn.executemany(f"INSERT INTO checkpoint_writes({_WRITE_COLS}) VALUES ({marks}) {_WRITE_UPSERT}",
                                   replace)


async def _attach(db: Database, record: dict[str, Any]) -> dict[str, Any]:
    """Add ``blobs`` ``{channel: (type, value)}`` and ``writes`` (ordered by task path, task id, index)."""
    key = (record["thread_id"], record["checkpoint_ns"])
    rows = await db.fetchall(
        "SELECT b.channel, b.type, b.value FROM jsonb_each_text(%s::jsonb) j JOIN checkpoint_blobs b "
        "ON b.thread_id = %s AND b.checkpoint_ns = %s AND b.channel = j.key AND b.version = j.value",
        (_dumps(record["channel_versions"]), *key))
    record["blobs"] = {ch: (t, bytes(v)) for ch, t, v in rows}
    rows = await db.fetchall(
        "SELECT task_id, idx, channel, type, value, task_path FROM checkpoint_writes WHERE thread_id = %s "
        f"AND checkpoint_ns = %s AND checkpoint_id = %s ORDER BY task_path {_C}, task_id {_C}, idx",
        (*key, record["checkpoint_id"]))
    record["writes"] = [(task, idx, ch, t, bytes(v), path) for task, idx, ch, t, v, path in rows]
    return record


async def get_checkpoint(db: Database, thread_id: str, checkpoint_ns: str,
                         checkpoint_id: str | None) -> dict[str, Any] | None:
    """One checkpoint (the newest, by checkpoint id in byte order, of the thread and namespace when
    ``checkpoint_id`` is None) with its channel values and writes, or None.

    Returns:
        ``{thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint (bytes), metadata
        (dict), channel_versions (dict), created_at, blobs {channel: (type, bytes)}, writes [(task_id, idx,
        channel, type, bytes, task_path)]}`` or None.
    """
    if checkpoint_id is None:
        rows = await db.fetchall(
            f"SELECT {_COLUMNS} FROM checkpoints c WHERE c.thread_id = %s AND c.checkpoint_ns = %s "
            f"ORDER BY c.checkpoint_id {_C} DESC LIMIT 1", (thread_id, checkpoint_ns))
    else:
        rows = await db.fetchall(
            f"SELECT {_COLUMNS} FROM checkpoints c WHERE c.thread_id = %s AND c.checkpoint_ns = %s "
            f"AND c.checkpoint_id = %s", (thread_id, checkpoint_ns, checkpoint_id))
    return await _attach(db, _row_to_dict(rows[0])) if rows else None


def _scalar_clause(key: str, value: Any) -> tuple[str, list[Any]] | None:
    """SQL for ``metadata[key] == value`` (Python equality) on a scalar value, or None for values SQL cannot
    compare the same way (objects, arrays, integers beyond 64 bits, NaN and infinities).

    The metadata text is read as ``json`` (whose ``->`` gives the value's text as stored); a string compares as
    its JSON text, which is exact because ``json.dumps`` with this module's settings wrote the column.
    """
    m = "(c.metadata::json -> %s)"
    if value is None:  # a missing key also equals None, as in dict.get
        return f"COALESCE(json_typeof{m}, 'null') = 'null'", [key]
    if isinstance(value, str):
        return f"({m}::text = %s)", [key, _dumps(value)]
    if isinstance(value, (bool, int, float)) and -(1 << 63) <= value < (1 << 63):
        if isinstance(value, float) and not math.isfinite(value):
            return None
        # JSON true/false count as 1/0, and True == 1 == 1.0 in Python too; numeric compares decimals exactly
        # (the parameter is the value's repr, the text json.dumps writes)
        number = str(int(value)) if isinstance(value, (bool, int)) else repr(value)
        return (f"(CASE json_typeof{m} WHEN 'number' THEN ({m}::text)::numeric "
                f"WHEN 'boolean' THEN CASE WHEN {m}::text = 'true' THEN 1 ELSE 0 END::numeric "
                f"END) = %s::numeric", [key, key, key, number])
    return None


# PostgreSQL's JSON functions refuse the \u0000 escape (a NUL in a stored string): such rows skip the SQL
# comparison (CASE evaluates only the branch it takes) and are compared in Python like every other row
_NUL_ESCAPE = "\\u0000"


async def list_checkpoints(db: Database, *, thread_id: str | None, checkpoint_ns: str | None,
                           checkpoint_id: str | None, before_id: str | None, metadata_filter: dict[str, Any],
                           limit: int | None) -> list[dict[str, Any]]:
    """Checkpoints newest first (checkpoint id descending, then thread and namespace, byte order) with values and
    writes (the dicts :func:`get_checkpoint` returns).

    ``None`` for ``thread_id`` / ``checkpoint_ns`` / ``checkpoint_id`` means any; ``before_id`` keeps ids below
    it; ``metadata_filter`` keeps checkpoints whose metadata equals every given top-level value (Python equality:
    scalars are narrowed in SQL, and every candidate row is checked in Python).
    """
    where, params = ["TRUE"], []
    for column, value in (("thread_id", thread_id), ("checkpoint_ns", checkpoint_ns),
                          ("checkpoint_id", checkpoint_id)):
        if value is not None:
            where.append(f"c.{column} = %s")
            params.append(value)
    if before_id is not None:
        where.append(f"c.checkpoint_id {_C} < %s")
        params.append(before_id)
    clauses, clause_params, exact = [], [], True
    for key, value in metadata_filter.items():
        clause = _scalar_clause(key, value)
        if clause is None:
            exact = False
        else:
            clauses.append(clause[0])
            clause_params.extend(clause[1])
    if clauses:
        where.append(f"CASE WHEN strpos(c.metadata, %s) > 0 THEN TRUE ELSE ({' AND '.join(clauses)}) END")
        params += [_NUL_ESCAPE, *clause_params]
    sql = (f"SELECT {_COLUMNS} FROM checkpoints c WHERE {' AND '.join(where)} "
           f"ORDER BY c.checkpoint_id {_C} DESC, c.thread_id {_C}, c.checkpoint_ns {_C}")
    page = limit if limit is not None and exact else None
    out: list[dict[str, Any]] = []
    offset = 0
    while True:
        if page is None:
            rows = await db.fetchall(sql, params)
        else:  # a page of candidates; another page only where Python turned some down
            rows = await db.fetchall(sql + " LIMIT %s OFFSET %s", [*params, page, offset])
        for row in rows:
            if limit is not None and len(out) >= limit:
                break
            record = _row_to_dict(row)
            if all(record["metadata"].get(k) == v for k, v in metadata_filter.items()):
                out.append(await _attach(db, record))
        if page is None or len(rows) < page or len(out) >= limit:
            return out
        offset += len(rows)


async def delete_threads(db: Database, thread_ids: Sequence[str]) -> int:
    """Delete every checkpoint, channel value and write of ``thread_ids``; return the checkpoints deleted."""
    ids = list(thread_ids)
    if not ids:
        return 0
    async with db.transaction() as conn:
        await _lock_threads(conn, ids, shared=False)
        deleted = (await conn.execute("DELETE FROM checkpoints WHERE thread_id = ANY(%s)", (ids,))).rowcount
        await conn.execute("DELETE FROM checkpoint_writes WHERE thread_id = ANY(%s)", (ids,))
        await conn.execute("DELETE FROM checkpoint_blobs WHERE thread_id = ANY(%s)", (ids,))
    return deleted


async def delete_checkpoints(db: Database, thread_id: str, checkpoint_ns: str, checkpoint_ids: Sequence[str]) -> int:
    """Delete these checkpoints of one thread and namespace with their writes and the channel values nothing points
    at any more; return the checkpoints deleted."""
    ids = list(checkpoint_ids)
    async with db.transaction() as conn:
        await _lock_threads(conn, [thread_id], shared=False)
        await conn.execute("DELETE FROM checkpoint_writes WHERE thread_id = %s AND checkpoint_ns = %s "
                           "AND checkpoint_id = ANY(%s)", (thread_id, checkpoint_ns, ids))
        deleted = (await conn.execute("DELETE FROM checkpoints WHERE thread_id = %s AND checkpoint_ns = %s "
                                      "AND checkpoint_id = ANY(%s)", (thread_id, checkpoint_ns, ids))).rowcount
        await _gc_blobs(conn, [thread_id])
    return deleted


async def delete_runs(db: Database, run_ids: Sequence[str]) -> int:
    """Delete the checkpoints whose metadata ``run_id`` is one of ``run_ids``, with their writes and the channel
    values no other checkpoint points at; return the checkpoints deleted."""
    ids = list(run_ids)
    if not ids:
        return 0
    async with db.transaction() as conn:
        threads = [r[0] for r in await conn.fetchall(
            "SELECT DISTINCT thread_id FROM checkpoints WHERE run_id = ANY(%s)", (ids,))]
        await _lock_threads(conn, threads, shared=False)
        rows = await conn.fetchall("DELETE FROM checkpoints WHERE run_id = ANY(%s) "
                                   "RETURNING thread_id, checkpoint_ns, checkpoint_id", (ids,))
        if rows:
            await conn.execute(
                "DELETE FROM checkpoint_writes AS w USING unnest(%s::text[], %s::text[], %s::text[]) AS d(t, n, i) "
                "WHERE w.thread_id = d.t AND w.checkpoint_ns = d.n AND w.checkpoint_id = d.i",
                ([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]))
            late = {r[0] for r in rows} - set(threads)  # a thread that got a checkpoint of these runs meanwhile
            await _lock_threads(conn, sorted(late), shared=False)
            await _gc_blobs(conn, sorted({r[0] for r in rows}))
    return len(rows)


async def copy_thread(db: Database, source: str, target: str) -> int:
    """Copy every checkpoint, channel value and write of thread ``source`` to thread ``target`` (same ids; rows
    the target already has under those keys are replaced); return the checkpoints copied."""
    async with db.transaction() as conn:
        await _lock_threads(conn, [source, target], shared=True)
        copied = (await conn.execute(
            f"INSERT INTO checkpoints({_CP_COLS}) SELECT %s, checkpoint_ns, checkpoint_id, parent_checkpoint_id, "
            "type, checkpoint, metadata, channel_versions, run_id, created_at FROM checkpoints WHERE thread_id = %s "
            f"ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET {_CP_UPDATE}",
            (target, source))).rowcount
        await conn.execute(
            "INSERT INTO checkpoint_blobs(thread_id, checkpoint_ns, channel, version, type, value) "
            f"SELECT %s, checkpoint_ns, channel, version, type, value FROM checkpoint_blobs WHERE thread_id = %s "
            f"{_BLOB_UPSERT}", (target, source))
        await conn.execute(
            f"INSERT INTO checkpoint_writes({_WRITE_COLS}) SELECT %s, checkpoint_ns, checkpoint_id, task_id, idx, "
            f"channel, type, value, task_path FROM checkpoint_writes WHERE thread_id = %s {_WRITE_UPSERT}",
            (target, source))
    return copied


async def prune_threads(db: Database, thread_ids: Sequence[str], *, keep_latest: bool) -> int:
    """Delete all but the newest checkpoint (byte order of ids) of each namespace of ``thread_ids``
    (``keep_latest``) or all of them, with the writes of the deleted checkpoints and the channel values nothing
    points at any more; return the checkpoints deleted."""
    if not keep_latest:
        return await delete_threads(db, thread_ids)
    ids = list(thread_ids)
    if not ids:
        return 0
    async with db.transaction() as conn:
        await _lock_threads(conn, ids, shared=False)
        # the newest checkpoint of each (thread, namespace) now; a checkpoint another host adds meanwhile is newer
        # still and is kept (only ids below the newest seen here are deleted)
        newest = await conn.fetchall(
            "SELECT DISTINCT ON (thread_id, checkpoint_ns) thread_id, checkpoint_ns, checkpoint_id FROM checkpoints "
            f"WHERE thread_id = ANY(%s) ORDER BY thread_id, checkpoint_ns, checkpoint_id {_C} DESC", (ids,))
        deleted = 0
        if newest:
            deleted = (await conn.execute(
                "DELETE FROM checkpoints AS c USING unnest(%s::text[], %s::text[], %s::text[]) AS k(t, n, i) "
                f"WHERE c.thread_id = k.t AND c.checkpoint_ns = k.n AND c.checkpoint_id {_C} < k.i",
                ([r[0] for r in newest], [r[1] for r in newest], [r[2] for r in newest]))).rowcount
        # the writes of every checkpoint gone (and of none: orphans), as the SQLite engine keeps only the newest's
        await conn.execute(
            "DELETE FROM checkpoint_writes AS w WHERE w.thread_id = ANY(%s) AND NOT EXISTS (SELECT 1 FROM "
            "checkpoints c WHERE c.thread_id = w.thread_id AND c.checkpoint_ns = w.checkpoint_ns "
            "AND c.checkpoint_id = w.checkpoint_id)", (ids,))
        await _gc_blobs(conn, ids)
    return deleted
