"""Mem0Adapter / AsyncMem0Adapter against real SQLite files (hash embedder, regex NER)."""

from __future__ import annotations

import asyncio
import hashlib
import os
import sys
import tempfile
from datetime import datetime

import pytest

os.environ.setdefault("MEM0_TELEMETRY", "False")
os.environ.setdefault("MEM0_DIR", tempfile.mkdtemp(prefix="mem0dir-"))

from agentbase import SyncAgentBase  # noqa: E402
from agentbase.adapters import AsyncMem0Adapter, Mem0Adapter  # noqa: E402
from agentbase.adapters import mem0 as mem0_mod  # noqa: E402

from tests.conftest import make_db  # noqa: E402

ITEM_KEYS = ["id", "memory", "hash", "metadata", "score", "created_at", "updated_at"]
HISTORY_KEYS = {"id", "memory_id", "old_memory", "new_memory", "event", "created_at", "updated_at",
                "is_deleted", "actor_id", "role"}


@pytest.fixture
def db(tmp_path):
    ab = make_db(tmp_path / "mem0.db")
    yield ab
    ab.sync.close()


@pytest.fixture
def m(db):
    return Mem0Adapter(db)


def _iso_utc(value: str) -> bool:
    return datetime.fromisoformat(value).utcoffset().total_seconds() == 0 and value.endswith("+00:00")


def test_seed_lines(m):
    added = m.add("I like pizza", user_id="alice")
    assert [r["event"] for r in added["results"]] == ["ADD"]
    found = m.search("food preferences", user_id="alice")
    assert set(found) == {"results"} and isinstance(found["results"], list)
    # the hash embedder has no semantics: a shared word finds the extracted fact
    hits = m.search("pizza", user_id="alice")["results"]
    assert hits[0]["memory"] == "User likes pizza" and hits[0]["user_id"] == "alice"
    assert list(hits[0])[:7] == ITEM_KEYS and isinstance(hits[0]["score"], float)


def test_seed_lines_inside_running_event_loop(db):
    async def main():
        m = Mem0Adapter(db)
        m.add("I like pizza", user_id="alice")
        return m.search("food preferences", user_id="alice"), m.search("pizza", user_id="alice")

    semantic, keyword = asyncio.run(main())
    assert isinstance(semantic["results"], list)
    assert keyword["results"][0]["memory"] == "User likes pizza"


def test_add_without_ids_raises_mem0_validation_error(m):
    # mem0's own class when mem0ai is installed (the compat suite pins it), else the adapter's twin
    try:
        from mem0.exceptions import ValidationError
    except ImportError:
        from agentbase.adapters.mem0 import ValidationError

    with pytest.raises(ValidationError) as info:
        m.add("I like pizza")
    assert info.value.error_code == "VALIDATION_001"
    assert str(info.value) == "At least one of 'user_id', 'agent_id', or 'run_id' must be provided."
    with pytest.raises(ValidationError) as info:
        m.add("x", user_id="a", memory_type="episodic")
    assert info.value.error_code == "VALIDATION_002"
    with pytest.raises(ValidationError) as info:
        m.add(42, user_id="a")
    assert info.value.error_code == "VALIDATION_003"


def test_fallback_validation_error_without_mem0(m, monkeypatch):
    from agentbase.adapters import _mem0_rules

    monkeypatch.setattr(_mem0_rules, "_VALIDATION_CLS", None)
    monkeypatch.setitem(sys.modules, "mem0.exceptions", None)  # import fails like an absent package
    with pytest.raises(mem0_mod.ValidationError) as info:
        m.add("hello", infer=False)
    err = info.value
    assert type(err).__name__ == "ValidationError" and err.error_code == "VALIDATION_001"
    assert err.message == str(err) and err.details == {"provided_ids": {"user_id": None, "agent_id": None,
                                                                       "run_id": None}}
    assert err.suggestion and err.debug_info == {}


def test_get_unknown_is_none(m):
    assert m.get("00000000-0000-0000-0000-000000000000") is None
    assert m.get("") is None


