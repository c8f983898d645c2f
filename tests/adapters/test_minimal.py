"""MinimalAdapter against real SQLite files (hash embedder, regex NER)."""

from __future__ import annotations

import asyncio
from datetime import datetime

import pytest

from agentbase import SyncAgentBase, ValidationError
from agentbase.adapters import MinimalAdapter

from tests.conftest import make_db


@pytest.fixture
def db(tmp_path):
    ab = make_db(tmp_path / "minimal.db")
    yield ab
    ab.sync.close()


def test_remember_recall_forget(db):
    mem = MinimalAdapter(db)
    a = mem.remember("Alice prefers window seats", who="alice", tags=["travel"])
    b = mem.remember("Bob prefers aisle seats", who="bob")
    assert isinstance(a, str) and a != b
    hits = mem.recall("window seats", who="alice")
    assert [h["id"] for h in hits] == [a]
    assert set(hits[0]) == {"id", "text", "score", "tags", "created_at"}
    assert hits[0]["text"] == "Alice prefers window seats" and hits[0]["tags"] == ["travel"]
    assert isinstance(hits[0]["score"], float) and datetime.fromisoformat(hits[0]["created_at"]).tzinfo
    assert {h["id"] for h in mem.recall("prefers seats")} == {a, b}  # who=None searches everyone
    assert mem.recall("", who="alice") == []
    assert mem.forget(a, who="bob") == 0  # not Bob's
    assert mem.forget(a) == 1 and mem.forget(a) == 0
    assert mem.recall("window seats", who="alice") == []
    assert db.sync.get(a) is None and [e.event for e in db.sync.history(a)] == ["ADD", "DELETE"]


def test_limit_dedup_and_forget_who(db):
    mem = MinimalAdapter(db)
    ids = [mem.remember(f"note {i} about gardening", who="carol") for i in range(7)]
    assert mem.remember("note 3 about gardening", who="carol") == ids[3]  # same text: same entry
    assert len(mem.recall("gardening", who="carol")) == 5
    assert len(mem.recall("gardening", who="carol", limit=2)) == 2
    mem.remember("keep me", who="dave")
    assert mem.forget(who="carol") == 7
    assert mem.recall("gardening", who="carol") == [] and db.sync.count(user_id="dave") == 1
    with pytest.raises(ValidationError):
        mem.forget()
    with pytest.raises(ValidationError):
        mem.remember("   ")
    with pytest.raises(ValidationError, match="limit must be an integer from 1 to 1000, got 0"):
        mem.recall("x", limit=0)  # the message names this method's argument, not find()'s top_k


def test_async_twins_and_running_loop(db):
    mem = MinimalAdapter(db)

    async def main():
        eid = await mem.aremember("Eve studies Rust", who="eve", tags=["lang"])
        assert mem.recall("Rust", who="eve")[0]["id"] == eid  # sync call inside a running loop
        hits = await mem.arecall("Rust", who="eve", limit=3)
        assert hits[0]["id"] == eid and hits[0]["tags"] == ["lang"]
        assert await mem.aforget(eid) == 1
        await mem.aremember("a", who="eve")
        assert await mem.aforget(who="eve") == 1
        with pytest.raises(ValidationError):
            await mem.aforget()

    asyncio.run(main())


def test_path_and_sync_database(tmp_path):
    path = tmp_path / "owned.db"
    with MinimalAdapter(path, embedder="hash") as mem:
        eid = mem.remember("the owned adapter writes here", who="x")
    shared = SyncAgentBase(path, embedder="hash")
    other = MinimalAdapter(shared)
    assert other.recall("owned adapter", who="x")[0]["id"] == eid
    other.close()  # not owned: the SyncAgentBase stays open
    assert shared.count(user_id="x") == 1
    shared.close()

    async def amain():
        async with MinimalAdapter(tmp_path / "a.db", embedder="hash") as amem:
            return await amem.aremember("async owned", who="y")

    assert asyncio.run(amain())
    with pytest.raises(TypeError):
        MinimalAdapter(None)  # type: ignore[arg-type]


def test_recall_on_a_fresh_file(db):
    mem = MinimalAdapter(db)
    assert mem.recall("anything") == []

    async def main():
        return await mem.arecall("anything")

    assert asyncio.run(main()) == []
