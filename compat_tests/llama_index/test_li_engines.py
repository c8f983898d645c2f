"""Chat engines and agents of llama-index-core 0.14.25 with AgentBase-backed memory, offline mock models."""

from __future__ import annotations

import asyncio

import pytest
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import ChatMessage, MessageRole, MockLLM
from llama_index.core.memory import ChatMemoryBuffer, Memory

from agentbase.adapters import AgentBaseChatStore, AgentBaseDBChatStore


def roles(messages: list[ChatMessage]) -> list[str]:
    return [m.role.value for m in messages]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_simple_chat_engine_with_chat_memory_buffer(db, mode):
    store = AgentBaseChatStore(db, user_id="alice")
    memory = ChatMemoryBuffer.from_defaults(chat_store=store, chat_store_key="alice-chat")
    engine = SimpleChatEngine.from_defaults(llm=MockLLM(), memory=memory, system_prompt="Be kind.")
    for text in ("Hello", "How are you?"):
        reply = engine.chat(text) if mode == "sync" else asyncio.run(engine.achat(text))
        assert text in str(reply)  # MockLLM echoes its prompt
    stored = store.get_messages("alice-chat")
    assert roles(stored) == ["user", "assistant", "user", "assistant"]
    assert [stored[0].content, stored[2].content] == ["Hello", "How are you?"]
    assert engine.chat_history == stored  # the system prompt is not stored
    assert db.sync.get_session("alice-chat").user_id == "alice"
    engine.reset()
    assert store.get_messages("alice-chat") == []


def test_streaming_chat_is_stored_once_complete(db):
    store = AgentBaseChatStore(db)
    engine = SimpleChatEngine.from_defaults(
        llm=MockLLM(), memory=ChatMemoryBuffer.from_defaults(chat_store=store, chat_store_key="stream"))
    response = engine.stream_chat("stream me")
    text = "".join(response.response_gen)
    # the engine's writer thread stores the reply before it marks the stream done
    assert "stream me" in text
    assert [m.content for m in store.get_messages("stream")] == ["stream me", text.strip()]


def test_engine_picks_up_the_conversation_after_reopening(db_path, opener):
    first = opener(db_path)
    engine = SimpleChatEngine.from_defaults(llm=MockLLM(), memory=ChatMemoryBuffer.from_defaults(
        chat_store=AgentBaseChatStore(first), chat_store_key="k"))
    engine.chat("remember me")
    first.sync.close()
    second = opener(db_path)
    engine = SimpleChatEngine.from_defaults(llm=MockLLM(), memory=ChatMemoryBuffer.from_defaults(
        chat_store=AgentBaseChatStore(second), chat_store_key="k"))
    reply = str(engine.chat("still there?"))
    assert "remember me" in reply  # the earlier turn was in the prompt
    assert len(engine.chat_history) == 4
    second.sync.close()


def test_simple_chat_engine_with_the_new_memory(db):
    store = AgentBaseDBChatStore(db)
    memory = Memory.from_defaults(session_id="mem-chat", chat_store=store, token_limit=2000)
    engine = SimpleChatEngine.from_defaults(llm=MockLLM(), memory=memory)
    engine.chat("first")
    asyncio.run(engine.achat("second"))
    assert [m.content for m in memory.get_all()][::2] == ["first", "second"]
    assert roles(memory.get_all()) == ["user", "assistant"] * 2


# llama-index-workflows inspects the agent (a pydantic model), which trips pydantic's own deprecation warnings
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
async def test_function_agent_persists_turns_in_our_store(db):
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.llms.mock import MockFunctionCallingLLM

    store = AgentBaseDBChatStore(db)
    memory = Memory.from_defaults(session_id="agent-1", chat_store=store)
    agent = FunctionAgent(tools=[], llm=MockFunctionCallingLLM())
    result = await agent.run(user_msg="Hello agent", memory=memory)
    assert "Hello agent" in str(result)
    stored = await store.get_messages("agent-1", status=None)
    assert roles(stored) == [MessageRole.USER.value, MessageRole.ASSISTANT.value]
    assert stored[0].content == "Hello agent"
