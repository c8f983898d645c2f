"""What ``AgentBaseStore`` adds to the langgraph contract: items are AgentBase entries of an owner (seen by
``find()`` and the other adapters), the file persists, TTL (which ``InMemoryStore`` lacks), and refused input
writes nothing."""

from __future__ import annotations

import time

import pytest
from langgraph.store.base import GetOp, InvalidNamespaceError, PutOp, SearchOp

from agentbase.testing import database_for
from agentbase.adapters import AgentBaseStore, Mem0Adapter, MinimalAdapter
from agentbase.adapters.langgraph_store import CATEGORY, item_id
from agentbase.errors import ValidationError


def count_items(db) -> int:
    return db.sync.count(category=CATEGORY, include_archived=True)


# ---------------------------------------------------------------------- owners and the other adapters
def test_namespace_user_is_the_entry_owner(db):
    store = AgentBaseStore(db, user_from_namespace=-1, index={"fields": ["text"]})
    store.put(("memories", "alice"), "trip", {"text": "Alice is planning a trip to Kyoto", "kind": "plan"})
    store.put(("memories", "bob"), "trip", {"text": "Bob is planning a trip to Lima", "kind": "plan"})
    entry = db.sync.get(item_id(("memories", "alice"), "trip"))
    assert entry.user_id == "alice" and entry.agent_id is None and entry.scope.value == "global"
    assert entry.context_type.value == "memory" and entry.content == "Alice is planning a trip to Kyoto"
    assert entry.metadata["kind"] == "plan"  # value keys are metadata keys

    hits = db.sync.find("trip Kyoto", user_id="alice")
    assert [h.entry.content for h in hits] == ["Alice is planning a trip to Kyoto"]
    assert [h.entry.content for h in db.sync.find("trip", user_id="bob")] == ["Bob is planning a trip to Lima"]
    assert db.sync.list(metadata={"kind": "plan"}, user_id="bob")[0].content == "Bob is planning a trip to Lima"

    mem0 = Mem0Adapter(db)
    listed = mem0.get_all(filters={"user_id": "alice"})["results"]
    assert [m["memory"] for m in listed] == ["Alice is planning a trip to Kyoto"]
    assert mem0.search("Kyoto trip", filters={"user_id": "alice"})["results"][0]["memory"].startswith("Alice")
    mini = MinimalAdapter(db)
    assert mini.recall("Lima", who="bob")[0]["text"] == "Bob is planning a trip to Lima"

    # a delete through another adapter is seen by the store
    mem0.delete(entry.id)
    assert store.get(("memories", "alice"), "trip") is None
    assert [i.key for i in store.search(("memories",))] == ["trip"]
    store.close()


def test_user_position_zero_callable_and_agent(db):
    first = AgentBaseStore(db, user_from_namespace=0)
    first.put(("carol", "memories"), "k", {"text": "Carol likes jazz"})
    assert db.sync.get(item_id(("carol", "memories"), "k")).user_id == "carol"
    by_fn = AgentBaseStore(db, user_from_namespace=lambda ns: ns[1] if ns[0] == "users" else None,
                           agent_id="planner")
    by_fn.put(("users", "dave", "notes"), "k", {"text": "Dave owns a kayak"})
    by_fn.put(("shared",), "k", {"text": "The office closes at six"})
    dave = db.sync.get(item_id(("users", "dave", "notes"), "k"))
    assert (dave.user_id, dave.agent_id, dave.scope.value) == ("dave", "planner", "agent")
    shared = db.sync.get(item_id(("shared",), "k"))
    assert (shared.user_id, shared.agent_id) == (None, "planner")
    short = AgentBaseStore(db, user_from_namespace=3)  # a namespace too short for the position: no user
    short.put(("x",), "k", {"v": 1})
    assert db.sync.get(item_id(("x",), "k")).user_id is None
    with pytest.raises(TypeError):
        AgentBaseStore(db, user_from_namespace="last")


