"""``ChatMemoryBuffer`` (llama-index-core 0.14.25) over a chat store: put/get/set/reset and token-limit
truncation, each run on ``SimpleChatStore`` (reference) and on ``AgentBaseChatStore``.

Follows llama-index-core's ``tests/memory/test_chat_memory_buffer.py``, rewritten with ``chat_store=``.
"""

from __future__ import annotations

import pickle

import pytest
from llama_index.core.llms import ChatMessage, MessageRole
from llama_index.core.memory import ChatMemoryBuffer
from llama_index.core.storage.chat_store import SimpleChatStore
from llama_index.core.utils import get_tokenizer

from agentbase.testing import database_for
from agentbase.adapters import AgentBaseChatStore

TOKENS = get_tokenizer()
Q1 = ChatMessage(role=MessageRole.USER, content="first message")
A1 = ChatMessage(role=MessageRole.ASSISTANT, content="first answer")
Q2 = ChatMessage(role=MessageRole.USER, content="second message")
A2 = ChatMessage(role=MessageRole.USER, content="second answer")


def n_tokens(m: ChatMessage) -> int:
    return len(TOKENS(str(m.content)))


@pytest.fixture(params=["SimpleChatStore", "AgentBaseChatStore"])
def chat_store(request, db):
    return SimpleChatStore() if request.param == "SimpleChatStore" else AgentBaseChatStore(db)


@pytest.fixture
def make(chat_store):
    def build(**kwargs):
        return ChatMemoryBuffer.from_defaults(chat_store=chat_store, chat_store_key="buf", **kwargs)
    return build


def test_put_then_get(make, chat_store):
    memory = make(chat_history=[Q1])
    assert [m.content for m in memory.get()] == ["first message"]
    memory.put(A1)
    assert memory.get() == [Q1, A1]
    assert chat_store.get_messages("buf") == [Q1, A1]


def test_initial_tokens_below_the_limit_keep_history(make):
    assert make(token_limit=1000, chat_history=[Q1]).get(initial_token_count=5) == [Q1]


def test_initial_tokens_above_the_limit_raise(make):
    with pytest.raises(ValueError, match="Initial token count exceeds token limit"):
        make(token_limit=49).get(initial_token_count=50)


def test_a_history_over_the_limit_still_returns_the_newest_message(make):
    # 0.14.25 keeps the most recent message even when it alone exceeds the budget
    assert make(token_limit=5, chat_history=[Q1]).get(initial_token_count=5) == [Q1]
    assert make(token_limit=5, chat_history=[Q1, A1]).get(initial_token_count=5) == [A1]


def test_truncation_drops_the_oldest_turn_with_its_answer(make):
    # dropping a user message also drops the assistant reply right after it
    memory = make(token_limit=5, chat_history=[Q1, A1, Q2, A2])
    assert memory.get(initial_token_count=5 - n_tokens(Q1) - n_tokens(A1)) == [Q2, A2]
    memory = make(token_limit=10, chat_history=[Q1, A1, Q2, A2])
    assert memory.get(initial_token_count=10 - n_tokens(A1) - n_tokens(Q1) - n_tokens(A2)) == [Q2, A2]


def test_set_replaces_the_history(make):
    memory = make(chat_history=[Q1])
    memory.put(Q1)
    assert len(memory.get()) == 2
    memory.set([Q1])
    assert len(memory.get()) == 1


def test_token_limit_bounds_get_but_not_get_all(make):
    memory = make(chat_history=[Q1], token_limit=5)
    memory.put(Q1)
    assert len(memory.get()) == 2
    memory.put(Q1)
    memory.put(Q1)
    assert len(memory.get()) == 2 and len(memory.get_all()) == 4
    memory.put(ChatMessage(role=MessageRole.USER, content="test message2"))
    got = memory.get()
    assert len(got) == 2 and got[-1].content == "test message2"


def test_reset_empties_the_key(make, chat_store):
    memory = make(chat_history=[Q1, A1])
    memory.reset()
    assert memory.get_all() == [] and "buf" not in chat_store.get_keys()


async def test_async_put_get_set_reset(make):
    memory = make()
    await memory.aput(Q1)
    await memory.aput(A1)
    assert await memory.aget() == [Q1, A1] and await memory.aget_all() == [Q1, A1]
    await memory.aset([Q2])
    assert await memory.aget_all() == [Q2]
    await memory.areset()
    assert await memory.aget_all() == []


def test_our_buffer_pickles_and_dumps_its_store_by_path(db, db_path):
    memory = ChatMemoryBuffer.from_defaults(chat_store=AgentBaseChatStore(db), chat_store_key="p",
                                            chat_history=[Q1])
    assert memory.to_dict()["chat_store"] == {"db_path": str(database_for(db_path)), "user_id": None, "agent_id": None,
                                              "class_name": "AgentBaseChatStore"}
    restored = pickle.loads(pickle.dumps(memory))
    assert restored.get_all() == [Q1] and restored.token_limit == memory.token_limit
    restored.chat_store.close()
