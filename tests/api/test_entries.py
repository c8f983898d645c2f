"""Entry CRUD, dedup, history, and that update/delete reach every index at once; concurrent adds, updates and
deletes agree; deleting or editing a fact keeps its superseded chain right."""

from __future__ import annotations

import asyncio

import pytest

from agentbase import NotFoundError, ValidationError
from tests._helpers import _prefs, _session_saying


async def test_add_get_update_delete_history(db):
    e = await db.add_memory("User prefers Python 3.12", category="preference", tags=["python"], user_id="alice")
    got = await db.get(e.id)
    assert got.l2_full == "User prefers Python 3.12"
    assert got.category == "preference" and "python" in got.tags and got.user_id == "alice"
    assert len(got.l0_abstract) <= 50 and len(got.l1_overview) <= 300
    await db.update(e.id, "User prefers Python 3.13")
    await db.delete(e.id)
    assert await db.get(e.id) is None
    events = [(h.event, h.old_value, h.new_value) for h in await db.history(e.id)]
    assert events == [("ADD", None, "User prefers Python 3.12"),
                      ("UPDATE", "User prefers Python 3.12", "User prefers Python 3.13"),
                      ("DELETE", "User prefers Python 3.13", None)]


async def test_same_text_same_owner_gives_one_entry(db):
    a = await db.add_memory("I like pizza", user_id="alice")
    b = await db.add_memory("  i like PIZZA ", user_id="alice")
    c = await db.add_memory("I like pizza", user_id="bob")
    assert a.id == b.id and b.confidence >= a.confidence
    assert c.id != a.id
    assert await db.count(user_id="alice") == 1


async def test_update_twice_leaves_one_vector_and_only_new_text_matches(db):
    e = await db.add_memory("the deployment key is ALPHA", user_id="u")
    await db.flush()
    await db.update(e.id, "the deployment key is BRAVO")
    await db.update(e.id, "the deployment key is CHARLIE")
    await db.flush()
    rows = await db.db.fetchall("SELECT COUNT(*) FROM embeddings")
    assert rows[0][0] == 1
    vec_rows = await db.db.fetchall("SELECT COUNT(*) FROM vec_entries")
    assert vec_rows[0][0] == 1
    for mode in ("fts", "vector", "hybrid"):
        assert [r.entry.id for r in await db.find("ALPHA", mode="fts")] == []
        hits = await db.find("CHARLIE deployment key", mode=mode)
        assert hits and hits[0].entry.l2_full.endswith("CHARLIE")
    assert not await db.find("BRAVO", mode="fts")


async def test_delete_is_gone_from_every_mode(db):
    e = await db.add_memory("zebra crossing near the office", user_id="u")
    await db.flush()
    assert (await db.find("zebra crossing", mode="vector"))[0].entry.id == e.id
    assert await db.delete(e.id) is True
    for mode in ("fts", "vector", "hybrid"):
        assert all(r.entry.id != e.id for r in await db.find("zebra crossing", mode=mode))
    assert await db.delete(e.id) is False


async def test_bad_input_is_typed_and_writes_nothing(db):
    for bad in ["", "   ", None, 42, "party \ud83d"]:
        with pytest.raises(ValidationError):
            await db.add_memory(bad, user_id="u")
    with pytest.raises(ValidationError):
        await db.add_memory("ok", confidence=2.0)
    with pytest.raises(ValidationError):
        await db.add_memory("ok", tags="not-a-list")
    with pytest.raises(NotFoundError):
        await db.update("no-such-id", "x")
    assert await db.count() == 0
    assert (await db.db.fetchall("SELECT COUNT(*) FROM entry_history"))[0][0] == 0


async def test_large_text_is_stored_chunked_for_embedding_and_found(db):
    filler = "lorem ipsum dolor sit amet consectetur adipiscing elit. " * 22000
    text = filler + " The vault combination is quartz-lantern-917."
    assert len(text) > 1_200_000
    e = await db.add_memory(text, user_id="u")
    assert await db.flush() == 0
    hits = await db.find("quartz lantern vault combination", user_id="u")
    assert hits and hits[0].entry.id == e.id
    assert (await db.get(e.id)).l2_full == text


