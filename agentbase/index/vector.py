"""Vector index: ``sqlite-vec`` (vec0, cosine distance) with a numpy brute-force fallback.

The ``embeddings`` table is the source of truth (model id, dimension, vector bytes per entry); ``vec_entries`` is a
derived vec0 table keyed by the entry's rowid. KNN queries take the caller's filter as a ``rowid IN (subquery)``
constraint, which sqlite-vec applies *before* choosing the k nearest, so filtered searches always fill top_k.
When the vectors fit the configured memory cap, an in-process matrix (:mod:`agentbase.index.matrix`) answers the
same exact query much faster.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .candidates import rids_passing
from .matrix import VectorMatrix, similarities

__all__ = ["VEC_TABLE", "create_vec_table", "delete_vector", "knn", "upsert_vector"]

VEC_TABLE = "vec_entries"


async def create_vec_table(conn: Any, dims: int) -> None:
    """Create the vec0 table for ``dims``-dimensional float32 vectors (cosine distance) if missing."""
    await conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {VEC_TABLE} USING vec0(embedding float[{int(dims)}] "
        f"distance_metric=cosine)"
    )


async def upsert_vector(conn: Any, engine: str, rid: int, vector: np.ndarray) -> None:
    """Write the derived index row for entry ``rid`` (the ``embeddings`` row is written by the caller)."""
    if engine != "sqlite-vec":
        return
    await conn.execute(f"DELETE FROM {VEC_TABLE} WHERE rowid = ?", (rid,))
    await conn.execute(f"INSERT INTO {VEC_TABLE}(rowid, embedding) VALUES (?, ?)",
                       (rid, np.asarray(vector, dtype=np.float32).tobytes()))


async def delete_vector(conn: Any, engine: str, rid: int) -> None:
    """Remove entry ``rid`` from the derived index and the ``embeddings`` table."""
    await conn.execute("DELETE FROM embeddings WHERE rid = ?", (rid,))
    if engine == "sqlite-vec":
        has_table = await (await conn.execute(
            "SELECT 1 FROM sqlite_master WHERE name = ?", (VEC_TABLE,))).fetchone()
        if has_table:
            await conn.execute(f"DELETE FROM {VEC_TABLE} WHERE rowid = ?", (rid,))


async def knn(db: Any, engine: str, query: np.ndarray, k: int, where: str, params: list[Any],
              matrix: VectorMatrix | None = None) -> tuple[list[tuple[int, float]], str]:
    """Return up to ``k`` ``(rowid, cosine_distance)`` pairs nearest to ``query`` among entries passing a filter.

    Exact search in every case. With ``matrix`` (and the vectors within its memory cap) the in-process matrix
    ranks all rows, and the filter is checked in SQL on the best ``4k`` (at least 256); if fewer than ``k`` pass,
    the scan is repeated over the filter's full row set. Otherwise sqlite-vec's vec0 KNN runs with the filter as a
    ``rowid IN (subquery)`` constraint, or, without sqlite-vec, a numpy scan over the rows read from SQL.

    Args:
        db: a :class:`~agentbase.storage.Database`.
        engine: ``"sqlite-vec"`` or ``"numpy"``.
        query: L2-normalised float32 vector.
        k: number of neighbours.
        where: an SQL condition on ``entries`` aliased ``e`` (e.g. ``e.status = ? AND e.user_id = ?``).
        params: its parameters.
        matrix: the process's :class:`~agentbase.index.matrix.VectorMatrix`, or None.

    Returns:
        (pairs sorted by ascending distance (0 = identical direction, 2 = opposite), the engine that answered:
        ``"memory"``, ``"sqlite-vec"`` or ``"numpy"``).

    Raises:
        StorageError: the queries failed.
    """
    if matrix is not None and await matrix.refresh(db):
        return await _knn_matrix(db, matrix, query, k, where, params), "memory"
    qbytes = np.asarray(query, dtype=np.float32).tobytes()
    filter_sql = f"SELECT e.rid FROM entries e WHERE {where}"
    if engine == "sqlite-vec":
        sql = (f"SELECT rowid, distance FROM {VEC_TABLE} WHERE embedding MATCH ? AND k = ? "
               f"AND rowid IN ({filter_sql}) ORDER BY distance")
        rows = await db.fetchall(sql, [qbytes, int(k), *params])
        # vec0 allows no second sort key: order ties by rowid here, as the in-memory and numpy paths do.
        return sorted(((int(r[0]), float(r[1])) for r in rows), key=lambda p: (p[1], p[0])), engine
    rows = await db.fetchall(f"SELECT rid, vector FROM embeddings WHERE rid IN ({filter_sql})", params)
    if not rows:
        return [], engine
    rids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    mat = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
    dist = 1.0 - similarities(mat, np.asarray(query, dtype=np.float32))
    top = np.lexsort((rids, dist))[:k]
    return [(int(rids[i]), float(dist[i])) for i in top], engine


async def _knn_matrix(db: Any, matrix: VectorMatrix, query: np.ndarray, k: int, where: str,
                      params: list[Any]) -> list[tuple[int, float]]:
    head = matrix.nearest(query, max(4 * k, 256))
    if not head:
        return []
    # Usually every row passes (the filter is the owner and status): check the first k before the rest. A head
    # shorter than k holds every stored row, so all of it passing is the exact answer too.
    first = await rids_passing(db, [rid for rid, _ in head[:k]], where, params)
    if len(first) == min(k, len(head)):
        return head[:k]
    allowed = first | await rids_passing(db, [rid for rid, _ in head[k:]], where, params)
    passed = [pair for pair in head if pair[0] in allowed]
    if len(passed) >= k or len(head) >= matrix.rows:
        return passed[:k]
    # A selective filter: rank the filter's own rows (its rowids come from SQL, typically through an index).
    rows = await db.fetchall(f"SELECT e.rid FROM entries e WHERE {where}", params)
    return matrix.nearest(query, k, [int(r[0]) for r in rows])
