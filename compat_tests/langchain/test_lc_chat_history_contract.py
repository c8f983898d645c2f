"""The ``BaseChatMessageHistory`` contract of langchain-core 1.8.3, checked on AgentBaseChatMessageHistory.

Mirrors the behaviours exercised by langchain-core's ``tests/unit_tests/chat_history/test_chat_history.py``
and the history part of ``tests/unit_tests/runnables/test_history.py``, rewritten for a persistent history.
"""

from __future__ import annotations

import warnings

import pytest
from langchain_core.chat_history import BaseChatMessageHistory, InMemoryChatMessageHistory
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from agentbase.adapters import AgentBaseChatMessageHistory


def test_is_a_chat_history_and_constructing_it_does_not_warn(db):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the deprecation fires only for direct BaseChatMessageHistory()
        history = AgentBaseChatMessageHistory(db, "s")
    assert isinstance(history, BaseChatMessageHistory)


def test_str_is_the_buffer_string(db):
    history = AgentBaseChatMessageHistory(db, "s")
    history.add_message(SystemMessage("system"))
    history.add_message(HumanMessage("human 1"))
    history.add_message(AIMessage("ai"))
    assert str(history) == "System: system\nHuman: human 1\nAI: ai"


async def test_initial_messages_and_independent_sessions(db):
    seed = [HumanMessage("Hello")]
    history = AgentBaseChatMessageHistory(db, "one", messages=seed)
    assert await history.aget_messages() == seed
    other = AgentBaseChatMessageHistory(db, "two")
    await other.aadd_messages([HumanMessage("World")])
    assert history.messages == seed
    await history.aclear()
    assert history.messages == []
    assert other.messages == [HumanMessage("World")]


def test_single_and_bulk_adds_append_in_order(db):
    history = AgentBaseChatMessageHistory(db, "s")
    history.add_message(HumanMessage("Hello"))
    assert history.messages == [HumanMessage("Hello")]
    history.add_message(HumanMessage("World"))
    history.add_messages([HumanMessage("Hello"), HumanMessage("World")])
    assert history.messages == [HumanMessage("Hello"), HumanMessage("World")] * 2


def test_user_and_ai_convenience_methods_accept_text_or_messages(db):
    history = AgentBaseChatMessageHistory(db, "s")
    history.add_user_message("u1")
    history.add_user_message(HumanMessage("u2"))
    history.add_ai_message("a1")
    history.add_ai_message(AIMessage("a2"))
    assert history.messages == [HumanMessage("u1"), HumanMessage("u2"), AIMessage("a1"), AIMessage("a2")]


async def test_async_interface(db):
    history = AgentBaseChatMessageHistory(db, "s")
    await history.aadd_messages([HumanMessage("Hello"), HumanMessage("World")])
    assert await history.aget_messages() == [HumanMessage("Hello"), HumanMessage("World")]
    await history.aadd_messages([HumanMessage("!")])
    assert await history.aget_messages() == [HumanMessage("Hello"), HumanMessage("World"), HumanMessage("!")]
    await history.aclear()
    assert await history.aget_messages() == []


def test_messages_is_a_list_that_can_be_copied_safely(db):
    history = AgentBaseChatMessageHistory(db, "s")
    history.add_messages([HumanMessage("a")])
    snapshot = history.messages.copy()  # what RunnableWithMessageHistory does
    snapshot.append(AIMessage("local only"))
    assert isinstance(history.messages, list) and history.messages == [HumanMessage("a")]


def test_equality_with_the_in_memory_reference(db):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = InMemoryChatMessageHistory(messages=[HumanMessage("a"), AIMessage("b")])
    history = AgentBaseChatMessageHistory(db, "s", messages=[HumanMessage("a"), AIMessage("b")])
    assert history == reference and {"k": history} == {"k": reference}


def test_history_survives_reopening_the_file(db_path, opener):
    first = opener(db_path)
    AgentBaseChatMessageHistory(first, "s").add_messages([HumanMessage("q"), AIMessage("a")])
    first.sync.close()
    second = opener(db_path)
    assert AgentBaseChatMessageHistory(second, "s").messages == [HumanMessage("q"), AIMessage("a")]
    second.sync.close()


@pytest.mark.parametrize("n", [1, 25])
def test_clear_removes_everything(db, n):
    history = AgentBaseChatMessageHistory(db, "s")
    history.add_messages([HumanMessage(str(i)) for i in range(n)])
    history.clear()
    assert history.messages == []
