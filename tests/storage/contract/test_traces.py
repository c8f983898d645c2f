"""Trace and debug-view operations (``store.ops.traces``) on both engines: trace rows and steps, summaries (global
and per session), recall counts, session memories, entity-tag counts and pairs, tagged entries, graph reads."""

from __future__ import annotations

import json

from .seed import add_entry, add_session, assert_same_interface, link, sql

T1 = "2024-05-01T10:00:00.000000+00:00"
T2 = "2024-05-01T10:01:00.000000+00:00"
T3 = "2024-05-01T10:02:00.000000+00:00"


def trace(tid, at, result_ids, query="q"):
    return (tid, query, json.dumps({"top_k": 5}), at, 12.5, json.dumps(result_ids), None)


async def test_traces_steps_and_summaries(store):
    weird = "it's 100% \"odd\" ? ünï"
    async with store.transaction() as c:
        await c.ops.traces.insert_traces(c, [], [])
        await c.ops.traces.insert_traces(
            c, [trace("t1", T1, ["e1"], weird), trace("t2", T2, []), trace("t3", T2, ["e2", "e1"])],
            [("t1", 1, "vector", 2.25, 10, 5, "{}"), ("t1", 0, "keyword", 1.5, 0, 10, '{"n": "100%"}'),
             ("t3", 0, "keyword", 0.5, 0, 1, "{}")])
    row, steps = await store.ops.traces.trace_row(store, "t1")
    assert row == ("t1", weird, '{"top_k": 5}', T1, 12.5, '["e1"]', None)
    assert steps == [("keyword", 1.5, 0, 10, '{"n": "100%"}'), ("vector", 2.25, 10, 5, "{}")]
    assert await store.ops.traces.trace_row(store, "nope") is None
    assert await store.ops.traces.trace_row(store, "t2") == (trace("t2", T2, []), [])
    summaries = await store.ops.traces.trace_summaries(store, 10, 0)
    assert summaries == [("t2", "q", T2, 12.5, "[]", None, 0), ("t3", "q", T2, 12.5, '["e2", "e1"]', None, 1),
                         ("t1", weird, T1, 12.5, '["e1"]', None, 2)]
    assert await store.ops.traces.trace_summaries(store, 1, 1) == summaries[1:2]
    assert await store.ops.traces.trace_summaries(store, 10, 5) == []
    assert await store.ops.traces.trace_summaries(store, -1, -2) == summaries  # SQLite: no limit, offset 0


async def test_session_trace_summaries_and_memories(store):
    await add_session(store, "s1")
    await add_session(store, "s2")
    for eid, at in (("e1", T2), ("e2", T1), ("e3", T1), ("e4", T1)):
        await add_entry(store, id=eid, created_at=at)
    await link(store, "s1", "e1", "turn", 2)
    await link(store, "s1", "e2", "fact", None)
    await link(store, "s1", "e3", "turn", 1)
    await link(store, "s1", "e4", "summary", None)
    await link(store, "s2", "e9", "turn", 1)  # a link to no entry
    async with store.transaction() as c:
        await c.ops.traces.insert_traces(c, [trace("t1", T1, ["e1"]), trace("t2", T2, ["x"]),
                                             trace("t3", T3, ["e3", "e2"]), trace("t4", T3, ["e9"])], [])
    got = await store.ops.traces.session_trace_summaries(store, "s1")
    assert [g[0] for g in got] == ["t3", "t1"]
    assert [g[0] for g in await store.ops.traces.session_trace_summaries(store, "s1", 1)] == ["t3"]
    assert [g[0] for g in await store.ops.traces.session_trace_summaries(store, "s2")] == ["t4"]
    assert await store.ops.traces.session_trace_summaries(store, "nope") == []
    rows = await store.ops.traces.session_memory_rows(store, "s1")
    # message order, then links without a message (by entry time, then rid)
    assert [(r[0], r[1], r[3]) for r in rows] == [("turn", 1, "e3"), ("turn", 2, "e1"), ("fact", None, "e2"),
                                                  ("summary", None, "e4")]
    assert await store.ops.traces.session_memory_rows(store, "s2") == []  # its entry does not exist


async def test_count_recalls(store):
    await add_entry(store, id="e1")
    await add_entry(store, id="e2")
    async with store.transaction() as c:
        await c.ops.traces.count_recalls(c, [])
        await c.ops.traces.count_recalls(c, [(T1, "e1"), (T2, "e1"), (T3, "e2"), (T3, "nope")])
    rows = await store.fetchall("SELECT id, access_count, last_accessed_at FROM entries ORDER BY id")
    assert rows == [("e1", 2, T2), ("e2", 1, T3)]


