"""Session and message operations (``store.ops.sessions``) on both engines: every function, unknown ids, empty
lists, quotes/``%``/unicode as data, and two connections racing on one session or one message."""

from __future__ import annotations

import asyncio
import json

import pytest

from agentbase.errors import StorageError

from .seed import add_entry, assert_same_interface, link, second_connection, sql

T1 = "2024-05-01T10:00:00.000000+00:00"
T2 = "2024-05-01T10:01:00.000000+00:00"
T3 = "2024-05-01T10:02:00.000000+00:00"


def msg(session_id, seq, *, id=None, content=None, committed=0, **extra):
    row = {"id": id or f"{session_id}-m{seq}", "session_id": session_id, "seq": seq, "role": "user",
           "content": content if content is not None else f"message {seq}", "name": None, "tool_calls": None,
           "tool_call_id": None, "metadata": "{}", "created_at": T1, "committed": committed}
    row.update(extra)
    return row


async def test_create_ensure_and_read_sessions(store):
    ops = store.ops.sessions
    async with store.transaction() as c:
        row = await c.ops.sessions.create_session_row(c, "s'1", "u1", "a%1", None, '{"k": "ü"}', T1)
        assert row == ("s'1", "u1", "a%1", None, "open", '{"k": "ü"}', T1, T1, 0, 0)
        again = await c.ops.sessions.create_session_row(c, "s'1", "u2", None, "p", "{}", T2)
        assert again == row  # the existing row, untouched
        await c.ops.sessions.ensure_session(c, "s2", T2)
        await c.ops.sessions.ensure_session(c, "s'1", T3)
    assert await ops.session_row(store, "s2") == ("s2", None, None, None, "open", "{}", T2, T2, 0, 0)
    assert await ops.session_row(store, "s'1") == row
    assert await ops.session_row(store, "nope") is None
    assert await ops.session_exists(store, "s2") is True
    assert await ops.session_exists(store, "nope") is False


async def test_session_rows_filter_order_and_page(store):
    async with store.transaction() as c:
        for sid, user, agent, at in [("a", "u1", "x", T1), ("b", "u1", "y", T2), ("c", "u2", "x", T2),
                                     ("d", None, None, T3)]:
            await c.ops.sessions.create_session_row(c, sid, user, agent, None, "{}", at)
    rows = store.ops.sessions.session_rows
    ids = lambda rs: [r[0] for r in rs]  # noqa: E731
    assert ids(await rows(store, user_id=None, agent_id=None, limit=10, offset=0)) == ["d", "c", "b", "a"]
    assert ids(await rows(store, user_id="u1", agent_id=None, limit=10, offset=0)) == ["b", "a"]
    assert ids(await rows(store, user_id=None, agent_id="x", limit=10, offset=0)) == ["c", "a"]
    assert ids(await rows(store, user_id="u1", agent_id="x", limit=10, offset=0)) == ["a"]
    assert ids(await rows(store, user_id=None, agent_id=None, limit=2, offset=1)) == ["c", "b"]
    assert await rows(store, user_id="o'; --", agent_id=None, limit=10, offset=0) == []
    assert await rows(store, user_id=None, agent_id=None, limit=10, offset=10) == []
    # SQLite's reading of a negative LIMIT (none) and OFFSET (zero), on both engines
    assert ids(await rows(store, user_id=None, agent_id=None, limit=-1, offset=-3)) == ["d", "c", "b", "a"]


async def test_metadata_touch_and_enrichment(store):
    async with store.transaction() as c:
        await c.ops.sessions.create_session_row(c, "s1", None, None, None, "{}", T1)
        assert await c.ops.sessions.set_session_metadata(c, "s1", '{"a": "100%"}', T2) is True
        assert await c.ops.sessions.set_session_metadata(c, "nope", "{}", T2) is False
        await c.ops.sessions.touch_session(c, "s1", T3)
        await c.ops.sessions.touch_session(c, "nope", T3)
        assert await c.ops.sessions.enrichment_pending(c, "s1") is False
        await c.execute(sql(store, "UPDATE sessions SET committed_seq = 3, enriched_seq = 1 WHERE id = ?"), ("s1",))
        assert await c.ops.sessions.enrichment_pending(c, "s1") is True
        assert await c.ops.sessions.enrichment_pending(c, "nope") is False
    row = await store.ops.sessions.session_row(store, "s1")
    assert row[5:8] == ('{"a": "100%"}', T1, T3) and row[8:] == (3, 1)