def test_owner_rule_change_moves_the_item(db):
    AgentBaseStore(db).put(("memories", "erin"), "k", {"text": "Erin rows"})
    assert db.sync.get(item_id(("memories", "erin"), "k")).user_id is None
    AgentBaseStore(db, user_from_namespace=-1).put(("memories", "erin"), "k", {"text": "Erin rows daily"})
    entry = db.sync.get(item_id(("memories", "erin"), "k"))
    assert entry.user_id == "erin" and entry.content == '{"text": "Erin rows daily"}'
    assert count_items(db) == 1


def test_default_index_is_the_whole_value(db):
    store = AgentBaseStore(db)
    store.put(("n",), "k", {"title": "Fjord", "body": "kayaking"})
    assert db.sync.get(item_id(("n",), "k")).content == '{"body": "kayaking", "title": "Fjord"}'
    assert store.search(("n",), query="kayaking")[0].key == "k"


def test_update_keeps_created_at_and_one_entry(db):
    store = AgentBaseStore(db, index={"fields": ["text"]})
    store.put(("n",), "k", {"text": "alpha"})
    first = store.get(("n",), "k")
    store.put(("n",), "k", {"text": "beta"})
    second = store.get(("n",), "k")
    assert second.created_at == first.created_at and second.updated_at > first.updated_at
    assert count_items(db) == 1
    assert [e.event for e in db.sync.history(item_id(("n",), "k"))][:2] == ["ADD", "UPDATE"]
    assert db.sync.find("alpha", mode="fts", category=CATEGORY) == []  # the old text left the index
    assert store.search(("n",), query="beta")[0].value == {"text": "beta"}


def test_reserved_metadata_keys_round_trip(db):
    store = AgentBaseStore(db)
    value = {"langgraph": {"mine": True}, "langgraph_ns": "not a namespace", "text": "x"}
    store.put(("r",), "k", value)
    assert store.get(("r",), "k").value == value
    assert [i.key for i in store.search(("r",), filter={"langgraph_ns": "not a namespace"})] == ["k"]
    assert store.list_namespaces() == [("r",)]


def test_reopen_the_file(db_path, opener):
    first = opener(db_path)
    AgentBaseStore(first, user_from_namespace=-1).put(("memories", "fay"), "k", {"text": "Fay sings"})
    first.sync.close()
    again = AgentBaseStore(str(database_for(db_path)), user_from_namespace=-1, embedder="hash")
    try:
        assert again.get(("memories", "fay"), "k").value == {"text": "Fay sings"}
        assert again.list_namespaces() == [("memories", "fay")]
    finally:
        again.close()


def test_with_block_and_sync_twin(db):
    from agentbase import SyncAgentBase
    with AgentBaseStore(SyncAgentBase(db=db)) as store:
        store.put(("w",), "k", {"v": 1})
        assert store.get(("w",), "k").value == {"v": 1}
    assert db.sync.count(category=CATEGORY) == 1  # a database passed in stays open


# ---------------------------------------------------------------------- TTL
TICK = 0.5 / 60  # half a second, in minutes


def test_ttl_expiry_and_sweep(db):
    store = AgentBaseStore(db)
    store.put(("t",), "short", {"v": 1}, ttl=TICK)
    store.put(("t",), "long", {"v": 2}, ttl=60)
    store.put(("t",), "forever", {"v": 3})
    assert store.get(("t",), "short").value == {"v": 1}
    time.sleep(0.7)
    assert store.get(("t",), "short") is None
    assert sorted(i.key for i in store.search(("t",))) == ["forever", "long"]
    assert store.search(("t",), filter={"v": 1}) == []
    assert count_items(db) == 3  # expired but not yet swept
    assert store.sweep_ttl() == 1
    assert count_items(db) == 2 and store.sweep_ttl() == 0
    store.put(("gone",), "k", {"v": 1}, ttl=TICK)
    time.sleep(0.7)
    assert ("gone",) not in store.list_namespaces()


