"""The ``AsyncDBChatStore`` contract (llama-index-core 0.14.25) and the ``Memory`` class over it.

Store behaviours follow llama-index-core's ``tests/storage/chat_store/test_sql.py`` and run on the upstream
``SQLAlchemyChatStore`` (in-memory SQLite, the reference) and on ``AgentBaseDBChatStore``; the ``Memory``
tests follow ``tests/memory/test_memory_custom_chat_store.py`` with our store in place of the in-memory
double.
"""

from __future__ import annotations

import pytest
from llama_index.core.llms import ChatMessage
from llama_index.core.memory import Memory
from llama_index.core.storage.chat_store.base_db import MessageStatus

from agentbase.adapters import AgentBaseDBChatStore

ACTIVE, ARCHIVED = MessageStatus.ACTIVE, MessageStatus.ARCHIVED


@pytest.fixture(params=["SQLAlchemyChatStore", "AgentBaseDBChatStore"])
def store(request, db):
    if request.param == "SQLAlchemyChatStore":
        pytest.importorskip("greenlet")
        from llama_index.core.storage.chat_store.sql import SQLAlchemyChatStore

        return SQLAlchemyChatStore(table_name="compat")
    return AgentBaseDBChatStore(db)


def m(text: str, role: str = "user") -> ChatMessage:
    return ChatMessage(role=role, content=text)


def texts(messages: list[ChatMessage]) -> list:
    return [x.content for x in messages]


async def test_add_and_get(store):
    await store.add_message("k", m("hello"))
    await store.add_message("k", m("hi there", "assistant"))
    got = await store.get_messages("k")
    assert got == [m("hello"), m("hi there", "assistant")]


async def test_unknown_key_is_empty(store):
    assert await store.get_messages("nobody") == [] and await store.count_messages("nobody") == 0


async def test_batch_add_and_count(store):
    await store.add_messages("k", [m(f"m{i}") for i in range(4)])
    assert texts(await store.get_messages("k")) == ["m0", "m1", "m2", "m3"]
    assert await store.count_messages("k") == 4


async def test_set_messages_replaces_every_status(store):
    await store.add_messages("k", [m("a"), m("b")])
    await store.add_message("k", m("old"), status=ARCHIVED)
    await store.set_messages("k", [m("new")])
    assert texts(await store.get_messages("k", status=None)) == ["new"]


async def test_delete_messages_per_key_and_per_status(store):
    await store.add_messages("k1", [m("a"), m("b")])
    await store.add_message("k1", m("arch"), status=ARCHIVED)
    await store.add_messages("k2", [m("c")])
    await store.delete_messages("k1", status=ARCHIVED)
    assert texts(await store.get_messages("k1", status=None)) == ["a", "b"]
    await store.delete_messages("k1")
    assert await store.get_messages("k1", status=None) == []
    assert texts(await store.get_messages("k2")) == ["c"]


async def test_delete_oldest(store):
    await store.add_messages("k", [m(f"m{i}") for i in range(5)])
    assert texts(await store.delete_oldest_messages("k", 2)) == ["m0", "m1"]
    assert texts(await store.get_messages("k")) == ["m2", "m3", "m4"]


async def test_archive_oldest_and_filter_by_status(store):
    await store.add_messages("k", [m(f"m{i}") for i in range(5)])
    assert texts(await store.archive_oldest_messages("k", 3)) == ["m0", "m1", "m2"]
    assert texts(await store.get_messages("k")) == ["m3", "m4"]
    assert texts(await store.get_messages("k", status=ARCHIVED)) == ["m0", "m1", "m2"]
    assert await store.count_messages("k", status=ARCHIVED) == 3
    assert await store.count_messages("k", status=None) == 5
    assert texts(await store.get_messages("k", status=None)) == [f"m{i}" for i in range(5)]


async def test_limit_and_offset(store):
    await store.add_messages("k", [m(f"m{i}") for i in range(10)])
    assert texts(await store.get_messages("k", limit=3)) == ["m0", "m1", "m2"]
    assert texts(await store.get_messages("k", limit=3, offset=4)) == ["m4", "m5", "m6"]
    assert texts(await store.get_messages("k", offset=8)) == ["m8", "m9"]


async def test_keys(store):
    await store.add_message("a", m("x"))
    await store.add_message("b", m("y"))
    assert sorted(await store.get_keys()) == ["a", "b"]


async def test_our_delete_message_takes_an_active_list_position(db):
    store = AgentBaseDBChatStore(db)
    await store.add_messages("k", [m("a"), m("b"), m("c")])
    await store.archive_oldest_messages("k", 1)
    assert await store.delete_message("k", 0) == m("b")  # position among active messages
    assert await store.delete_message("k", 5) is None
    assert texts(await store.get_messages("k", status=None)) == ["a", "c"]


async def test_memory_accepts_our_store(db):
    store = AgentBaseDBChatStore(db)
    memory = Memory(token_limit=1000, session_id="test_user", sql_store=store)
    await memory.aput_messages([m("Message 1"), m("Response 1", "assistant")])
    assert texts(await memory.aget()) == ["Message 1", "Response 1"]
    assert memory.sql_store is store and await store.count_messages("test_user") == 2


async def test_memory_from_defaults_with_our_store_seeds_history(db):
    store = AgentBaseDBChatStore(db)
    memory = Memory.from_defaults(session_id="test_user", token_limit=1000, chat_history=[m("Seeded")],
                                  chat_store=store)
    assert memory.sql_store is store and texts(await memory.aget()) == ["Seeded"]


async def test_memory_waterfall_archives_into_our_store(db):
    store = AgentBaseDBChatStore(db)
    memory = Memory(token_limit=1000, token_flush_size=700, chat_history_token_ratio=0.9,
                    session_id="test_user", sql_store=store)
    await memory.aput_messages([m("x " * 500), m("y " * 500, "assistant"), m("z " * 500)])
    active = await memory.aget()
    assert len(active) == 1 and "z " in active[0].content
    assert await store.count_messages("test_user", status=ARCHIVED) == 2
    assert len(await memory.aget_all()) == 3
    await memory.areset(status=ARCHIVED)
    assert len(await memory.aget_all()) == 1


def test_memory_sync_wrappers_across_event_loops(db):
    memory = Memory(token_limit=1000, session_id="loop_user", sql_store=AgentBaseDBChatStore(db))
    memory.put(m("one"))
    memory.put(m("two"))
    assert texts(memory.get_all()) == ["one", "two"]
    memory.reset()
    assert memory.get_all() == []


def test_memory_history_survives_reopening_the_file(db_path, opener):
    first = opener(db_path)
    Memory.from_defaults(session_id="s", chat_store=AgentBaseDBChatStore(first)).put(m("persisted"))
    first.sync.close()
    second = opener(db_path)
    assert texts(Memory.from_defaults(session_id="s", chat_store=AgentBaseDBChatStore(second)).get()) == [
        "persisted"]
    second.sync.close()
