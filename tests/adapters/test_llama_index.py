"""LlamaIndex adapters on real SQLite files: SimpleChatStore semantics, exact round-trips, Memory's queue."""

from __future__ import annotations

import asyncio
import importlib
import pickle
import sys
from datetime import datetime, timezone

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core.base.llms.types import ImageBlock, TextBlock, ToolCallBlock  # noqa: E402
from llama_index.core.chat_engine import SimpleChatEngine  # noqa: E402
from llama_index.core.llms import ChatMessage, MessageRole, MockLLM  # noqa: E402
from llama_index.core.memory import ChatMemoryBuffer, Memory  # noqa: E402
from llama_index.core.storage.chat_store.base_db import MessageStatus  # noqa: E402

from agentbase import MissingDependencyError, SyncAgentBase  # noqa: E402
from agentbase.adapters import AgentBaseChatStore, AgentBaseDBChatStore  # noqa: E402
from agentbase.adapters.llama_index import message_to_row  # noqa: E402

from tests.conftest import make_db  # noqa: E402


def user(text: str) -> ChatMessage:
    return ChatMessage(role=MessageRole.USER, content=text)


def texts(messages: list[ChatMessage]) -> list[str | None]:
    return [m.content for m in messages]


@pytest.fixture
def store(db):
    return AgentBaseChatStore(db)


def test_simple_chat_store_semantics(store):
    assert store.get_messages("nobody") == [] and store.get_keys() == []
    store.add_message("user1", user("hello"))
    store.add_message("user1", user("world"))
    store.add_message("user2", user("other"))
    store.add_message("user1", user("first"), idx=0)
    store.add_message("user1", user("second-last"), idx=-1)
    assert texts(store.get_messages("user1")) == ["first", "hello", "second-last", "world"]
    assert store.get_keys() == ["user1", "user2"]
    store.set_messages("user2", [user("replaced"), user("twice")])
    assert texts(store.get_messages("user2")) == ["replaced", "twice"]
    store.set_messages("empty", [])
    assert store.get_keys() == ["user1", "user2", "empty"] and store.get_messages("empty") == []
    assert texts(store.delete_messages("user2")) == ["replaced", "twice"]
    assert store.delete_messages("user2") is None
    assert store.get_messages("user2") == [] and store.get_keys() == ["user1", "empty"]


def test_delete_message_and_delete_last_return_the_removed_message_and_keep_order(store):
    store.set_messages("k", [user(f"m{i}") for i in range(6)])
    removed = store.delete_message("k", 2)
    assert removed == user("m2")
    assert texts(store.get_messages("k")) == ["m0", "m1", "m3", "m4", "m5"]
    assert store.delete_message("k", -2) == user("m4")
    assert texts(store.get_messages("k")) == ["m0", "m1", "m3", "m5"]
    assert store.delete_message("k", 4) is None and store.delete_message("k", -5) is None
    assert store.delete_message("missing", 0) is None
    assert store.delete_last_message("k") == user("m5")
    assert texts(store.get_messages("k")) == ["m0", "m1", "m3"]
    assert [store.delete_last_message("k") for _ in range(4)] == [user("m3"), user("m1"), user("m0"), None]
    assert store.delete_last_message("missing") is None
    assert store.get_keys() == ["k"]  # an emptied key still exists, as in SimpleChatStore


async def test_bad_positions_and_unstorable_messages_are_typed_errors_that_change_nothing(store):
    from agentbase import ValidationError

    store.set_messages("k", [user("a"), user("b")])
    for bad in (1.0, "0", None):
        with pytest.raises(TypeError, match="idx must be an integer list position"):
            store.delete_message("k", bad)
    with pytest.raises(TypeError, match="idx must be an integer list position"):
        store.add_message("k", user("c"), idx=0.5)
    with pytest.raises(ValidationError, match="cannot be stored as JSON"):
        store.add_message("k", ChatMessage(role="user", content="d", additional_kwargs={"x": object()}))
    db_store = AgentBaseDBChatStore(store.db)
    with pytest.raises(TypeError, match="idx must be an integer list position"):
        await db_store.delete_message("k", 1.5)
    assert texts(store.get_messages("k")) == ["a", "b"]
    store.add_message("k", user("c"), idx=True)  # list.insert reads True as 1, and so does the store
    assert texts(store.get_messages("k")) == ["a", "c", "b"]


