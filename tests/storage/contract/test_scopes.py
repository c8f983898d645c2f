"""Heartbeat operations (``store.ops.scopes``) on both engines: session owners, upsert (None keeps the stored
value), listing since a cutoff with project/session filters, delete; quotes, ``%`` and unicode stay data."""

from __future__ import annotations

import asyncio

from .seed import add_session, assert_same_interface, second_connection

T1 = "2024-05-01T10:00:00.000000+00:00"
T2 = "2024-05-01T10:01:00.000000+00:00"
T3 = "2024-05-01T10:02:00.000000+00:00"


async def test_session_owners(store):
    assert await store.ops.scopes.session_owners(store, "nope") is None
    await add_session(store, "s1", agent_id="a'1", project_id="p%1")
    await add_session(store, "s2")
    assert await store.ops.scopes.session_owners(store, "s1") == ("a'1", "p%1")
    assert await store.ops.scopes.session_owners(store, "s2") == (None, None)


async def test_upsert_keeps_what_a_none_leaves_out(store):
    async with store.transaction() as c:
        row = await c.ops.scopes.upsert_heartbeat(c, "s1", "a1", "p1", "fix 100% of bugs", None, T1)
        assert row == ("s1", "a1", "p1", "fix 100% of bugs", "{}", T1, T1)
        row = await c.ops.scopes.upsert_heartbeat(c, "s1", None, None, None, '{"k": "ü"}', T2)
        assert row == ("s1", "a1", "p1", "fix 100% of bugs", '{"k": "ü"}', T1, T2)
        row = await c.ops.scopes.upsert_heartbeat(c, "s1", "a2", "p2", "it's done", None, T3)
        assert row == ("s1", "a2", "p2", "it's done", '{"k": "ü"}', T1, T3)
    assert await store.ops.scopes.heartbeats_since(store, T1, project_id=None, exclude_session_id=None) == [row]


async def test_heartbeats_since_filters_and_orders_newest_first(store):
    async with store.transaction() as c:
        await c.ops.scopes.upsert_heartbeat(c, "s1", "a1", "p1", None, None, T1)
        await c.ops.scopes.upsert_heartbeat(c, "s2", "a2", "p1", None, None, T3)
        await c.ops.scopes.upsert_heartbeat(c, "s3", "a3", "p2", None, None, T2)
    since = store.ops.scopes.heartbeats_since
    assert [r[0] for r in await since(store, T1, project_id=None, exclude_session_id=None)] == ["s2", "s3", "s1"]
    assert [r[0] for r in await since(store, T2, project_id=None, exclude_session_id=None)] == ["s2", "s3"]
    assert [r[0] for r in await since(store, T1, project_id="p1", exclude_session_id=None)] == ["s2", "s1"]
    assert [r[0] for r in await since(store, T1, project_id="p1", exclude_session_id="s2")] == ["s1"]
    assert await since(store, T1, project_id="p'; --", exclude_session_id=None) == []
    assert await since(store, "2030", project_id=None, exclude_session_id=None) == []


async def test_delete_heartbeat(store):
    async with store.transaction() as c:
        await c.ops.scopes.upsert_heartbeat(c, "s1", "a1", None, None, None, T1)
    async with store.transaction() as c:
        assert await c.ops.scopes.delete_heartbeat(c, "s1") is True
        assert await c.ops.scopes.delete_heartbeat(c, "s1") is False
        assert await c.ops.scopes.delete_heartbeat(c, "unknown") is False
    assert await store.ops.scopes.heartbeats_since(store, T1, project_id=None, exclude_session_id=None) == []


async def test_concurrent_heartbeats_for_one_session_from_two_connections(store):
    other = await second_connection(store)

    async def beat(db, i):
        async with db.transaction() as c:
            return await c.ops.scopes.upsert_heartbeat(c, "s1", f"a{i}", None, f"task {i}", None,
                                                       f"2024-05-01T10:00:{i:02d}.000000+00:00")

    try:
        rows = await asyncio.gather(*(beat(store if i % 2 else other, i) for i in range(10)))
    finally:
        await other.close()
    assert all(r[0] == "s1" for r in rows)
    stored = await store.ops.scopes.heartbeats_since(store, T1, project_id=None, exclude_session_id=None)
    assert len(stored) == 1 and stored[0] in rows


def test_same_functions_and_signatures_as_the_sqlite_engine():
    assert_same_interface("scopes")
