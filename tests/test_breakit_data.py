"""Regressions from a break-it pass on data integrity: session deletes, superseded facts, Unicode case, races."""

from __future__ import annotations

import asyncio

import pytest

from agentbase import NotFoundError, ValidationError


async def _session_saying(db, user_id: str, text: str) -> str:
    s = await db.create_session(user_id=user_id)
    await db.add_message(s.id, "user", text)
    await db.commit_session(s.id)
    return s.id


async def _prefs(db, user_id: str) -> list[str]:
    return [e.l2_full for e in await db.list(user_id=user_id, category="preference")]


async def test_deleting_a_session_keeps_facts_another_session_stated(db):
    s1 = await _session_saying(db, "u", "My favorite color is blue.")
    s2 = await _session_saying(db, "u", "My favorite color is blue.")  # hardens s1's fact
    assert await _prefs(db, "u") == ["User's favorite color is blue"]
    assert await db.delete_session(s2, delete_memories=True)
    assert await _prefs(db, "u") == ["User's favorite color is blue"]
    assert await db.get_session(s2) is None
    # Once no session links to it any more, deleting the last one removes it.
    assert await db.delete_session(s1, delete_memories=True)
    assert await _prefs(db, "u") == []
    assert await db.list(user_id="u") == []


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


async def test_keyword_search_finds_words_whose_casefold_differs(db):
    e = await db.add_memory("Wir wohnen in der Hauptstraße, der Fußball ist groß", user_id="u")
    g = await db.add_memory("ᾄδω τῇ θεᾷ", user_id="u")
    for query, want in [("Hauptstraße", e), ("FUSSBALL", None), ("Fußball", e), ("groß", e), ("θεᾷ", g)]:
        hits = await db.find(query, mode="fts", user_id="u")
        assert [h.entry.id for h in hits] == ([want.id] if want else []), query


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
