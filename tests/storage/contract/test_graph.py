"""Graph operations (``ops.graph``) on both engines: entities and aliases, relations with validity intervals,
their orders (undated relations where SQLite puts them, byte order of times), the entries relations come from,
and concurrent writers resolving one name to one entity."""

from __future__ import annotations

import asyncio
import json

import pytest

from agentbase.graph import upsert_entity
from agentbase.retrieval.filters import Filters

T0, T1, T2, T3 = ("2024-01-01T00:00:00.000000+00:00", "2024-06-01T00:00:00.000000+00:00",
                  "2025-01-01T00:00:00.000000+00:00", "2026-01-01T00:00:00.000000+00:00")
NOW = "2026-06-01T00:00:00.000000+00:00"


def q(engine: str, sql: str) -> str:
    """Write ``?`` placeholders in the engine's dialect."""
    return sql.replace("?", "%s") if engine == "postgres" else sql


async def add_entry(store, engine, entry_id, *, status="active", context_type="memory", event_time=None,
                    created_at=T0, user_id=None) -> int:
    """One entry row written with plain SQL (entry CRUD ops are not this group's); returns its rid."""
    async with store.transaction() as c:
        row = await c.fetchone(q(engine, (
            "INSERT INTO entries(id, context_type, l2_full, fts_text, created_at, updated_at, event_time, "
            "content_hash, status, user_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING rid")),
            (entry_id, context_type, f"text of {entry_id}", f"text of {entry_id}", created_at, created_at,
             event_time, f"h-{entry_id}", status, user_id))
    return int(row[0])


async def entity(store, eid, name, norm=None, type=None):
    async with store.transaction() as c:
        await c.ops.graph.insert_entity(c, eid, name, norm or name.lower(), type, T0)
        await c.ops.graph.set_aliases(c, eid, [norm or name.lower()], "[]", None)


async def rel(store, rid, s, p, o, *, vf=T0, vt=None, src=None, conf=0.5, now=T0):
    async with store.transaction() as c:
        await c.ops.graph.insert_relation(c, rid, s, p, o, valid_from=vf, valid_to=vt, source_entry_id=src,
                                          confidence=conf, now=now)


async def test_entities_aliases_and_merge(store):
    g = store.ops.graph
    assert await g.entity_id_for_alias(store, "alice") is None
    assert await g.entity_rows(store, []) == []
    await entity(store, "e1", "Alice", type=None)
    await entity(store, "e2", "Alicia")
    async with store.transaction() as c:
        await c.ops.graph.set_aliases(c, "e1", ["alice", "ally", "al's \"%\""], json.dumps(["Ally", "Al's \"%\""]),
                                      "person")
        await c.ops.graph.set_aliases(c, "e1", ["ally"], json.dumps(["Ally"]), "robot")  # type kept, alias kept
        await c.ops.graph.set_aliases(c, "e2", ["ally", "lici"], "[]", None)  # 'ally' stays e1's
    assert await g.entity_id_for_alias(store, "ally") == "e1"
    assert await g.entity_id_for_alias(store, "al's \"%\"") == "e1"
    assert await g.entity_id_for_alias(store, "lici") == "e2"
    rows = sorted(await g.entity_rows(store, ["e2", "e1", "nope"]))
    assert rows == [("e1", "Alice", "person", '["Ally"]', T0), ("e2", "Alicia", None, "[]", T0)]
    await entity(store, "e3", "Bob")
    await rel(store, "r1", "e2", "knows", "e3")
    await rel(store, "r2", "e3", "knows", "e2")
    async with store.transaction() as c:
        await c.ops.graph.merge_entity(c, "e1", "e2")
    assert await g.entity_rows(store, ["e2"]) == []
    assert await g.entity_id_for_alias(store, "lici") == "e1"
    assert (await g.relation_row(store, "r1"))[1:6] == ("Alice", "e1", "knows", "Bob", "e3")
    assert (await g.relation_row(store, "r2"))[1:6] == ("Bob", "e3", "knows", "Alice", "e1")


