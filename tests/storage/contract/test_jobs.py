"""The job queue (``store.ops.jobs``) on both engines: counts, due checks, lease claims, release, attempts,
finish, postpone and put-back; concurrent claimers on two connections never get the same job."""

from __future__ import annotations

import asyncio

import pytest

from .seed import T0, add_job, assert_same_interface, second_connection, sql

LATER = "2024-05-01T11:00:00.000000+00:00"
LEASE = "2024-05-01T10:05:00.000000+00:00"
NOW = "2024-05-01T10:00:00.000000+00:00"


async def _job(store, job_id):
    return await store.fetchone(sql(store, "SELECT status, attempts, next_run_at, last_error, updated_at FROM jobs "
                                           "WHERE id = ?"), (job_id,))


async def test_counts_and_due_checks(store):
    ops = store.ops.jobs
    assert await ops.open_count(store, "embed") == 0
    assert await ops.counts_by_status(store) == {}
    assert await ops.any_due(store, "embed", ["pending"], NOW) is False
    await add_job(store, "embed", "a")
    await add_job(store, "embed", "b", status="running")
    await add_job(store, "embed", "c", status="done")
    await add_job(store, "embed", "d", status="deferred", next_run_at=LATER)
    await add_job(store, "other", "a", status="failed")
    assert await ops.open_count(store, "embed") == 2
    assert await ops.open_count(store, "nothing") == 0
    assert await ops.counts_by_status(store) == {"pending": 1, "running": 1, "done": 1, "deferred": 1, "failed": 1}
    assert await ops.any_due(store, "embed", ["pending"], NOW) is True
    assert await ops.any_due(store, "embed", ["deferred"], NOW) is False
    assert await ops.any_due(store, "embed", ["deferred"], LATER) is True
    assert await ops.any_due(store, "other", ["pending", "running"], LATER) is False
    for bad in ([], ["pending", "bogus"], ["x'); DROP TABLE jobs; --"]):
        with pytest.raises(ValueError):
            await ops.any_due(store, "embed", bad, NOW)
    async with store.transaction() as c:
        with pytest.raises(ValueError):
            await c.ops.jobs.claim(c, "embed", ["nope"], NOW, LEASE, 1)


async def test_claim_takes_due_jobs_oldest_first_up_to_the_limit(store):
    ids = [await add_job(store, "embed", f"t{i}", attempts=i) for i in range(3)]
    ids.append(await add_job(store, "embed", "t3 it's 100% ü?", attempts=3))
    late = await add_job(store, "embed", "late", next_run_at=LATER)
    deferred = await add_job(store, "embed", "def", status="deferred")
    await add_job(store, "other", "x")
    async with store.transaction() as c:
        assert await c.ops.jobs.claim(c, "embed", ["pending"], NOW, LEASE, 3) == [
            (ids[0], "t0", 0), (ids[1], "t1", 1), (ids[2], "t2", 2)]
    assert await _job(store, ids[0]) == ("running", 0, LEASE, None, NOW)
    async with store.transaction() as c:
        assert await c.ops.jobs.claim(c, "embed", ["pending", "deferred"], NOW, LEASE, 10) == [
            (ids[3], "t3 it's 100% ü?", 3), (deferred, "def", 0)]
        assert await c.ops.jobs.claim(c, "embed", ["pending"], NOW, LEASE, 10) == []
    async with store.transaction() as c:  # an expired lease is claimed again when asked for 'running'
        assert [r[0] for r in await c.ops.jobs.claim(c, "embed", ["running"], LEASE, LATER, 1)] == [ids[0]]
        assert await c.ops.jobs.claim(c, "embed", ["pending"], LATER, LATER, 0) == []
        assert await c.ops.jobs.claim(c, "embed", ["pending"], LATER, LATER, -1) == [(late, "late", 0)]  # no limit
    assert await store.ops.jobs.open_count(store, "embed") == 6  # all six claimed: running


