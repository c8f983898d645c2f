"""Cross-adapter behaviour: what one framework writes into the file, the others read, and deletes are global.

Adapters: mem0 (``Mem0Adapter``), minimal (``MinimalAdapter``), OpenAI Threads (``OpenAIAssistantAdapter``),
LangChain (``AgentBaseChatMessageHistory``, ``LangChainMemoryAdapter``) and LlamaIndex
(``AgentBaseChatStore``), all on one ``AgentBase`` and one SQLite file.
"""

from __future__ import annotations

import asyncio

from langchain_core.messages import AIMessage, HumanMessage
from llama_index.core.base.llms.types import ChatMessage

from agentbase.adapters import AgentBaseChatMessageHistory, AsyncMem0Adapter, LangChainMemoryAdapter


def _context_ids(openai, thread_id: str, query: str) -> list[str]:
    return [c["entry_id"] for c in openai.retrieve_context(thread_id, query, scope="owner")]


def test_one_file_for_all(db, adapters):
    history = AgentBaseChatMessageHistory(db, "lc-0", user_id="alice")
    readers = [adapters["mem0"], adapters["minimal"], adapters["llama_index"], history]
    assert {a.db for a in readers} == {db}
    thread = adapters["openai"].create_thread()
    assert db.sync.get_session(thread["id"]).user_id == "alice"  # the OpenAI adapter writes the same file
    assert {s.id for s in db.sync.list_sessions()} == {thread["id"]}


def test_mem0_fact_is_found_by_every_reader(db, adapters):
    mem0, minimal, openai = adapters["mem0"], adapters["minimal"], adapters["openai"]
    fact = mem0.add("I like pizza", user_id="alice")["results"][0]
    assert fact["memory"] == "User likes pizza"
    assert fact["id"] in [h["id"] for h in minimal.recall("pizza", who="alice")]
    assert fact["id"] in [r.entry.id for r in db.sync.find("pizza", user_id="alice")]
    thread = openai.create_thread(messages=[{"role": "user", "content": "What food do I like?"}])
    context = openai.retrieve_context(thread["id"], "pizza", scope="owner")
    hit = next(c for c in context if c["entry_id"] == fact["id"])
    assert hit["source"] == "memory" and hit["content"] == "User likes pizza"
    assert minimal.recall("pizza", who="bob") == []  # owners still scope every reader


def test_minimal_memory_is_a_mem0_memory(adapters):
    mem0, minimal = adapters["mem0"], adapters["minimal"]
    eid = minimal.remember("Alice prefers window seats", who="alice", tags=["travel"])
    item = mem0.get(eid)
    assert item["memory"] == "Alice prefers window seats" and item["user_id"] == "alice"
    assert mem0.search("window seats", user_id="alice")["results"][0]["id"] == eid
    assert [h["event"] for h in mem0.history(eid)] == ["ADD"]


def test_langchain_conversation_is_a_session_that_commits(db, adapters):
    history = AgentBaseChatMessageHistory(db, "lc-1", user_id="alice")
    history.add_messages([HumanMessage("My favorite color is blue"), AIMessage("Noted, blue it is")])
    session = db.sync.get_session("lc-1")
    assert session is not None and session.user_id == "alice"
    assert [(m.role, m.content) for m in db.sync.get_messages("lc-1")] == [
        ("user", "My favorite color is blue"), ("assistant", "Noted, blue it is")]
    # the same conversation through the other chat-shaped adapters
    assert [(m.role.value, m.content) for m in adapters["llama_index"].get_messages("lc-1")] == [
        ("user", "My favorite color is blue"), ("assistant", "Noted, blue it is")]
    listed = adapters["openai"].list_messages("lc-1", order="asc")["data"]
    assert [m["content"][0]["text"]["value"] for m in listed] == ["My favorite color is blue",
                                                                 "Noted, blue it is"]
    report = db.sync.commit_session("lc-1")
    assert report["facts_added"] == 1 and report["turns"] == 2
    db.sync.flush()
    fact = next(r for r in adapters["mem0"].get_all(user_id="alice")["results"]
                if r["memory"] == "User's favorite color is blue")
    assert fact["run_id"] == "lc-1"  # a LangChain session is a mem0 run
    top = adapters["minimal"].recall("favorite color", who="alice")[0]
    assert top["text"].startswith("User's favorite color")
    # a mem0 add with run_id joins the same conversation
    adapters["mem0"].add("I have a cat named Tom.", user_id="alice", run_id="lc-1")
    assert history.messages[-1].content == "I have a cat named Tom."


