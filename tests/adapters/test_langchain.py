"""LangChain adapter on real SQLite files: exact round-trips, strict order, async twins, chains and recall."""

from __future__ import annotations

import asyncio
import importlib
import sys
from datetime import datetime, timezone

import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("langchain_classic")

from langchain_core.chat_history import InMemoryChatMessageHistory  # noqa: E402
from langchain_core.language_models.fake import FakeListLLM  # noqa: E402
from langchain_core.language_models.fake_chat_models import FakeListChatModel  # noqa: E402
from langchain_core.messages import (AIMessage, ChatMessage, HumanMessage, RemoveMessage,  # noqa: E402
                                     SystemMessage, ToolMessage)
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder, PromptTemplate  # noqa: E402
from langchain_core.runnables.history import RunnableWithMessageHistory  # noqa: E402

from agentbase import MissingDependencyError, SyncAgentBase, ValidationError  # noqa: E402
from agentbase.adapters import AgentBaseChatMessageHistory, LangChainMemoryAdapter  # noqa: E402
from agentbase.adapters.langchain import message_to_row  # noqa: E402

from tests.conftest import make_db  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::langchain_core._api.deprecation.LangChainDeprecationWarning")


def tool_exchange() -> list:
    """A conversation with every field that must survive storage."""
    return [
        SystemMessage("You are terse.", id="sys-1"),
        HumanMessage([{"type": "text", "text": "Weather in Oslo?"},
                      {"type": "image_url", "image_url": {"url": "https://example.invalid/a.png"}}],
                     name="alice", id="h-1", additional_kwargs={"client": {"app": "cli"}}),
        AIMessage("", id="a-1", tool_calls=[{"name": "weather", "args": {"city": "Oslo"}, "id": "call_1"}],
                  additional_kwargs={"refusal": None},
                  response_metadata={"model_name": "fake", "seq": [1, 2]}),
        ToolMessage("12C and sunny", tool_call_id="call_1", name="weather", id="t-1",
                    artifact={"raw": [12, "C"]}),
        AIMessage("It is 12C and sunny.", id="a-2", usage_metadata={"input_tokens": 3, "output_tokens": 5,
                                                                    "total_tokens": 8}),
        ChatMessage("a critic's note", role="critic"),
    ]


async def test_tool_calls_round_trip_through_closing_and_reopening(db_path):
    first = make_db(db_path)
    history = AgentBaseChatMessageHistory(first, "thread-1", user_id="alice", agent_id="bot")
    sent = tool_exchange()
    await history.aadd_messages(sent)
    await first.close()

    reopened = make_db(db_path)
    again = AgentBaseChatMessageHistory(reopened, "thread-1")
    got = await again.aget_messages()
    assert got == sent
    assert [type(m) for m in got] == [type(m) for m in sent]
    assert got[2].tool_calls == [{"name": "weather", "args": {"city": "Oslo"}, "id": "call_1",
                                  "type": "tool_call"}]
    assert got[3].tool_call_id == "call_1" and got[3].artifact == {"raw": [12, "C"]}
    assert got[1].content[1]["type"] == "image_url" and got[1].name == "alice"
    assert got[4].usage_metadata["total_tokens"] == 8

    # AgentBase's own columns are filled for search, commit and other adapters
    rows = await reopened.get_messages("thread-1")
    assert [r.role for r in rows] == ["system", "user", "assistant", "tool", "assistant", "critic"]
    assert rows[1].content == "Weather in Oslo?" and rows[1].name == "alice"
    assert rows[2].tool_calls == [{"id": "call_1", "type": "function",
                                   "function": {"name": "weather", "arguments": '{"city": "Oslo"}'}}]
    assert rows[3].tool_call_id == "call_1"
    session = await reopened.get_session("thread-1")
    assert (session.user_id, session.agent_id) == ("alice", "bot")
    await reopened.close()


async def test_identical_timestamps_keep_insertion_order(db):
    stamp = datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc)
    sent = [HumanMessage(f"m{i}") if i % 2 == 0 else AIMessage(f"m{i}") for i in range(30)]
    await db.create_session(session_id="same-time")
    await db.add_messages("same-time", [{**message_to_row(m), "created_at": stamp} for m in sent])
    rows = await db.get_messages("same-time")
    assert {r.created_at for r in rows} == {stamp}
    history = AgentBaseChatMessageHistory(db, "same-time")
    assert history.messages == sent
    # and a batch through the adapter is one ordered transaction
    history.add_messages([HumanMessage(f"n{i}") for i in range(20)])
    assert [m.content for m in history.messages[30:]] == [f"n{i}" for i in range(20)]


async def test_messages_is_a_new_list_each_time(db):
    history = AgentBaseChatMessageHistory(db, "fresh-list")
    history.add_user_message("hi")
    first = history.messages
    first.append(AIMessage("not stored"))
    assert history.messages == [HumanMessage("hi")]
    assert history.messages is not history.messages