async def test_release_attempt_finish_postpone_put_back(store):
    a, b, c_id, d = [await add_job(store, "embed", t) for t in "abcd"]
    async with store.transaction() as c:
        await c.ops.jobs.claim(c, "embed", ["pending"], NOW, LEASE, 3)  # a, b, c running
        assert await c.ops.jobs.release(c, [a, d], LATER) == 1  # d is not running
        assert await c.ops.jobs.release(c, [], LATER) == 0
    assert await _job(store, a) == ("pending", 0, LATER, None, LATER)
    async with store.transaction() as c:
        await c.ops.jobs.set_attempt(c, b, status="pending", attempts=1, next_run_at=LATER, error="it's 100% bad",
                                     now=NOW)
        await c.ops.jobs.finish(c, c_id, LATER, error="done ✓")
        await c.ops.jobs.finish(c, b, LATER)  # b is pending again: left as it is
    assert await _job(store, b) == ("pending", 1, LATER, "it's 100% bad", NOW)
    assert await _job(store, c_id) == ("done", 0, LATER, "done ✓", LATER)
    async with store.transaction() as c:
        await c.ops.jobs.postpone(c, a, NOW)  # earlier than its due time: no change
        await c.ops.jobs.postpone(c, d, LATER)
        await c.ops.jobs.postpone(c, c_id, "2030-01-01T00:00:00.000000+00:00")  # done: no change
    assert (await _job(store, a))[2] == LATER and (await _job(store, d))[2] == LATER
    assert (await _job(store, c_id))[2] == LATER
    async with store.transaction() as c:
        got = await c.ops.jobs.claim(c, "embed", ["pending"], LATER, "2024-05-02T00:00:00.000000+00:00", 10)
        assert [r[0] for r in got] == [a, b, d]
        await c.ops.jobs.put_back(c, [(a, NOW), (d, LEASE)], LATER)
        await c.ops.jobs.put_back(c, [], LATER)
        await c.ops.jobs.finish(c, b, LATER, status="pending", next_run_at=T0, error="again")
    assert await _job(store, a) == ("pending", 0, NOW, None, LATER)
    assert await _job(store, d) == ("pending", 0, LEASE, None, LATER)
    assert await _job(store, b) == ("pending", 1, T0, "again", LATER)
    assert await store.ops.jobs.counts_by_status(store) == {"pending": 3, "done": 1}


async def test_concurrent_claimers_on_two_connections_never_share_a_job(store):
    ids = {await add_job(store, "embed", f"t{i}") for i in range(30)}
    other = await second_connection(store)
    taken: list[int] = []

    async def worker(db):
        while True:
            async with db.transaction() as c:
                got = await c.ops.jobs.claim(c, "embed", ["pending"], NOW, LEASE, 3)
                await asyncio.sleep(0.01)  # hold the claim open while the other workers try
            if not got:
                return
            taken.extend(r[0] for r in got)

    try:
        await asyncio.gather(worker(store), worker(other), worker(store), worker(other))
    finally:
        await other.close()
    assert sorted(taken) == sorted(ids)  # every job once, none twice
    assert await store.ops.jobs.counts_by_status(store) == {"running": 30}


async def test_an_open_claim_is_skipped_not_waited_for(store, engine):
    """PostgreSQL: while one transaction holds its claimed rows, a claim on another connection skips them at once
    (FOR UPDATE SKIP LOCKED) instead of waiting for that transaction to end."""
    if engine == "sqlite":
        pytest.skip("one SQLite writer at a time: a second claim waits for the first transaction by design")
    ids = [await add_job(store, "embed", f"t{i}") for i in range(5)]
    other = await second_connection(store)
    try:
        async with store.transaction() as c:
            first = await c.ops.jobs.claim(c, "embed", ["pending"], NOW, LEASE, 2)
            async with other.transaction() as c2:
                second = await asyncio.wait_for(c2.ops.jobs.claim(c2, "embed", ["pending"], NOW, LEASE, 10), 5)
    finally:
        await other.close()
    assert [r[0] for r in first] == ids[:2]
    assert [r[0] for r in second] == ids[2:]


def test_same_functions_and_signatures_as_the_sqlite_engine():
    assert_same_interface("jobs")
