"""Entry operations (``store.ops.entries``) on both engines: every function, empty input, unknown ids, quotes/``%``/
unicode in text, tags and uri, and on PostgreSQL the keyword statistics (``keyword_stats`` equals the true
``COUNT(*)``/``SUM(doc_len)``, each row's ``fts``/``doc_len`` is its ``fts_text``'s) after every kind of write and
under two connections inserting at once."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest

from agentbase.errors import StorageError
from agentbase.retrieval.filters import Filters
from agentbase.storage.entries import ENTRY_FIELDS, INSERT_FIELDS, SESSION_SUMMARY

from .seed import add_session, assert_same_interface, link, second_connection, sql

T1 = "2024-05-01T10:00:00.000000+00:00"
T2 = "2024-05-01T10:01:00.000000+00:00"
T3 = "2024-05-01T10:02:00.000000+00:00"
AT = {name: i for i, name in enumerate(ENTRY_FIELDS)}
ODD_TEXT = "O'Brien said \"100%\" -- ünïcödé 東京タワー; DROP TABLE entries; %s %(x)s ?"
ODD_TAGS = ["c'est", "50%", "日本", 'a"b', "%s"]
ODD_URI = "file:///tmp/a b/%20'x'\"?.md"


def entry(id: str | None = None, **cols) -> tuple:
    """An ``INSERT_FIELDS`` tuple with defaults for what ``cols`` leaves out."""
    row = {"id": id or str(uuid.uuid4()), "context_type": "memory", "category": "fact", "l0_abstract": "",
           "l1_overview": "", "l2_full": "text", "fts_text": None, "tags": "[]", "metadata": "{}",
           "scope": "global", "user_id": None, "agent_id": None, "project_id": None, "session_id": None,
           "confidence": 1.0, "importance": 0.5, "created_at": T1, "updated_at": T1, "event_time": None,
           "content_hash": uuid.uuid4().hex, "fact_key": None, "access_count": 0, "last_accessed_at": None,
           "superseded_by": None, "status": "active", "uri": None, "mime_type": None, "name": None,
           "description": None}
    row.update(cols)
    if isinstance(row["tags"], list):
        row["tags"] = json.dumps(row["tags"], ensure_ascii=False)
    if isinstance(row["metadata"], dict):
        row["metadata"] = json.dumps(row["metadata"], ensure_ascii=False)
    if row["fts_text"] is None:
        row["fts_text"] = row["l2_full"]
    return tuple(row[name] for name in INSERT_FIELDS)


async def insert(store, *rows: tuple, tags=(), added=(), embed=()) -> list[int]:
    """Insert ``rows`` through ``insert_rows``; returns their rids in the order given."""
    async with store.transaction() as c:
        await c.ops.entries.insert_rows(c, list(rows), list(tags), list(added), list(embed))
    return [(await store.ops.entries.row_by_id(store, r[0]))[0] for r in rows]


async def tags_of(store, rid: int) -> list[str]:
    return [r[0] for r in await store.fetchall(sql(store, "SELECT tag FROM entry_tags WHERE rid = ? ORDER BY tag"),
                                               (rid,))]


async def jobs_of(store) -> list[tuple]:
    return await store.fetchall("SELECT kind, target, status, attempts, next_run_at FROM jobs ORDER BY target")


async def check_keyword_stats(store, engine) -> None:
    """PostgreSQL: ``keyword_stats`` holds the true totals, ``keyword_terms`` every lexeme's true document count,
    and each row's ``fts``/``doc_len`` is its text's."""
    if engine != "postgres":
        return
    from agentbase.storage.postgres.bm25 import keyword_document

    docs, tokens = await store.fetchone("SELECT COALESCE(SUM(docs), 0), COALESCE(SUM(tokens), 0) FROM keyword_stats")
    n, total = await store.fetchone("SELECT COUNT(*), COALESCE(SUM(doc_len), 0) FROM entries")
    assert (int(docs), int(tokens)) == (int(n), int(total))
    truth = await store.fetchall("SELECT u.lexeme, count(*) FROM entries e CROSS JOIN LATERAL unnest(e.fts) AS u "
                                 "GROUP BY 1 ORDER BY 1")
    kept = await store.fetchall("SELECT lexeme, SUM(docs) FROM keyword_terms GROUP BY 1 HAVING SUM(docs) <> 0 "
                                "ORDER BY 1")
    assert [(x, int(c)) for x, c in kept] == [(x, int(c)) for x, c in truth]
    for rid, text, doc_len, same in await store.fetchall("SELECT rid, fts_text, doc_len, fts::text FROM entries"):
        vector, length = keyword_document(text)
        assert doc_len == length, rid
        assert (await store.fetchone("SELECT %s::tsvector::text", (vector,)))[0] == same, rid


def test_same_interface_as_sqlite():
    assert_same_interface("entries")


async def test_insert_rows_and_reads(store, engine):
    a, b, c = entry("a", l2_full="alpha one", user_id="u1", created_at=T1, tags=["x", "y"]), \
        entry("b", l2_full="beta two two", user_id="u2", created_at=T2), entry("c", l2_full="gamma", created_at=T3)
    rids = await insert(store, a, b, c, tags=[("x", "a"), ("y", "a"), ("x", "a"), ("z", "nobody")],
                        added=[("a", "alpha one", T1), ("b", "beta two two", T2)], embed=[("a", T1), ("c", T3)])
    assert rids == sorted(rids) and len(set(rids)) == 3  # row ids follow the order given
    ops = store.ops.entries
    row = await ops.row_by_id(store, "a")
    assert len(row) == len(ENTRY_FIELDS)
    assert row[AT["id"]] == "a" and row[AT["l2_full"]] == "alpha one" and row[AT["tags"]] == '["x", "y"]'
    assert row[AT["user_id"]] == "u1" and row[AT["created_at"]] == T1 and row[AT["confidence"]] == 1.0
    assert row[AT["access_count"]] == 0 and row[AT["status"]] == "active"
    assert await ops.row_by_rid(store, rids[0]) == row
    assert await ops.row_by_rid(store, 10 ** 9) is None
    assert await ops.row_by_id(store, "a", {"user_id": "u1", "agent_id": None}) == row
    assert await ops.row_by_id(store, "a", {"user_id": "u2"}) is None
    assert await ops.row_by_id(store, "nope") is None
    with pytest.raises(ValueError):
        await ops.row_by_id(store, "a", {"rid; DROP": 1})
    assert await ops.id_exists(store, "b") is True and await ops.id_exists(store, "nope") is False
    assert [r[AT["id"]] for r in await ops.all_rows(store)] == ["a", "b", "c"]
    assert await tags_of(store, rids[0]) == ["x", "y"] and await tags_of(store, rids[1]) == []
    history = await ops.history_rows(store, "a")
    assert [(h[1], h[2], h[3], h[4], h[5], h[6]) for h in history] == [("a", "ADD", None, "alpha one", "{}", T1)]
    assert await ops.history_rows(store, "c") == []
    assert await jobs_of(store) == [("embed", "a", "pending", 0, T1), ("embed", "c", "pending", 0, T3)]
    await check_keyword_stats(store, engine)


async def test_insert_nothing_and_rearm_jobs(store, engine):
    async with store.transaction() as c:
        await c.ops.entries.insert_rows(c, [], [], [], [])
    assert await store.ops.entries.all_rows(store) == []
    await check_keyword_stats(store, engine)
    await insert(store, entry("a"), embed=[("a", T1)])
    async with store.transaction() as c:
        await c.execute(sql(store, "UPDATE jobs SET status = 'failed', attempts = 3, last_error = 'x'"))
        await c.ops.entries.insert_rows(c, [entry("b")], [], [], [("a", T2), ("b", T2)])  # re-arms a's job
    assert await jobs_of(store) == [("embed", "a", "pending", 0, T2), ("embed", "b", "pending", 0, T2)]
    assert (await store.fetchone("SELECT last_error FROM jobs WHERE target = 'a'"))[0] is None


async def test_taken_id_fails_and_writes_nothing(store, engine):
    await insert(store, entry("a"))
    with pytest.raises(StorageError):
        async with store.transaction() as c:
            await c.ops.entries.insert_rows(c, [entry("new"), entry("a")], [("t", "new")], [], [("new", T1)])
    assert [r[AT["id"]] for r in await store.ops.entries.all_rows(store)] == ["a"]
    assert await jobs_of(store) == []
    await check_keyword_stats(store, engine)


async def test_many_entries_in_one_call(store, engine):
    rows = [entry(f"e{i:04d}", l2_full=f"word{i % 7} common") for i in range(1203)]  # past one INSERT batch
    async with store.transaction() as c:
        await c.ops.entries.insert_rows(c, rows, [("t", r[0]) for r in rows[::100]], [], [])
    ids = [r[AT["id"]] for r in await store.ops.entries.all_rows(store)]
    assert ids == [r[0] for r in rows]
    assert (await store.fetchone("SELECT COUNT(*) FROM entry_tags"))[0] == 13
    await check_keyword_stats(store, engine)


async def test_quotes_percent_unicode_in_text_tags_and_uri(store, engine):
    odd = entry("o'1%", l2_full=ODD_TEXT, tags=ODD_TAGS, metadata={"k": "ü'%"}, context_type="resource",
                uri=ODD_URI, user_id="u'%", name="n%'\"")
    [rid] = await insert(store, odd, tags=[(t, "o'1%") for t in ODD_TAGS], added=[("o'1%", ODD_TEXT, T1)])
    ops = store.ops.entries
    row = await ops.row_by_id(store, "o'1%", {"user_id": "u'%"})
    assert row[AT["l2_full"]] == ODD_TEXT and json.loads(row[AT["tags"]]) == ODD_TAGS
    assert row[AT["uri"]] == ODD_URI and json.loads(row[AT["metadata"]]) == {"k": "ü'%"}
    assert await tags_of(store, rid) == sorted(ODD_TAGS)
    assert [r[0] for r in await ops.resource_rows(store, ODD_URI, "u'%", None, None, None)] == [rid]
    assert (await ops.history_rows(store, "o'1%"))[0][4] == ODD_TEXT
    where = Filters(tags=["50%", "日本"], user_id="u'%").where("e", store.ops)
    assert await ops.count_where(store, where) == 1
    async with store.transaction() as c:
        await c.ops.entries.set_tags(c, rid, ["%", "'"], ODD_TEXT + " % '")
        await c.ops.entries.record_history(c, "o'1%", "UPDATE", ODD_TEXT, "ü%'", T2, {"why": "50% 'off'"})
    assert await tags_of(store, rid) == sorted(["%", "'"])
    assert json.loads((await ops.history_rows(store, "o'1%"))[1][5]) == {"why": "50% 'off'"}
    await check_keyword_stats(store, engine)


async def test_duplicate_row_matches_owners_exactly(store):
    rows = [entry("d1", content_hash="h", user_id="u1"), entry("d2", content_hash="h", user_id=None),
            entry("d3", content_hash="h", user_id="u1", status="archived"),
            entry("d4", content_hash="h", user_id="u1", context_type="resource")]
    await insert(store, *rows)
    dup = store.ops.entries.duplicate_row
    assert (await dup(store, "h", "memory", {"user_id": "u1", "agent_id": None}))[AT["id"]] == "d1"
    assert (await dup(store, "h", "memory", {"user_id": None}))[AT["id"]] == "d2"
    assert (await dup(store, "h", "resource", {"user_id": "u1"}))[AT["id"]] == "d4"
    assert await dup(store, "h", "memory", {"user_id": "u2"}) is None
    assert await dup(store, "h", "memory", {"user_id": "u1", "agent_id": "a"}) is None
    assert await dup(store, "other", "memory", {}) is None
    with pytest.raises(ValueError):
        await dup(store, "h", "memory", {"status": "active"})


async def test_resource_rows_by_chunk_index_then_rid(store):
    res = dict(context_type="resource", uri="doc://x", user_id="u")
    rows = [entry("r10", metadata={"chunk_index": 10}, **res), entry("r2", metadata={"chunk_index": 2}, **res),
            entry("rnone", metadata={}, **res), entry("r1", metadata={"chunk_index": 1}, **res),
            entry("r2b", metadata={"chunk_index": 2}, **res),
            entry("other-owner", metadata={"chunk_index": 0}, context_type="resource", uri="doc://x"),
            entry("other-uri", metadata={"chunk_index": 0}, context_type="resource", uri="doc://y", user_id="u"),
            entry("memory", metadata={"chunk_index": 0}, uri="doc://x", user_id="u")]
    await insert(store, *rows)
    got = await store.ops.entries.resource_rows(store, "doc://x", "u", None, None, None)
    assert [r[AT["id"]] for r in got] == ["rnone", "r1", "r2", "r2b", "r10"]
    assert [r[AT["id"]] for r in await store.ops.entries.resource_rows(store, "doc://x", None, None, None, None)] \
        == ["other-owner"]
    assert await store.ops.entries.resource_rows(store, "doc://none", "u", None, None, None) == []


async def test_metadata_holding_a_nul_escape(store, engine):
    """Metadata text holding the JSON escape of U+0000 (which PostgreSQL's jsonb rejects) fails no query: SQLite
    reads its keys; PostgreSQL reads it as having none (its chunk sorts first, its summary is not requeued)."""
    res = dict(context_type="resource", uri="doc://nul")
    await insert(store, entry("r1", metadata={"chunk_index": 1}, **res),
                 entry("r3", metadata={"chunk_index": 3, "x": "a\x00b"}, **res),
                 entry("r2", metadata={"chunk_index": 2}, **res),
                 entry("sum", category="summary", session_id="s", metadata={"source": SESSION_SUMMARY, "x": "\x00"}))
    got = [r[AT["id"]] for r in await store.ops.entries.resource_rows(store, "doc://nul", None, None, None, None)]
    assert got == (["r1", "r2", "r3"] if engine == "sqlite" else ["r3", "r1", "r2"])
    async with store.transaction() as c:
        await c.ops.entries.requeue_session_summaries(c, {"s"}, T1)
    assert [j[1] for j in await jobs_of(store)] == (["sum"] if engine == "sqlite" else [])


async def test_nul_character_in_text(store, engine):
    """SQLite stores a NUL character in entry text; PostgreSQL's text cannot hold one: StorageError, nothing
    written (the entry API's validation is the place to refuse it on both)."""
    if engine == "sqlite":
        await insert(store, entry("n", l2_full="a\x00b"))
        assert (await store.ops.entries.row_by_id(store, "n"))[AT["l2_full"]] == "a\x00b"
        return
    with pytest.raises(StorageError):
        await insert(store, entry("ok"), entry("n", l2_full="a\x00b"))
    assert await store.ops.entries.all_rows(store) == []
    await check_keyword_stats(store, engine)


async def test_filtered_rows_list_and_count(store):
    await insert(store, entry("a", created_at=T1, user_id="u1", tags=["t"]), entry("b", created_at=T2, user_id="u1"),
                 entry("c", created_at=T2, user_id="u2"), entry("d", created_at=T3, user_id="u1", status="archived"),
                 tags=[("t", "a")])
    ops = store.ops.entries
    ids = lambda rows: [r[AT["id"]] for r in rows]  # noqa: E731
    everything = Filters(include_archived=True).where("e", store.ops)
    u1 = Filters(user_id="u1").where("e", store.ops)
    assert sorted(ids(await ops.rows_where(store, everything))) == ["a", "b", "c", "d"]
    assert sorted(ids(await ops.rows_where(store, u1))) == ["a", "b"]
    assert ids(await ops.rows_where(store, Filters(tags=["t"]).where("e", store.ops))) == ["a"]
    assert await ops.count_where(store, everything) == 4
    assert await ops.count_where(store, u1) == 2
    assert await ops.count_where(store, Filters(user_id="nobody").where("e", store.ops)) == 0
    assert ids(await ops.list_rows(store, everything, order="asc", limit=10, offset=0)) == ["a", "b", "c", "d"]
    assert ids(await ops.list_rows(store, everything, order="desc", limit=10, offset=0)) == ["d", "c", "b", "a"]
    assert ids(await ops.list_rows(store, everything, order="desc", limit=2, offset=1)) == ["c", "b"]
    assert ids(await ops.list_rows(store, everything, order="asc", limit=-1, offset=-5)) == ["a", "b", "c", "d"]
    assert await ops.list_rows(store, everything, order="asc", limit=10, offset=10) == []
    with pytest.raises(ValueError):
        await ops.list_rows(store, everything, order="asc; DROP TABLE entries", limit=1, offset=0)


async def test_update_tags_fact_key_and_supersession(store, engine):
    rids = await insert(store, entry("a", l2_full="old words here", fact_key="k"), entry("b", superseded_by="a"),
                        entry("c", superseded_by="a"), tags=[("x", "a")])
    ops = store.ops.entries
    old = await ops.row_by_id(store, "a")
    async with store.transaction() as c:
        await c.ops.entries.update_row(c, rids[0], (
            "preference", "l0", "l1", "brand new text, longer than before", "brand new text, longer than before t",
            '["t"]', '{"m": 1}', "agent", 0.25, 0.75, T2, T3, "newhash", None, "archived", "u://r", "text/plain",
            "nm", "desc"))
        await c.ops.entries.update_row(c, 10 ** 9, ("fact", "", "", "x", "x", "[]", "{}", "global", 1.0, 0.5, T2,
                                                    None, "h", None, "active", None, None, None, None))
    row = await ops.row_by_id(store, "a")
    assert row[AT["rid"]] == rids[0] and row[AT["created_at"]] == old[AT["created_at"]]
    assert row[AT["category"]:AT["l2_full"] + 1] == ("preference", "l0", "l1", "brand new text, longer than before")
    assert (row[AT["tags"]], row[AT["metadata"]], row[AT["scope"]]) == ('["t"]', '{"m": 1}', "agent")
    assert (row[AT["confidence"]], row[AT["importance"]], row[AT["updated_at"]], row[AT["event_time"]]) == \
        (0.25, 0.75, T2, T3)
    assert row[AT["status"]:] == ("archived", "u://r", "text/plain", "nm", "desc")
    await check_keyword_stats(store, engine)
    async with store.transaction() as c:
        await c.ops.entries.write_tags(c, rids[0], ["p", "q", "p"])
    assert await tags_of(store, rids[0]) == ["p", "q"]
    async with store.transaction() as c:
        await c.ops.entries.write_tags(c, rids[0], [])
    assert await tags_of(store, rids[0]) == []
    async with store.transaction() as c:
        await c.ops.entries.set_tags(c, rids[1], ["n1", "n2"], "text n1 n2 and several more words")
    row_b = await ops.row_by_id(store, "b")
    assert json.loads(row_b[AT["tags"]]) == ["n1", "n2"] and await tags_of(store, rids[1]) == ["n1", "n2"]
    await check_keyword_stats(store, engine)
    fact_key = sql(store, "SELECT fact_key FROM entries WHERE id = ?")
    assert (await store.fetchone(fact_key, ("a",)))[0] == "k"
    async with store.transaction() as c:
        await c.ops.entries.clear_fact_key(c, rids[0])
    assert (await store.fetchone(fact_key, ("a",)))[0] is None
    assert await ops.superseded_ids(store, "a") == ["b", "c"]
    assert await ops.superseded_ids(store, "nope") == []
    async with store.transaction() as c:
        await c.ops.entries.repoint_superseded(c, "a", "z'%", T3)
    assert await ops.superseded_ids(store, "a") == [] and await ops.superseded_ids(store, "z'%") == ["b", "c"]
    assert (await ops.row_by_id(store, "b"))[AT["updated_at"]] == T3
    async with store.transaction() as c:
        await c.ops.entries.repoint_superseded(c, "z'%", None, T3)
    assert (await ops.row_by_id(store, "c"))[AT["superseded_by"]] is None


async def test_delete_row_and_history_outlives_it(store, engine):
    rids = await insert(store, entry("a", l2_full="to be deleted soon"), entry("b"), tags=[("x", "a")],
                        added=[("a", "to be deleted soon", T1)], embed=[("a", T1), ("b", T1)])
    await add_session(store, "s1")
    await link(store, "s1", "a")
    await link(store, "s1", "b")
    async with store.transaction() as c:
        await c.ops.entries.record_history(c, "a", "DELETE", "to be deleted soon", None, T2)
        await c.ops.entries.delete_row(c, rids[0], "a")
        await c.ops.entries.delete_row(c, 10 ** 9, "nope")  # nothing there: nothing happens
    ops = store.ops.entries
    assert await ops.row_by_id(store, "a") is None and await ops.id_exists(store, "b")
    assert await tags_of(store, rids[0]) == []
    assert [r[0] for r in await store.fetchall("SELECT entry_id FROM session_memory_links")] == ["b"]
    assert [j[1] for j in await jobs_of(store)] == ["b"]
    assert [h[2] for h in await ops.history_rows(store, "a")] == ["ADD", "DELETE"]
    await check_keyword_stats(store, engine)
    with pytest.raises(StorageError):
        async with store.transaction() as c:
            await c.ops.entries.record_history(c, "b", "RENAME", None, None, T2)


async def test_requeue_session_summaries(store):
    summary = {"source": SESSION_SUMMARY}
    await insert(store, entry("s1-sum", category="summary", session_id="s1", metadata=summary),
                 entry("s2-sum", category="summary", session_id="s2", metadata=summary),
                 entry("s3-sum", category="summary", session_id="s3", metadata=summary),
                 entry("s1-other", category="summary", session_id="s1", metadata={"source": "user"}),
                 entry("s1-turn", category="turn", session_id="s1", metadata=summary))
    async with store.transaction() as c:
        await c.ops.entries.requeue_session_summaries(c, set(), T1)
    assert await jobs_of(store) == []
    async with store.transaction() as c:
        await c.ops.entries.requeue_session_summaries(c, {"s1", "s2", "s3", "nope"}, T2, {"s3-sum"})
    assert await jobs_of(store) == [("embed", "s1-sum", "pending", 0, T2), ("embed", "s2-sum", "pending", 0, T2)]
    async with store.transaction() as c:
        await c.execute("UPDATE jobs SET status = 'done', attempts = 1")
        await c.ops.entries.requeue_session_summaries(c, {"s1"}, T3)
    assert (await jobs_of(store))[0] == ("embed", "s1-sum", "pending", 0, T3)


async def test_two_connections_insert_at_once(store, engine):
    """PostgreSQL: two connections insert, retag and delete entries in interleaved transactions: every row lands
    and ``keyword_stats`` holds the true totals (each backend writes its own shard row)."""
    if engine == "sqlite":
        pytest.skip("one SQLite writer at a time: the second transaction waits for the first by design")
    other = await second_connection(store)
    try:
        async def writer(db, name: str) -> None:
            for i in range(8):
                async with db.transaction() as c:
                    await c.ops.entries.insert_rows(
                        c, [entry(f"{name}{i}", l2_full=f"{name} entry number {i} " + "w " * i)],
                        [(f"t{i}", f"{name}{i}")], [], [(f"{name}{i}", T1)])
                    await asyncio.sleep(0)
                    row = await c.ops.entries.row_by_id(c, f"{name}{i}")
                    await c.ops.entries.set_tags(c, row[0], ["k"], f"{name} retagged {i} k")
                await asyncio.sleep(0)
            async with db.transaction() as c:
                row = await c.ops.entries.row_by_id(c, f"{name}0")
                await c.ops.entries.delete_row(c, row[0], f"{name}0")

        await asyncio.gather(writer(store, "a"), writer(other, "b"))
    finally:
        await other.close()
    ids = sorted(r[AT["id"]] for r in await store.ops.entries.all_rows(store))
    assert ids == sorted([f"a{i}" for i in range(1, 8)] + [f"b{i}" for i in range(1, 8)])
    await check_keyword_stats(store, engine)