def test_ttl_refresh_on_read(db):
    store = AgentBaseStore(db)
    store.put(("t",), "k", {"v": 1}, ttl=2 * TICK)  # 1 s
    created = store.get(("t",), "k").updated_at
    for _ in range(4):  # each read moves the expiry 1 s on: 1.6 s in all, the item lives on
        time.sleep(0.4)
        item = store.get(("t",), "k")
        assert item is not None and item.updated_at == created  # a refresh is not an update
    time.sleep(0.4)
    assert [i.key for i in store.search(("t",))] == ["k"]  # search refreshes too
    time.sleep(0.4)
    assert store.get(("t",), "k", refresh_ttl=False) is not None
    time.sleep(0.7)  # 1.1 s since the last refresh
    assert store.get(("t",), "k") is None


def test_ttl_config_default_and_no_refresh(db):
    store = AgentBaseStore(db, ttl={"default_ttl": TICK * 1.2, "refresh_on_read": False})
    db.sync.stats()  # open the database first: the clock starts at the put, not at opening the engine
    store.put(("t",), "k", {"v": 1})
    store.put(("t",), "pinned", {"v": 2}, ttl=None)
    time.sleep(0.35)
    assert store.get(("t",), "k") is not None  # no refresh: still 0.6 s from the put
    time.sleep(0.35)
    assert store.get(("t",), "k") is None
    assert store.get(("t",), "pinned") is not None
    with pytest.raises(ValidationError):
        AgentBaseStore(db, ttl={"default_ttl": -1})


def test_ttl_sweeper_thread(db):
    store = AgentBaseStore(db, ttl={"sweep_interval_minutes": 0.3 / 60})
    store.put(("t",), "k", {"v": 1}, ttl=TICK / 5)
    done = store.start_ttl_sweeper()
    deadline = time.time() + 10
    while count_items(db) and time.time() < deadline:
        time.sleep(0.1)
    assert count_items(db) == 0
    assert store.stop_ttl_sweeper(timeout=5) and done.result(timeout=5) is None


# ---------------------------------------------------------------------- refused input writes nothing
@pytest.mark.parametrize("value", [{"when": object()}, {"x": float("nan")}, {1: "int key"}, {"s": "\ud800"},
                                   ["not", "a", "dict"]])
def test_bad_value_refused(db, value):
    store = AgentBaseStore(db)
    with pytest.raises(ValidationError):
        store.put(("v",), "k", value)
    assert count_items(db) == 0


def test_bad_op_in_a_batch_writes_nothing(db):
    store = AgentBaseStore(db)
    ops = [PutOp(("ok",), "a", {"v": 1}), PutOp(("ok",), "b", {"v": 2}), PutOp(("bad.label",), "c", {"v": 3})]
    with pytest.raises(InvalidNamespaceError):
        store.batch(ops)
    with pytest.raises(ValidationError):
        store.batch([PutOp(("ok",), "a", {"v": 1}), SearchOp(("ok",), limit=-1)])
    with pytest.raises(ValidationError):
        store.batch([PutOp(("ok",), "a", {"v": 1}), PutOp(("ok",), "b", {"v": 1}, ttl=-5)])
    with pytest.raises(ValueError, match="Unsupported operator"):
        store.batch([PutOp(("ok",), "a", {"v": 1}), SearchOp(("ok",), filter={"v": {"$in": [1]}})])
    with pytest.raises(ValueError, match="Unknown operation"):
        store.batch([PutOp(("ok",), "a", {"v": 1}), ("not", "an", "op")])
    assert count_items(db) == 0
    assert store.batch([GetOp(("ok",), "a")]) == [None]


def test_user_label_too_long(db):
    store = AgentBaseStore(db, user_from_namespace=-1)
    with pytest.raises(InvalidNamespaceError):
        store.put(("memories", "u" * 300), "k", {"v": 1})
    assert count_items(db) == 0
    store.put(("memories", "u" * 256), "k", {"v": 1})
    assert count_items(db) == 1