def test_infer_false_shapes(m):
    out = m.add([{"role": "system", "content": "be nice"},
                 {"role": "user", "content": "I love sushi", "name": "al"},
                 {"role": "assistant", "content": "Noted!"}], user_id="alice", infer=False,
                metadata={"topic": "food", "user_id": "mallory"})
    assert [(r["memory"], r["role"], r["actor_id"]) for r in out["results"]] == [
        ("I love sushi", "user", "al"), ("Noted!", "assistant", None)]
    assert all(list(r) == ["id", "memory", "event", "actor_id", "role"] for r in out["results"])
    got = m.get(out["results"][0]["id"])
    assert list(got) == [*ITEM_KEYS, "user_id", "actor_id", "role"]
    assert got["score"] is None and got["metadata"] == {"topic": "food"} and got["user_id"] == "alice"
    assert got["hash"] == hashlib.md5(b"I love sushi").hexdigest()
    assert _iso_utc(got["created_at"]) and got["created_at"] == got["updated_at"]
    listed = m.get_all(filters={"user_id": "alice"})["results"]
    assert {r["memory"] for r in listed} == {"I love sushi", "Noted!"}
    assert all("score" not in r for r in listed)
    bare = m.get(m.add("plain", agent_id="bot", infer=False)["results"][0]["id"])
    assert bare["metadata"] is None and bare["agent_id"] == "bot" and "user_id" not in bare


def test_infer_true_extracts_facts_or_stores_verbatim(m, db):
    out = m.add([{"role": "user", "content": "My name is Alice and I live in Paris."},
                 {"role": "assistant", "content": "Nice to meet you!"}], user_id="alice")
    assert sorted(r["memory"] for r in out["results"]) == ["User lives in Paris", "User's name is Alice"]
    assert all(list(r) == ["id", "memory", "event"] for r in out["results"])
    assert {r["memory"] for r in m.get_all(user_id="alice")["results"]} == {"User lives in Paris",
                                                                             "User's name is Alice"}
    assert m.add("My name is Alice.", user_id="alice")["results"] == []  # already known: no event
    verbatim = m.add("Hello there, how are you?", user_id="alice", metadata={"k": 1})["results"]
    assert [r["memory"] for r in verbatim] == ["Hello there, how are you?"]
    assert m.get(verbatim[0]["id"])["metadata"] == {"k": 1}
    assert "run_id" not in m.get(out["results"][0]["id"])  # the private session is not a run_id
    # an extracted fact's metadata is the caller's alone (mem0: None when empty), never the commit's provenance
    assert m.get(out["results"][0]["id"])["metadata"] is None
    tagged = m.add("I like tea.", user_id="alice", metadata={"source": "chat-app", "value": 3})["results"]
    assert [r["memory"] for r in tagged] == ["User likes tea"]
    assert m.get(tagged[0]["id"])["metadata"] == {"source": "chat-app", "value": 3}
    # each call committed through a session of its own, deleted afterwards (mem0 keeps no messages either)
    assert db.sync.list_sessions(user_id="alice") == []


def test_run_id_is_an_agentbase_session(m, db):
    m.add("I have a dog named Rex.", user_id="bob", run_id="run-1")
    m.add("I prefer tea", user_id="bob", run_id="run-2", infer=False)
    assert db.sync.get_session("run-1") is not None
    r1 = m.get_all(filters={"user_id": "bob", "run_id": "run-1"})["results"]
    assert r1 and all(r["run_id"] == "run-1" for r in r1)
    assert [r["memory"] for r in m.get_all(run_id="run-2")["results"]] == ["I prefer tea"]
    assert {e.session_id for e in db.sync.list(user_id="bob")} == {"run-1", "run-2"}
    m.delete_all(run_id="run-2")
    assert m.get_all(run_id="run-2")["results"] == [] and m.get_all(run_id="run-1")["results"]


def test_history_events(m):
    mid = m.add("I like jazz", user_id="u", infer=False)["results"][0]["id"]
    m.update(mid, "I like jazz and blues")
    m.delete(mid)
    rows = m.history(mid)
    assert [r["event"] for r in rows] == ["ADD", "UPDATE", "DELETE"]
    assert all(set(r) == HISTORY_KEYS for r in rows)
    assert [(r["old_memory"], r["new_memory"]) for r in rows] == [
        (None, "I like jazz"), ("I like jazz", "I like jazz and blues"), ("I like jazz and blues", None)]
    assert [r["is_deleted"] for r in rows] == [False, False, True]
    assert all(r["memory_id"] == mid and r["created_at"] == rows[0]["created_at"] for r in rows)
    assert rows[0]["updated_at"] <= rows[1]["updated_at"] <= rows[2]["updated_at"]
    assert m.history("unknown-id") == []


