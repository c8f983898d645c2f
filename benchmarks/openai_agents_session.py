"""Latency of ``AgentBaseSession`` (OpenAI Agents SDK) next to the SDK's own ``SQLiteSession`` on a file.

For each backend it adds ``--turns`` turns (one ``add_items`` of a user and an assistant item per turn, as a
``Runner`` run writes them), then reads the whole history and the latest 10 items 20 times each, and prints the
mean milliseconds per call. ``AgentBaseSession`` runs twice: with ``auto_commit=True`` (each ``add_items`` also
commits the turns, ``commit_session(wait=False)``) and with ``auto_commit=False``. Hash embedder, regex NER: the
figures are storage and commit cost, not embedding. Load on the machine changes them; rerun to compare.

Usage::

    python -m benchmarks.openai_agents_session --turns 100
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from agents import SQLiteSession

from agentbase import AgentBase, load_settings
from agentbase.adapters import AgentBaseSession


async def _time(call: Any, n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        await call()
    return (time.perf_counter() - start) / n * 1000


async def bench(name: str, session: Any, turns: int) -> None:
    start = time.perf_counter()
    for i in range(turns):
        await session.add_items([
            {"role": "user", "content": f"question {i}: what is the weather in Lisbon this week?"},
            {"type": "message", "role": "assistant", "status": "completed", "id": f"msg_{i}",
             "content": [{"type": "output_text", "text": f"answer {i}: sunny", "annotations": []}]}])
    add_ms = (time.perf_counter() - start) / turns * 1000
    all_ms = await _time(session.get_items, 20)
    last_ms = await _time(lambda: session.get_items(limit=10), 20)
    print(f"{name:<30} add_items {add_ms:7.2f} ms   get_items() of {2 * turns} items {all_ms:7.2f} ms   "
          f"get_items(limit=10) {last_ms:6.2f} ms")


async def main(turns: int) -> None:
    folder = Path(tempfile.mkdtemp(prefix="oa-session-bench-"))
    db = AgentBase(folder / "agentbase.db",
                   settings=load_settings(ner="regex", embedder={"provider": "hash", "dims": 64}))
    try:
        await bench("AgentBaseSession auto_commit", AgentBaseSession("a", db), turns)
        await bench("AgentBaseSession no commit", AgentBaseSession("b", db, auto_commit=False), turns)
        sdk = SQLiteSession("c", folder / "sdk.db")
        await bench("SQLiteSession (file)", sdk, turns)
        sdk.close()
    finally:
        await db.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=100, help="turns to add per backend (default 100)")
    asyncio.run(main(parser.parse_args().turns))
