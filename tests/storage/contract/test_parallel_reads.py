"""``parallel_reads``: PostgreSQL serves reads awaited together at once (each on a pooled connection), SQLite one
after the other on the engine loop's thread; ``find()`` runs its keyword and vector legs through
``retrieval.pipeline._both``, which overlaps them only where the engine says so."""

from __future__ import annotations

import asyncio

import pytest

from agentbase.retrieval.pipeline import _both


async def test_the_legs_overlap_only_where_the_engine_serves_concurrent_reads(store):
    second_started = asyncio.Event()

    async def first() -> bool:
        await store.fetchall("SELECT 1")
        try:  # the second leg starts meanwhile only when the two run at once
            await asyncio.wait_for(second_started.wait(), 2)
            return True
        except TimeoutError:
            return False

    async def second() -> list[tuple]:
        second_started.set()
        return await store.fetchall("SELECT 2")

    overlapped, rows = await _both(store, first, second)
    assert rows == [(2,)]
    assert overlapped is store.parallel_reads is (store.engine == "postgres")


async def test_a_failing_leg_raises_once_the_other_has_finished(store):
    finished: list[str] = []

    async def fails() -> None:
        raise ValueError("leg failed")

    async def reads() -> list[tuple]:
        rows = await store.fetchall("SELECT 3")
        await asyncio.sleep(0.05)
        finished.append("reads")
        return rows

    for pair in ((fails, reads), (reads, fails)):
        finished.clear()
        with pytest.raises(ValueError, match="leg failed"):
            await _both(store, *pair)
        # no statement of the other leg is left running (sequentially, a failing first leg never starts it)
        assert finished == ([] if pair[0] is fails and not store.parallel_reads else ["reads"])
