"""The vector leg of ``find()`` on PostgreSQL: pgvector over ``embeddings.vector``, with an HNSW index (cosine).

The ``embeddings`` row is both the source of truth and the index: there is no derived table to keep in step, so
``upsert`` has nothing to write and ``delete`` removes the row. pgvector indexes need a fixed dimension while the
column holds any, so the HNSW index is built on the expression ``vector::vector(<dims>)`` when the file's
dimension is known (:func:`create_index`, as the SQLite engine creates ``vec_entries``), and queries use the same
expression.

Filters are applied before the cut (contract of ``storage/sqlite/vectors.py``). When at most ``EXACT_MAX_ROWS``
(5,000) entries pass the filter, the search is an exact scan of them (small owners, small databases: the answer equals
the SQLite engine's); above that, an HNSW scan with pgvector's iterative index scan
(``hnsw.iterative_scan = strict_order``, pgvector >= 0.8: the scan goes on until ``k`` rows pass the filter, up to
``hnsw.max_scan_tuples``) and ``hnsw.ef_search`` raised to at least ``4 k`` (https://github.com/pgvector/pgvector,
"Iterative Index Scans"). The in-process matrix is a SQLite-engine detail and is not used here; its read
operations exist for completeness.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from .sqlutil import lock_key

# Filtered rows up to which the leg scans exactly: an exact scan cost about 2 us per 384-d row here (21 ms for
# 10k rows, EXPLAIN ANALYZE), so up to 5,000 rows it stays near 10 ms and equals SQLite's answer; above, HNSW.
EXACT_MAX_ROWS = 5_000
# Filters that passed more than EXACT_MAX_ROWS rows recently: (database, filter SQL, params) -> monotonic time seen.
# Counting up to the bound reads 5,001 rows (about 10 ms at 100k entries), so a filter seen large goes straight to
# HNSW for LARGE_FILTER_TTL_S seconds. A filter that shrank meanwhile still gets a full answer: an HNSW scan short
# of k is filled by the exact scan (nearest()).
LARGE_FILTER_TTL_S = 60.0
_large_filters: dict[tuple[str, str, str], float] = {}  # bounded: cleared past 1,000 keys
HNSW_MAX_DIMS = 2_000  # pgvector's HNSW indexes `vector` columns of at most 2,000 dimensions; above, exact scans
_INDEX = "ix_embeddings_hnsw"


def _vec(value: Any) -> np.ndarray:
    """A stored pgvector value (``pgvector.Vector``, numpy array or text) as float32."""
    if hasattr(value, "to_numpy"):
        return np.asarray(value.to_numpy(), dtype=np.float32)
    if isinstance(value, str):
        return np.asarray([float(x) for x in value.strip("[]").split(",") if x], dtype=np.float32)
    return np.asarray(value, dtype=np.float32)


async def create_index(conn: Any, dims: int) -> None:
    """Create the HNSW index (cosine) for ``dims``-dimensional vectors if missing (one per database: the file's
    dimension is fixed, as on SQLite).

    ``CREATE INDEX`` takes a SHARE lock on ``embeddings`` even when the index exists, which would make every
    embedding batch queue behind (and deadlock with) other hosts' writes; so the index is looked up first, and
    only created, under an advisory lock, when it is missing. The build has no statement timeout. Vectors of more
    than :data:`HNSW_MAX_DIMS` dimensions get no index (pgvector's limit) and are always searched exactly."""
    if dims > HNSW_MAX_DIMS:
        return  # no index: nearest() scans exactly (docs/scale_out.md)
    if await conn.fetchone("SELECT to_regclass(%s) IS NOT NULL", (_INDEX,)) == (True,):
        return
    await lock_key(conn, "agentbase.vector-index")
    # a build over many stored vectors outlasts any query timeout (67k 384-d vectors: 33 s here; pgvector builds
    # faster when the graph fits in maintenance_work_mem, docs/scale_out.md)
    await conn.execute("SET LOCAL statement_timeout = 0")
    await conn.execute(f"CREATE INDEX IF NOT EXISTS {_INDEX} ON embeddings USING hnsw "
                       f"((vector::vector({int(dims)})) vector_cosine_ops)")


async def rebuild_index(conn: Any, dims: int) -> None:
    """Drop the HNSW index and build it again from the stored vectors (as after a bulk load: one build is faster
    and gives a better graph than row-by-row inserts). The build has no statement timeout and holds a SHARE lock
    on ``embeddings`` (writes of vectors wait; reads go on).

    Args:
        conn: the ``Writer`` of an open transaction. dims: the vector dimension.
    """
    await lock_key(conn, "agentbase.vector-index")
    await conn.execute(f"DROP INDEX IF EXISTS {_INDEX}")
    await create_index(conn, dims)


async def upsert(conn: Any, engine: str, rid: int, vector: Sequence[float] | np.ndarray) -> None:
    """Nothing to write: the ``embeddings`` row (written by the caller) is indexed by HNSW itself."""
    return None


async def delete(conn: Any, engine: str, rid: int) -> None:
    """Remove entry ``rid``'s vector (its ``embeddings`` row, and so its index entry)."""
    await conn.execute("DELETE FROM embeddings WHERE rid = %s", (rid,))


async def nearest(c: Any, engine: str, query: Sequence[float] | np.ndarray, k: int, where_sql: str,
                  params: Sequence[Any]) -> list[tuple[int, float]]:
    """The ``k`` entries nearest to ``query`` (cosine distance) among those passing the filter; ``[(rid,
    distance)]`` ascending, ties by rid. As the SQLite engine's ``vectors.nearest`` (exact up to
    ``EXACT_MAX_ROWS`` filtered rows, HNSW with iterative scan above).

    One statement counts the filtered rows (up to the bound), checks that the HNSW index exists for this
    dimension, and, when either says so, returns the exact answer; only a larger filtered set costs a second
    statement, the HNSW scan, and a third, exact one when that scan returns fewer than ``k`` rows.

    Raises:
        StorageError: the query failed.
    """
    q = np.asarray(query, dtype=np.float32)
    dims, k = int(q.shape[0]), int(k)
    if k <= 0:
        return []
    qtext = "[" + ",".join(repr(float(x)) for x in q) + "]"
    # remembered per database (a reader: a writer's transaction always counts)
    key = (str(c.url), f"{dims}:{where_sql}", repr(list(params))) if hasattr(c, "url") else None
    seen = _large_filters.get(key) if key else None
    if seen is not None and time.monotonic() - seen < LARGE_FILTER_TTL_S:
        return await _hnsw_filled(c, qtext, dims, k, where_sql, list(params))
    rows = await c.fetchall(
        f"WITH f AS MATERIALIZED (SELECT e.rid FROM entries e WHERE {where_sql} LIMIT {EXACT_MAX_ROWS + 1}), "
        f"n AS (SELECT count(*) <= {EXACT_MAX_ROWS} OR position(%s IN COALESCE(pg_get_indexdef(to_regclass(%s)), "
        "'')) = 0 AS exact FROM f) "
        "SELECT n.exact, x.rid, x.d FROM n LEFT JOIN LATERAL (SELECT v.rid, (v.vector <=> %s::vector) AS d "
        "FROM f JOIN embeddings v ON v.rid = f.rid WHERE n.exact AND v.dims = %s ORDER BY d, v.rid LIMIT %s) x "
        "ON true", [*params, f"vector({dims})", _INDEX, qtext, dims, k])
    if rows[0][0]:
        return [(int(r[1]), float(r[2])) for r in rows if r[1] is not None]
    if key is not None:
        if len(_large_filters) > 1000:
            _large_filters.clear()
        _large_filters[key] = time.monotonic()
    return await _hnsw_filled(c, qtext, dims, k, where_sql, list(params))


async def _hnsw_filled(c: Any, qtext: str, dims: int, k: int, where_sql: str,
                       params: list[Any]) -> list[tuple[int, float]]:
    rows = await _hnsw(c, qtext, dims, k, where_sql, params)
    if len(rows) < k:
        # The graph gave up before k rows passed the filter (hnsw.max_scan_tuples, or a graph that near-duplicate
        # vectors left poorly connected): the exact scan fills k, at the cost of reading every filtered vector.
        rows = await c.fetchall(
            f"SELECT v.rid, (v.vector <=> %s::vector) AS d FROM entries e JOIN embeddings v ON v.rid = e.rid "
            f"WHERE v.dims = %s AND {where_sql} ORDER BY d, v.rid LIMIT %s", [qtext, dims, *params, k])
    return sorted(((int(r[0]), float(r[1])) for r in rows), key=lambda p: (p[1], p[0]))


async def _hnsw(c: Any, qtext: str, dims: int, k: int, where_sql: str, params: list[Any]) -> list[tuple]:
    sql = (f"SELECT v.rid, (v.vector::vector({dims}) <=> %s::vector({dims})) AS d FROM embeddings v "
           f"JOIN entries e ON e.rid = v.rid WHERE {where_sql} "
           f"ORDER BY v.vector::vector({dims}) <=> %s::vector({dims}) LIMIT %s")
    settings = {"hnsw.iterative_scan": "strict_order", "hnsw.ef_search": str(max(40, min(1000, 4 * k)))}
    return await c.fetchall_configured(settings, sql, [qtext, *params, qtext, k])


# ------------------------------------------------------------- the in-process matrix's reads (SQLite detail)
async def log_since(c: Any, seq: int) -> list[tuple[int, int]]:
    """No vector log on this engine: always ``[]``."""
    return []


async def log_first_seq(c: Any) -> int | None:
    """No vector log on this engine: always None."""
    return None


async def log_last_seq(c: Any) -> int:
    """No vector log on this engine: always 0."""
    return 0


async def vectors_of(c: Any, rids: Sequence[int]) -> list[tuple[int, bytes]]:
    """The stored vectors of these rids as ``(rid, float32 bytes)`` (as the SQLite engine returns them)."""
    rows = await c.fetchall("SELECT rid, vector FROM embeddings WHERE rid = ANY(%s)", (list(map(int, rids)),))
    return [(int(r[0]), _vec(r[1]).tobytes()) for r in rows]


async def file_dims(c: Any) -> int:
    """The database's vector dimension: ``meta.vector_dims``, else the largest stored, else 0."""
    row = await c.fetchone("SELECT COALESCE((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'vector_dims'), "
                           "(SELECT MAX(dims) FROM embeddings), 0)")
    return int(row[0]) if row else 0


async def count_of_dims(c: Any, dims: int) -> int:
    """How many stored vectors have ``dims`` values."""
    row = await c.fetchone("SELECT COUNT(*) FROM embeddings WHERE dims = %s", (dims,))
    return int(row[0]) if row else 0


async def vectors_of_dims(c: Any, dims: int) -> list[tuple[int, bytes]]:
    """Every stored vector of ``dims`` values, as ``(rid, float32 bytes)``."""
    rows = await c.fetchall("SELECT rid, vector FROM embeddings WHERE dims = %s", (dims,))
    return [(int(r[0]), _vec(r[1]).tobytes()) for r in rows]
