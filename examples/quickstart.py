"""Quickstart: memories, a session committed with zero LLM calls, and hybrid search. Runs offline.

    python examples/quickstart.py
"""

import asyncio
import tempfile
from pathlib import Path

from agentbase import AgentBase


async def main() -> None:
    path = Path(tempfile.mkdtemp()) / "my_agent.db"
    async with AgentBase(path=path) as db:
        await db.add_memory("User prefers Python 3.12", category="preference", tags=["python"], user_id="alice")
        s = await db.create_session(agent_id="my-agent", user_id="alice")
        await db.add_messages(s.id, [
            {"role": "user", "content": "I moved to Lisbon last month and I work at Nordlys Energy."},
            {"role": "assistant", "content": "Nice! How is Lisbon treating you?"},
            {"role": "user", "content": "My favorite food here is pastel de nata."},
        ])
        print("commit:", await db.commit_session(s.id))
        await db.flush()
        for query in ("Python preferences", "where does alice work", "favorite food"):
            print(f"\n{query!r}")
            for r in await db.find(query, top_k=3, user_id="alice"):
                print(f"  {r.score:.3f} {r.matched_by:<12} {r.entry.category:<11} {r.entry.l2_full}")
        print("\nstats:", {k: v for k, v in (await db.stats()).items() if k in ("entries", "embedder", "driver")})


if __name__ == "__main__":
    asyncio.run(main())