async def test_unicode_and_hostile_names(store):
    name = "Zoë 'O\"Brien'; DROP TABLE entities; -- 100% %s 𝄞"
    await entity(store, "e1", name, norm=name.casefold())
    assert await store.ops.graph.entity_id_for_alias(store, name.casefold()) == "e1"
    assert (await store.ops.graph.entity_rows(store, ["e1"]))[0][1] == name


async def test_duplicate_entity_name_fails_and_writes_nothing(store):
    from agentbase.errors import StorageError

    await entity(store, "e1", "Alice")
    with pytest.raises(StorageError):
        async with store.transaction() as c:
            await c.ops.graph.insert_entity(c, "e2", "ALICE", "alice", None, T0)
    assert await store.ops.graph.entity_rows(store, ["e2"]) == []


async def test_relation_row_and_validity_queries(store):
    g = store.ops.graph
    for eid, name in (("a", "Ann"), ("b", "Berlin"), ("c", "Cairo")):
        await entity(store, eid, name)
    await rel(store, "r1", "a", "lives_in", "b", vf=T0, vt=T2, conf=0.4, now=T0)
    await rel(store, "r2", "a", "lives_in", "c", vf=T2, now=T1)
    assert await g.relation_row(store, "missing") is None
    assert await g.relation_row(store, "r1") == ("r1", "Ann", "a", "lives_in", "Berlin", "b", T0, T2, None, 0.4, T0)
    async with store.transaction() as c:
        assert await c.ops.graph.same_relation_at(c, "a", "lives_in", "b", T1) == "r1"
        assert await c.ops.graph.same_relation_at(c, "a", "lives_in", "b", T2) is None  # valid_to is exclusive
        assert await c.ops.graph.same_relation_at(c, "a", "lives_in", "c", T2) == "r2"
        assert await c.ops.graph.next_same_relation(c, "a", "lives_in", "c", T0) == ("r2", T2)
        assert await c.ops.graph.next_same_relation(c, "a", "lives_in", "c", T2) is None
        assert await c.ops.graph.state_starts_between(c, "a", "lives_in", T0, T3) is True
        assert await c.ops.graph.state_starts_between(c, "a", "lives_in", T2, T3) is False
        assert await c.ops.graph.state_starts_between(c, "a", "other", T0, T3) is False
        assert await c.ops.graph.next_state_start(c, "a", "lives_in", T0) == T2
        assert await c.ops.graph.next_state_start(c, "a", "lives_in", T2) is None
        await c.ops.graph.raise_confidence(c, "r1", 0.2)
        await c.ops.graph.raise_confidence(c, "r1", 0.9)
        await c.ops.graph.move_start(c, "r2", T1, 0.1)
    r1, r2 = await g.relation_row(store, "r1"), await g.relation_row(store, "r2")
    assert (r1[9], r2[6], r2[9]) == (0.9, T1, 0.5)
    assert type(r1[9]) is float


async def test_close_others_and_end_open(store):
    g = store.ops.graph
    for eid in ("a", "b", "c", "d"):
        await entity(store, eid, eid.upper())
    await rel(store, "r1", "a", "likes", "b", vf=T0)
    await rel(store, "r2", "a", "likes", "c", vf=T0, vt=T1)  # ended before T2: untouched
    await rel(store, "r3", "a", "likes", "d", vf=T3)  # starts after T2: untouched
    await rel(store, "r4", "a", "likes", "d", vf=T0)
    async with store.transaction() as c:
        await c.ops.graph.close_other_objects(c, "a", "likes", "d", T2)
        assert await c.ops.graph.end_open_relation(c, "a", "likes", "d", T1) == 1  # r4 (r3 begins later)
        assert await c.ops.graph.end_open_relation(c, "a", "likes", "d", T1) == 0
        assert await c.ops.graph.end_open_relation(c, "x", "likes", "d", T1) == 0
    ends = {r: (await g.relation_row(store, r))[7] for r in ("r1", "r2", "r3", "r4")}
    assert ends == {"r1": T2, "r2": T1, "r3": None, "r4": T1}


