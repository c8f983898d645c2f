"""What a LangGraph checkpoint costs on AgentBase, next to LangGraph's InMemorySaver (which keeps nothing on disk).

Runs ``--turns`` turns of one ``langchain.agents.create_agent`` thread (a fake chat model; no tools) on each
saver, then reads the thread back. Prints per saver: milliseconds per turn (each turn writes about three
checkpoints and their writes, every one a durable SQLite transaction on AgentBase), ``get_tuple`` of the newest
checkpoint, ``list`` of the whole history, the checkpoint count and, for AgentBase, the file size. Figures only;
nothing is asserted. Needs ``pip install 'agentbase[langgraph]'``.

Usage::

    python -m benchmarks.langgraph_checkpointer --turns 50
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from agentbase import AgentBase, load_settings
from agentbase.adapters import AgentBaseSaver


def run(saver, turns: int) -> dict[str, float]:
    model = FakeMessagesListChatModel(responses=[AIMessage(f"answer {i} " + "lorem ipsum " * 20)
                                                 for i in range(turns)])
    agent = create_agent(model, tools=[], checkpointer=saver)
    config = {"configurable": {"thread_id": "bench"}}
    per_turn = []
    for i in range(turns):
        start = time.perf_counter()
        agent.invoke({"messages": [HumanMessage(f"question {i} " + "dolor sit amet " * 20)]}, config)
        per_turn.append((time.perf_counter() - start) * 1000)
    start = time.perf_counter()
    for _ in range(20):
        saver.get_tuple(config)
    get_ms = (time.perf_counter() - start) * 1000 / 20
    start = time.perf_counter()
    count = len(list(saver.list(config)))
    list_ms = (time.perf_counter() - start) * 1000
    return {"turn_ms_p50": statistics.median(per_turn), "turn_ms_max": max(per_turn), "get_tuple_ms": get_ms,
            "list_all_ms": list_ms, "checkpoints": count}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=50)
    args = parser.parse_args()
    path = Path(tempfile.mkdtemp()) / "checkpointer_bench.db"
    db = AgentBase(path, settings=load_settings(ner="regex", embedder={"provider": "hash", "dims": 64}))
    rows = {"InMemorySaver": run(InMemorySaver(), args.turns), "AgentBaseSaver": run(AgentBaseSaver(db), args.turns)}
    db.sync.close()
    print(f"{args.turns} create_agent turns on one thread")
    print(f"{'saver':16} {'turn p50 ms':>12} {'turn max ms':>12} {'get_tuple ms':>13} {'list all ms':>12} "
          f"{'checkpoints':>12}")
    for name, r in rows.items():
        print(f"{name:16} {r['turn_ms_p50']:12.2f} {r['turn_ms_max']:12.2f} {r['get_tuple_ms']:13.2f} "
              f"{r['list_all_ms']:12.1f} {r['checkpoints']:12d}")
    print(f"AgentBase file: {path.stat().st_size / 1024:.0f} KiB (+ WAL)")


if __name__ == "__main__":
    main()
