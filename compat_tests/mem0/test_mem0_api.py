"""The public-API behaviours mem0's own tests assert, replayed against the adapter.

Sources (mem0ai/mem0, tests matching the 2.2.1 wheel; FRAMEWORK_CONTRACTS.md section 1.7):
``tests/test_main.py``, ``tests/test_memory.py``, ``tests/memory/test_main.py``,
``tests/memory/test_storage.py``. mem0's versions mock the embedder, vector store and LLM; here every call
runs against a real SQLite file, so the assertions are on behaviour only. Where the adapter intentionally
differs (top-level ids in search/get_all are accepted), the test says so.
"""

from __future__ import annotations

import asyncio
import copy
from datetime import datetime, timezone

import pytest
from conftest import CountingEmbedder, make_db
from mem0.exceptions import ValidationError

from agentbase import AgentBase, load_settings
from agentbase.adapters import Mem0Adapter

MESSAGES = [{"role": "user", "content": "I love playing tennis on weekends"}]


def _utc(ts: str) -> datetime:
    parsed = datetime.fromisoformat(ts)
    assert parsed.utcoffset() == timezone.utc.utcoffset(None)
    return parsed


# ------------------------------------------------------------------------------------- tests/test_main.py
def test_add_returns_results(memory):
    result = memory.add(messages=MESSAGES, user_id="u1", infer=False)
    assert "results" in result and result["results"][0]["event"] == "ADD"


def test_add_with_expiration_date(memory):
    mid = memory.add(MESSAGES, user_id="u1", infer=False, expiration_date="2999-01-01")["results"][0]["id"]
    assert memory.get(mid)["expiration_date"] == "2999-01-01"


def test_get_returns_item_keys(memory):
    mid = memory.add("Likes espresso", user_id="u1", infer=False,
                     metadata={"source": "chat"})["results"][0]["id"]
    item = memory.get(mid)
    assert {"id", "memory", "user_id", "hash", "created_at", "updated_at"} <= set(item)
    assert item["metadata"] == {"source": "chat"} and item["memory"] == "Likes espresso"


def test_search_returns_scored_items(memory):
    memory.add("Likes espresso", user_id="u1", infer=False)
    hit = memory.search("espresso", filters={"user_id": "u1"})["results"][0]
    assert {"id", "memory", "user_id", "score"} <= set(hit) and hit["user_id"] == "u1"


def test_expired_hidden_unless_show_expired(memory):
    memory.add("old espresso habit", user_id="u1", infer=False, expiration_date="2001-01-01")
    memory.add("new espresso habit", user_id="u1", infer=False)
    listed = memory.get_all(filters={"user_id": "u1"})["results"]
    assert [r["memory"] for r in listed] == ["new espresso habit"]
    assert [r["memory"] for r in memory.search("espresso", filters={"user_id": "u1"})["results"]] == [
        "new espresso habit"]
    assert len(memory.get_all(filters={"user_id": "u1"}, show_expired=True)["results"]) == 2
    assert len(memory.search("espresso", filters={"user_id": "u1"}, show_expired=True)["results"]) == 2


def test_update_variants(memory):
    mid = memory.add("v1", user_id="u1", infer=False, metadata={"k": "a"})["results"][0]["id"]
    assert memory.update(mid, "v2") == {"message": "Memory updated successfully!"}
    memory.update(mid, "v3", metadata={"k": "b"})
    assert (memory.get(mid)["memory"], memory.get(mid)["metadata"]) == ("v3", {"k": "b"})
    memory.update(mid, "v4", metadata={})
    assert memory.get(mid)["metadata"] == {"k": "b"}
    memory.update(mid, data="v5")
    assert memory.get(mid)["memory"] == "v5"
    memory.update(mid, text="v6", data="v7")
    assert memory.get(mid)["memory"] == "v6"
    memory.update(mid, expiration_date="2999-12-31")
    assert memory.get(mid)["memory"] == "v6" and memory.get(mid)["expiration_date"] == "2999-12-31"


def test_delete(memory):
    mid = memory.add("to delete", user_id="u1", infer=False)["results"][0]["id"]
    assert memory.delete(mid) == {"message": "Memory deleted successfully!"}
    assert memory.get(mid) is None


def test_delete_all_pages_past_1000_and_keeps_the_store(tmp_path):
    settings = load_settings(ner="regex", storage={"synchronous": "NORMAL"})
    # 1005 single-row commits: skip fsync and embedding to keep this fast
    db = AgentBase(tmp_path / "bulk.db", settings=settings, embedder="none")
    memory = Mem0Adapter(db)
    for i in range(1005):
        db.sync.add_memory(f"bulk memory number {i}", user_id="bulk", dedup=False)
    memory.add("someone else", user_id="other", infer=False)
    assert memory.delete_all(user_id="bulk") == {"message": "Memories deleted successfully!"}
    assert db.sync.count(user_id="bulk") == 0
    assert memory.get_all(filters={"user_id": "other"})["results"]
    assert memory.add("after delete_all", user_id="bulk", infer=False)["results"]
    db.sync.close()