def test_delete_then_gone(m):
    mid = m.add("I like pizza", user_id="alice", infer=False)["results"][0]["id"]
    assert m.delete(mid) == {"message": "Memory deleted successfully!"}
    assert m.get(mid) is None
    assert m.search("pizza", user_id="alice")["results"] == []
    assert m.get_all(user_id="alice")["results"] == []
    with pytest.raises(ValueError, match=f"Memory with id {mid} not found"):
        m.delete(mid)


def test_update_semantics(m):
    mid = m.add("likes tea", user_id="u", infer=False, metadata={"a": 1, "b": 2})["results"][0]["id"]
    before = m.get(mid)
    assert m.update(mid, "likes green tea", metadata={"b": 3, "user_id": "evil"}) == {
        "message": "Memory updated successfully!"}
    after = m.get(mid)
    assert after["memory"] == "likes green tea" and after["metadata"] == {"a": 1, "b": 3}
    assert after["user_id"] == "u" and after["role"] == "user"
    assert after["created_at"] == before["created_at"] and after["updated_at"] > before["updated_at"]
    assert after["hash"] == hashlib.md5(b"likes green tea").hexdigest()
    m.update(mid, data="likes oolong")
    assert m.get(mid)["memory"] == "likes oolong"
    m.update(mid, "text wins", data="ignored")
    assert m.get(mid)["memory"] == "text wins"
    m.update(mid, metadata={})
    assert m.get(mid)["metadata"] == {"a": 1, "b": 3}
    with pytest.raises(ValueError, match="At least one of text, metadata, or expiration_date"):
        m.update(mid)
    with pytest.raises(ValueError, match="not found. Please provide a valid 'memory_id'"):
        m.update("nope", "x")


def test_expiration(m):
    old = m.add("stale fact about tea", user_id="u", infer=False,
                expiration_date="2000-01-01")["results"][0]["id"]
    m.add("fresh fact about tea", user_id="u", infer=False, expiration_date="2999-01-01")
    assert [r["memory"] for r in m.get_all(user_id="u")["results"]] == ["fresh fact about tea"]
    assert len(m.get_all(user_id="u", show_expired=True)["results"]) == 2
    assert [r["memory"] for r in m.search("tea", user_id="u")["results"]] == ["fresh fact about tea"]
    assert len(m.search("tea", user_id="u", show_expired=True)["results"]) == 2
    assert m.get(old)["expiration_date"] == "2000-01-01"
    m.update(old, expiration_date="2999-12-31")
    assert len(m.get_all(user_id="u")["results"]) == 2
    with pytest.raises(ValueError, match="YYYY-MM-DD"):
        m.add("x", user_id="u", expiration_date="tomorrow")


def test_filter_operators(m):
    for text, meta in [("apple pie recipe", {"kind": "recipe", "stars": 5, "tags": ["sweet"]}),
                       ("apple cider note", {"kind": "note", "stars": 2}),
                       ("apple tart recipe", {"kind": "recipe", "stars": 3, "tags": ["sweet", "french"]})]:
        m.add(text, user_id="c", infer=False, metadata=meta)

    def texts(**filters):
        return sorted(r["memory"] for r in m.get_all(filters={"user_id": "c", **filters})["results"])

    def found(**filters):
        return sorted(r["memory"] for r in m.search("apple", filters={"user_id": "c", **filters},
                                                    threshold=0)["results"])

    assert texts(kind="recipe") == found(kind="recipe") == ["apple pie recipe", "apple tart recipe"]
    assert texts(stars={"gte": 3}) == found(stars={"gte": 3}) == ["apple pie recipe", "apple tart recipe"]
    assert texts(stars={"lt": 3}) == ["apple cider note"]
    assert texts(kind={"ne": "recipe"}) == texts(kind={"nin": ["recipe"]}) == ["apple cider note"]
    assert texts(kind={"in": ["note"]}) == ["apple cider note"]
    assert texts(tags={"contains": "french"}) == ["apple tart recipe"]
    assert texts(kind={"icontains": "RECI"}) == ["apple pie recipe", "apple tart recipe"]
    assert texts(OR=[{"stars": 5}, {"stars": 2}]) == ["apple cider note", "apple pie recipe"]
    assert texts(AND=[{"kind": "recipe"}, {"stars": {"lte": 3}}]) == ["apple tart recipe"]
    assert texts(NOT=[{"kind": "recipe"}]) == found(NOT=[{"kind": "recipe"}]) == ["apple cider note"]
    assert len(texts(tags="*")) == 3 and texts(role="user") == texts()  # "*" skips the condition, as in mem0
    with pytest.raises(ValueError, match="Unsupported metadata filter operator: regex"):
        m.get_all(filters={"user_id": "c", "kind": {"regex": "x"}})
    with pytest.raises(ValueError, match="OR operator requires a non-empty list"):
        m.search("apple", filters={"user_id": "c", "OR": []})


