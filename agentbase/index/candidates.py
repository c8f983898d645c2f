"""The filter check shared by the candidate legs of ``find()``.

Each leg (BM25, vector KNN) ranks without its filter first and keeps the best rows that pass it; only when too few
pass does it run the filtered query over every row. This module answers "which of these rows pass?".
"""

from __future__ import annotations

from typing import Any

__all__ = ["rids_passing"]


async def rids_passing(db: Any, rids: list[int], where: str, params: list[Any]) -> set[int]:
    """Which of ``rids`` pass ``where``.

    Args:
        db: a :class:`~agentbase.storage.Database` (read connection).
        rids: entry rowids.
        where: the filter's condition on ``entries`` aliased ``e`` (``filters.where("e")``); its values are in
            ``params`` (bound, never inlined).
        params: the condition's parameters.

    Returns:
        The subset of ``rids`` that passes (the storage engine's ``retrieval.rids_passing`` operation, which
        checks them in chunks of 500).

    Raises:
        StorageError: the query failed.
    """
    return await db.ops.retrieval.rids_passing(db, rids, where, params)