async def _tagged(store):
    await add_entry(store, id="a", tags=("ner_alice", "ner_bob", "topic"), event_time=T1)
    await add_entry(store, id="b", tags=("ner_alice", "ner_bob"), event_time=T3)
    await add_entry(store, id="c", tags=("ner_alice", "NER_Carol", "Topic"), event_time=T2)
    await add_entry(store, id="d", tags=("ner_alice", "ner_zed"), status="archived")
    await add_entry(store, id="e", tags=("ner_alice", "ner_zed"), superseded_by="a")
    await add_entry(store, id="f", tags=("nerx", "ner%", "Émile"))


async def test_tag_views(store):
    await _tagged(store)
    t = store.ops.traces
    assert await t.stored_tag(store, "TOPIC") in ("topic", "Topic")
    assert await t.stored_tag(store, "ner_ALICE") == "ner_alice"
    assert await t.stored_tag(store, "nobody") is None
    assert await t.stored_tag(store, "ner%") == "ner%"
    assert await t.stored_tag(store, "ner_") is None  # no LIKE: '_' and '%' are plain characters
    # the ner_ prefix ignores ASCII case (SQLite LIKE), counts only active current entries, ties by tag
    assert await t.entity_tag_counts(store, 10) == [("ner_alice", 3), ("ner_bob", 2), ("NER_Carol", 1)]
    assert await t.entity_tag_counts(store, 1) == [("ner_alice", 3)]
    assert len(await t.entity_tag_counts(store, -1)) == 3
    assert await t.entity_tag_counts(store, 10, with_tag="topic") == [("ner_alice", 1), ("ner_bob", 1)]
    assert await t.entity_tag_counts(store, 10, with_tag="Topic") == [("NER_Carol", 1), ("ner_alice", 1)]
    assert await t.entity_tag_counts(store, 10, with_tag="none") == []
    pairs = await t.tag_pairs(store, ["ner_alice", "ner_bob", "NER_Carol", "ner_zed", "absent"])
    assert pairs == [("ner_alice", "ner_bob", 2), ("NER_Carol", "ner_alice", 1)]  # 'N' < 'n' in code points
    assert await t.tag_pairs(store, ["ner_alice", "ner_bob"], limit=1) == [("ner_alice", "ner_bob", 2)]
    assert await t.tag_pairs(store, []) == []
    tagged = await t.entries_tagged(store, "ner_alice")
    assert [r[1] for r in tagged] == ["b", "c", "a"]  # newest event first; archived and superseded left out
    assert [r[1] for r in await t.entries_tagged(store, "ner_alice", 1)] == ["b"]
    assert len(await t.entries_tagged(store, "ner_alice", -1)) == 3
    assert len(await t.tag_pairs(store, ["ner_alice", "ner_bob", "NER_Carol"], limit=-1)) == 2
    assert await t.entries_tagged(store, "NER_ALICE") == []  # exact tag


async def test_stored_tag_case_folding(store, engine):
    """SQLite's NOCASE folds ASCII letters only; PostgreSQL's lower() folds every letter."""
    await add_entry(store, id="x", tags=("Émile",))
    assert await store.ops.traces.stored_tag(store, "éMILE") == (None if engine == "sqlite" else "Émile")
    assert await store.ops.traces.stored_tag(store, "ÉMILE") == "Émile"


async def test_graph_reads(store):
    assert await store.ops.traces.all_entities(store) == []
    assert await store.ops.traces.latest_relations(store) == []
    async with store.transaction() as c:
        for eid, name in (("n1", "Alice"), ("n2", "Bob's café")):
            await c.execute(sql(store, "INSERT INTO entities(id, name, norm_name, type, aliases, created_at) "
                                       "VALUES (?, ?, ?, ?, ?, ?)"), (eid, name, name.lower(), "PERSON", "[]", T1))
        for rid, at in (("r1", T1), ("r2", T3), ("r3", T2)):
            await c.execute(sql(store, "INSERT INTO relations(id, subject_id, predicate, object_id, valid_from, "
                                       "valid_to, source_entry_id, confidence, created_at) "
                                       "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"),
                            (rid, "n1", f"knows_{rid}", "n2", T1, None, "e1", 0.75, at))
    assert sorted(await store.ops.traces.all_entities(store)) == [("n1", "Alice", "PERSON", "[]"),
                                                                  ("n2", "Bob's café", "PERSON", "[]")]
    rel = await store.ops.traces.latest_relations(store)
    assert [r[1] for r in rel] == ["knows_r2", "knows_r3", "knows_r1"]
    assert rel[0] == ("n1", "knows_r2", "n2", T1, None, "e1", 0.75)
    assert len(await store.ops.traces.latest_relations(store, 2)) == 2
    assert len(await store.ops.traces.latest_relations(store, -1)) == 3


def test_same_functions_and_signatures_as_the_sqlite_engine():
    assert_same_interface("traces")