def test_scope_validation(m):
    m.add("I like tea", user_id="alice", infer=False)
    assert m.get_all(user_id=" alice ")["results"]  # ids are trimmed
    assert m.get_all(filters={"user_id": "alice"}, top_k=0)["results"] == []
    with pytest.raises(ValueError, match="filters must contain at least one of"):
        m.get_all()
    with pytest.raises(ValueError, match="filters must contain at least one of"):
        m.search("tea", filters={"kind": "x"})
    with pytest.raises(ValueError, match="cannot contain whitespace"):
        m.search("tea", user_id="al ice")
    with pytest.raises(ValueError, match="cannot be empty or whitespace-only"):
        m.add("x", user_id="   ")
    with pytest.raises(ValueError, match="given both as a keyword"):
        m.search("tea", user_id="alice", filters={"user_id": "bob"})
    assert m.add("int ids work", user_id=42, infer=False)["results"]
    assert m.get_all(filters={"user_id": 42})["results"][0]["user_id"] == "42"


def test_search_parameter_validation(m):
    m.add("I like tea", user_id="u", infer=False)
    for bad in ({"threshold": 1.5}, {"threshold": -0.1}, {"top_k": -1}, {"top_k": 2.5}):
        with pytest.raises(ValueError):
            m.search("tea", user_id="u", **bad)
    for query in ("", "   "):
        with pytest.raises(ValueError, match="Invalid query"):
            m.search(query, user_id="u")
    assert m.search("tea", user_id="u", top_k=0)["results"] == []
    assert m.search("  tea  ", user_id="u", threshold=0)["results"]
    assert m.search("tea", user_id="u", threshold=1)["results"] == []  # cosine of a 4-word text vs 1 word < 1
    assert m.search("tea", user_id="u", limit=1)["results"]  # older mem0's `limit` alias
    explained = m.search("tea", user_id="u", explain=True)["results"][0]["score_details"]
    assert {"semantic_score", "bm25_score", "entity_boost", "raw_score", "final_score", "max_possible_score",
            "threshold"} <= set(explained)


def test_delete_all_and_reset(m, db):
    for who in ("a", "b"):
        m.add(f"{who} likes chess", user_id=who, infer=False)
    db.sync.add_resource("doc://1", "a resource the mem0 adapter must not delete", user_id="a")
    assert m.delete_all(user_id="a") == {"message": "Memories deleted successfully!"}
    assert m.get_all(user_id="a")["results"] == [] and m.get_all(user_id="b")["results"]
    assert db.sync.count(user_id="a", context_type="resource") == 1
    with pytest.raises(ValueError, match="use the `reset\\(\\)` method"):
        m.delete_all()
    m.add("I live in Rome.", user_id="b")  # infer=True: a private session
    assert m.reset() is None
    assert db.sync.count(context_type="memory") == 0
    assert [s for s in db.sync.list_sessions() if s.id.startswith("mem0-scope-")] == []


def test_from_config_and_ownership(tmp_path):
    folder = tmp_path / "qdrant"
    cfg = {"vector_store": {"provider": "qdrant", "config": {"path": str(folder), "collection_name": "x"}},
           "llm": {"provider": "openai", "config": {"model": "gpt-4o-mini"}},
           "agentbase": {"embedder": "hash", "settings": {"ner": "regex"}}}
    with Mem0Adapter.from_config(cfg) as m:
        m.add("I like pizza", user_id="alice", infer=False)
        assert m.search("pizza", user_id="alice")["results"][0]["memory"] == "I like pizza"
    assert (folder / "agentbase.db").is_file()
    with pytest.raises(Exception):  # the owned database is closed
        m.get_all(user_id="alice")
    again = Mem0Adapter(SyncAgentBase(folder / "agentbase.db", embedder="hash"))
    assert again.get_all(user_id="alice")["results"][0]["memory"] == "I like pizza"
    again.close()  # not owned: stays usable
    assert again.get_all(user_id="alice")["results"]
    again.db.sync.close()
    with pytest.raises(ValueError):
        Mem0Adapter.from_config("not a dict")
    with pytest.raises(TypeError):
        Mem0Adapter(3.14)