async def test_constructor_messages_replace_the_conversation_and_equality(db):
    AgentBaseChatMessageHistory(db, "seeded").add_messages([HumanMessage("old")])
    seeded = AgentBaseChatMessageHistory(db, "seeded", messages=[HumanMessage("a"), AIMessage("b")])
    assert seeded.messages == [HumanMessage("a"), AIMessage("b")]
    assert seeded == InMemoryChatMessageHistory(messages=[HumanMessage("a"), AIMessage("b")])
    assert seeded != AgentBaseChatMessageHistory(db, "other")
    assert str(seeded) == "Human: a\nAI: b"


async def test_async_twins_and_clear(db):
    history = AgentBaseChatMessageHistory(db, "async-1", user_id="u")
    assert await history.aget_messages() == []
    await history.aadd_messages([HumanMessage("one"), AIMessage("two")])
    await history.aadd_messages([])
    assert [m.content for m in await history.aget_messages()] == ["one", "two"]
    await history.aclear()
    assert await history.aget_messages() == []
    history.add_ai_message("three")
    history.clear()
    assert history.messages == []
    assert await db.get_session("async-1") is not None  # clear keeps the session and its owner


async def test_a_bad_message_writes_nothing(db):
    history = AgentBaseChatMessageHistory(db, "atomic")
    history.add_messages([HumanMessage("kept")])
    with pytest.raises(ValidationError):
        history.add_messages([HumanMessage("lost"), RemoveMessage(id="x")])
    with pytest.raises(ValidationError):
        history.add_messages([HumanMessage("lost"), AIMessage("bad", additional_kwargs={"obj": object()})])
    assert history.messages == [HumanMessage("kept")]


