"""``AgentBaseStore`` under a real LangChain 1.x agent (``langchain.agents.create_agent``), offline: a fake chat
model emits tool calls; one thread's tool writes a memory to the store, another thread's tool searches it (through
``ToolRuntime.store`` and through ``langgraph.config.get_store()``), and the memory is an AgentBase entry of the
user that ``db.find`` sees."""

from __future__ import annotations

import asyncio
from typing import Any

from langchain.agents import create_agent
from langchain.tools import ToolRuntime
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.config import get_store

from agentbase.adapters import AgentBaseStore


class ToolCallingFake(GenericFakeChatModel):
    """GenericFakeChatModel that accepts ``bind_tools`` (create_agent binds the tools to the model)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ToolCallingFake:
        return self


def call(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id, "type": "tool_call"}])


def user_of(runtime: ToolRuntime) -> str:
    return runtime.config["configurable"]["user_id"]


@tool
def remember(text: str, runtime: ToolRuntime) -> str:
    """Save a memory about the user."""
    key = f"m{len(runtime.store.search(('memories', user_of(runtime)), limit=1000))}"
    runtime.store.put(("memories", user_of(runtime)), key, {"text": text})
    return f"saved {key}"


@tool
def recall(query: str, runtime: ToolRuntime) -> str:
    """Search the user's memories."""
    hits = runtime.store.search(("memories", user_of(runtime)), query=query, limit=3)
    return " | ".join(h.value["text"] for h in hits) or "nothing"


@tool
async def arecall(query: str) -> str:
    """Search every user's memories (async, through langgraph.config.get_store())."""
    hits = await get_store().asearch(("memories",), query=query, limit=3)
    return " | ".join(f"{h.namespace[1]}: {h.value['text']}" for h in hits) or "nothing"


def tool_outputs(result: dict[str, Any]) -> list[str]:
    return [m.content for m in result["messages"] if isinstance(m, ToolMessage)]


def test_agent_threads_share_the_store(db):
    store = AgentBaseStore(db, user_from_namespace=-1, index={"fields": ["text"]})
    model = ToolCallingFake(messages=iter([
        call("remember", {"text": "Alice is allergic to peanuts"}, "c1"), AIMessage(content="Noted."),
        call("remember", {"text": "Alice flies to Osaka in May"}, "c2"), AIMessage(content="Noted."),
        call("recall", {"query": "peanuts allergy"}, "c3"), AIMessage(content="You are allergic to peanuts."),
    ]))
    agent = create_agent(model, tools=[remember, recall], store=store, checkpointer=InMemorySaver())
    alice = {"configurable": {"thread_id": "thread-1", "user_id": "alice"}}
    assert tool_outputs(agent.invoke({"messages": [("user", "I am allergic to peanuts")]}, alice)) == ["saved m0"]
    assert tool_outputs(agent.invoke({"messages": [("user", "I fly to Osaka in May")]}, alice)) == ["saved m0", "saved m1"]

    other_thread = {"configurable": {"thread_id": "thread-2", "user_id": "alice"}}
    result = agent.invoke({"messages": [("user", "What am I allergic to?")]}, other_thread)
    out = tool_outputs(result)
    assert len(out) == 1 and out[0].startswith("Alice is allergic to peanuts")
    assert result["messages"][-1].content == "You are allergic to peanuts."
    assert len(result["messages"]) == 4  # thread-2 starts empty: the store, not the checkpoint, carried it

    # the memory is an AgentBase entry of alice, seen by find()
    hits = db.sync.find("peanuts", user_id="alice")
    assert hits and hits[0].entry.content == "Alice is allergic to peanuts"
    assert db.sync.find("peanuts", user_id="bob") == []
    store.close()


def test_async_agent_with_get_store(db):
    store = AgentBaseStore(db, user_from_namespace=-1, index={"fields": ["text"]})
    store.put(("memories", "bob"), "m0", {"text": "Bob keeps bees on his roof"})
    store.put(("memories", "carol"), "m0", {"text": "Carol restores old sailboats"})
    model = ToolCallingFake(messages=iter([call("arecall", {"query": "sailboats"}, "c1"), AIMessage(content="ok")]))
    agent = create_agent(model, tools=[arecall], store=store)

    async def run() -> dict[str, Any]:
        return await agent.ainvoke({"messages": [("user", "who likes boats?")]},
                                   {"configurable": {"thread_id": "t"}})

    out = tool_outputs(asyncio.run(run()))
    assert len(out) == 1 and out[0].startswith("carol: Carol restores old sailboats")
    store.close()