def test_async_adapter(db):
    async def main():
        async with AsyncMem0Adapter(db) as am:
            out = await am.add([{"role": "user", "content": "I like hiking"}], user_id="z", infer=False)
            mid = out["results"][0]["id"]
            assert (await am.get(mid))["memory"] == "I like hiking"
            assert (await am.search("hiking", filters={"user_id": "z"}))["results"][0]["id"] == mid
            assert (await am.update(mid, "I like long hikes"))["message"] == "Memory updated successfully!"
            assert [h["event"] for h in await am.history(mid)] == ["ADD", "UPDATE"]
            assert (await am.get_all(filters={"user_id": "z"}))["results"][0]["memory"] == "I like long hikes"
            await am.delete(mid)
            assert await am.get(mid) is None
            with pytest.raises(ValueError):
                await am.delete_all()

    asyncio.run(main())
    assert db.sync.count(user_id="z") == 0  # the database passed in stays open


def test_search_before_any_vector_exists(db):
    m = Mem0Adapter(db, wait_for_vectors=False)
    assert m.search("hello", user_id="a") == {"results": []}  # fresh file: no vector table yet
    mid = m.add("hello world", user_id="a", infer=False)["results"][0]["id"]
    assert m.search("hello", user_id="a")["results"][0]["id"] == mid  # keyword hit; the vector may lag


def test_infer_true_never_files_facts_under_owners_the_call_did_not_name(m):
    """A run opened by alice: an agent's (or bob's) infer=True add through the same run_id would commit into
    alice's conversation and file the facts under alice, so it is refused and nothing is written."""
    m.add("I like jazz", user_id="alice", run_id="r")
    for owners in ({"agent_id": "bot"}, {"user_id": "bob"}):
        with pytest.raises(ValueError, match="run_id 'r' is a conversation of user_id='alice'"):
            m.add("I like rock", run_id="r", **owners)
    assert [r["memory"] for r in m.get_all(filters={"user_id": "alice"})["results"]] == ["User likes jazz"]
    assert m.get_all(filters={"agent_id": "bot"})["results"] == []
    assert m.add("I like rock", user_id="bob", run_id="r", infer=False)["results"]  # a plain add is fine


@pytest.mark.parametrize("meta", [None, {"k": 1}])
def test_a_replaced_fact_is_reported_and_read_as_deleted(m, meta):
    """With caller metadata too: it replaced the old fact's fact_key key, so the DELETE went unreported (a
    helper's finding)."""
    paris = m.add("I live in Paris.", user_id="carol", metadata=meta)["results"][0]
    out = m.add("I live in Berlin.", user_id="carol", metadata=meta)["results"]
    assert [(r["memory"], r["event"]) for r in out] == [("User lives in Berlin", "ADD"),
                                                         ("User lives in Paris", "DELETE")]
    assert out[1]["id"] == paris["id"]
    assert m.get(paris["id"]) is None
    with pytest.raises(ValueError, match="not found"):
        m.update(paris["id"], "User lives in Rome")
    assert [r["memory"] for r in m.get_all(filters={"user_id": "carol"})["results"]] == ["User lives in Berlin"]
    hist = m.history(paris["id"])
    if meta:  # the caller's metadata is stamped on the extracted fact after the commit: an UPDATE event
        assert [(h["event"], h["new_memory"]) for h in hist[1:-1]] == [("UPDATE", "User lives in Paris")]
        hist = [hist[0], hist[-1]]
    assert [(h["event"], h["new_memory"], h["is_deleted"]) for h in hist] == \
        [("ADD", "User lives in Paris", False), ("DELETE", None, True)]


def test_what_an_add_killed_midway_left_is_not_read(m, db):
    """An infer=True add killed after its commit but before its clean-up leaves its private session's verbatim
    turn and summary (a helper's kill -9 runs); reads show only the facts."""
    sid = "mem0-scope-left-by-a-killed-add"
    db.sync.create_session(session_id=sid, user_id="u")
    db.sync.add_messages(sid, [{"role": "user", "content": "I like sailing. My dog is named Rex."}])
    db.sync.commit_session(sid)
    assert {e.category for e in db.sync.list(session_id=sid, limit=10)} >= {"turn", "summary"}
    shown = {r["memory"] for r in m.get_all(user_id="u")["results"]}
    assert shown == {"User likes sailing", "User's dog is Rex"}
    found = {r["memory"] for r in m.search("sailing", user_id="u")["results"]}
    assert found and not any(t.startswith(("I like", "Topics")) for t in found)


