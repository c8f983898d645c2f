"""Regressions from a break-it pass: close() under writes, racing commits, reply context, ties, dimension changes."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from agentbase import AgentBase, DimensionMismatchError, load_settings
from agentbase.embeddings import HashEmbedder
from agentbase.index.vector import knn
from agentbase.ingest._text import cut_text


def _db(path: Path, dims: int = 64, cache_mb: int = 512) -> AgentBase:
    settings = load_settings(ner="regex")
    settings.storage.vector_cache_mb = cache_mb
    return AgentBase(path, settings=settings, embedder=HashEmbedder(dims=dims))


async def test_close_returns_while_another_task_writes(tmp_path: Path):
    for trial in range(12):
        db = _db(tmp_path / f"c{trial}.db")
        await db.initialize()

        async def writer() -> None:
            for i in range(50):
                try:
                    await db.add_memory(f"note {i} apple")
                except Exception:  # noqa: BLE001 - writes after close fail with UsageError; that is fine here
                    return

        task = asyncio.create_task(writer())
        await asyncio.sleep(0.002 + 0.001 * (trial % 6))
        await asyncio.wait_for(db.close(), 10)
        await task


async def test_concurrent_commits_store_each_turn_once(tmp_path: Path):
    db = _db(tmp_path / "s.db")
    s = await db.create_session(user_id="u")
    await db.add_messages(s.id, [{"role": "user", "content": "I adopted a cat named Miso"},
                                 {"role": "assistant", "content": "Miso is a lovely name"}])
    results = await asyncio.gather(db.commit_session(s.id), db.commit_session(s.id), db.commit_session(s.id))
    assert sorted(r["turns"] for r in results) == [0, 0, 2]
    turns = await db.list(session_id=s.id, category="turn")
    assert len(turns) == 2
    await db.close()


async def test_reply_context_is_the_same_when_committed_in_steps(tmp_path: Path):
    msgs = [{"role": "user", "content": "What is the weather in Lisbon?"},
            {"role": "tool", "content": '{"temp": 21}', "tool_call_id": "c1"},
            {"role": "system", "content": "tool finished"},
            {"role": "assistant", "content": "It is 21 degrees and sunny."}]
    described = []
    for steps in ([4], [1, 3], [1, 1, 1, 1]):
        db = _db(tmp_path / f"r{len(steps)}.db")
        s = await db.create_session(user_id="u")
        start = 0
        for n in steps:
            await db.add_messages(s.id, msgs[start:start + n])
            await db.commit_session(s.id)
            start += n
        turns = sorted(await db.list(session_id=s.id, category="turn"), key=lambda e: e.metadata["message_seq"])
        described.append([t.description for t in turns])
        await db.close()
    assert described[0] == [None, "user: What is the weather in Lisbon?"]
    assert described[1] == described[0] and described[2] == described[0]


def test_reply_context_cut_keeps_most_of_the_text():
    assert cut_text("short", 300) == "short"
    cjk = "看看 " + "我们明天讨论部署方案" * 60
    assert len(cut_text(cjk, 300)) >= 300  # hard cut: the only space is far from the limit
    words = "word " * 100
    assert cut_text(words, 300).endswith("word ...") and len(cut_text(words, 300)) <= 304


async def test_ties_come_back_in_the_same_order_from_memory_and_disk(tmp_path: Path):
    db = _db(tmp_path / "t.db")
    for user in ("alice", "bob", "carol", "dave"):
        await db.add_memory("I like pizza", user_id=user, dedup=False)
    await db.flush()
    q = np.asarray(db.embedder.embed_query("pizza"), dtype=np.float32)
    memory, _ = await knn(db.db, "sqlite-vec", q, 2, "e.status = ?", ["active"], db.matrix)
    disk, _ = await knn(db.db, "sqlite-vec", q, 4, "e.status = ?", ["active"], None)
    assert [rid for rid, _ in memory] == sorted(rid for rid, _ in disk)[:2]
    assert [rid for rid, _ in disk] == sorted(rid for rid, _ in disk)
    await db.close()


async def test_matrix_drops_vectors_replaced_by_another_dimension(tmp_path: Path):
    path = tmp_path / "d.db"
    old = _db(path, dims=64)
    for i in range(5):
        await old.add_memory(f"apple note {i}")
    await old.flush()
    assert len(await old.find("apple", mode="vector")) == 5
    new = _db(path, dims=32)
    await new.reindex()
    await new.flush()
    with pytest.raises(DimensionMismatchError):
        await old.find("apple", mode="vector")
    assert len(await new.find("apple", mode="vector")) == 5
    await new.close()
    await old.close()