async def test_own_entries_and_delete_session(store):
    async with store.transaction() as c:
        for sid in ("s1", "s2"):
            await c.ops.sessions.create_session_row(c, sid, None, None, None, "{}", T1)
        await c.ops.sessions.insert_message_rows(c, [msg("s1", 1), msg("s1", 2), msg("s2", 1)])
    _, only = await add_entry(store, id="only-s1")
    _, shared = await add_entry(store, id="shared")
    await link(store, "s1", only, message_seq=1)
    await link(store, "s1", shared)
    await link(store, "s2", shared)
    async with store.transaction() as c:
        own = await c.ops.sessions.own_entry_rows(c, "s1")
        assert [r[1] for r in own] == ["only-s1"] and own[0][0] > 0  # (rid, id, ...) ENTRY_COLUMNS
        assert await c.ops.sessions.own_entry_rows(c, "nope") == []
        assert await c.ops.sessions.delete_session_rows(c, "s1") is True
        assert await c.ops.sessions.delete_session_rows(c, "s1") is False
        assert await c.ops.sessions.message_ids(c, "s1") == []
        assert await c.ops.sessions.message_ids(c, "s2") == ["s2-m1"]
        assert await c.ops.sessions.own_entry_rows(c, "s2") != []  # shared is now only s2's
    links = await store.fetchall("SELECT session_id, entry_id FROM session_memory_links ORDER BY session_id")
    assert links == [("s2", "shared")]
    assert len(await store.fetchall("SELECT id FROM entries")) == 2  # entries are kept


async def test_messages(store):
    weird = "it's 100% \"quoted\" ? ünï 😀"
    async with store.transaction() as c:
        await c.ops.sessions.create_session_row(c, "s1", None, None, None, "{}", T1)
        await c.ops.sessions.create_session_row(c, "s2", None, None, None, "{}", T1)
        assert await c.ops.sessions.last_seq(c, "s1") == 0
        await c.ops.sessions.insert_message_rows(c, [])
        await c.ops.sessions.insert_message_rows(c, [
            msg("s1", 2, content=weird, name="bob", tool_calls=json.dumps([{"id": "t"}]), tool_call_id="t",
                committed=1),
            msg("s1", 1), msg("s1", 3), msg("s2", 1, id="other")])
        assert await c.ops.sessions.last_seq(c, "s1") == 3
        await c.execute(sql(store, "UPDATE sessions SET committed_seq = 7 WHERE id = ?"), ("s2",))
        assert await c.ops.sessions.last_seq(c, "s2") == 7
        assert await c.ops.sessions.last_seq(c, "nope") == 0
        assert sorted(await c.ops.sessions.taken_message_ids(c, ["s1-m1", "other", "free"])) == ["other", "s1-m1"]
        assert await c.ops.sessions.taken_message_ids(c, ["s1-m1", "other", "free"], other_than="s1") == ["other"]
        assert await c.ops.sessions.taken_message_ids(c, []) == []
        assert await c.ops.sessions.message_ids(c, "s1") == ["s1-m1", "s1-m2", "s1-m3"]
        align = await c.ops.sessions.messages_to_align(c, "s1")
        assert align[1] == ("s1-m2", "user", weird, "bob", '[{"id": "t"}]', "t", T1, 1)
        assert [a[7] for a in align] == [0, 1, 0]
    by_id = await store.ops.sessions.message_rows_by_id(store, ["s1-m3", "other", "s1-m2", "nope"])
    assert [(r[0], r[2]) for r in by_id] == [("other", 1), ("s1-m2", 2), ("s1-m3", 3)]
    assert await store.ops.sessions.message_rows_by_id(store, []) == []
    rows = store.ops.sessions.message_rows
    seqs = lambda rs: [r[2] for r in rs]  # noqa: E731
    assert seqs(await rows(store, "s1", after_seq=None, before_seq=None, order="asc", limit=None)) == [1, 2, 3]
    assert seqs(await rows(store, "s1", after_seq=1, before_seq=None, order="asc", limit=None)) == [2, 3]
    assert seqs(await rows(store, "s1", after_seq=None, before_seq=3, order="desc", limit=None)) == [2, 1]
    assert seqs(await rows(store, "s1", after_seq=None, before_seq=None, order="desc", limit=2)) == [3, 2]
    assert seqs(await rows(store, "s1", after_seq=1, before_seq=3, order="asc", limit=5)) == [2]
    assert seqs(await rows(store, "s1", after_seq=None, before_seq=None, order="desc", limit=-1)) == [3, 2, 1]
    assert await rows(store, "s1", after_seq=None, before_seq=None, order="asc", limit=0) == []
    assert await rows(store, "nope", after_seq=None, before_seq=None, order="asc", limit=None) == []
    full = await store.ops.sessions.message_row(store, "s1", "s1-m2")
    assert full == ("s1-m2", "s1", 2, "user", weird, "bob", '[{"id": "t"}]', "t", "{}", T1)
    assert await store.ops.sessions.message_row(store, "s2", "s1-m2") is None
    async with store.transaction() as c:
        assert await c.ops.sessions.message_metadata(c, "s1", "s1-m1") == "{}"
        assert await c.ops.sessions.message_metadata(c, "s1", "nope") is None
        assert await c.ops.sessions.set_message_metadata(c, "s1", "s1-m1", '{"x": "%s"}') is True
        assert await c.ops.sessions.set_message_metadata(c, "s2", "s1-m1", "{}") is False
        assert await c.ops.sessions.message_metadata(c, "s1", "s1-m1") == '{"x": "%s"}'
        assert await c.ops.sessions.delete_message_row(c, "s1", "s1-m2") == full
        assert await c.ops.sessions.delete_message_row(c, "s1", "s1-m2") is None
        assert await c.ops.sessions.delete_messages(c, "s1") == 2
        assert await c.ops.sessions.delete_messages(c, "s1") == 0
    assert await store.ops.sessions.message_ids(store, "s2") == ["other"]


