"""LlamaIndex long-term memory on AgentBase: ``Memory`` with an ``AgentBaseMemoryBlock``.

A first chat overflows the short-term queue of ``llama_index.core.memory.Memory``; the messages it flushes are
committed to AgentBase (turns, facts, summary; zero LLM calls). A second chat, in a new session and after
reopening the file, gets the earlier facts in its system message. Runs offline with LlamaIndex's ``MockLLM``
(install with ``pip install 'agentbase[llama-index]'``):

    python examples/llama_index_memory_example.py
"""

import asyncio
import tempfile
from pathlib import Path

from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import ChatMessage, MockLLM
from llama_index.core.memory import Memory

from agentbase import AgentBase
from agentbase.adapters import AgentBaseDBChatStore, AgentBaseMemoryBlock

FIRST_CHAT = [
    ("user", "Hi! I moved to Lisbon last month and I work at Nordlys Energy as a data engineer."),
    ("assistant", "Welcome to Lisbon! What do you work on?"),
    ("user", "Mostly pipelines. Also, my dog is called Pixel, she is a beagle."),
    ("assistant", "Pixel is a lovely name."),
    ("user", "I prefer green tea over coffee in the morning."),
    ("assistant", "Noted: green tea."),
    ("user", "Can you suggest a quick dinner with chickpeas?"),
    ("assistant", "A chickpea and spinach curry takes about twenty minutes."),
]


async def main() -> None:
    path = Path(tempfile.mkdtemp()) / "llama_index_memory.db"
    db = AgentBase(path)

    # 1. Session one: Memory's own queue and the long-term block both live in the AgentBase file.
    memory = Memory.from_defaults(
        session_id="alice-monday", token_limit=120, token_flush_size=40,
        chat_store=AgentBaseDBChatStore(db, user_id="alice"),
        memory_blocks=[AgentBaseMemoryBlock(db, user_id="alice")])
    for role, text in FIRST_CHAT:
        await memory.aput(ChatMessage(role=role, content=text))
    archived = await memory.aget_all(status="archived")
    print(f"session one: {len(FIRST_CHAT)} messages, {len(archived)} flushed to the memory block")
    await db.flush()  # wait for the queued embeddings
    facts = [e.content for e in await db.list(user_id="alice") if e.category not in ("turn", "summary")]
    print("facts AgentBase extracted:", facts)
    await db.close()

    # 2. Reopen the file; session two is a new Memory with a new session id and the same block settings.
    db = AgentBase(path)
    block = AgentBaseMemoryBlock(db, user_id="alice", top_k=3, token_budget=200)
    memory2 = Memory.from_defaults(session_id="alice-friday", token_limit=4000, memory_blocks=[block],
                                   chat_store=AgentBaseDBChatStore(db, user_id="alice"))
    await memory2.aput(ChatMessage(role="user", content="What is my dog's name?"))
    system = (await memory2.aget())[0]
    print(f"\nsession two, {system.role.value} message LlamaIndex builds:\n{system.content}")

    # 3. A chat engine turn with the offline MockLLM (it echoes its prompt, so the reply shows the memory).
    engine = SimpleChatEngine.from_defaults(llm=MockLLM(), memory=memory2)
    reply = await engine.achat("Where do I work?")
    print("\nchat engine prompt mentions Nordlys:", "Nordlys" in str(reply))
    block.close()
    await db.close()


if __name__ == "__main__":
    asyncio.run(main())