def test_get_all_with_filters(memory):
    memory.add("a1", user_id="a", infer=False)
    memory.add("b1", user_id="b", infer=False)
    assert [r["memory"] for r in memory.get_all(filters={"user_id": "a"})["results"]] == ["a1"]


@pytest.mark.parametrize("bad", ["   ", "al ice", "al\tice", ""])
def test_entity_id_validation(memory, bad):
    with pytest.raises(ValueError):
        memory.add("x", user_id=bad, infer=False)
    with pytest.raises(ValueError):
        memory.search("x", filters={"user_id": bad})
    with pytest.raises(ValueError):
        memory.get_all(filters={"user_id": bad})
    with pytest.raises(ValueError):
        memory.delete_all(user_id=bad)


def test_entity_ids_trimmed_and_ints_coerced(memory):
    memory.add("trimmed", user_id="  alice  ", infer=False)
    assert memory.get_all(filters={"user_id": "alice"})["results"][0]["user_id"] == "alice"
    assert memory.search("trimmed", filters={"user_id": " alice"})["results"]
    memory.add("int id", user_id=7, infer=False)
    assert memory.get_all(filters={"user_id": 7})["results"][0]["user_id"] == "7"
    assert memory.delete_all(user_id=7)["message"] == "Memories deleted successfully!"


def test_search_parameter_validation(memory):
    memory.add("coffee", user_id="u", infer=False)
    with pytest.raises(ValueError, match="cannot be empty"):
        memory.search("", filters={"user_id": "u"})
    assert memory.search("  coffee  ", filters={"user_id": "u"})["results"][0]["memory"] == "coffee"
    for threshold in (1.01, -0.01):
        with pytest.raises(ValueError, match="Invalid threshold"):
            memory.search("coffee", filters={"user_id": "u"}, threshold=threshold)
    with pytest.raises(ValueError, match="Invalid top_k"):
        memory.search("coffee", filters={"user_id": "u"}, top_k=-1)
    for ok in ({"threshold": 0}, {"threshold": 1}, {"top_k": 0}):
        assert "results" in memory.search("coffee", filters={"user_id": "u"}, **ok)


# ------------------------------------------------------------------------------------- tests/test_memory.py
def test_top_level_ids_in_search_are_accepted(memory):
    """mem0 2.x raises ValueError here; the adapter accepts the older keyword form (documented difference)."""
    memory.add("coffee", user_id="u", infer=False)
    def ids(result):
        return [r["id"] for r in result["results"]]

    by_keyword = ids(memory.search("coffee", user_id="u"))
    assert by_keyword == ids(memory.search("coffee", filters={"user_id": "u"})) != []
    assert memory.get_all(user_id="u") == memory.get_all(filters={"user_id": "u"})


def test_missing_ids_raise_value_error_sync_and_async(memory, async_memory):
    missing = "6f1c2b3e-0000-4000-8000-000000000000"
    with pytest.raises(ValueError, match="not found"):
        memory.delete(missing)
    with pytest.raises(ValueError, match="not found"):
        memory.update(missing, "x")

    async def run():
        with pytest.raises(ValueError, match="not found"):
            await async_memory.delete(missing)
        with pytest.raises(ValueError, match="not found"):
            await async_memory.update(missing, "x")

    asyncio.run(run())


def test_update_preserves_metadata_and_actor(memory):
    mid = memory.add([{"role": "user", "content": "hi", "name": "alice"}], user_id="u", infer=False,
                     metadata={"keep": 1, "over": "old"})["results"][0]["id"]
    memory.update(mid, "hello", metadata={"over": "new"})
    item = memory.get(mid)
    assert item["metadata"] == {"keep": 1, "over": "new"} and item["actor_id"] == "alice"


def test_delete_history_row_has_timestamps(memory):
    mid = memory.add("gone soon", user_id="u", infer=False)["results"][0]["id"]
    memory.delete(mid)
    row = memory.history(mid)[-1]
    assert row["event"] == "DELETE" and row["is_deleted"] is True and row["new_memory"] is None
    assert _utc(row["created_at"]) <= _utc(row["updated_at"])


def test_reset_clears_messages(memory, db):
    db.sync.create_session(session_id="mem0-scope-left-by-a-crash", user_id="u")
    memory.add("My name is Zed.", user_id="u")  # infer=True commits through a private session, deleted after
    assert [s.id for s in db.sync.list_sessions() if s.id.startswith("mem0-scope-")] == ["mem0-scope-left-by-a-crash"]
    memory.reset()
    assert not any(s.id.startswith("mem0-scope-") for s in db.sync.list_sessions())
    assert memory.get_all(filters={"user_id": "u"})["results"] == []


