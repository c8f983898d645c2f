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
        where: an SQL condition on ``entries`` aliased ``e``; its values are in ``params`` (bound, never inlined).
        params: the condition's parameters.

    Returns:
        The subset of ``rids`` that passes (checked in chunks of 500 bound parameters).

    Raises:
        StorageError: the query failed.
    """
    allowed: set[int] = set()
    for start in range(0, len(rids), 500):
        part = rids[start:start + 500]
        rows = await db.fetchall(f"SELECT e.rid FROM entries e WHERE e.rid IN ({','.join('?' * len(part))}) "
                                 f"AND {where}", [*part, *params])
        allowed.update(int(r[0]) for r in rows)
    return allowed
