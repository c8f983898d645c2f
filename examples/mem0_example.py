"""mem0 code on AgentBase: ``Mem0Adapter`` is a drop-in for ``mem0.Memory`` (and ``AsyncMem0Adapter`` for
``AsyncMemory``), stored in one SQLite file, with no LLM and no network.

Runs offline with the default embedder (the bundled multilingual-e5-small when ``agentbase[local]`` is
installed, else keyword search only):

    python examples/mem0_example.py
"""

import asyncio
import os
import tempfile
from pathlib import Path

# Only used if mem0ai is installed: the adapter then raises mem0's own ValidationError, and importing mem0
# writes a config file to $MEM0_DIR (default ~/.mem0) and may start telemetry.
os.environ.setdefault("MEM0_TELEMETRY", "False")
os.environ.setdefault("MEM0_DIR", tempfile.mkdtemp(prefix="mem0-"))

from agentbase import AgentBase  # noqa: E402 - after the environment defaults
from agentbase.adapters import AsyncMem0Adapter, Mem0Adapter  # noqa: E402


def show(title: str, result: dict) -> None:
    print(f"\n{title}")
    for item in result["results"]:
        score = f" score={item['score']:.3f}" if "score" in item else ""
        print(f"  - {item['memory']!r}{score} {({k: item[k] for k in ('user_id', 'run_id') if k in item})}")


def main() -> None:
    folder = Path(tempfile.mkdtemp())
    db = AgentBase(folder / "mem0_agent.db").sync.initialize().aio  # loads the embedder now
    print("embedder:", db.embedder, "| degraded:", db.degrade_reason() or "no")

    # The same lines a mem0 user writes; the adapter takes the AgentBase (or a path).
    m = Mem0Adapter(db)
    show("add (infer=True: zero-LLM fact extraction)", m.add("I like pizza", user_id="alice"))
    show("search", m.search("food preferences", user_id="alice"))

    # infer=False stores each non-system message verbatim, with its role and speaker name.
    conversation = [{"role": "system", "content": "You are a travel assistant."},
                    {"role": "user", "content": "I'm flying to Lisbon in May", "name": "alice"},
                    {"role": "assistant", "content": "Great, I will note your May trip to Lisbon."}]
    added = m.add(conversation, user_id="alice", run_id="trip-planning", infer=False,
                  metadata={"topic": "travel"})
    show("add (infer=False)", added)

    # mem0 2.x filters, including operators; run_id is an AgentBase session.
    show("get_all with filters", m.get_all(filters={"user_id": "alice", "topic": {"in": ["travel"]}}))
    show("search in one run", m.search("Lisbon", filters={"user_id": "alice", "run_id": "trip-planning"}))

    memory_id = added["results"][0]["id"]
    print("\nupdate:", m.update(memory_id, "I'm flying to Lisbon on May 3rd", metadata={"confirmed": True}))
    print("get:", m.get(memory_id))
    print("history:", [(h["event"], h["new_memory"]) for h in m.history(memory_id)])
    print("delete:", m.delete(memory_id), "-> get:", m.get(memory_id))

    # Errors are mem0's: no scope id raises mem0's ValidationError (VALIDATION_001).
    try:
        m.add("who am I?")
    except Exception as exc:  # mem0.exceptions.ValidationError when mem0ai is installed
        print(f"\n{type(exc).__name__} [{getattr(exc, 'error_code', '')}]: {exc}")

    # The async twin, awaited from a running event loop (the sync adapter works there too).
    async def async_part() -> None:
        am = AsyncMem0Adapter(db)
        await am.add("My name is Alice and I live in Porto.", user_id="alice")
        show("async search", await am.search("where does alice live", filters={"user_id": "alice"}, top_k=3))

    asyncio.run(async_part())

    # from_config accepts a mem0 config dict: the Qdrant path becomes the database folder; LLM settings are
    # ignored (extraction is rule-based), so this runs without an API key.
    config = {"vector_store": {"provider": "qdrant", "config": {"path": str(folder / "from_config")}},
              "llm": {"provider": "openai", "config": {"model": "gpt-4o-mini"}}}
    with Mem0Adapter.from_config(config) as m2:
        m2.add("I prefer aisle seats", user_id="bob", infer=False)
        show("from_config search", m2.search("seat", user_id="bob"))

    print("\ndelete_all:", m.delete_all(user_id="alice"), "->", m.get_all(user_id="alice"))
    db.sync.close()


if __name__ == "__main__":
    main()