async def test_orders_put_undated_relations_where_sqlite_does(store):
    g = store.ops.graph
    for eid in ("a", "b", "c", "d"):
        await entity(store, eid, eid.upper())
    await rel(store, "old", "a", "p", "b", vf=T0, now=T0)
    await rel(store, "undated", "a", "p", "c", vf=None, now=T1)
    await rel(store, "new", "d", "q", "a", vf=T2, now=T2)
    await rel(store, "closed", "a", "p", "d", vf=T0, vt=T1, now=T3)
    assert [r[0] for r in await g.relations_at(store, "a", direction="both", when=T3, predicate=None)] == [
        "new", "old", "undated"]
    assert [r[0] for r in await g.relations_at(store, "a", direction="out", when=T3, predicate="p")] == [
        "old", "undated"]
    assert [r[0] for r in await g.relations_at(store, "a", direction="in", when=T3, predicate=None)] == ["new"]
    # closed and old share valid_from: the order of equal keys is not part of the contract
    assert {r[0] for r in await g.relations_at(store, "a", direction="out", when=T0, predicate="p")} == {
        "closed", "old", "undated"}
    assert await g.relations_at(store, "zz", direction="both", when=T3, predicate=None) == []
    assert [r[0] for r in await g.timeline_rows(store, "a")] == ["undated", "old", "closed", "new"]
    touching = [r[0] for r in await g.relations_touching(store, ["b", "c", "d"], None)]
    assert touching[0] == "new" and touching[-1] == "undated" and set(touching[1:3]) == {"old", "closed"}
    assert [r[0] for r in await g.relations_touching(store, ["c", "d"], T3)] == ["new", "undated"]
    assert await g.relations_touching(store, ["nobody"], T3) == []


async def test_times_compare_in_byte_order(store):
    # 'Z' and '+00:00' text, and an unusual but sortable time: byte order decides, as on SQLite
    await entity(store, "a", "A")
    await entity(store, "b", "B")
    for i, vf in enumerate(["2024-01-01 10:00", "2024-01-01T09:00", "2024-01-01t08:00", "2024-01-01_07"]):
        await rel(store, f"r{i}", "a", "p", "b", vf=vf, now=T0)
    got = [r[6] for r in await store.ops.graph.timeline_rows(store, "a")]
    assert got == sorted(got) == ["2024-01-01 10:00", "2024-01-01T09:00", "2024-01-01_07", "2024-01-01t08:00"]
    async with store.transaction() as c:
        assert await c.ops.graph.next_state_start(c, "a", "p", "2024-01-01T") == "2024-01-01T09:00"


async def test_forget_source_reopens_what_it_closed(store, engine):
    await add_entry(store, engine, "m1")
    await add_entry(store, engine, "m2")
    for eid in ("a", "b", "c"):
        await entity(store, eid, eid.upper())
    await rel(store, "r1", "a", "in", "b", vf=T0, vt=T2, src="m1")  # closed by r2
    await rel(store, "r2", "a", "in", "c", vf=T2, src="m2")
    await rel(store, "r3", "a", "in", "b", vf=T0, vt=T2, src="m2")  # closed, but read from m2 itself: deleted
    async with store.transaction() as c:
        assert await c.ops.graph.forget_source(c, "m2") == 2
        assert await c.ops.graph.forget_source(c, "m2") == 0
        assert await c.ops.graph.forget_source(c, "unknown") == 0
    assert (await store.ops.graph.relation_row(store, "r1"))[7] is None
    assert await store.ops.graph.relation_row(store, "r2") is None