def test_langchain_memory_adapter_commit_feeds_mem0(db, adapters):
    memory = LangChainMemoryAdapter(db, owner_id="carol", k_long_term=3)
    memory.save_context({"input": "I live in Oslo"}, {"output": "Nice city!"})
    assert memory.commit()["facts_added"] == 1
    db.sync.flush()
    hits = adapters["mem0"].search("Oslo", filters={"user_id": "carol"})["results"]
    assert "User lives in Oslo" in [h["memory"] for h in hits]


def test_delete_through_one_adapter_removes_for_all(db, adapters):
    mem0, minimal, openai = adapters["mem0"], adapters["minimal"], adapters["openai"]
    thread = openai.create_thread(messages=[{"role": "user", "content": "hello"}])
    a = minimal.remember("Alice owns a red bicycle", who="alice")
    b = mem0.add("Alice owns a blue kayak", user_id="alice", infer=False)["results"][0]["id"]
    assert {a, b} <= set(_context_ids(openai, thread["id"], "owns"))
    mem0.delete(a)  # written by minimal, deleted by mem0
    assert db.sync.get(a) is None and a not in [h["id"] for h in minimal.recall("red bicycle", who="alice")]
    assert a not in _context_ids(openai, thread["id"], "owns")
    assert minimal.forget(b) == 1  # written by mem0, deleted by minimal
    assert mem0.get(b) is None
    assert b not in [h["id"] for h in mem0.search("kayak", user_id="alice")["results"]]
    assert b not in [r.entry.id for r in db.sync.find("kayak", user_id="alice")]
    assert [h["event"] for h in mem0.history(b)] == ["ADD", "DELETE"]
    # a conversation deleted through LlamaIndex is gone for LangChain and OpenAI too
    history = AgentBaseChatMessageHistory(db, "lc-2", user_id="alice", messages=[HumanMessage("hi there")])
    assert adapters["llama_index"].delete_messages("lc-2") is not None
    assert history.messages == [] and db.sync.get_session("lc-2") is None
    # delete_all through mem0 removes what LangChain's commit wrote for that owner
    history = AgentBaseChatMessageHistory(db, "lc-3", user_id="dave",
                                          messages=[HumanMessage("I live in Rome")])
    db.sync.commit_session("lc-3")
    assert db.sync.count(user_id="dave") > 0
    mem0.delete_all(user_id="dave")
    assert db.sync.count(user_id="dave") == 0 and minimal.recall("Rome", who="dave") == []
    assert history.messages == [HumanMessage("I live in Rome")]  # memories go, the conversation stays


def test_llama_index_key_written_then_read_by_langchain(db, adapters):
    store = adapters["llama_index"]
    store.set_messages("li-1", [ChatMessage(role="user", content="I prefer tea over coffee"),
                                ChatMessage(role="assistant", content="Tea it is")])
    history = AgentBaseChatMessageHistory(db, "li-1")
    assert [m.content for m in history.messages] == ["I prefer tea over coffee", "Tea it is"]
    assert db.sync.commit_session("li-1")["turns"] == 2


def test_async_mem0_and_minimal_share_the_loop_bridge(db, adapters):
    async def main():
        am = AsyncMem0Adapter(db)
        added = await am.add("My name is Alice.", user_id="alice")
        found = await adapters["minimal"].arecall("name", who="alice")
        return added["results"][0]["id"], [h["id"] for h in found]

    fact_id, found = asyncio.run(main())
    assert fact_id in found