async def test_owner_scoped_get_update_delete(db):
    e = await db.add_memory("u1 secret plan", user_id="u1")
    assert await db.get(e.id, user_id="u2") is None
    with pytest.raises(NotFoundError):
        await db.update(e.id, "hijacked", user_id="u2")
    assert await db.delete(e.id, user_id="u2") is False
    assert (await db.get(e.id)).l2_full == "u1 secret plan"


async def test_resources_and_skills(db):
    chunks = await db.add_resource("file:///handbook.md", "Deploys run on Fridays. " * 200, mime_type="text/markdown",
                                   title="Handbook", chunk_chars=1000)
    assert len(chunks) > 1 and all(c.uri == "file:///handbook.md" for c in chunks)
    assert [c.metadata["chunk_index"] for c in chunks] == list(range(len(chunks)))
    skill = await db.add_skill("deploy-service", "How to deploy the web service to production",
                               "Run make deploy then check the dashboard")
    await db.flush()
    hits = await db.find("how do I deploy", context_type="skill")
    assert hits[0].entry.id == skill.id and hits[0].entry.name == "deploy-service"


async def test_add_resource_with_a_known_uri_replaces_that_resource(db):
    text = "Deploys run on Fridays after the review. " * 60  # ~2,460 characters: 3 chunks of 1,000
    first = await db.add_resource("file:///handbook.md", text, title="Handbook", chunk_chars=1000, user_id="u1")
    other = await db.add_resource("file:///handbook.md", text, chunk_chars=1000, user_id="u2")  # other owner
    again = await db.add_resource("file:///handbook.md", text, title="Handbook", chunk_chars=1000, user_id="u1")
    assert [c.id for c in again] == [c.id for c in first] and len(first) == 3
    assert [e.event for e in await db.history(first[0].id)] == ["ADD"]  # same text: nothing changed
    shorter = await db.add_resource("file:///handbook.md", "Deploys now run on Mondays. " * 40, title="Handbook",
                                    chunk_chars=1000, user_id="u1")
    assert [c.id for c in shorter] == [c.id for c in first[:2]]
    assert [c.created_at for c in shorter] == [c.created_at for c in first[:2]]
    assert [e.event for e in await db.history(first[0].id)] == ["ADD", "UPDATE"]
    assert await db.get(first[2].id) is None  # the chunk beyond the new count is gone
    await db.flush()
    u1 = await db.list(user_id="u1", context_type="resource")
    assert sorted(e.id for e in u1) == sorted(c.id for c in shorter)
    assert all("Mondays" in e.l2_full for e in u1)
    assert len(await db.list(user_id="u2", context_type="resource")) == len(other) == 3
    hits = await db.find("when do deploys run", user_id="u1", context_type="resource")
    assert hits and all("Mondays" in h.entry.l2_full for h in hits)


async def test_unserialisable_metadata_duplicate_and_empty_ids_are_validation_errors(db):
    e = await db.add_memory("first", entry_id="fixed-id")
    with pytest.raises(ValidationError):
        await db.add_memory("second", entry_id="fixed-id")
    with pytest.raises(ValidationError):
        await db.add_memory("third", entry_id="")
    with pytest.raises(ValidationError):
        await db.add_memory("fourth", metadata={"x": object()})
    s = await db.create_session()
    with pytest.raises(ValidationError):
        await db.add_message(s.id, "assistant", "", tool_calls=[{"f": object()}])
    m = await db.add_message(s.id, "user", "hi", message_id="msg-1")
    with pytest.raises(ValidationError):
        await db.add_message(s.id, "user", "again", message_id="msg-1")
    assert [x.id for x in await db.list()] == [e.id]
    assert [x.id for x in await db.get_messages(s.id)] == [m.id]


async def test_deleting_the_newest_value_of_a_fact_makes_the_previous_one_current(db):
    for color in ("red", "pink", "green"):
        await _session_saying(db, "v", f"My favorite color is {color}.")
    assert await _prefs(db, "v") == ["User's favorite color is green"]
    pink = next(e for e in await db.list(user_id="v", category="preference", exclude_superseded=False)
                if "pink" in e.l2_full)
    assert await db.delete(pink.id)  # the middle value: red now points at green
    all_prefs = await db.list(user_id="v", category="preference", exclude_superseded=False)
    green = next(e for e in all_prefs if "green" in e.l2_full)
    red = next(e for e in all_prefs if "red" in e.l2_full)
    assert red.superseded_by == green.id and green.superseded_by is None
    assert await db.delete(green.id)  # the current value: red is current again
    assert await _prefs(db, "v") == ["User's favorite color is red"]
    assert [h.event for h in await db.history(red.id)][-1] == "UPDATE"