def test_mem0_names_switch_with_one_import_line(tmp_path, monkeypatch):
    """``from agentbase.adapters.mem0 import Memory`` replaces ``from mem0 import Memory`` (a new-user helper
    looked for it): ``Memory()`` opens ./agentbase.db in the working folder, ``Memory.from_config`` as mem0's."""
    from agentbase.adapters.mem0 import AsyncMemory, Memory

    assert Memory is Mem0Adapter and AsyncMemory is AsyncMem0Adapter
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENTBASE_EMBEDDER__PROVIDER", "hash")
    with Memory() as m:
        m.add("I like pizza", user_id="alice", infer=False)
        assert m.get_all(user_id="alice")["results"][0]["memory"] == "I like pizza"
    assert (tmp_path / "agentbase.db").is_file()


def test_concurrent_infer_adds_on_one_run_report_only_their_facts(db):
    # Four adds on one run at once: one commit takes the others' messages, whose own commits then found nothing
    # and kept each message verbatim beside its fact ("User enjoys sport 1" and "I enjoy sport 1").
    am = AsyncMem0Adapter(db)

    async def main():
        return await asyncio.gather(*[am.add(f"I enjoy sport {i}", user_id="carol", run_id="shared-run")
                                      for i in range(4)])

    results = asyncio.run(main())
    assert [[r["memory"] for r in res["results"]] for res in results] == [[f"User enjoys sport {i}"]
                                                                          for i in range(4)]
    stored = sorted(r["memory"] for r in Mem0Adapter(db).get_all(filters={"user_id": "carol"})["results"])
    assert stored == [f"User enjoys sport {i}" for i in range(4)]


def test_metadata_filters_follow_qdrant_for_lists_nested_keys_and_booleans(m):
    # mem0's default store matches an item of a stored list and reads "cfg.lang" into nested metadata; True is
    # not 1. The adapter found nothing for the first two and matched {"eq": True} against a stored 1.
    m.add("likes tea", user_id="u", infer=False, metadata={"tags": ["x", "y"], "cfg": {"lang": "en"}, "n": 1})
    m.add("likes coffee", user_id="u", infer=False, metadata={"tags": "z", "n": True})

    def found(flt):
        listed = sorted(r["memory"] for r in m.get_all(filters={"user_id": "u", **flt})["results"])
        searched = sorted(r["memory"] for r in m.search("likes", filters={"user_id": "u", **flt})["results"])
        assert listed == searched, flt
        return listed

    for flt in ({"tags": "x"}, {"tags": {"eq": "x"}}, {"cfg.lang": "en"}, {"cfg.lang": {"eq": "en"}},
                {"tags": {"in": ["y"]}}, {"n": 1}, {"n": {"eq": 1}}):
        assert found(flt) == ["likes tea"], flt
    assert found({"tags": {"ne": "x"}}) == ["likes coffee"]
    assert found({"n": {"eq": True}}) == found({"n": True}) == ["likes coffee"]
    assert found({"cfg.lang": "fr"}) == []


def test_payload_keys_mem0_writes_itself_never_show_in_metadata(m):
    # mem0 sets data/hash/created_at/updated_at after merging the caller's metadata, so they never appear in it;
    # the adapter kept them inside metadata. Memory(config) as mem0's constructor takes it.
    mid = m.add("likes tea", user_id="u", infer=False, metadata={"data": "x", "hash": "h", "k": 1})["results"][0]["id"]
    m.update(mid, metadata={"created_at": "2000", "updated_at": "2000", "k": 2})
    item = m.get(mid)
    assert item["metadata"] == {"k": 2} and item["memory"] == "likes tea" and item["created_at"] > "2001"


def test_memory_takes_a_mem0_config_as_its_constructor_does(tmp_path):
    cfg = {"vector_store": {"provider": "qdrant", "config": {"path": str(tmp_path / "store")}},
           "agentbase": {"embedder": "hash"}}
    for m in (mem0_mod.Memory(cfg), mem0_mod.Memory(config=cfg)):
        m.add("I like pizza", user_id="u", infer=False)
        m.close()
    assert (tmp_path / "store" / "agentbase.db").is_file()
    with mem0_mod.Memory.from_config(cfg) as m:
        assert len(m.get_all(filters={"user_id": "u"})["results"]) == 2
    with pytest.raises(TypeError):
        mem0_mod.Memory(str(tmp_path / "x.db"), config=cfg)
