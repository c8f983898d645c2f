"""An in-process copy of the stored vectors for exact brute-force KNN in one matrix product.

sqlite-vec scans its vec0 chunks with one distance call per row: about 10 ms per 10k 384-d rows on this machine
(100 ms at 100k, ``python -m benchmarks.perf``). A float32 matrix in memory answers the same exact query with one
matrix-vector product (under 1 ms at 10k, about 7 ms at 100k). The ``embeddings`` table stays the source of
truth; this is a derived cache, like the vec0 table.

Keeping it current across connections and processes: triggers on ``embeddings`` append every inserted, updated or
deleted ``rid`` to ``vector_log`` (schema v4) in the same transaction as the change. Before each query the matrix
reads the log past the last sequence number it applied and re-reads just those rows. The log is read *before* the
rows, so a change committed in between is applied again on the next query (re-reading a row is idempotent). If the
log was pruned past the matrix's position, the matrix reloads completely.

Filters stay exact: the matrix ranks every row, then the caller's filter is checked on the best ``m`` candidates in
SQL; when too few pass, the scan is redone over the filter's full row set (so filtered searches always fill top_k).
"""

from __future__ import annotations

import asyncio
import logging
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from .._perprocess import PerProcess
from ..errors import DimensionMismatchError

__all__ = ["LOG_KEEP", "VectorMatrix", "similarities"]

log = logging.getLogger(__name__)

LOG_KEEP = 200_000  # vector_log rows kept behind the newest; a reader further behind reloads in full
_SPLIT_ROWS = 65_536  # matrices this tall are scored in parallel slices (memory-bound: ~2x on 2 cores at 100k)
_WORKERS = min(4, os.cpu_count() or 1)  # slices scored at once (the pool's size)
_pool = PerProcess(lambda: ThreadPoolExecutor(max_workers=_WORKERS, thread_name_prefix="agentbase-knn"))