async def test_async_twins_match_the_sync_methods(store):
    await store.aset_messages("a", [user("x"), user("y")])
    await store.async_add_message("a", user("z"))
    await store.async_add_message("a", user("w"), idx=0)
    assert texts(await store.aget_messages("a")) == ["w", "x", "y", "z"]
    assert await store.adelete_message("a", 1) == user("x")
    assert await store.adelete_last_message("a") == user("z")
    assert await store.aget_keys() == ["a"]
    assert texts(await store.adelete_messages("a")) == ["w", "y"]
    assert await store.adelete_messages("a") is None and await store.aget_keys() == []


def rich_messages() -> list[ChatMessage]:
    return [
        ChatMessage(role="system", content="be brief"),
        ChatMessage(role="user",
                    blocks=[TextBlock(text="what is this? ハロー"), ImageBlock(image=b"\x89PNG\r\n")],
                    additional_kwargs={"name": "alice", "trace": {"n": [1, 2]}}),
        ChatMessage(role="assistant", blocks=[ToolCallBlock(tool_call_id="call_1", tool_name="look",
                                                            tool_kwargs={"q": "png"})]),
        ChatMessage(role="tool", content="an image",
                    additional_kwargs={"tool_call_id": "call_1", "name": "look"}),
        ChatMessage(role="assistant", content="It is a tiny PNG."),
    ]


async def test_messages_round_trip_through_closing_and_reopening(db_path):
    first = make_db(db_path)
    await AgentBaseChatStore(first, user_id="alice").aset_messages("chat", rich_messages())
    await first.close()

    reopened = make_db(db_path)
    got = await AgentBaseChatStore(reopened).aget_messages("chat")
    assert got == rich_messages()
    assert got[1].additional_kwargs == {"name": "alice", "trace": {"n": [1, 2]}}
    assert isinstance(got[1].blocks[1], ImageBlock) and isinstance(got[2].blocks[0], ToolCallBlock)
    rows = await reopened.get_messages("chat")
    assert [r.role for r in rows] == ["system", "user", "assistant", "tool", "assistant"]
    assert rows[1].content == "what is this? ハロー" and rows[1].name == "alice"
    assert rows[2].tool_calls == [{"id": "call_1", "type": "function",
                                   "function": {"name": "look", "arguments": '{"q": "png"}'}}]
    assert rows[3].tool_call_id == "call_1"
    assert (await reopened.get_session("chat")).user_id == "alice"
    await reopened.close()


async def test_identical_timestamps_keep_insertion_order(db, store):
    stamp = datetime(2024, 5, 1, tzinfo=timezone.utc)
    await db.create_session(session_id="same")
    sent = [user(f"m{i}") for i in range(25)]
    await db.add_messages("same", [{**message_to_row(m), "created_at": stamp} for m in sent])
    assert {r.created_at for r in await db.get_messages("same")} == {stamp}
    assert await store.aget_messages("same") == sent
    assert store.delete_message("same", 10) == user("m10")
    assert texts(store.get_messages("same")) == [f"m{i}" for i in range(25) if i != 10]


