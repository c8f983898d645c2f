"""The vector leg of ``find()`` on SQLite, the derived vector index's writes, and the in-process matrix's reads.

The ``embeddings`` table is the source of truth (model id, dimension, float32 vector bytes per entry rid);
``vec_entries`` is a derived sqlite-vec ``vec0`` table (cosine distance) keyed by the entry's rid, present when
the engine is ``"sqlite-vec"``; with ``"numpy"`` (no sqlite-vec) KNN is a brute-force scan of the filtered rows.
``vector_log`` (schema v4) records every changed embedding rid, for the in-process matrix
(:mod:`agentbase.index.matrix`) of any process to catch up on. Query vectors come in as floats (a numpy array or
a list) and are turned into sqlite-vec's float32 bytes here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...index.matrix import similarities

VEC_TABLE = "vec_entries"
_CHUNK = 500  # bound parameters per IN list


async def create_index(conn: Any, dims: int) -> None:
    """Create the derived vector index for ``dims``-dimensional float32 vectors (cosine distance) if missing.

    Args:
        conn: the ``Writer`` of an open transaction. dims: the vector dimension (a positive int).
    """
    await conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {VEC_TABLE} USING vec0(embedding float[{int(dims)}] "
        f"distance_metric=cosine)"
    )


async def rebuild_index(conn: Any, dims: int) -> None:
    """Build the approximate-neighbour index again from the stored vectors (after a bulk load). Nothing to do here:
    sqlite-vec's ``vec0`` table is an exact, brute-force index kept row by row.

    Args:
        conn: the ``Writer`` of an open transaction. dims: the vector dimension.
    """
    return None


async def upsert(conn: Any, engine: str, rid: int, vector: Sequence[float] | np.ndarray) -> None:
    """Write (replace) entry ``rid``'s row of the derived vector index; the ``embeddings`` row is the caller's.

    Args:
        conn: the ``Writer`` of an open transaction.
        engine: ``"sqlite-vec"`` (writes the vec0 row) or ``"numpy"`` (nothing to write: the scan reads
            ``embeddings``).
        rid: the entry's rid. vector: its float values (stored as float32).
    """
    if engine != "sqlite-vec":
        return
    await conn.execute(f"DELETE FROM {VEC_TABLE} WHERE rowid = ?", (rid,))
    await conn.execute(f"INSERT INTO {VEC_TABLE}(rowid, embedding) VALUES (?, ?)",
                       (rid, np.asarray(vector, dtype=np.float32).tobytes()))


async def delete(conn: Any, engine: str, rid: int) -> None:
    """Remove entry ``rid``'s vector: its ``embeddings`` row and its derived index row (when that table exists).

    Args:
        conn: the ``Writer`` of an open transaction. engine: ``"sqlite-vec"`` or ``"numpy"``. rid: the entry.
    """
    await conn.execute("DELETE FROM embeddings WHERE rid = ?", (rid,))
    if engine == "sqlite-vec":
        has_table = await (await conn.execute(
            "SELECT 1 FROM sqlite_master WHERE name = ?", (VEC_TABLE,))).fetchone()
        if has_table:
            await conn.execute(f"DELETE FROM {VEC_TABLE} WHERE rowid = ?", (rid,))


async def nearest(c: Any, engine: str, query: Sequence[float] | np.ndarray, k: int, where_sql: str,
                  params: Sequence[Any]) -> list[tuple[int, float]]:
    """The vector leg from storage: the ``k`` entries nearest to ``query`` among those passing the filter.

    Contract: exact search; a ranked list of ``(rid, cosine_distance)``, lower = better (0 = same direction,
    2 = opposite), ties by ascending rid, filters applied inside the engine *before* the cut (so a filtered
    search fills ``k`` whenever ``k`` rows pass). sqlite-vec takes the filter as a ``rowid IN (subquery)``
    constraint of its KNN; the numpy fallback scans the filtered rows' vectors.

    Args:
        c: a reader (``Database``) or an open ``Writer``.
        engine: ``"sqlite-vec"`` or ``"numpy"``.
        query: the L2-normalised query vector (floats).
        k: how many neighbours.
        where_sql: the filter on ``entries`` aliased ``e`` (``db.ops.filters.where``); ``params`` its values.

    Returns:
        Up to ``k`` pairs, ascending distance.

    Raises:
        StorageError: the query failed.
    """
    filter_sql = f"SELECT e.rid FROM entries e WHERE {where_sql}"
    if engine == "sqlite-vec":
        qbytes = np.asarray(query, dtype=np.float32).tobytes()
        sql = (f"SELECT rowid, distance FROM {VEC_TABLE} WHERE embedding MATCH ? AND k = ? "
               f"AND rowid IN ({filter_sql}) ORDER BY distance")
        rows = await c.fetchall(sql, [qbytes, int(k), *params])
        # vec0 allows no second sort key: order ties by rowid here, as the in-memory and numpy paths do.
        return sorted(((int(r[0]), float(r[1])) for r in rows), key=lambda p: (p[1], p[0]))
    rows = await c.fetchall(f"SELECT rid, vector FROM embeddings WHERE rid IN ({filter_sql})", list(params))
    if not rows:
        return []
    rids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    mat = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
    dist = 1.0 - similarities(mat, np.asarray(query, dtype=np.float32))
    top = np.lexsort((rids, dist))[:k]
    return [(int(rids[i]), float(dist[i])) for i in top]


# ------------------------------------------------------------------------------- the in-process matrix's reads
async def log_since(c: Any, seq: int) -> list[tuple[int, int]]:
    """The ``vector_log`` rows past ``seq``: ``(seq, rid)`` of each changed embedding, ascending seq."""
    return await c.fetchall("SELECT seq, rid FROM vector_log WHERE seq > ? ORDER BY seq", (seq,))


async def log_first_seq(c: Any) -> int | None:
    """The oldest ``vector_log`` seq still kept (None when the log is empty)."""
    row = await c.fetchone("SELECT MIN(seq) FROM vector_log")
    return None if row is None or row[0] is None else int(row[0])


async def log_last_seq(c: Any) -> int:
    """The newest ``vector_log`` seq (0 when the log is empty)."""
    row = await c.fetchone("SELECT COALESCE(MAX(seq), 0) FROM vector_log")
    return int(row[0]) if row else 0


async def vectors_of(c: Any, rids: Sequence[int]) -> list[tuple[int, bytes]]:
    """The stored vectors of these rids, as ``(rid, float32 bytes)`` (a rid without one is left out; read in
    chunks of 500)."""
    out: list[tuple[int, bytes]] = []
    for start in range(0, len(rids), _CHUNK):
        part = list(rids[start:start + _CHUNK])
        out.extend(await c.fetchall(
            f"SELECT rid, vector FROM embeddings WHERE rid IN ({','.join('?' * len(part))})", part))
    return out


async def file_dims(c: Any) -> int:
    """The file's vector dimension: the one ``meta`` records (a reindex writes it first), else the largest
    stored, else 0."""
    head = await c.fetchone(
        "SELECT COALESCE((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'vector_dims'), "
        "(SELECT MAX(dims) FROM embeddings), 0)")
    return int(head[0]) if head else 0


async def count_of_dims(c: Any, dims: int) -> int:
    """How many stored vectors have ``dims`` values."""
    row = await c.fetchone("SELECT COUNT(*) FROM embeddings WHERE dims = ?", (dims,))
    return int(row[0]) if row else 0


async def vectors_of_dims(c: Any, dims: int) -> list[tuple[int, bytes]]:
    """Every stored vector of ``dims`` values, as ``(rid, float32 bytes)``."""
    return await c.fetchall("SELECT rid, vector FROM embeddings WHERE dims = ?", (dims,))
