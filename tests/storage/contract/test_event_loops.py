"""A database belongs to the event loop that opened it (AgentBase's engine loop), and a read or transaction started
on another loop (a test's, a caller's ``asyncio.run``) is forwarded there (``agentbase._loop.on_loop``): asyncio's
locks and psycopg_pool's queue are not thread-safe, and a waiter woken from the other loop's thread slept until its
timeout or forever. Both engines, with one pooled connection on PostgreSQL so the two loops contend for it."""

from __future__ import annotations

import asyncio
import contextlib
import random
import threading

import pytest

from agentbase._loop import engine_loop, on_loop
from agentbase.errors import UsageError
from agentbase.storage import open_database


def _target(engine: str, tmp_path, request) -> str | None:
    return None if engine == "sqlite" else request.getfixturevalue("pg_url")


async def _open(engine: str, tmp_path, url: str | None):
    if engine == "sqlite":
        return await open_database(tmp_path / "loops.db")
    from agentbase.storage.postgres.connection import open_postgres

    return await open_postgres(url, pool_min=1, pool_max=1)


def test_a_transaction_from_another_loop_waits_its_turn(engine, tmp_path, request):
    engine_ = engine_loop()
    db = engine_.run_sync(_open(engine, tmp_path, _target(engine, tmp_path, request)))
    held, finished = threading.Event(), threading.Event()

    async def hold(key: str) -> None:
        # on the engine loop: keeps the writer (SQLite) or the only pooled connection busy for a moment
        async with db.transaction() as c:
            await c.ops.meta.set_value(c, key, "engine")
            held.set()
            await asyncio.sleep(0.3)
        while not finished.is_set():  # and stays running after it lets go
            await asyncio.sleep(0.01)

    async def write_and_read(key: str) -> str | None:
        async with db.transaction() as c:
            await c.ops.meta.set_value(c, key, "other")
        return await db.ops.meta.get_value(db, key)

    try:
        for round_ in range(3):
            held.clear(), finished.clear()
            holder = asyncio.run_coroutine_threadsafe(hold(f"engine{round_}"), engine_.loop)
            assert held.wait(10)
            # a loop of its own on a thread of its own, with no timers: a hand-over from the engine loop's thread
            # that this loop never hears about would leave it asleep for good
            got: list[str | None] = []
            other = threading.Thread(target=lambda: got.append(asyncio.run(write_and_read(f"other{round_}"))),
                                     daemon=True)
            other.start()
            other.join(15)
            finished.set()
            holder.result(10)
            assert got == ["other"], "the other loop's transaction never got its turn"
            assert engine_.run_sync(db.ops.meta.get_value(db, f"engine{round_}")) == "engine"
    finally:
        finished.set()
        engine_.run_sync(db.close())


def test_cancelled_transactions_from_another_loop_give_back_the_lock_or_connection(engine, tmp_path, request):
    # A transaction cancelled while its lock (SQLite) or pooled connection (PostgreSQL, a pool of one) was being
    # taken on the engine loop: the engine loop finishes taking it, and must give it back.
    engine_ = engine_loop()
    url = _target(engine, tmp_path, request)

    async def open_small():
        if engine == "sqlite":
            return await open_database(tmp_path / "cancel.db")
        from agentbase.storage.postgres.connection import open_postgres

        return await open_postgres(url, pool_min=1, pool_max=1, busy_timeout_s=3.0)

    db = engine_.run_sync(open_small())

    async def free() -> bool:  # on the engine loop: nobody holds the lock / the one connection
        if engine == "sqlite":
            return not db._write_lock.locked()
        return db._pool.get_stats().get("pool_available", 0) == 1

    async def storm() -> list[int]:
        rng, leaked = random.Random(1), []
        for i in range(300):
            async def write() -> None:
                async with db.transaction() as c:
                    await c.ops.meta.set_value(c, "k", str(i))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(write(), rng.random() * 0.003)
            for _ in range(50):  # a hand-back in flight arrives within moments
                if await on_loop(engine_.loop, free()):
                    break
                await asyncio.sleep(0.01)
            else:
                leaked.append(i)
        return leaked

    try:
        got: list[list[int]] = []
        other = threading.Thread(target=lambda: got.append(asyncio.run(storm())), daemon=True)
        other.start()
        other.join(120)
        assert got == [[]], f"lock or connection never given back after cancelled transactions: {got}"

        async def write_after() -> str | None:
            async with db.transaction() as c:
                await c.ops.meta.set_value(c, "after", "1")
            return await db.ops.meta.get_value(db, "after")

        assert engine_.run_sync(asyncio.wait_for(write_after(), 10), 20) == "1"
    finally:
        engine_.run_sync(asyncio.wait_for(db.close(), 10), 20)  # bounded: a lock never given back blocks close


async def test_a_database_whose_loop_has_ended_refuses_clearly(engine, tmp_path, request):
    # opened inside an asyncio.run() on a worker thread, which then ends
    db = await asyncio.to_thread(asyncio.run, _open(engine, tmp_path, _target(engine, tmp_path, request)))
    with pytest.raises(UsageError, match="no longer running"):
        await db.fetchall("SELECT 1")
    await db.close()  # closing still works and is idempotent
    await db.close()


async def test_on_loop_runs_here_when_the_loop_is_the_running_one():
    here = asyncio.get_running_loop()

    async def where() -> asyncio.AbstractEventLoop:
        return asyncio.get_running_loop()

    assert await on_loop(here, where()) is here
    assert await on_loop(None, where()) is here
    assert await on_loop(engine_loop().loop, where()) is engine_loop().loop
