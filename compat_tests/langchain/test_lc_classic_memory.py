"""langchain-classic 1.0.8 memory classes over AgentBase, sync and async.

ConversationBufferMemory(chat_memory=...), ConversationChain with FakeListLLM, and LangChainMemoryAdapter (the
BaseChatMemory surface).
"""

from __future__ import annotations

import asyncio

import pytest
from langchain_classic.chains import ConversationChain
from langchain_classic.memory import ConversationBufferMemory, ConversationBufferWindowMemory
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake import FakeListLLM
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.prompts import PromptTemplate

from agentbase.adapters import AgentBaseChatMessageHistory, LangChainMemoryAdapter

pytestmark = pytest.mark.filterwarnings("ignore::langchain_core._api.deprecation.LangChainDeprecationWarning")


class PromptSpy(BaseCallbackHandler):
    """Records the prompts sent to the LLM."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def on_llm_start(self, serialized, prompts, **kwargs):
        self.prompts.extend(prompts)


def test_buffer_memory_with_our_history(db):
    memory = ConversationBufferMemory(chat_memory=AgentBaseChatMessageHistory(db, "buf"))
    memory.save_context({"input": "q1"}, {"output": "a1"})
    assert memory.load_memory_variables({}) == {"history": "Human: q1\nAI: a1"}
    as_messages = ConversationBufferMemory(chat_memory=AgentBaseChatMessageHistory(db, "buf"),
                                           return_messages=True, memory_key="chat")
    assert as_messages.load_memory_variables({}) == {"chat": [HumanMessage("q1"), AIMessage("a1")]}
    memory.clear()
    assert as_messages.load_memory_variables({}) == {"chat": []}


async def test_buffer_memory_async_with_our_history(db):
    memory = ConversationBufferMemory(chat_memory=AgentBaseChatMessageHistory(db, "abuf"),
                                      return_messages=True)
    await memory.asave_context({"input": "q1"}, {"output": "a1"})
    assert await memory.aload_memory_variables({}) == {"history": [HumanMessage("q1"), AIMessage("a1")]}
    await memory.aclear()
    assert await memory.aload_memory_variables({}) == {"history": []}


def test_window_memory_reads_the_last_k_turns(db):
    history = AgentBaseChatMessageHistory(db, "win")
    memory = ConversationBufferWindowMemory(chat_memory=history, k=1)
    for i in range(3):
        memory.save_context({"input": f"q{i}"}, {"output": f"a{i}"})
    assert memory.load_memory_variables({}) == {"history": "Human: q2\nAI: a2"}
    assert len(history.messages) == 6


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_conversation_chain_with_buffer_memory(db, mode):
    spy = PromptSpy()
    chain = ConversationChain(llm=FakeListLLM(responses=["Hello Alice!", "Your name is Alice."]),
                              memory=ConversationBufferMemory(
                                  chat_memory=AgentBaseChatMessageHistory(db, "cc")))

    def run(text: str) -> str:
        config = {"callbacks": [spy]}
        out = chain.invoke({"input": text}, config) if mode == "sync" else \
            asyncio.run(chain.ainvoke({"input": text}, config))
        return out["response"]

    assert run("Hi, I am Alice") == "Hello Alice!"
    assert run("What is my name?") == "Your name is Alice."
    assert "Human: Hi, I am Alice\nAI: Hello Alice!" in spy.prompts[1]
    assert [m.content for m in AgentBaseChatMessageHistory(db, "cc").messages] == [
        "Hi, I am Alice", "Hello Alice!", "What is my name?", "Your name is Alice."]


def test_conversation_chain_continues_after_reopening(db_path, opener):
    first = opener(db_path)
    chain = ConversationChain(llm=FakeListLLM(responses=["noted"]),
                              memory=LangChainMemoryAdapter(first, owner_id="alice"))
    chain.invoke({"input": "remember 42"})
    first.sync.close()
    second = opener(db_path)
    spy = PromptSpy()
    chain = ConversationChain(llm=FakeListLLM(responses=["42"]),
                              memory=LangChainMemoryAdapter(second, owner_id="alice"))
    assert chain.invoke({"input": "what number?"}, {"callbacks": [spy]})["response"] == "42"
    assert "Human: remember 42\nAI: noted" in spy.prompts[0]
    second.sync.close()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_memory_adapter_as_chain_memory(db, mode):
    memory = LangChainMemoryAdapter(db, owner_id="bob", session_id="adapter-chain")
    chain = ConversationChain(llm=FakeListLLM(responses=["one", "two"]), memory=memory)
    for text in ("first", "second"):
        chain.invoke({"input": text}) if mode == "sync" else asyncio.run(chain.ainvoke({"input": text}))
    assert memory.load_memory_variables({}) == {"history": "Human: first\nAI: one\nHuman: second\nAI: two"}
    session = db.sync.get_session("adapter-chain")
    assert session.user_id == "bob"


def test_memory_adapter_key_resolution_matches_base_chat_memory(db):
    memory = LangChainMemoryAdapter(db, owner_id="u")
    memory.save_context({"input": "x", "stop": ["\n"]}, {"response": "y"})  # "stop" is ignored, 1 output
    with pytest.raises(ValueError, match="One input key expected"):
        memory.save_context({"a": "1", "b": "2"}, {"output": "z"})
    with pytest.raises(ValueError, match="multiple output keys"):
        memory.save_context({"input": "x"}, {"a": "1", "b": "2"})
    with pytest.warns(UserWarning, match="default 'output' key"):
        memory.save_context({"input": "x2"}, {"output": "y2", "other": "ignored"})
    assert memory.load_memory_variables({})["history"] == "Human: x\nAI: y\nHuman: x2\nAI: y2"


def test_memory_adapter_long_term_in_a_chain_prompt(db):
    db.sync.add_memory("Alice's cat is called Miso", category="fact", user_id="alice")
    db.sync.add_memory("Bob's cat is called Rex", category="fact", user_id="bob")
    memory = LangChainMemoryAdapter(db, owner_id="alice", k_long_term=2)
    prompt = PromptTemplate.from_template("Known facts:\n{long_term}\n\n{history}\nHuman: {input}\nAI:")
    chain = ConversationChain(llm=FakeListLLM(responses=["Miso"]), memory=memory, prompt=prompt)
    spy = PromptSpy()
    chain.invoke({"input": "what is my cat called?"}, {"callbacks": [spy]})
    assert "Miso" in spy.prompts[0] and "Rex" not in spy.prompts[0]


async def test_memory_adapter_async_long_term_after_commit(db):
    memory = LangChainMemoryAdapter(db, owner_id="carol", session_id="c1", k_long_term=3,
                                    return_messages=True)
    await memory.asave_context({"input": "My favorite color is green."}, {"output": "Noted."})
    await memory.acommit()
    await db.flush()
    fresh = LangChainMemoryAdapter(db, owner_id="carol", session_id="c2", k_long_term=3)
    out = await fresh.aload_memory_variables({"input": "what is my favorite color?"})
    assert out["history"] == "" and "green" in out["long_term"]
    own = await memory.aload_memory_variables({"input": "favorite color"})
    assert own["history"] == [HumanMessage("My favorite color is green."), AIMessage("Noted.")]
