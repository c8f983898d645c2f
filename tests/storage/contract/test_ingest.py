"""Session-commit operations (``store.ops.ingest``) on both engines: every function, unknown ids, empty lists,
None owners, unicode/quotes/``%`` as data, and two connections committing one session, or stating one fact or one
key's values, at once (serialised by SQLite's single writer; by the session row lock and the owners' fact lock on
PostgreSQL)."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest

from agentbase.storage.entries import ENTRY_FIELDS

from .seed import T0, add_entry, add_session, assert_same_interface, second_connection, sql

T1 = "2024-05-01T10:01:00.000000+00:00"
T2 = "2024-05-01T10:02:00.000000+00:00"
T3 = "2024-05-01T10:03:00.000000+00:00"
OWNERS = {"user_id": "u1", "agent_id": None, "project_id": "p'1"}


def msg(session_id, seq, *, role="user", content=None, name=None, committed=0, created_at=T0):
    return {"id": f"{session_id}-m{seq}", "session_id": session_id, "seq": seq, "role": role,
            "content": f"message {seq}" if content is None else content, "name": name, "tool_calls": None,
            "tool_call_id": None, "metadata": "{}", "created_at": created_at, "committed": committed}


async def add_messages(store, session_id, rows, **owners):
    async with store.transaction() as c:
        await c.ops.sessions.create_session_row(c, session_id, owners.get("user_id"), owners.get("agent_id"),
                                                owners.get("project_id"), "{}", T0)
        await c.ops.sessions.insert_message_rows(c, rows)


async def insert_in(c, store, **cols) -> int:
    """Insert an entry inside the open transaction ``c``; returns its rid."""
    row = {"id": str(uuid.uuid4()), "l2_full": "text", "fts_text": "text", "created_at": T0, "updated_at": T0,
           "content_hash": uuid.uuid4().hex, **cols}
    names = ", ".join(row)
    return (await c.fetchone(sql(store, f"INSERT INTO entries({names}) VALUES ({', '.join('?' * len(row))}) "
                                        "RETURNING rid"), list(row.values())))[0]


async def entry_cols(store, rid, *cols):
    return await store.fetchone(sql(store, f"SELECT {', '.join(cols)} FROM entries WHERE rid = ?"), (rid,))


# ------------------------------------------------------------------------------------------------ sessions
async def test_watermarks_mark_committed_and_enriched(store):
    ops = store.ops.ingest
    await add_messages(store, "s'1", [msg("s'1", i) for i in range(1, 6)])
    await add_messages(store, "s2", [msg("s2", 1)])
    assert await ops.watermarks(store, "s'1") == (0, 0)
    assert await ops.watermarks(store, "nope") is None
    async with store.transaction() as c:
        assert await c.ops.ingest.watermarks(c, "s'1") == (0, 0)
        await c.ops.ingest.mark_committed(c, "s'1", 1, 4, 1, T1)
    assert await ops.watermarks(store, "s'1") == (4, 1)
    row = await store.ops.sessions.session_row(store, "s'1")
    assert (row[4], row[7]) == ("committed", T1)
    assert await ops.committed_message_ids(store, "s'1", 0) == {"s'1-m2", "s'1-m3", "s'1-m4"}
    assert await ops.committed_message_ids(store, "s'1", 3) == {"s'1-m4"}
    assert await ops.committed_message_ids(store, "s2", 0) == set()
    async with store.transaction() as c:
        await c.ops.ingest.set_enriched_seq(c, "s'1", 4)
        await c.ops.ingest.set_enriched_seq(c, "nope", 4)  # unknown: nothing
        await c.ops.ingest.mark_committed(c, "nope", 0, 4, 0, T1)
    assert await ops.watermarks(store, "s'1") == (4, 4)
    assert await ops.watermarks(store, "nope") is None


async def test_sessions_to_settle_matches_owners_null_safe(store):
    ops = store.ops.ingest
    for sid, owners in [("a", dict(user_id="u1")), ("b", dict(user_id="u1")), ("c", dict(user_id="u1", agent_id="x")),
                        ("d", dict(user_id="u2")), ("e", {}), ("f", {}), ("g", dict(user_id="u1"))]:
        await add_session(store, sid, **owners)
    async with store.transaction() as c:
        for sid, committed, enriched in [("a", 3, 1), ("b", 2, 0), ("c", 5, 0), ("d", 1, 0), ("e", 2, 1),
                                         ("f", 4, 0), ("g", 2, 2)]:
            await c.ops.ingest.mark_committed(c, sid, 0, committed, enriched, T1)
    assert sorted(await ops.sessions_to_settle(store, "a")) == ["a", "b"]
    assert sorted(await ops.sessions_to_settle(store, "g")) == ["a", "b"]  # itself settled: the others
    assert sorted(await ops.sessions_to_settle(store, "e")) == ["e", "f"]  # no owners matches no owners
    assert await ops.sessions_to_settle(store, "c") == ["c"]
    assert await ops.sessions_to_settle(store, "nope") == []


# ------------------------------------------------------------------------------------------------ messages
async def test_message_window_reads(store):
    ops = store.ops.ingest
    rows = [msg("s1", 1, content="hi", name="Ann", created_at=T0),
            msg("s1", 2, role="assistant", content="  ", name="bot", created_at=T2),
            msg("s1", 3, role="tool", content="tool out", created_at=T1),
            msg("s1", 4, content="ünï'%\"", name="Ann", created_at=T3),
            msg("s1", 5, role="assistant", content="last", name="Bøb", created_at=T1)]
    await add_messages(store, "s1", rows)
    assert await ops.window_message_ids(store, "s1", 1, 4) == ["s1-m2", "s1-m3", "s1-m4"]
    assert await ops.window_message_ids(store, "s1", 5, 9) == []
    assert await ops.window_message_ids(store, "nope", 0, 9) == []
    assert await ops.previous_turn(store, "s1", 5, ["user", "assistant"]) == ("user", "ünï'%\"", "Ann")
    assert await ops.previous_turn(store, "s1", 4, ["user", "assistant"]) == ("user", "hi", "Ann")  # blank skipped
    assert await ops.previous_turn(store, "s1", 4, ["tool"]) == ("tool", "tool out", None)
    assert await ops.previous_turn(store, "s1", 1, ["user"]) is None
    assert await ops.previous_turn(store, "s1", 9, []) is None
    assert sorted(await ops.participant_names(store, "s1", 5)) == ["Ann", "Bøb", "bot"]
    assert sorted(await ops.participant_names(store, "s1", 2)) == ["Ann", "bot"]
    assert await ops.participant_names(store, "nope", 5) == []
    assert await ops.transcript(store, "s1", 3) == [("user", "hi", "Ann"), ("assistant", "  ", "bot"),
                                                    ("tool", "tool out", None)]
    assert await ops.transcript(store, "s1", 3, skip_blank=True) == [("user", "hi", "Ann"),
                                                                     ("tool", "tool out", None)]
    assert await ops.transcript(store, "nope", 3) == []
    assert await ops.last_message_time(store, "s1", 5) == T3
    assert await ops.last_message_time(store, "s1", 3) == T2
    assert await ops.last_message_time(store, "s1", 0) is None
    assert await ops.last_message_time(store, "nope", 9) is None


# ------------------------------------------------------------------------------------------------ links
async def test_links_and_linked_entry_rows(store):
    ops = store.ops.ingest
    await add_session(store, "s1")
    r1, e1 = await add_entry(store, category="turn", session_id="s1", tags=("a", "ü"), l2_full="turn one")
    r2, e2 = await add_entry(store, category="turn", session_id="s1", tags=("b",))
    r3, e3 = await add_entry(store, category="turn", session_id="s1")
    _, e4 = await add_entry(store, category="summary", session_id="s1", l2_full="the summary")
    _, e5 = await add_entry(store, category="fact", session_id="s1")
    await add_entry(store, category="turn", session_id="s2", tags=("zz",))
    links = [("s1", e1, "turn", 1), ("s1", e2, "turn", 3), ("s1", e3, "turn", 5), ("s1", e4, "summary", None),
             ("s1", e5, "fact", 3)]
    async with store.transaction() as c:
        await c.ops.ingest.insert_links(c, links)
        await c.ops.ingest.insert_links(c, [("s1", e1, "fact", 9)])  # exists: kept as it is
        await c.ops.ingest.insert_links(c, [])
    got = await store.fetchall(sql(store, "SELECT entry_id, kind, message_seq FROM session_memory_links "
                                          "WHERE session_id = ?"), ("s1",))
    assert sorted(got, key=lambda r: r[0]) == sorted([(e, k, s) for _, e, k, s in links], key=lambda r: r[0])
    rows = sorted(await ops.turn_entry_rows(store, "s1", 1, 5))
    assert [(r[0], r[1], r[2]) for r in rows] == [(3, r2, e2), (5, r3, e3)]
    assert len(rows[0]) == 1 + len(ENTRY_FIELDS)
    assert [r[2] for r in await ops.turn_entry_rows(store, "s1", 0, 1)] == [e1]
    assert await ops.turn_entry_rows(store, "s1", 5, 9) == []
    summary = await ops.summary_entry_row(store, "s1")
    assert summary[1] == e4 and dict(zip(ENTRY_FIELDS, summary))["l2_full"] == "the summary"
    assert await ops.summary_entry_row(store, "s2") is None
    assert [json.loads(t) for t in await ops.turn_tag_lists(store, "s1")] == [["a", "ü"], ["b"], []]
    assert await ops.turn_tag_lists(store, "nope") == []


# ------------------------------------------------------------------------------------------------ facts
async def test_fact_dedup_and_supersession_reads(store):
    ops = store.ops.ingest
    r1, e1 = await add_entry(store, content_hash="h'%", category="fact", **OWNERS)
    r1b, _ = await add_entry(store, content_hash="h'%", category="fact", user_id="u1", project_id="p'1", agent_id="a")
    await add_entry(store, content_hash="h2", category="fact", status="archived", **OWNERS)
    await add_entry(store, content_hash="h3", category="fact", superseded_by=e1, **OWNERS)
    await add_entry(store, content_hash="h4", category="turn", **OWNERS)
    await add_entry(store, content_hash="h5", category="skill", context_type="skill", **OWNERS)
    assert (await ops.same_fact_row(store, "h'%", "fact", OWNERS))[:2] == (r1, e1)
    assert await ops.same_fact_row(store, "h'%", "preference", OWNERS) is None
    assert await ops.same_fact_row(store, "h'%", "fact", {**OWNERS, "agent_id": "b"}) is None
    assert await ops.same_fact_row(store, "h2", "fact", OWNERS) is None  # archived
    assert await ops.same_fact_row(store, "h3", "fact", OWNERS) is None  # superseded
    assert (await ops.same_fact_row(store, "h'%", "fact", {"user_id": "u1"}))[0] in (r1, r1b)  # a subset of owners
    assert len(await ops.same_fact_row(store, "h'%", "fact", OWNERS)) == len(ENTRY_FIELDS)
    assert await ops.known_memory_id(store, "h'%", OWNERS) == e1
    assert await ops.known_memory_id(store, "h4", OWNERS) is None  # a turn
    assert await ops.known_memory_id(store, "h5", OWNERS) is None  # not a memory
    assert await ops.known_memory_id(store, "h3", OWNERS) is None
    assert await ops.known_memory_id(store, "nope", OWNERS) is None
    with pytest.raises(ValueError):
        await ops.same_fact_row(store, "h", "fact", {"user_id; DROP": "x"})
    with pytest.raises(ValueError):
        await ops.fact_key_rows(store, "k", {})
    with pytest.raises(ValueError):
        await ops.known_memory_id(store, "h", {"scope": "x"})


async def test_fact_key_rows_and_supersede(store):
    ops = store.ops.ingest
    old, e_old = await add_entry(store, fact_key="lives_in", l2_full="Oslo", created_at=T0, **OWNERS)
    mid, e_mid = await add_entry(store, fact_key="lives_in", l2_full="Bergen", created_at=T3, event_time=T1,
                                 **OWNERS)
    new, e_new = await add_entry(store, fact_key="lives_in", l2_full="Tromsø", created_at=T2, **OWNERS)
    await add_entry(store, fact_key="lives_in", l2_full="x", status="archived", **OWNERS)
    await add_entry(store, fact_key="lives_in", l2_full="y", user_id="u2")
    await add_entry(store, fact_key="name", l2_full="z", **OWNERS)
    rows = await ops.fact_key_rows(store, "lives_in", OWNERS)
    assert rows == [(new, e_new, "Tromsø", T2), (mid, e_mid, "Bergen", T1), (old, e_old, "Oslo", T0)]
    assert await ops.fact_key_rows(store, "lives_in", {**OWNERS, "project_id": None}) == []
    assert await ops.fact_key_rows(store, "nope", OWNERS) == []
    async with store.transaction() as c:
        assert len(await c.ops.ingest.fact_key_rows(c, "lives_in", OWNERS)) == 3
        await c.ops.ingest.supersede(c, old, e_new, T3)
        await c.ops.ingest.supersede(c, mid, e_new, T3)
        await c.ops.ingest.supersede(c, 10**9, e_new, T3)  # unknown rid: nothing
    assert await ops.fact_key_rows(store, "lives_in", OWNERS) == [(new, e_new, "Tromsø", T2)]
    assert await entry_cols(store, old, "superseded_by", "updated_at") == (e_new, T3)


# ------------------------------------------------------------------------------------------------ LLM jobs
async def test_llm_job_reads_and_derived_text(store, engine):
    ops = store.ops.ingest
    r1, e1 = await add_entry(store, content_hash="hash'1", metadata={"source": "llm", "message_id": "m'1"})
    r2, _ = await add_entry(store, metadata={"source": "llm", "message_id": "m2"})
    r3, e3 = await add_entry(store, metadata={"message_id": "m'1", "source": "session"}, l2_full="rule fact")
    await add_entry(store, metadata={"source": "session", "message_id": "m'1"}, fact_key="k")  # keyed
    await add_entry(store, metadata={"source": "session", "message_id": "m'1"}, superseded_by=e1)
    await add_entry(store, metadata={"source": "session", "message_id": "m'1"}, status="archived")
    await add_entry(store, metadata={"source": "session", "message_id": "m'1", "nul": "a\\u0000b"})
    await add_entry(store, metadata="[]")
    assert await ops.content_hash_of(store, e1) == "hash'1"
    assert await ops.content_hash_of(store, "nope") is None
    assert [r[0] for r in await ops.llm_fact_rows(store, "m'1")] == [r1]
    assert len((await ops.llm_fact_rows(store, "m'1"))[0]) == len(ENTRY_FIELDS)
    assert await ops.llm_fact_rows(store, "nope") == []
    rule = await ops.rule_fact_rows(store, "m'1")
    # the metadata holding the \u0000 escape: SQLite reads it, PostgreSQL cannot read it as text (not matched)
    assert len(rule) == (2 if engine == "sqlite" else 1)
    assert (r3, e3, "rule fact") in rule
    meta = json.dumps({"source": "llm", "keys": ["ä", "100%"]}, ensure_ascii=False)
    async with store.transaction() as c:
        await c.ops.ingest.set_derived_text(c, r2, meta, "abstract ü", "overview '%", "walking dogs quickly")
        await c.ops.ingest.set_derived_text(c, 10**9, meta, "a", "b", "c")  # unknown rid: nothing
    assert await entry_cols(store, r2, "metadata", "l0_abstract", "l1_overview", "fts_text") == (
        meta, "abstract ü", "overview '%", "walking dogs quickly")
    assert await ops.llm_fact_rows(store, "m2") == []  # its metadata no longer names the message
    # the keyword index follows the new text on both engines
    if engine == "sqlite":
        hit = await store.fetchall("SELECT rowid FROM entries_fts WHERE entries_fts MATCH 'dog'")
        assert [r[0] for r in hit] == [r2]
    else:
        doc_len, = await entry_cols(store, r2, "doc_len")
        assert doc_len == 3
        hit = await store.fetchall("SELECT rid FROM entries WHERE fts @@ 'dog'::tsquery")
        assert [r[0] for r in hit] == [r2]
        (tokens,) = await store.fetchone("SELECT SUM(tokens) FROM keyword_stats")
        assert tokens == 3  # seeded rows carry no keyword tokens: only this change moved the totals


# ------------------------------------------------------------------------------------------------ concurrency
async def test_two_connections_commit_one_session(store):
    """Each commit reads the watermarks and writes only if they are still what it read first; with both racing
    on separate connections exactly one wins, on both engines."""
    await add_messages(store, "s1", [msg("s1", i) for i in range(1, 5)])
    other = await second_connection(store)

    async def commit(db, upto):
        async with db.transaction() as c:
            row = await c.ops.ingest.watermarks(c, "s1")
            if row != (0, 0):
                return False  # raced: another commit landed first
            await asyncio.sleep(0.05)  # the other commit runs meanwhile
            await c.ops.ingest.insert_links(c, [("s1", f"entry-{upto}", "turn", upto)])
            await c.ops.ingest.mark_committed(c, "s1", 0, upto, 0, T1)
            return True

    try:
        won = await asyncio.gather(commit(store, 2), commit(other, 4), commit(store, 3), commit(other, 1))
    finally:
        await other.close()
    assert sum(won) == 1
    upto = [2, 4, 3, 1][won.index(True)]
    assert await store.ops.ingest.watermarks(store, "s1") == (upto, 0)
    got = await store.fetchall("SELECT entry_id FROM session_memory_links")
    assert got == [(f"entry-{upto}",)]


async def test_a_commit_and_a_message_replace_racing_on_one_session(store):
    """A commit (watermarks, then the messages, then the session) and a replace of the session's messages (the
    session check, then the messages, then the session) on two connections: both finish, one after the other.
    On PostgreSQL both take the session row first (``watermarks`` and ``sessions.enrichment_pending`` lock it in
    a transaction), so they cannot deadlock over the message rows."""
    await add_messages(store, "s1", [msg("s1", i) for i in range(1, 4)])
    other = await second_connection(store)

    async def commit(db):
        async with db.transaction() as c:
            row = await c.ops.ingest.watermarks(c, "s1")
            await asyncio.sleep(0.05)
            ids = await c.ops.ingest.window_message_ids(c, "s1", row[0], 3)
            await c.ops.ingest.mark_committed(c, "s1", row[0], 3, 3, T1)  # enriched too (wait=True)
            return ids

    async def replace(db):
        await asyncio.sleep(0.01)
        async with db.transaction() as c:
            assert await c.ops.sessions.enrichment_pending(c, "s1") is False
            await c.ops.sessions.delete_messages(c, "s1")
            await asyncio.sleep(0.1)
            await c.ops.sessions.insert_message_rows(c, [{**msg("s1", 1), "id": "new-1"}])
            await c.ops.sessions.touch_session(c, "s1", T2)

    try:
        ids, _ = await asyncio.gather(commit(store), replace(other))
    finally:
        await other.close()
    assert ids == ["s1-m1", "s1-m2", "s1-m3"]  # the commit ran first and read the messages it committed
    assert await store.ops.sessions.message_ids(store, "s1") == ["new-1"]
    assert await store.ops.ingest.watermarks(store, "s1") == (3, 3)


async def test_two_connections_state_one_fact_and_one_key(store):
    """Dedupe-then-insert and supersede-the-previous-value, racing on separate connections: one copy of the
    fact, and one current value of the key, on both engines."""
    async with store.transaction() as c:
        old = await insert_in(c, store, fact_key="city", l2_full="Oslo", **OWNERS)
    other = await second_connection(store)

    async def state(db, i):
        async with db.transaction() as c:
            if await c.ops.ingest.same_fact_row(c, "same-hash", "fact", OWNERS) is None:
                await asyncio.sleep(0.02)
                await insert_in(c, store, content_hash="same-hash", category="fact", **OWNERS)
            if await c.ops.ingest.known_memory_id(c, "llm-hash", OWNERS) is None:
                await asyncio.sleep(0.02)
                await insert_in(c, store, content_hash="llm-hash", category="fact", **OWNERS)
            prev = await c.ops.ingest.fact_key_rows(c, "city", OWNERS)
            await asyncio.sleep(0.02)
            rid = await insert_in(c, store, id=f"city-{i}", fact_key="city", l2_full=f"city {i}",
                                  created_at=f"2024-05-0{i + 1}T00:00:00.000000+00:00", **OWNERS)
            for prid, _, _, _ in prev:
                await c.ops.ingest.supersede(c, prid, f"city-{i}", T1)
            return rid

    try:
        await asyncio.gather(*(state(store if i % 2 else other, i) for i in range(1, 7)))
    finally:
        await other.close()
    count = sql(store, "SELECT COUNT(*) FROM entries WHERE content_hash = ?")
    assert (await store.fetchone(count, ("same-hash",)))[0] == 1
    assert (await store.fetchone(count, ("llm-hash",)))[0] == 1
    current = await store.ops.ingest.fact_key_rows(store, "city", OWNERS)
    assert len(current) == 1 and current[0][0] != old
    (superseded,) = await store.fetchone(sql(store, "SELECT COUNT(*) FROM entries WHERE fact_key = ? "
                                                    "AND superseded_by IS NOT NULL"), ("city",))
    assert superseded == 6  # Oslo and five of the six new values, each superseded by the next writer's


def test_same_functions_and_signatures_as_the_sqlite_engine():
    assert_same_interface("ingest")
