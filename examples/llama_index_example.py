"""LlamaIndex on AgentBase: ChatMemoryBuffer and the new Memory backed by one SQLite file.

Runs offline with LlamaIndex's mock LLM (install with ``pip install 'agentbase[llama-index]'``):

    python examples/llama_index_example.py
"""

import asyncio
import tempfile
from pathlib import Path

from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import ChatMessage, MockLLM
from llama_index.core.memory import ChatMemoryBuffer, Memory

from agentbase import AgentBase
from agentbase.adapters import AgentBaseChatStore, AgentBaseDBChatStore


async def main() -> None:
    path = Path(tempfile.mkdtemp()) / "llama_index_agent.db"
    db = AgentBase(path)

    # 1. A chat engine whose ChatMemoryBuffer lives in AgentBase (sync calls work inside async code too).
    store = AgentBaseChatStore(db, user_id="alice")
    memory = ChatMemoryBuffer.from_defaults(chat_store=store, chat_store_key="alice-chat", token_limit=2000)
    engine = SimpleChatEngine.from_defaults(llm=MockLLM(max_tokens=8), memory=memory)
    engine.chat("Hi! I moved to Lisbon last month and I work at Nordlys Energy.")
    await engine.achat("My favorite food here is pastel de nata.")
    for m in await store.aget_messages("alice-chat"):
        print(f"{m.role.value:>9}: {m.content}")
    print("keys:", store.get_keys())

    # 2. SimpleChatStore-style editing: delete_message returns what it removed, the rest keeps its order.
    removed = store.delete_message("alice-chat", 1)
    print("\nremoved:", removed)
    print("left:", [m.content for m in store.get_messages("alice-chat")])

    # 3. The new Memory with an AgentBase AsyncDBChatStore: old turns are archived, not lost.
    db_store = AgentBaseDBChatStore(db, user_id="alice")
    memory2 = Memory.from_defaults(session_id="alice-memory", chat_store=db_store, token_limit=60,
                                   chat_history_token_ratio=0.5, token_flush_size=20)
    for i in range(4):
        await memory2.aput_messages([ChatMessage(role="user", content=f"question {i}: " + "word " * 8),
                                     ChatMessage(role="assistant", content=f"answer {i}")])
    print("\nactive:", await db_store.count_messages("alice-memory"),
          "archived:", await db_store.count_messages("alice-memory", status="archived"))

    # 4. The same conversations feed AgentBase's long-term memory (zero LLM calls) and its search.
    print("\ncommit:", await db.commit_session("alice-chat"))
    await db.flush()
    for r in await db.find("where does alice work", top_k=3, user_id="alice"):
        print(f"  {r.score:.3f} {r.entry.category:<10} {r.entry.content}")
    await db.close()

    # 5. Reopen the file: the chat is still there.
    reopened = AgentBase(path)
    messages = await AgentBaseChatStore(reopened).aget_messages("alice-chat")
    print("\nafter reopening:", len(messages), "messages")
    await reopened.close()


if __name__ == "__main__":
    asyncio.run(main())
