"""Archive operations (``ops.archives``) on both engines: the import inserts (keeping or replacing what exists),
a snapshot of every exported member, and the same data giving the same snapshot on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json

import pytest

from agentbase.storage import SCHEMA_VERSION, open_database

T0, T1, T2 = "2024-01-01T00:00:00.000000+00:00", "2025-01-01T00:00:00.000000+00:00", "2026-01-01T00:00:00.000000+00:00"
ODD = "ünï 'q' \"dq\" 100% %s 𝄞"
ENTRY_COLUMNS = ["id", "context_type", "category", "l0_abstract", "l1_overview", "l2_full", "tags", "metadata",
                 "scope", "user_id", "agent_id", "project_id", "session_id", "confidence", "importance",
                 "created_at", "updated_at", "event_time", "content_hash", "fact_key", "access_count",
                 "last_accessed_at", "superseded_by", "status", "uri", "mime_type", "name", "description"]


def entry_values(entry_id: str, **kw) -> dict:
    """An archived entry row as an export writes it (every stored column but the derived ones)."""
    row = dict.fromkeys(ENTRY_COLUMNS)
    row.update(id=entry_id, context_type="memory", category="fact", l0_abstract="", l1_overview="",
               l2_full=f"{ODD} text of {entry_id}", tags='["t1","t2"]', metadata='{"k":"v"}', scope="global",
               confidence=0.75, importance=0.5, created_at=T0, updated_at=T1, content_hash=f"h-{entry_id}",
               access_count=3, status="active")
    row.update(kw)
    return row


async def fill(store) -> None:
    """The same rows on either engine, written only through this group's operations (and the graph's)."""
    async with store.transaction() as c:
        a = c.ops.archives
        table = await a.entry_table_columns(c)
        for eid, extra in (("e1", {}), ("e2", {"context_type": "skill", "name": "sk", "fact_key": "fk"}),
                           ("e3", {"status": "archived", "event_time": T2})):
            values = entry_values(eid, **extra)
            await a.insert_entry_columns(c, {k: values[k] for k in table if k in values
                                             and k not in a.DERIVED_ENTRY_COLUMNS},
                                         f"{values['l2_full']} keyword text", ["t1", "t2", "t1"])
        await a.insert_history_events(c, [
            {"id": "h1", "entry_id": "e1", "event": "ADD", "created_at": T0, "new_value": "x"},
            {"id": "h2", "entry_id": "gone", "event": "DELETE", "created_at": T1, "old_value": ODD,
             "metadata": '{"source":"archive"}'}])
        await a.insert_session(c, {"id": "s2", "user_id": "u", "agent_id": None, "project_id": "p",
                                   "status": "committed", "metadata": "{}", "created_at": T1, "updated_at": T1,
                                   "committed_seq": 2, "enriched_seq": 1, "unexported": "ignored"})
        await a.insert_session(c, {"id": "s1", "user_id": None, "agent_id": None, "project_id": None,
                                   "status": "open", "metadata": '{"a":1}', "created_at": T0, "updated_at": T2,
                                   "committed_seq": 0, "enriched_seq": 0})
        await a.insert_messages(c, [
            {"id": f"m{i}", "session_id": "s2", "seq": i, "role": "user", "content": f"{ODD} {i}", "name": None,
             "tool_calls": None, "tool_call_id": None, "metadata": "{}", "created_at": T1} for i in (2, 1)])
        await a.insert_links(c, [{"session_id": "s2", "entry_id": "e1", "kind": "turn", "message_seq": 1},
                                 {"session_id": "s2", "entry_id": "e3", "kind": "fact", "message_seq": None}])
        await a.insert_entity_row(c, "ent-b", "Bob", "bob", "person", '["Bobby"]', T1)
        await a.insert_entity_row(c, "ent-a", ODD, ODD.casefold(), None, "[]", T0)
        await a.index_aliases(c, "ent-b", ["bob", "bobby"])
        await a.index_aliases(c, "ent-a", [ODD.casefold()])
        await c.ops.graph.insert_relation(c, "r2", "ent-a", "knows", "ent-b", valid_from=T1, valid_to=None,
                                          source_entry_id="e1", confidence=0.5, now=T1)
        await c.ops.graph.insert_relation(c, "r1", "ent-b", "knows", "ent-a", valid_from=None, valid_to=None,
                                          source_entry_id=None, confidence=1.0, now=T0)
        await a.upsert_skill_files(c, [("e2", "b.md", ODD, len(ODD.encode()), "s1"), ("e2", "a.md", "x", 1, "s2")])
        # an embed job queued for e1 marks it embedded in the export
        await c.execute("INSERT INTO jobs(kind, target, next_run_at, created_at, updated_at) VALUES "
                        + ("(%s, %s, %s, %s, %s)" if getattr(store, "engine", "sqlite") == "postgres" else "(?, ?, ?, ?, ?)"),
                        ("embed", "e1", T0, T0, T0))


async def snap(store):
    src = store.url if getattr(store, "engine", "sqlite") == "postgres" else store.path
    return await asyncio.to_thread(store.ops.archives.snapshot, src, getattr(store, "driver", "sqlite3"), 5.0)


async def test_schema_version_and_entry_columns(store):
    assert await store.ops.archives.schema_version(store) == SCHEMA_VERSION
    async with store.transaction() as c:
        table = await c.ops.archives.entry_table_columns(c)
    assert table[:2] == ["rid", "id"] and "fts_text" in table
    assert [col for col in table if col not in store.ops.archives.DERIVED_ENTRY_COLUMNS] == ENTRY_COLUMNS


async def test_snapshot_of_an_empty_database(store):
    data = await snap(store)
    assert tuple(data) == store.ops.archives.EXPORTED_MEMBERS
    assert all(rows == [] for rows in data.values())


async def test_snapshot_rows_and_orders(store):
    await fill(store)
    data = await snap(store)
    assert tuple(data) == ("entries.jsonl", "history.jsonl", "sessions.jsonl", "messages.jsonl", "links.jsonl",
                           "entities.jsonl", "entity_aliases.jsonl", "relations.jsonl", "skill_files.jsonl")
    entries = data["entries.jsonl"]
    assert [e["id"] for e in entries] == ["e1", "e2", "e3"]
    assert entries[0] == {**entry_values("e1"), "embedded": 1}
    assert entries[1]["embedded"] == 0 and type(entries[1]["embedded"]) is int
    assert (entries[1]["fact_key"], entries[2]["event_time"], type(entries[0]["confidence"])) == ("fk", T2, float)
    assert [h["id"] for h in data["history.jsonl"]] == ["h1", "h2"]
    assert data["history.jsonl"][0] == {"id": "h1", "entry_id": "e1", "event": "ADD", "old_value": None,
                                        "new_value": "x", "metadata": "{}", "created_at": T0}
    assert data["history.jsonl"][1]["old_value"] == ODD
    assert sorted(s["id"] for s in data["sessions.jsonl"]) == ["s1", "s2"]
    assert [m["id"] for m in data["messages.jsonl"]] == ["m1", "m2"]
    assert data["messages.jsonl"][0]["content"] == f"{ODD} 1"
    assert [(lk["entry_id"], lk["message_seq"]) for lk in data["links.jsonl"]] == [("e1", 1), ("e3", None)]
    assert sorted(e["id"] for e in data["entities.jsonl"]) == ["ent-a", "ent-b"]
    assert [a["norm_alias"] for a in data["entity_aliases.jsonl"]] == ["bob", "bobby", ODD.casefold()]
    assert sorted(r["id"] for r in data["relations.jsonl"]) == ["r1", "r2"]
    assert [(f["path"], f["content"]) for f in data["skill_files.jsonl"]] == [("a.md", "x"), ("b.md", ODD)]
    json.dumps(data)  # every value is plain JSON


async def test_imported_entry_has_keyword_index_and_tags(store):
    await fill(store)
    rows = await store.fetchall("SELECT e.id, t.tag FROM entry_tags t JOIN entries e ON e.rid = t.rid "
                                "ORDER BY e.id, t.tag")
    assert [tuple(r) for r in rows] == [(e, t) for e in ("e1", "e2", "e3") for t in ("t1", "t2")]
    if getattr(store, "engine", "sqlite") == "postgres":
        from agentbase.storage.postgres.tokens import document_tokens

        n = len(document_tokens(f"{entry_values('e1')['l2_full']} keyword text"))
        assert tuple(await store.fetchone("SELECT doc_len, fts @@ to_tsquery('simple', 'keyword') FROM entries "
                                          "WHERE id = %s", ("e1",))) == (n, True)
        assert tuple(await store.fetchone("SELECT SUM(docs), SUM(tokens) FROM keyword_stats")) == (3, 3 * n)
    else:
        hits = await store.fetchall("SELECT rowid FROM entries_fts WHERE entries_fts MATCH 'keyword'")
        assert len(hits) == 3


async def test_inserts_keep_what_exists(store):
    await fill(store)
    async with store.transaction() as c:
        a = c.ops.archives
        await a.insert_history_events(c, [{"id": "h1", "entry_id": "e1", "event": "UPDATE", "created_at": T2}])
        await a.insert_history_events(c, [])
        await a.insert_links(c, [{"session_id": "s2", "entry_id": "e1", "kind": "fact", "message_seq": 9}])
        await a.insert_links(c, [])
        await a.insert_messages(c, [])
        await a.index_aliases(c, "ent-a", ["bob", "new alias"])  # 'bob' stays Bob's
        await a.index_aliases(c, "ent-a", [])
        await a.upsert_skill_files(c, [("e2", "a.md", "replaced", 8, "s3")])
        await a.upsert_skill_files(c, [])
        await a.set_entity_alias_list(c, "ent-b", '["Bobby","Rob"]')
        await a.set_entity_alias_list(c, "missing", "[]")
    data = await snap(store)
    assert data["history.jsonl"][0]["event"] == "ADD"
    assert [(lk["entry_id"], lk["kind"]) for lk in data["links.jsonl"]] == [("e1", "turn"), ("e3", "fact")]
    assert await store.ops.graph.entity_id_for_alias(store, "bob") == "ent-b"
    assert await store.ops.graph.entity_id_for_alias(store, "new alias") == "ent-a"
    assert [(f["path"], f["content"], f["size_bytes"]) for f in data["skill_files.jsonl"]] == [
        ("a.md", "replaced", 8), ("b.md", ODD, len(ODD.encode()))]
    assert [e["aliases"] for e in data["entities.jsonl"] if e["id"] == "ent-b"] == ['["Bobby","Rob"]']


async def test_entity_collision_and_relation_end(store):
    await fill(store)
    async with store.transaction() as c:
        a = c.ops.archives
        assert await a.entity_collides(c, "ent-a", "someone else") is True
        assert await a.entity_collides(c, "other", "bob") is True
        assert await a.entity_collides(c, "other", "nobody") is False
        assert await a.relation_end(c, "r1") == (True, None)
        assert await a.relation_end(c, "missing") == (False, None)
        await a.set_relation_end(c, "r1", T2)
        assert await a.relation_end(c, "r1") == (True, T2)


async def test_duplicate_rows_fail_and_write_nothing(store):
    from agentbase.errors import StorageError

    await fill(store)
    for bad in ("entry", "session", "entity"):
        with pytest.raises(StorageError):
            async with store.transaction() as c:
                a = c.ops.archives
                await a.insert_history_events(c, [{"id": "h-new", "entry_id": "x", "event": "ADD",
                                                   "created_at": T0}])
                if bad == "entry":
                    await a.insert_entry_columns(c, entry_values("e1"), "text", [])
                elif bad == "session":
                    await a.insert_session(c, {"id": "s1", "user_id": None, "agent_id": None, "project_id": None,
                                               "status": "open", "metadata": "{}", "created_at": T0,
                                               "updated_at": T0, "committed_seq": 0, "enriched_seq": 0})
                else:
                    await a.insert_entity_row(c, "ent-new", "BOB", "bob", None, "[]", T0)
    assert [h["id"] for h in (await snap(store))["history.jsonl"]] == ["h1", "h2"]


async def test_the_same_data_snapshots_the_same_on_both_engines(store, engine, tmp_path):
    if engine == "sqlite":
        pytest.skip("compares both engines: runs in the postgres leg")
    lite = await open_database(tmp_path / "same.db")
    try:
        await fill(lite)
        await fill(store)
        a, b = await snap(lite), await snap(store)
    finally:
        await lite.close()
    assert tuple(a) == tuple(b)
    for member in a:
        if member in ("sessions.jsonl", "entities.jsonl", "relations.jsonl"):  # insertion vs created_at order
            assert sorted(a[member], key=str) == sorted(b[member], key=str), member
        else:
            assert a[member] == b[member], member


def test_postgres_snapshot_of_an_unreachable_server_names_no_password():
    from agentbase.errors import StorageError
    from agentbase.storage.postgres import archives

    with pytest.raises(StorageError) as err:
        archives.snapshot("postgresql://agent:s3cret-pw@127.0.0.1:1/nodb", "psycopg", 1.0)
    assert "s3cret-pw" not in str(err.value) and "***" in str(err.value)


def test_same_functions_and_signatures_as_the_sqlite_engine():
    from tests.storage.contract.seed import assert_same_interface

    assert_same_interface("archives")