async def test_messages_from_other_adapters_are_mapped(db, store):
    await db.create_session(session_id="foreign")
    await db.add_messages("foreign", [
        {"role": "user", "content": "hi", "name": "bob"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
                                                              "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "content": "ok", "tool_call_id": "c1"}, {"role": "narrator", "content": "aside"}])
    got = store.get_messages("foreign")
    assert [m.role.value for m in got] == ["user", "assistant", "tool", "user"]
    assert got[0].additional_kwargs == {"name": "bob"} and got[2].additional_kwargs == {"tool_call_id": "c1"}
    assert got[1].additional_kwargs["tool_calls"][0]["id"] == "c1"


async def test_get_keys_lists_only_chat_store_keys_of_the_owner(db):
    await db.create_session(session_id="not-a-chat-store-key")
    alice, bob = AgentBaseChatStore(db, user_id="alice"), AgentBaseChatStore(db, user_id="bob")
    alice.add_message("a1", user("x"))
    bob.add_message("b1", user("y"))
    alice.add_message("a2", user("z"))
    assert alice.get_keys() == ["a1", "a2"] and bob.get_keys() == ["b1"]
    assert AgentBaseChatStore(db).get_keys() == ["a1", "b1", "a2"]
    # a session created elsewhere becomes a key once this store writes to it
    alice.add_message("not-a-chat-store-key", user("adopted"))
    assert "not-a-chat-store-key" not in alice.get_keys()  # it has no owner, alice's listing is owner-scoped
    assert "not-a-chat-store-key" in AgentBaseChatStore(db).get_keys()


def test_sync_calls_work_inside_async_main(db_path):
    async def main() -> list:
        db = make_db(db_path)
        store = AgentBaseChatStore(db)
        store.add_message("loop", user("sync in a running loop"))
        await store.async_add_message("loop", user("async"))
        memory = ChatMemoryBuffer.from_defaults(chat_store=store, chat_store_key="loop")
        memory.put(user("buffer put"))
        out = texts(memory.get_all())
        await db.close()
        return out

    assert asyncio.run(main()) == ["sync in a running loop", "async", "buffer put"]


def test_accepts_a_path_or_a_sync_agentbase_and_survives_pickling(tmp_path):
    path = tmp_path / "by-path.db"
    sync_db = SyncAgentBase(db=make_db(path))
    AgentBaseChatStore(sync_db).add_message("k", user("via sync facade"))
    sync_db.close()
    store = AgentBaseChatStore(str(path))
    assert store.model_dump() == {"db_path": str(path), "user_id": None, "agent_id": None,
                                  "class_name": "AgentBaseChatStore"}
    memory = ChatMemoryBuffer.from_defaults(chat_store=store, chat_store_key="k")
    assert texts(pickle.loads(pickle.dumps(memory)).get_all()) == ["via sync facade"]
    store.close()
    with pytest.raises(TypeError):
        AgentBaseChatStore()


def test_chat_memory_buffer_and_simple_chat_engine(db_path):
    db = make_db(db_path)
    store = AgentBaseChatStore(db, user_id="alice")
    memory = ChatMemoryBuffer.from_defaults(chat_store=store, chat_store_key="alice-chat", token_limit=1000)
    engine = SimpleChatEngine.from_defaults(llm=MockLLM(), memory=memory)
    engine.chat("Hello there")
    asyncio.run(engine.achat("Again"))
    stored = store.get_messages("alice-chat")
    assert [m.role for m in stored] == [MessageRole.USER, MessageRole.ASSISTANT] * 2
    assert stored[0].content == "Hello there" and stored[2].content == "Again"
    assert engine.chat_history == stored
    engine.reset()
    assert store.get_messages("alice-chat") == [] and store.get_keys() == []
    db.sync.close()


async def test_db_chat_store_contract(db):
    s = AgentBaseDBChatStore(db, user_id="u")
    await s.add_messages("q", [user(f"m{i}") for i in range(5)])
    await s.add_message("q", user("old"), status=MessageStatus.ARCHIVED)
    assert await s.count_messages("q") == 5 and await s.count_messages("q", status=None) == 6
    assert texts(await s.get_messages("q", status=MessageStatus.ARCHIVED)) == ["old"]
    assert texts(await s.get_messages("q", limit=2, offset=1)) == ["m1", "m2"]
    assert texts(await s.archive_oldest_messages("q", 2)) == ["m0", "m1"]
    assert texts(await s.get_messages("q")) == ["m2", "m3", "m4"]
    assert texts(await s.get_messages("q", status=None)) == ["m0", "m1", "m2", "m3", "m4", "old"]
    assert await s.delete_message("q", 1) == user("m3")
    assert await s.delete_message("q", 9) is None
    assert texts(await s.delete_oldest_messages("q", 1)) == ["m2"]
    await s.delete_messages("q", status=MessageStatus.ARCHIVED)
    assert texts(await s.get_messages("q", status=None)) == ["m4"]
    await s.set_messages("q", [user("fresh")])
    assert texts(await s.get_messages("q", status=None)) == ["fresh"]
    assert await s.get_keys() == ["q"]
    await s.delete_messages("q")
    assert await s.get_keys() == [] and await s.get_messages("q") == []


async def test_memory_archives_into_the_db_chat_store(db):
    store = AgentBaseDBChatStore(db)
    memory = Memory(token_limit=1000, token_flush_size=700, chat_history_token_ratio=0.9, session_id="wf",
                    sql_store=store)
    await memory.aput_messages([user("x " * 500), ChatMessage(role="assistant", content="y " * 500),
                                user("z " * 500)])
    active = await memory.aget()
    assert len(active) == 1 and active[0].content.startswith("z ")
    assert await store.count_messages("wf", status=MessageStatus.ARCHIVED) == 2
    seeded = Memory.from_defaults(session_id="seeded", chat_history=[user("Seeded")], chat_store=store)
    assert texts(seeded.get()) == ["Seeded"]  # sync wrapper, fresh event loop per call
    seeded.put(user("more"))
    assert texts(seeded.get_all()) == ["Seeded", "more"]


def test_missing_framework_raises_missing_dependency(monkeypatch):
    monkeypatch.setitem(sys.modules, "llama_index.core.storage.chat_store.base", None)
    monkeypatch.delitem(sys.modules, "agentbase.adapters.llama_index")
    with pytest.raises(MissingDependencyError) as err:
        importlib.import_module("agentbase.adapters.llama_index")
    assert err.value.extra == "llama-index" and "agentbase[llama-index]" in str(err.value)


@pytest.mark.parametrize("store", ["AgentBaseChatStore", "AgentBaseDBChatStore"])
@pytest.mark.parametrize("bad", ["", "dir"])
def test_a_bad_db_path_fails_when_the_store_is_made(tmp_path, store, bad):
    """db_path="" or a directory raised only at first use (RuntimeError / ConfigError); now at construction."""
    from agentbase import ConfigError
    from agentbase.adapters import llama_index as li

    (tmp_path / "dir").mkdir()
    with pytest.raises(ConfigError):
        getattr(li, store)(db_path=str(tmp_path / "dir") if bad == "dir" else bad)


def test_set_messages_with_the_history_plus_one_commits_only_the_new_message(tmp_path):
    """ChatMemoryBuffer.set(get_all() + [new]) sends the conversation again without ids: the messages equal to
    the stored ones keep their ids, so the next commit stores one turn, not the whole history again."""
    db = SyncAgentBase(tmp_path / "set.db", embedder=None)
    try:
        store = AgentBaseChatStore(db, user_id="u")
        store.set_messages("k", [user("I live in Paris."), ChatMessage(role="assistant", content="Paris is great.")])
        db.commit_session("k")
        before = [m.id for m in db.get_messages("k")]
        buffer = ChatMemoryBuffer.from_defaults(chat_store=store, chat_store_key="k")
        buffer.set(buffer.get_all() + [user("I like sushi.")])
        assert [m.id for m in db.get_messages("k")][:2] == before
        db.commit_session("k")
        turns = db.list(session_id="k", category="turn", limit=10)
        assert sorted(t.content for t in turns) == ["I like sushi.", "I live in Paris.", "Paris is great."]
        facts = db.list(user_id="u", limit=20)
        assert [(f.content, f.confidence) for f in facts if f.category == "profile"] == [
            ("User lives in Paris", 0.85)]  # not read (and hardened) a second time
        assert texts(store.get_messages("k")) == ["I live in Paris.", "Paris is great.", "I like sushi."]
    finally:
        db.close()
