"""One "host" of tests/storage/test_multihost.py: a separate process with its own AgentBase (own connection pool)
on a shared PostgreSQL database. ``writer`` adds memories and commits sessions, appending each acknowledged id to a
file (flushed and fsynced before the next write); ``reader`` runs find() until a stop file appears.

Run: ``python -m tests.storage.multihost_worker writer URL ACK_FILE NAME COUNT`` or
``python -m tests.storage.multihost_worker reader URL STOP_FILE OUT_FILE``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time

from agentbase import AgentBase, load_settings
from agentbase.embeddings import HashEmbedder


def _open(url: str) -> AgentBase:
    return AgentBase(url, settings=load_settings(ner="regex", storage={"pool_max_size": 4}),
                     embedder=HashEmbedder(dims=64))


def _ack(out, line: str) -> None:
    out.write(line + "\n")
    out.flush()
    os.fsync(out.fileno())


async def writer(url: str, ack_file: str, name: str, count: int) -> None:
    async with _open(url) as ab:
        with open(ack_file, "a", encoding="utf-8") as out:
            for n in range(count):
                e = await ab.add_memory(f"{name} note {n}: the courier reached depot {n % 7} with parcel {n}",
                                        user_id=f"user{n % 3}")
                _ack(out, f"m {e.id}")
                if n % 10 == 9:
                    s = await ab.create_session(user_id=f"user{n % 3}")
                    await ab.add_messages(s.id, [{"role": "user", "content": f"{name} asks about parcel {n}"},
                                                 {"role": "assistant", "content": f"Parcel {n} is at depot {n % 7}"}])
                    await ab.commit_session(s.id)
                    _ack(out, f"s {s.id}")


async def reader(url: str, stop_file: str, out_file: str) -> None:
    done = errors = 0
    async with _open(url) as ab:
        while not os.path.exists(stop_file):
            try:
                await ab.find(f"where is parcel {done % 50}", user_id=f"user{done % 3}", top_k=5)
                done += 1
            except Exception as exc:  # counted and reported: the test asserts there are none
                errors += 1
                print(f"reader error: {exc!r}", file=sys.stderr)
            time.sleep(0.01)
    with open(out_file, "w", encoding="utf-8") as f:
        json.dump({"queries": done, "errors": errors}, f)


if __name__ == "__main__":
    role, args = sys.argv[1], sys.argv[2:]
    if role == "writer":
        asyncio.run(writer(args[0], args[1], args[2], int(args[3])))
    else:
        asyncio.run(reader(args[0], args[1], args[2]))
