"""The three-verb memory API: remember, recall, forget (plus their async twins).

Runs offline with the default embedder (the bundled multilingual-e5-small when ``agentbase[local]`` is
installed, else keyword search only):

    python examples/minimal_example.py
"""

import asyncio
import tempfile
from pathlib import Path

from agentbase.adapters import MinimalAdapter


def main() -> None:
    path = Path(tempfile.mkdtemp()) / "minimal_agent.db"
    with MinimalAdapter(path) as mem:  # the adapter opens (and closes) the database itself
        mem.remember("Alice prefers window seats on long flights", who="alice", tags=["travel"])
        mem.remember("Alice is allergic to peanuts", who="alice", tags=["health"])
        mem.remember("Bob prefers aisle seats", who="bob", tags=["travel"])
        note = mem.remember("Alice's passport expires in March 2027", who="alice")

        for query in ("which seat does she like?", "food allergies"):
            print(f"recall({query!r}, who='alice'):")
            for hit in mem.recall(query, who="alice", limit=2):
                print(f"  {hit['score']:.3f} {hit['text']!r} tags={hit['tags']}")

        print("forget one:", mem.forget(note), "| forget it again:", mem.forget(note))

        async def async_part() -> None:
            await mem.aremember("Carol speaks Portuguese", who="carol")
            hits = await mem.arecall("languages", who="carol", limit=1)
            print("async recall:", [h["text"] for h in hits])
            print("forget all of carol's memories:", await mem.aforget(who="carol"))

        asyncio.run(async_part())
        print("everyone, 'seats':", [h["text"] for h in mem.recall("seats", limit=3)])


if __name__ == "__main__":
    main()