async def test_source_rids_orders_open_first_and_filters(store, engine):
    rids = {m: await add_entry(store, engine, m, user_id=u, status=s)
            for m, u, s in (("m1", "u1", "active"), ("m2", "u1", "active"), ("m3", "u2", "active"),
                            ("m4", "u1", "archived"))}
    for eid in ("a", "b", "c"):
        await entity(store, eid, eid.upper())
    await rel(store, "r1", "a", "p", "b", vf=T2, vt=T3, src="m1")  # closed, newest
    await rel(store, "r2", "a", "p", "c", vf=T0, src="m2")  # open, old
    await rel(store, "r3", "c", "p", "a", vf=T1, src="m3")  # open, newer
    await rel(store, "r4", "b", "p", "a", vf=T3, src="m4")  # archived entry
    await rel(store, "r5", "b", "p", "c", vf=T3, src="m1")  # not about a
    g = store.ops.graph
    assert await g.source_rids(store, ["a"], Filters(), 10) == [rids["m3"], rids["m2"], rids["m1"]]
    assert await g.source_rids(store, ["a"], Filters(), 1) == [rids["m3"]]
    assert await g.source_rids(store, ["a"], Filters(user_id="u1"), 10) == [rids["m2"], rids["m1"]]
    assert await g.source_rids(store, ["a"], Filters(include_archived=True, user_id="u1"), 10) == [
        rids["m4"], rids["m2"], rids["m1"]]
    # m1 is the source of an open relation about c (r5), so it comes first, newest valid_from of its rows
    assert await g.source_rids(store, ["c"], Filters(), 10) == [rids["m1"], rids["m3"], rids["m2"]]
    assert await g.source_rids(store, ["nobody"], Filters(), 10) == []
    assert await g.source_rids(store, ["a"], Filters(metadata={"it's %s": "ü"}), 10) == []
    from agentbase.errors import ValidationError

    with pytest.raises(ValidationError):
        await g.source_rids(store, ["a"], Filters(metadata={"k": [1]}), 10)


async def test_memory_rows_to_read_and_active_memory_row(store, engine):
    await add_entry(store, engine, "m1", event_time=T2, created_at=T0)
    await add_entry(store, engine, "m2", created_at=T1)
    await add_entry(store, engine, "fact", created_at=T0)
    await add_entry(store, engine, "turn", created_at=T3)
    await add_entry(store, engine, "res", context_type="resource", created_at=T0)
    await add_entry(store, engine, "gone", status="archived", created_at=T3)
    async with store.transaction() as c:
        await c.execute(q(engine, "INSERT INTO sessions(id, created_at, updated_at) VALUES (?, ?, ?)"), ("s", T0, T0))
        await c.execute(q(engine, "INSERT INTO session_memory_links(session_id, entry_id, kind) VALUES (?, ?, ?)"),
                        ("s", "fact", "fact"))
        await c.execute(q(engine, "INSERT INTO session_memory_links(session_id, entry_id, kind) VALUES (?, ?, ?)"),
                        ("s", "turn", "turn"))
    g = store.ops.graph
    assert [r[1] for r in await g.memory_rows_to_read(store, None)] == ["m2", "m1", "turn", "gone"]
    assert [r[1] for r in await g.memory_rows_to_read(store, ["m1", "fact", "res", "nope"])] == ["m1"]
    assert await g.memory_rows_to_read(store, []) == []
    row = await g.active_memory_row(store, "m1")
    assert (row[1], row[2], row[6], row[18]) == ("m1", "memory", "text of m1", T2)
    assert await g.active_memory_row(store, "gone") is None
    assert await g.active_memory_row(store, "res") is None


async def test_concurrent_writers_resolve_one_name_to_one_entity(store):
    async def one(i: int) -> str:
        async with store.transaction() as c:
            eid = await upsert_entity(c, "Alice Smith", "person", aliases=[f"alias {i}", "Ally"], now=T0)
            await asyncio.sleep(0.01)  # hold the transaction open while the others try
            return eid

    ids = await asyncio.gather(*(one(i) for i in range(6)))
    assert len(set(ids)) == 1
    assert (await store.fetchone("SELECT COUNT(*) FROM entities"))[0] == 1
    assert (await store.fetchone("SELECT COUNT(*) FROM entity_aliases"))[0] == 8  # name, ally, 6 aliases
    row = (await store.ops.graph.entity_rows(store, ids[:1]))[0]
    assert sorted(json.loads(row[3])) == sorted(["Ally", *(f"alias {i}" for i in range(6))])