def test_infer_false_embeds_exactly_once(tmp_path):
    embedder = CountingEmbedder()
    ab = make_db(tmp_path / "count.db", embedder=embedder)
    try:
        Mem0Adapter(ab).add("foo", user_id="u", infer=False)
        ab.sync.flush()
        assert embedder.calls["foo"] == 1
    finally:
        ab.sync.close()


def test_attributed_to_is_surfaced(memory):
    mid = memory.add("likes tennis", user_id="u", infer=False,
                     metadata={"attributed_to": "user"})["results"][0]["id"]
    assert memory.get(mid)["attributed_to"] == "user"
    assert memory.get_all(filters={"user_id": "u"})["results"][0]["attributed_to"] == "user"
    assert memory.search("tennis", filters={"user_id": "u"})["results"][0]["attributed_to"] == "user"


def test_explain_returns_score_details(memory):
    memory.add("likes tennis", user_id="u", infer=False)
    hit = memory.search("tennis", filters={"user_id": "u"}, explain=True)["results"][0]
    assert hit["score_details"]["final_score"] == hit["score"]


# ------------------------------------------------------------------------------ tests/memory/test_main.py
def test_metadata_cannot_set_identity(memory):
    mid = memory.add("scoped", user_id="u", infer=False,
                     metadata={"user_id": "x", "agent_id": "y", "run_id": "z", "actor_id": "w", "ok": 1}
                     )["results"][0]["id"]
    item = memory.get(mid)
    assert item["user_id"] == "u" and not {"agent_id", "run_id", "actor_id"} & set(item)
    assert item["metadata"] == {"ok": 1}
    memory.update(mid, metadata={"user_id": "x", "actor_id": "w"})
    assert memory.get(mid)["user_id"] == "u" and "actor_id" not in memory.get(mid)


def test_top_level_ids_set_scope(memory):
    mid = memory.add("agent memory", agent_id="bot", run_id="r9", infer=False)["results"][0]["id"]
    item = memory.get(mid)
    assert (item["agent_id"], item["run_id"]) == ("bot", "r9") and "user_id" not in item


def test_timestamps_are_utc_and_update_keeps_created_at(memory):
    mid = memory.add("t", user_id="u", infer=False)["results"][0]["id"]
    first = memory.get(mid)
    _utc(first["created_at"]), _utc(first["updated_at"])
    listed = memory.get_all(filters={"user_id": "u"})["results"][0]
    found = memory.search("t", filters={"user_id": "u"}, threshold=0)["results"][0]
    assert first["created_at"] == listed["created_at"] == found["created_at"]
    memory.update(mid, "t2")
    second = memory.get(mid)
    assert second["created_at"] == first["created_at"]
    assert _utc(second["updated_at"]) > _utc(first["updated_at"])
    listed = memory.get_all(filters={"user_id": "u"})["results"][0]
    found = memory.search("t2", filters={"user_id": "u"}, threshold=0)["results"][0]
    assert (listed["created_at"], listed["updated_at"]) == (found["created_at"], found["updated_at"]) == (
        second["created_at"], second["updated_at"])


def test_caller_metadata_not_mutated(memory):
    meta = {"user_id": "x", "nested": {"a": 1}}
    snapshot = copy.deepcopy(meta)
    mid = memory.add("m", user_id="u", infer=False, metadata=meta,
                     expiration_date="2999-01-01")["results"][0]["id"]
    memory.update(mid, metadata=meta)
    assert meta == snapshot


def test_nothing_to_extract_gives_no_memories(memory):
    """mem0: an empty LLM answer gives ``{"results": []}``; here: nothing usable to extract from."""
    assert memory.add([{"role": "system", "content": "You are helpful."}], user_id="u") == {"results": []}


# ------------------------------------------------------------------------------ tests/memory/test_storage.py
def test_history_schema_and_order(memory):
    mid = memory.add("h1", user_id="u", infer=False)["results"][0]["id"]
    memory.update(mid, "h2")
    memory.update(mid, "h3")
    rows = memory.history(mid)
    assert [list(r) for r in rows] == [["id", "memory_id", "old_memory", "new_memory", "event", "created_at",
                                        "updated_at", "is_deleted", "actor_id", "role"]] * 3
    assert [r["new_memory"] for r in rows] == ["h1", "h2", "h3"]
    assert [r["updated_at"] for r in rows] == sorted(r["updated_at"] for r in rows)
    assert all(r["role"] == "user" for r in rows)


def test_validation_error_type(memory):
    with pytest.raises(ValidationError) as info:
        memory.add(MESSAGES)
    assert info.value.error_code == "VALIDATION_001"