async def test_a_duplicate_message_fails_the_transaction_and_writes_nothing(store):
    async with store.transaction() as c:
        await c.ops.sessions.create_session_row(c, "s1", None, None, None, "{}", T1)
    with pytest.raises(StorageError):
        async with store.transaction() as c:
            await c.ops.sessions.insert_message_rows(c, [msg("s1", 1), msg("s1", 1, id="dup-seq")])
    assert await store.ops.sessions.message_ids(store, "s1") == []


async def test_nul_in_message_text(store, engine):
    """PostgreSQL's text type cannot hold U+0000: such a message is a StorageError there and writes nothing;
    SQLite stores it verbatim."""
    async with store.transaction() as c:
        await c.ops.sessions.create_session_row(c, "s1", None, None, None, "{}", T1)
    if engine == "postgres":
        with pytest.raises(StorageError):
            async with store.transaction() as c:
                await c.ops.sessions.insert_message_rows(c, [msg("s1", 1, content="a\x00b")])
        assert await store.ops.sessions.message_ids(store, "s1") == []
    else:
        async with store.transaction() as c:
            await c.ops.sessions.insert_message_rows(c, [msg("s1", 1, content="a\x00b")])
        assert (await store.ops.sessions.message_row(store, "s1", "s1-m1"))[4] == "a\x00b"


async def test_two_connections_race_on_one_session_and_one_message(store):
    other = await second_connection(store)

    async def create(db, i):
        async with db.transaction() as c:
            return await c.ops.sessions.create_session_row(c, "s1", f"u{i}", None, None, "{}", T1)

    async def delete(db):
        async with db.transaction() as c:
            return await c.ops.sessions.delete_message_row(c, "s1", "s1-m1")

    try:
        made = await asyncio.gather(*(create(store if i % 2 else other, i) for i in range(6)))
        assert len(set(made)) == 1  # every creator reads back the one stored row
        async with store.transaction() as c:
            await c.ops.sessions.insert_message_rows(c, [msg("s1", 1)])
        got = await asyncio.gather(delete(store), delete(other), delete(store), delete(other))
    finally:
        await other.close()
    assert sum(g is not None for g in got) == 1  # only one deleter gets the row back


async def test_id_lists_longer_than_one_sqlite_statement_takes(store):
    async with store.transaction() as c:
        await c.ops.sessions.create_session_row(c, "s1", None, None, None, "{}", T1)
        await c.ops.sessions.insert_message_rows(c, [msg("s1", 3), msg("s1", 1), msg("s1", 2)])
    asked = [f"free-{i}" for i in range(12_000)] + ["s1-m3"] + [f"more-{i}" for i in range(12_000)] + ["s1-m1",
                                                                                                         "s1-m2"]
    async with store.transaction() as c:
        assert sorted(await c.ops.sessions.taken_message_ids(c, asked)) == ["s1-m1", "s1-m2", "s1-m3"]
        assert await c.ops.sessions.taken_message_ids(c, asked, other_than="s1") == []
    assert [r[0] for r in await store.ops.sessions.message_rows_by_id(store, asked)] == ["s1-m1", "s1-m2", "s1-m3"]


def test_same_functions_and_signatures_as_the_sqlite_engine():
    assert_same_interface("sessions")
