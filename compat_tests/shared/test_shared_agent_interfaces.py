"""The interfaces today's agent code calls write one memory: a LangGraph store put, an OpenAI Agents SDK session
turn and a mem0 ``add`` for the same user are all found by one ``find()`` on the shared file, and each framework
reads what the others stored."""

from __future__ import annotations

import asyncio

from agentbase.adapters import AgentBaseSession, AgentBaseStore


def test_store_session_and_mem0_memories_meet_in_one_find(db, adapters):
    store = AgentBaseStore(db, user_from_namespace=-1)  # ("memories", "<user_id>")
    store.put(("memories", "alice"), "trip", {"text": "Alice is flying to Lisbon on the 14th"})
    session = AgentBaseSession("agents-1", db, user_id="alice")
    asyncio.run(session.add_items([{"role": "user", "content": "Book a hotel near the Lisbon Oceanarium"},
                                   {"role": "assistant", "content": "Booked the Tivoli Oriente for three nights"}]))
    added = adapters["mem0"].add("I prefer aisle seats on flights to Lisbon", user_id="alice", infer=False)
    db.sync.flush()

    hits = db.sync.find("Lisbon", user_id="alice", top_k=20)
    texts = [h.entry.l2_full for h in hits]
    assert any("flying to Lisbon" in t for t in texts), texts  # the LangGraph store's item
    assert any("Oceanarium" in t for t in texts), texts  # the Agents SDK session's committed turn
    assert added["results"][0]["id"] in {h.entry.id for h in hits}  # the mem0 memory
    assert db.sync.find("Lisbon", user_id="bob") == []  # the owner scopes all three

    # the store searches inside its namespace; mem0 lists the store's item and the session's turns as memories
    assert [i.key for i in store.search(("memories", "alice"), query="Lisbon")] == ["trip"]
    listed = [m["memory"] for m in adapters["mem0"].get_all(user_id="alice")["results"]]
    assert any("flying to Lisbon" in m for m in listed), listed
    assert [i["content"] for i in asyncio.run(session.get_items())][0].startswith("Book a hotel")
