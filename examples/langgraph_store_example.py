"""LangGraph long-term memory in AgentBase: ``AgentBaseStore`` as the store of a LangChain 1.x agent.

One thread's tool saves a memory with ``runtime.store.put``; a new thread's tool finds it with
``runtime.store.search``; AgentBase's own ``find()`` sees the same memory as an entry of the user. Runs offline
(a fake chat model that emits tool calls) with the default embedder (the bundled multilingual-e5-small when
``agentbase[local]`` is installed, else keyword search only):

    python examples/langgraph_store_example.py
"""

import tempfile
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain.tools import ToolRuntime
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from agentbase import AgentBase
from agentbase.adapters import AgentBaseStore


class ScriptedModel(GenericFakeChatModel):
    """Replies from a fixed list; accepts tools (create_agent binds them)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> "ScriptedModel":
        return self


def tool_call(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id, "type": "tool_call"}])


@tool
def save_memory(text: str, runtime: ToolRuntime) -> str:
    """Remember something about the user."""
    user = runtime.config["configurable"]["user_id"]
    key = f"memory-{len(runtime.store.search(('memories', user), limit=1000)) + 1}"
    runtime.store.put(("memories", user), key, {"text": text})
    return f"saved {key}"


@tool
def search_memory(query: str, runtime: ToolRuntime) -> str:
    """Search what we know about the user."""
    user = runtime.config["configurable"]["user_id"]
    hits = runtime.store.search(("memories", user), query=query, limit=2)
    return "; ".join(h.value["text"] for h in hits) or "nothing found"


def main() -> None:
    path = Path(tempfile.mkdtemp()) / "langgraph_store.db"
    db = AgentBase(path)
    # ("memories", "<user_id>"): the last namespace label is the AgentBase user_id
    store = AgentBaseStore(db, user_from_namespace=-1, index={"fields": ["text"]})
    model = ScriptedModel(messages=iter([
        tool_call("save_memory", {"text": "Alice is vegetarian and loves Thai food"}, "call-1"),
        AIMessage(content="Got it, vegetarian and Thai food."),
        tool_call("search_memory", {"query": "what food does she like"}, "call-2"),
        AIMessage(content="You are vegetarian and love Thai food."),
    ]))
    agent = create_agent(model, tools=[save_memory, search_memory], store=store, checkpointer=InMemorySaver())

    for thread, text in (("thread-1", "I'm vegetarian and I love Thai food"), ("thread-2", "Any dinner ideas?")):
        config = {"configurable": {"thread_id": thread, "user_id": "alice"}}
        result = agent.invoke({"messages": [("user", text)]}, config)
        tools = [m.content for m in result["messages"] if isinstance(m, ToolMessage)]
        print(f"{thread}: user={text!r} tool={tools[-1]!r} agent={result['messages'][-1].content!r}")

    # the store API directly
    store.put(("memories", "alice"), "seat", {"text": "Alice prefers window seats", "topic": "travel"})
    store.put(("memories", "bob"), "seat", {"text": "Bob prefers aisle seats", "topic": "travel"})
    print("get:", store.get(("memories", "alice"), "seat").value)
    print("filter topic=travel:", [(i.namespace, i.key) for i in store.search(("memories",),
                                                                               filter={"topic": "travel"})])
    best = store.search(("memories", "alice"), query="window or aisle?", limit=1)[0]
    print(f"query: {best.key} score={best.score:.3f}")
    print("namespaces:", store.list_namespaces(prefix=("memories",)))
    store.put(("scratch",), "note", {"text": "temporary"}, ttl=60)  # minutes; expired items are never returned
    print("ttl item:", store.get(("scratch",), "note").value, "| swept now:", store.sweep_ttl())

    # the same memories are AgentBase entries of alice
    for hit in db.sync.find("vegetarian", user_id="alice", top_k=1):
        print(f"db.find: {hit.entry.content!r} user_id={hit.entry.user_id} category={hit.entry.category}")
    store.close()
    db.sync.close()


if __name__ == "__main__":
    main()