async def test_messages_written_by_other_adapters_are_mapped_by_role(db):
    s = await db.create_session(session_id="foreign")
    call = [{"id": "c9", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "x"}'}}]
    await db.add_messages(s.id, [
        {"role": "system", "content": "sys"}, {"role": "user", "content": "hi", "name": "bob"},
        {"role": "assistant", "content": "", "tool_calls": call},
        {"role": "tool", "content": "found", "tool_call_id": "c9"}, {"role": "narrator", "content": "aside"}])
    got = AgentBaseChatMessageHistory(db, "foreign").messages
    assert [type(m) for m in got] == [SystemMessage, HumanMessage, AIMessage, ToolMessage, ChatMessage]
    assert got[1].name == "bob" and got[2].tool_calls[0]["args"] == {"q": "x"} and got[3].tool_call_id == "c9"
    assert got[4].role == "narrator" and all(m.id for m in got)


def test_sync_calls_work_inside_async_main(db_path):
    async def main() -> list:
        db = make_db(db_path)
        history = AgentBaseChatMessageHistory(db, "in-loop")
        history.add_messages([HumanMessage("sync inside a running loop")])   # blocking call, loop running
        await history.aadd_messages([AIMessage("and async")])
        memory = LangChainMemoryAdapter(db, owner_id="u", session_id="in-loop")
        memory.save_context({"input": "q"}, {"output": "a"})
        out = [m.content for m in history.messages]
        await db.close()
        return out

    assert asyncio.run(main()) == ["sync inside a running loop", "and async", "q", "a"]


def test_accepts_a_path_or_a_sync_agentbase(tmp_path):
    path = tmp_path / "by-path.db"
    sync_db = SyncAgentBase(db=make_db(path))
    AgentBaseChatMessageHistory(sync_db, "s").add_messages([HumanMessage("via sync facade")])
    sync_db.close()
    from_path = AgentBaseChatMessageHistory(str(path), "s")
    assert from_path.messages == [HumanMessage("via sync facade")]
    from_path.close()
    with pytest.raises(TypeError):
        AgentBaseChatMessageHistory(42, "s")


def test_runnable_with_message_history_sync_and_async(db_path):
    db = make_db(db_path)
    prompt = ChatPromptTemplate.from_messages([("system", "be brief"), MessagesPlaceholder("history"),
                                               ("human", "{question}")])
    model = FakeListChatModel(responses=["first answer", "second answer", "third answer"])
    chain = RunnableWithMessageHistory(prompt | model, lambda sid: AgentBaseChatMessageHistory(db, sid),
                                       input_messages_key="question", history_messages_key="history")
    cfg = {"configurable": {"session_id": "rwmh"}}
    assert chain.invoke({"question": "q1"}, cfg).content == "first answer"
    assert asyncio.run(chain.ainvoke({"question": "q2"}, cfg)).content == "second answer"
    stored = AgentBaseChatMessageHistory(db, "rwmh").messages
    assert [(m.type, m.content) for m in stored] == [("human", "q1"), ("ai", "first answer"), ("human", "q2"),
                                                    ("ai", "second answer")]
    db.sync.close()


def test_conversation_buffer_memory_and_conversation_chain(db_path):
    from langchain_classic.chains import ConversationChain
    from langchain_classic.memory import ConversationBufferMemory

    db = make_db(db_path)
    history = AgentBaseChatMessageHistory(db, "classic", user_id="alice")
    chain = ConversationChain(llm=FakeListLLM(responses=["Hello Alice", "You said hi"]),
                              memory=ConversationBufferMemory(chat_memory=history))
    assert chain.invoke({"input": "hi"})["response"] == "Hello Alice"
    assert asyncio.run(chain.ainvoke({"input": "what did I say?"}))["response"] == "You said hi"
    assert str(history) == "Human: hi\nAI: Hello Alice\nHuman: what did I say?\nAI: You said hi"
    db.sync.close()


async def test_memory_adapter_surface(db):
    memory = LangChainMemoryAdapter(db, owner_id="alice", human_prefix="User", ai_prefix="Bot")
    assert memory.session_id == "langchain-alice" and memory.memory_variables == ["history"]
    memory.save_context({"input": "hi"}, {"output": "hello"})
    await memory.asave_context({"input": "bye"}, {"output": "ciao"})
    assert memory.load_memory_variables({}) == {"history": "User: hi\nBot: hello\nUser: bye\nBot: ciao"}
    as_messages = LangChainMemoryAdapter(db, owner_id="alice", return_messages=True, memory_key="chat")
    assert (await as_messages.aload_memory_variables({}))["chat"] == [
        HumanMessage("hi"), AIMessage("hello"), HumanMessage("bye"), AIMessage("ciao")]
    keyed = LangChainMemoryAdapter(db, owner_id="bob", input_key="q", output_key="a")
    keyed.save_context({"q": "question", "ctx": "ignored"}, {"a": "answer", "extra": "ignored"})
    assert keyed.load_memory_variables({}) == {"history": "Human: question\nAI: answer"}
    with pytest.raises(ValueError):
        memory.save_context({"a": 1, "b": 2}, {"output": "x"})
    memory.clear()
    assert memory.load_memory_variables({}) == {"history": ""}
    await keyed.aclear()
    assert keyed.chat_memory.messages == []


async def test_memory_adapter_long_term_recall(db):
    await db.add_memory("Alice is allergic to peanuts", category="profile", user_id="alice")
    await db.add_memory("Bob is allergic to shellfish", category="profile", user_id="bob")
    memory = LangChainMemoryAdapter(db, owner_id="alice", session_id="meal-1", k_long_term=3)
    assert memory.memory_variables == ["history", "long_term"]
    memory.save_context({"input": "I moved to Lisbon last month."}, {"output": "Nice!"})
    report = await memory.acommit()
    assert report["turns"] == 2
    await db.flush()
    out = memory.load_memory_variables({"input": "Is Alice allergic to anything?"})
    assert "peanuts" in out["long_term"] and "shellfish" not in out["long_term"]
    assert "I moved to Lisbon last month." not in out["long_term"]  # own turns are already in the history
    assert out["history"] == "Human: I moved to Lisbon last month.\nAI: Nice!"
    later = LangChainMemoryAdapter(db, owner_id="alice", session_id="meal-2", k_long_term=5)
    recalled = (await later.aload_memory_variables({"input": "where did Alice move? Lisbon"}))["long_term"]
    assert "Lisbon" in recalled
    assert later.load_memory_variables({})["long_term"] == ""  # no input, no query
    # a pasted document longer than find()'s query limit: recall searches with its beginning instead of failing
    pasted = {"input": "Is Alice allergic to anything? " + "lorem ipsum " * 1000}
    assert "peanuts" in (await later.aload_memory_variables(pasted))["long_term"]


def test_memory_adapter_drives_conversation_chain_with_long_term_prompt(db_path):
    from langchain_classic.chains import ConversationChain

    db = make_db(db_path)
    db.sync.add_memory("Alice's cat is called Miso", user_id="alice")
    memory = LangChainMemoryAdapter(db, owner_id="alice", k_long_term=2)
    prompt = PromptTemplate.from_template("Known:\n{long_term}\n\n{history}\nHuman: {input}\nAI:")
    seen: list[str] = []

    from langchain_core.callbacks import BaseCallbackHandler

    class Spy(BaseCallbackHandler):
        def on_llm_start(self, serialized, prompts, **kwargs):
            seen.extend(prompts)

    chain = ConversationChain(llm=FakeListLLM(responses=["Miso!", "Sure"]), memory=memory, prompt=prompt)
    spy = {"callbacks": [Spy()]}
    assert chain.invoke({"input": "what is my cat called?"}, spy)["response"] == "Miso!"
    chain.invoke({"input": "thanks"}, spy)
    assert "Miso" in seen[0] and "Human: what is my cat called?\nAI: Miso!" in seen[1]
    db.sync.close()


def test_missing_framework_raises_missing_dependency(monkeypatch):
    monkeypatch.setitem(sys.modules, "langchain_core.chat_history", None)
    monkeypatch.delitem(sys.modules, "agentbase.adapters.langchain")
    with pytest.raises(MissingDependencyError) as err:
        importlib.import_module("agentbase.adapters.langchain")
    assert err.value.extra == "langchain" and "agentbase[langchain]" in str(err.value)