async def test_concurrent_adds_of_one_text_store_one_entry_and_harden_it(db):
    added = await asyncio.gather(*(db.add_memory("I like green tea", user_id="x") for _ in range(5)))
    assert len({e.id for e in added}) == 1
    stored = await db.list(user_id="x")
    assert len(stored) == 1 and stored[0].confidence == pytest.approx(1.0)  # capped: 1.0 + 4 x 0.1
    low = await db.add_memory("I like oolong", user_id="y", confidence=0.5)
    await asyncio.gather(*(db.add_memory("I like oolong", user_id="y") for _ in range(3)))
    assert (await db.get(low.id)).confidence == pytest.approx(0.8)  # every repeat counted once


async def test_concurrent_delete_and_update_agree(db):
    e = await db.add_memory("draft text", user_id="u")
    deleted, updated = await asyncio.gather(db.delete(e.id), db.update(e.id, "updated text"),
                                            return_exceptions=True)
    assert deleted is True and isinstance(updated, NotFoundError)
    assert await db.get(e.id) is None
    assert [h.event for h in await db.history(e.id)] == ["ADD", "DELETE"]
    e2 = await db.add_memory("second draft", user_id="u")
    assert sorted(await asyncio.gather(db.delete(e2.id), db.delete(e2.id))) == [False, True]
    assert [h.event for h in await db.history(e2.id)] == ["ADD", "DELETE"]
    await db.add_memory("keep 1", user_id="w")
    await db.add_memory("keep 2", user_id="w")
    assert sorted(await asyncio.gather(db.delete_all(user_id="w"), db.delete_all(user_id="w"))) == [0, 2]


async def test_concurrent_adds_with_one_entry_id_give_a_validation_error(db):
    first, second = await asyncio.gather(db.add_memory("a", entry_id="fixed"), db.add_memory("b", entry_id="fixed"),
                                         return_exceptions=True)
    assert first.id == "fixed" and isinstance(second, ValidationError)
    assert (await db.get("fixed")).l2_full == "a"


async def test_an_edited_fact_is_not_superseded_by_a_later_value_of_the_old_fact(db):
    await _session_saying(db, "a", "My favorite color is blue.")
    fact = (await db.list(user_id="a", category="preference"))[0]
    await db.update(fact.id, "Alice's cat is named Whiskers", category="possession")
    await _session_saying(db, "a", "My favorite color is green.")
    edited = await db.get(fact.id)
    assert edited.superseded_by is None
    assert [h.entry.id for h in await db.find("cat named Whiskers", user_id="a", mode="fts")][:1] == [fact.id]
    assert await _prefs(db, "a") == ["User's favorite color is green"]


async def test_a_duplicate_add_keeps_the_callers_new_tags_and_metadata(db):
    first = await db.add_memory("I like tea", user_id="u", tags=["drinks"], metadata={"src": "chat"})
    again = await db.add_memory("i like TEA ", user_id="u", tags=["new"], metadata={"k": 1})
    assert again.id == first.id
    stored = await db.get(first.id)
    assert [t for t in stored.tags if not t.startswith("ner_")] == ["drinks", "new"]
    assert stored.metadata == {"src": "chat", "k": 1} and stored.confidence == pytest.approx(1.0)
    assert [r.entry.id for r in await db.find("tea", user_id="u", tags=["new"], mode="fts")] == [first.id]


async def test_duplicate_keeps_stored_metadata_values_and_confidence_steps_exactly(db):
    first = await db.add_memory("I like oolong", user_id="y", confidence=0.5, metadata={"x": 1})
    await db.add_memory("I like oolong", user_id="y", metadata={"x": 9, "y": 2})
    await db.add_memory("I like oolong", user_id="y")
    await db.add_memory("I like oolong", user_id="y")
    stored = await db.get(first.id)
    assert stored.metadata == {"x": 1, "y": 2} and stored.confidence == 0.8
