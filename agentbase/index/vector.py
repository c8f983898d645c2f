"""Vector index: ``sqlite-vec`` (vec0, cosine distance) with a numpy brute-force fallback.

The ``embeddings`` table is the source of truth (model id, dimension, vector bytes per entry); ``vec_entries`` is a
derived vec0 table keyed by the entry's rowid. KNN queries take the caller's filter as a ``rowid IN (subquery)``
constraint, which sqlite-vec applies *before* choosing the k nearest, so filtered searches always fill top_k.
"""

from __future__ import annotations

from typing import Any

import numpy as np

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


async def knn(db: Any, engine: str, query: np.ndarray, k: int, filter_sql: str,
              params: list[Any]) -> list[tuple[int, float]]:
    """Return up to ``k`` ``(rowid, cosine_distance)`` pairs nearest to ``query`` among rows passing the filter.

    Args:
        db: a :class:`~agentbase.storage.Database`.
        engine: ``"sqlite-vec"`` or ``"numpy"``.
        query: L2-normalised float32 vector.
        k: number of neighbours.
        filter_sql: a SELECT returning the allowed entry rowids (``SELECT e.rid FROM entries e WHERE ...``).
        params: its parameters.

    Returns:
        Pairs sorted by ascending distance (0 = identical direction, 2 = opposite).
    """
    qbytes = np.asarray(query, dtype=np.float32).tobytes()
    if engine == "sqlite-vec":
        sql = (f"SELECT rowid, distance FROM {VEC_TABLE} WHERE embedding MATCH ? AND k = ? "
               f"AND rowid IN ({filter_sql}) ORDER BY distance")
        rows = await db.fetchall(sql, [qbytes, int(k), *params])
        return [(int(r[0]), float(r[1])) for r in rows]
    rows = await db.fetchall(f"SELECT rid, vector FROM embeddings WHERE rid IN ({filter_sql})", params)
    if not rows:
        return []
    rids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
    dist = 1.0 - matrix @ np.asarray(query, dtype=np.float32)
    top = np.argsort(dist, kind="stable")[:k]
    return [(int(rids[i]), float(dist[i])) for i in top]
