"""``SimpleChatStore`` behaviours (llama-index-core 0.14.25), each run on the upstream store and on ours.

The behaviours follow llama-index-core's ``tests/storage/chat_store/test_simple_chat_store.py``, rewritten.
Two edge cases are expected as in newer upstream code (``None``); installed 0.14.25 raises ``IndexError``
there, so the reference is marked ``xfail(strict=True)`` for them (see docs/compatibility.md).
"""

from __future__ import annotations

import pytest
from llama_index.core.base.llms.types import ImageBlock, TextBlock, ToolCallBlock
from llama_index.core.llms import ChatMessage, MessageRole
from llama_index.core.storage.chat_store import SimpleChatStore

from agentbase.adapters import AgentBaseChatStore

UPSTREAM_INDEX_ERROR = ("llama-index-core 0.14.25 SimpleChatStore pops without a bounds check; newer "
                        "upstream returns None")


def both(upstream_bug: str | None = None) -> list:
    ref = "SimpleChatStore" if upstream_bug is None else pytest.param(
        "SimpleChatStore", marks=pytest.mark.xfail(raises=IndexError, strict=True, reason=upstream_bug))
    return [ref, "AgentBaseChatStore"]


@pytest.fixture(params=both())
def chat_store(request, db):
    return SimpleChatStore() if request.param == "SimpleChatStore" else AgentBaseChatStore(db)


def msg(text: str, role: str = "user") -> ChatMessage:
    return ChatMessage(role=role, content=text)


def fill(store, key: str, *texts: str) -> None:
    for t in texts:
        store.add_message(key, msg(t))


def contents(store, key: str) -> list:
    return [m.content for m in store.get_messages(key)]


def test_messages_are_kept_per_key_and_keys_in_first_use_order(chat_store):
    fill(chat_store, "user1", "hello", "world")
    fill(chat_store, "user2", "hello", "world")
    assert chat_store.get_messages("user1") == [msg("hello"), msg("world")]
    assert chat_store.get_messages("user2") == [msg("hello"), msg("world")]
    assert chat_store.get_keys() == ["user1", "user2"]


def test_add_at_a_position_inserts_like_list_insert(chat_store):
    fill(chat_store, "k", "b", "d")
    chat_store.add_message("k", msg("a"), idx=0)
    chat_store.add_message("k", msg("c"), idx=-1)
    chat_store.add_message("k", msg("e"), idx=99)
    assert contents(chat_store, "k") == ["a", "b", "c", "d", "e"]


def test_delete_messages_removes_one_key_and_returns_its_messages(chat_store):
    fill(chat_store, "user1", "hello", "world")
    fill(chat_store, "user2", "hello", "world")
    assert chat_store.delete_messages("user1") == [msg("hello"), msg("world")]
    assert chat_store.get_messages("user1") == []
    assert chat_store.get_messages("user2") == [msg("hello"), msg("world")]
    assert chat_store.get_keys() == ["user2"]
    assert chat_store.delete_messages("user1") is None


def test_delete_last_message_returns_it_and_keeps_the_rest(chat_store):
    fill(chat_store, "user1", "hello", "world")
    assert chat_store.delete_last_message("user1") == msg("world")
    assert chat_store.get_messages("user1") == [msg("hello")]


def test_delete_message_by_position_keeps_the_rest_in_order(chat_store):
    fill(chat_store, "user1", "a", "b", "c", "d")
    assert chat_store.delete_message("user1", 0) == msg("a")
    assert chat_store.delete_message("user1", 1) == msg("c")
    assert chat_store.delete_message("user1", -1) == msg("d")
    assert contents(chat_store, "user1") == ["b"]


def test_delete_message_past_the_end_returns_none(chat_store):
    fill(chat_store, "user1", "hello")
    assert chat_store.delete_message("user1", 1) is None
    assert chat_store.delete_message("user1", 7) is None
    assert chat_store.get_messages("user1") == [msg("hello")]


@pytest.mark.parametrize("chat_store", both(UPSTREAM_INDEX_ERROR), indirect=True)
def test_delete_message_with_a_negative_position_out_of_range_returns_none(chat_store):
    fill(chat_store, "user1", "hello")
    assert chat_store.delete_message("user1", -2) is None
    assert chat_store.get_messages("user1") == [msg("hello")]


@pytest.mark.parametrize("chat_store", both(UPSTREAM_INDEX_ERROR), indirect=True)
def test_delete_last_message_of_an_emptied_key_returns_none(chat_store):
    fill(chat_store, "user1", "hello")
    assert chat_store.delete_last_message("user1") == msg("hello")
    assert chat_store.delete_last_message("user1") is None


def test_unknown_keys_read_empty_and_delete_nothing(chat_store):
    assert chat_store.get_messages("ghost") == []
    assert chat_store.delete_messages("ghost") is None
    assert chat_store.delete_message("ghost", 0) is None
    assert chat_store.delete_last_message("ghost") is None
    assert chat_store.get_keys() == []


def test_set_messages_replaces_and_an_empty_set_keeps_the_key(chat_store):
    fill(chat_store, "k", "old1", "old2")
    chat_store.set_messages("k", [msg("new")])
    assert contents(chat_store, "k") == ["new"]
    chat_store.set_messages("empty", [])
    assert chat_store.get_messages("empty") == [] and chat_store.get_keys() == ["k", "empty"]


def test_non_ascii_text_is_kept_as_is(chat_store):
    chat_store.add_message("user1", msg("ハロー héllo 👋"))
    assert chat_store.get_messages("user1") == [msg("ハロー héllo 👋")]


def test_roles_blocks_and_additional_kwargs_are_kept(chat_store):
    rich = [ChatMessage(role=MessageRole.SYSTEM, content="sys"),
            ChatMessage(role=MessageRole.USER, blocks=[TextBlock(text="see"), ImageBlock(image=b"\x89PNG")],
                        additional_kwargs={"name": "ann", "meta": {"n": [1, 2]}}),
            ChatMessage(role=MessageRole.ASSISTANT, blocks=[ToolCallBlock(tool_call_id="c1", tool_name="f",
                                                                          tool_kwargs={"x": 1})]),
            ChatMessage(role=MessageRole.TOOL, content="42", additional_kwargs={"tool_call_id": "c1"})]
    chat_store.set_messages("rich", rich)
    assert chat_store.get_messages("rich") == rich


async def test_async_methods_match_the_sync_ones(chat_store):
    await chat_store.aset_messages("a", [msg("x"), msg("y")])
    await chat_store.async_add_message("a", msg("z"))
    assert [m.content for m in await chat_store.aget_messages("a")] == ["x", "y", "z"]
    assert await chat_store.adelete_message("a", 0) == msg("x")
    assert await chat_store.adelete_last_message("a") == msg("z")
    assert await chat_store.aget_keys() == ["a"]
    assert await chat_store.adelete_messages("a") == [msg("y")]
    assert await chat_store.aget_keys() == []


def test_our_store_keeps_messages_after_reopening_the_file(db_path, opener):
    first = opener(db_path)
    AgentBaseChatStore(first).set_messages("k", [msg("kept"), msg("too", "assistant")])
    first.sync.close()
    second = opener(db_path)
    store = AgentBaseChatStore(second)
    assert store.get_messages("k") == [msg("kept"), msg("too", "assistant")] and store.get_keys() == ["k"]
    second.sync.close()
