"""Temporal knowledge graph: facts extracted from a conversation, a job change, and "what was true when?".

Runs offline in about a second (hash embedder, regex NER):

    python examples/graph_example.py
"""

import asyncio
import tempfile
from pathlib import Path

from agentbase import AgentBase, load_settings


async def main() -> None:
    path = Path(tempfile.mkdtemp()) / "graph.db"
    async with AgentBase(path=path, embedder="hash", settings=load_settings(ner="regex")) as db:
        # Relations are extracted when a session is committed; each is valid from the message's time.
        for day, text in [("2024-01-10", "Alice works at Acme and lives in Berlin."),
                          ("2024-06-01", "Alice joined Globex and moved to Paris."),
                          ("2024-06-02", "My manager is Alice.")]:
            s = await db.create_session(user_id="bob")
            await db.add_message(s.id, "user", text, name="Bob", created_at=day)
            await db.commit_session(s.id)

        # An explicit fact, e.g. from a tool result.
        await db.add_relation("Globex", "headquartered_in", "Paris", valid_from="2001-01-01")

        for when in ("2024-03-01", "2024-07-01"):
            print(f"Alice as of {when}:")
            for r in await db.facts("alice", as_of=when, direction="out"):
                print(f"  {r.predicate:<10} {r.object:<8} valid {r.valid_from:%Y-%m-%d} .. "
                      f"{r.valid_to.strftime('%Y-%m-%d') if r.valid_to else 'now'}")

        print("\nAlice's timeline (nothing is deleted; contradicted facts are closed):")
        for r in await db.timeline("Alice"):
            end = r.valid_to.strftime("%Y-%m-%d") if r.valid_to else "now"
            print(f"  {r.valid_from:%Y-%m-%d} .. {end:<10} {r.subject} {r.predicate} {r.object}")

        hood = await db.neighbors("Alice", depth=2)
        print("\nwithin two hops of Alice now:", {e.name: hood.depths[e.id] for e in hood.entities})
        print("who reports to Alice:", [r.subject for r in await db.facts("Alice", predicate="manager",
                                                                         direction="in")])


if __name__ == "__main__":
    asyncio.run(main())