def similarities(mat: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Dot products of every row of ``mat`` with ``query`` (cosine similarities for L2-normalised vectors).

    Computed with numpy's own loops (``einsum``), not BLAS: a multi-threaded OpenBLAS call (numpy's default for
    anything above ~24 rows of 384 values) leaves its worker threads busy-waiting afterwards, and on a 2-core
    machine they then take the cores the query embedder needs: the local embedder's ``embed_query`` went from 12 to
    27 ms and a whole 10k-entry ``find()`` from ~24 to ~42 ms (``python -m benchmarks.perf``). Matrices of
    65,536 rows or more are split into slices scored on a small thread pool whose idle threads sleep.

    Args:
        mat: array of shape ``(rows, dims)`` (float32 in the library).
        query: vector of ``dims`` values.

    Returns:
        array of ``rows`` similarities, in the wider of the two dtypes.
    """
    rows = mat.shape[0]
    if rows < _SPLIT_ROWS or _WORKERS < 2:
        return np.einsum("ij,j->i", mat, query)
    out = np.empty(rows, dtype=np.result_type(mat, query))
    bounds = np.linspace(0, rows, _WORKERS + 1).astype(int)

    def part(lo: int, hi: int) -> None:
        np.einsum("ij,j->i", mat[lo:hi], query, out=out[lo:hi])

    for fut in [_pool.get().submit(part, int(lo), int(hi)) for lo, hi in zip(bounds[:-1], bounds[1:])]:
        fut.result()
    return out


class VectorMatrix:
    """Exact in-memory KNN over the ``embeddings`` table of one database file.

    Args:
        max_bytes: the largest matrix this process may hold (float32 rows x dims x 4); above it
            :meth:`refresh` returns False and callers use the on-disk index.

    Attributes:
        rows: live vectors held.
        dims: vector dimension (0 before the first load).
    """

    def __init__(self, max_bytes: int):
        self.max_bytes = int(max_bytes)
        self.dims = 0
        self.rows = 0
        self._seq = -1  # last vector_log seq applied; -1 = never loaded
        self._mat = np.zeros((0, 0), dtype=np.float32)
        self._rids = np.zeros(0, dtype=np.int64)  # rid per matrix row, -1 = free slot
        self._slot: dict[int, int] = {}
        self._free: list[int] = []
        self._used = 0  # matrix rows in use (live + free slots)
        self._too_big = False
        self._warned = False  # the "does not fit" warning is logged once per matrix
        self._lock = asyncio.Lock()

    @property
    def nbytes(self) -> int:
        """Bytes of vector data held (live rows only)."""
        return self.rows * self.dims * 4

    async def refresh(self, db: Any) -> bool:
        """Apply the changes logged since the last call; return True when the matrix may answer queries.

        Args:
            db: a :class:`~agentbase.storage.Database` (reads go through its reader connection).

        Returns:
            False when the vectors would exceed ``max_bytes`` (the matrix is then emptied).

        Raises:
            StorageError: the reads failed.
        """
        async with self._lock:
            if self._seq < 0 or self._too_big:
                return await self._load(db)
            log = await db.ops.vectors.log_since(db, self._seq)
            if not log:
                return True
            if log[0][0] != self._seq + 1:
                first = await db.ops.vectors.log_first_seq(db)
                if first is None or first > self._seq + 1:
                    return await self._load(db)  # pruned past our position
            rids = sorted({int(r[1]) for r in log})
            fresh = {int(rid): blob for rid, blob in await db.ops.vectors.vectors_of(db, rids)}
            if any(len(blob) != self.dims * 4 for blob in fresh.values()):
                return await self._load(db)  # re-embedded with another model (reindex elsewhere)
            for rid in rids:
                if rid in fresh:
                    self._put(rid, fresh[rid])
                else:
                    self._drop(rid)
            self._seq = int(log[-1][0])
            if self.nbytes > self.max_bytes:
                self._clear(too_big=True)
                return False
            return True

    async def _load(self, db: Any) -> bool:
        seq = await db.ops.vectors.log_last_seq(db)
        # The file's dimension is the one meta records (reindex rewrites it first), else the stored one.
        dims = await db.ops.vectors.file_dims(db)
        count = await db.ops.vectors.count_of_dims(db, dims)
        if count * dims * 4 > self.max_bytes:
            self._clear(too_big=True)
            self._seq = seq
            self._warn(count, dims)
            return False
        self._clear(too_big=False)
        # One dimension per file: rows of another length (a re-embedding in progress) are left out.
        rows = await db.ops.vectors.vectors_of_dims(db, dims)
        for rid, blob in rows:
            self._put(int(rid), blob)
        self._seq = seq
        return True

    def _warn(self, count: int, dims: int) -> None:
        if not self._warned:
            self._warned = True
            need = -(-count * dims * 4 // (1024 * 1024))
            log.warning("%d stored %d-d vectors need %d MiB, more than storage.vector_cache_mb (%d MiB): "
                        "vector KNN runs in sqlite-vec on disk, about 60x slower (1.4 s against 23 ms at 530k "
                        "vectors, docs/benchmarks.md); raise storage.vector_cache_mb above %d to keep the "
                        "in-process matrix",
                        count, dims, need, self.max_bytes // (1024 * 1024), need)

    def _clear(self, *, too_big: bool) -> None:
        self.dims = self.rows = self._used = 0
        self._mat = np.zeros((0, 0), dtype=np.float32)
        self._rids = np.zeros(0, dtype=np.int64)
        self._slot.clear()
        self._free.clear()
        self._too_big = too_big

    def _put(self, rid: int, blob: bytes) -> None:
        vec = np.frombuffer(blob, dtype=np.float32)
        if self.dims == 0:
            self.dims = int(vec.shape[0])
            self._mat = np.zeros((1024, self.dims), dtype=np.float32)
            self._rids = np.full(1024, -1, dtype=np.int64)
        slot = self._slot.get(rid)
        if slot is None:
            if self._free:
                slot = self._free.pop()
            else:
                if self._used == self._mat.shape[0]:
                    grow = max(1024, self._mat.shape[0])
                    self._mat = np.concatenate([self._mat, np.zeros((grow, self.dims), dtype=np.float32)])
                    self._rids = np.concatenate([self._rids, np.full(grow, -1, dtype=np.int64)])
                slot = self._used
                self._used += 1
            self._slot[rid] = slot
            self._rids[slot] = rid
            self.rows += 1
        self._mat[slot] = vec

    def _drop(self, rid: int) -> None:
        slot = self._slot.pop(rid, None)
        if slot is None:
            return
        self._mat[slot] = 0.0
        self._rids[slot] = -1
        self._free.append(slot)
        self.rows -= 1

    def nearest(self, query: np.ndarray, m: int, rids: list[int] | None = None) -> list[tuple[int, float]]:
        """The ``m`` rows nearest to ``query`` by cosine distance (stored vectors are L2-normalised).

        Args:
            query: float32 vector of ``dims`` values, L2-normalised.
            m: how many neighbours.
            rids: restrict the scan to these entry rowids (others and unknown ones are skipped).

        Returns:
            ``(rid, cosine_distance)`` pairs, ascending distance, ties by rid.

        Raises:
            DimensionMismatchError: ``query`` has another dimension than the stored vectors.
        """
        if self.rows == 0 or m <= 0:
            return []
        if len(query) != self.dims:
            raise DimensionMismatchError(self.dims, len(query))
        q = np.asarray(query, dtype=np.float32)
        if rids is None:
            mat, ids = self._mat[:self._used], self._rids[:self._used]
        else:
            slots = np.fromiter((self._slot[r] for r in rids if r in self._slot), dtype=np.int64)
            mat, ids = self._mat[slots], self._rids[slots]
        sims = similarities(mat, q)
        if self._free and rids is None:
            sims[ids < 0] = -np.inf
        m = min(m, int((ids >= 0).sum()) if self._free and rids is None else len(ids))
        if m <= 0:
            return []
        if m < len(sims):
            # every row tied with the m-th best, so that ties are cut by rid (argpartition picks any of them)
            cut = -np.partition(-sims, m - 1)[m - 1]
            top = np.flatnonzero(sims >= cut)
        else:
            top = np.arange(len(sims))
        order = top[np.lexsort((ids[top], -sims[top]))][:m]
        return list(zip(ids[order].tolist(), (1.0 - sims[order]).tolist()))