async def test_random_graph_answers_the_same_on_both_engines(store, engine, tmp_path):
    """Differential: one seeded graph (unique start times, some undated), queried on SQLite and PostgreSQL."""
    import random

    from agentbase.storage import open_database

    if engine == "sqlite":
        pytest.skip("compares both engines: runs in the postgres leg")
    ents = [f"e{i}" for i in range(6)]

    def when(r: random.Random) -> str:
        return f"2024-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}T{r.randint(0, 23):02d}:00:00.000000+00:00"

    lite = await open_database(tmp_path / "graph.db")
    try:
        for db in (lite, store):
            for e in ents:
                await entity(db, e, e.upper())
            r = random.Random(11)
            used: set[str] = set()
            for i in range(80):
                vf = None if r.random() < 0.15 else when(r)
                while vf in used:
                    vf = when(r)
                if vf:
                    used.add(vf)
                vt = None if vf is None or r.random() < 0.5 else max(vf, when(r)) + "~"
                await rel(db, f"r{i:02d}", r.choice(ents), r.choice(["p", "q"]), r.choice(ents), vf=vf, vt=vt,
                          conf=r.random(), now=f"2025-01-01T00:00:{i:02d}.000000+00:00")
            async with db.transaction() as c:
                for _ in range(20):
                    s, p, o, t = r.choice(ents), r.choice(["p", "q"]), r.choice(ents), when(r)
                    if r.random() < 0.5:
                        await c.ops.graph.close_other_objects(c, s, p, o, t)
                    else:
                        await c.ops.graph.end_open_relation(c, s, p, o, t)
        rng = random.Random(3)
        for _ in range(60):
            e, t, p = rng.choice(ents), when(rng), rng.choice([None, "p", "q"])
            d = rng.choice(["out", "in", "both"])
            for db_a, db_b in ((lite, store),):
                a = await db_a.ops.graph.relations_at(db_a, e, direction=d, when=t, predicate=p)
                b = await db_b.ops.graph.relations_at(db_b, e, direction=d, when=t, predicate=p)
                assert a == b
                assert await db_a.ops.graph.timeline_rows(db_a, e) == await db_b.ops.graph.timeline_rows(db_b, e)
                frontier = rng.sample(ents, 2)
                ta = await db_a.ops.graph.relations_touching(db_a, frontier, t)
                tb = await db_b.ops.graph.relations_touching(db_b, frontier, t)
                dated = [x for x in ta if x[6] is not None]
                assert dated == [x for x in tb if x[6] is not None] and sorted(ta) == sorted(tb)
                o = rng.choice(ents)
                async with db_a.transaction() as ca, db_b.transaction() as cb:
                    for fn in ("next_state_start", "state_starts_between"):
                        args = (e, p or "p", t) if fn == "next_state_start" else (e, p or "p", t, when(rng))
                        assert await getattr(ca.ops.graph, fn)(ca, *args) == await getattr(cb.ops.graph, fn)(cb, *args)
                    # several rows may match (LIMIT 1 without an order): the same answer is "one or none"
                    sa = await ca.ops.graph.same_relation_at(ca, e, p or "p", o, t)
                    sb = await cb.ops.graph.same_relation_at(cb, e, p or "p", o, t)
                    assert (sa is None) == (sb is None)
                    assert (await ca.ops.graph.next_same_relation(ca, e, p or "p", o, t)
                            == await cb.ops.graph.next_same_relation(cb, e, p or "p", o, t))
    finally:
        await lite.close()


def test_same_functions_and_signatures_as_the_sqlite_engine():
    from tests.storage.contract.seed import assert_same_interface

    assert_same_interface("graph")
