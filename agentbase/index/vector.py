"""Vector leg: the in-process matrix when it may answer, else the storage engine's own exact KNN.

The ``embeddings`` table is the source of truth (model id, dimension, vector bytes per entry); the engine's derived
index (sqlite-vec's vec0 table, or a numpy scan without it: ``db.ops.vectors``) takes the caller's filter *before*
choosing the k nearest, so filtered searches always fill top_k. When the vectors fit the configured memory cap, an
in-process matrix (:mod:`agentbase.index.matrix`) answers the same exact query much faster.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .candidates import rids_passing
from .matrix import VectorMatrix

__all__ = ["VEC_TABLE", "knn"]

VEC_TABLE = "vec_entries"  # the derived vec0 table (storage/sqlite/vectors.py), named by engine.py's reindex


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
    return await db.ops.vectors.nearest(db, engine, query, k, where, params), engine


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
    return matrix.nearest(query, k, await db.ops.retrieval.passing_rids(db, where, params))
