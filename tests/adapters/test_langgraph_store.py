"""AgentBaseStore units: its filter rules agree with langgraph InMemoryStore's on a grid of values (SQL pushdown
included), item ids are stable and distinct, and a missing langgraph names the extra."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("langgraph.store.memory")

from langgraph.store.memory import InMemoryStore  # noqa: E402

from agentbase import AgentBase, load_settings  # noqa: E402
from agentbase.adapters._langgraph_rules import _matches
from agentbase.adapters.langgraph_store import AgentBaseStore, item_id  # noqa: E402

VALUES = ["red", "Red", "", 1, 1.0, 0, 2.5, True, False, None, ["red"], ["red", "blue"], [1, 2], {"a": "red"},
          {"a": 1, "b": [1]}, "1"]
FILTERS = ["red", "1", 1, 1.0, True, None, ["red"], [1, 2], {"a": "red"}, {"a": 1}, {"$eq": "red"},
           {"$ne": "red"}, {"$eq": 1}, {"$ne": None}, {"$gt": 0}, {"$gte": 1}, {"$lt": 2}, {"$lte": 2.5},
           {"$gt": 0, "$lt": 2}]


def _reference(value, flt):
    """What InMemoryStore decides for one stored value and one filter value, or 'raises'."""
    store = InMemoryStore()
    store.put(("n",), "k", {"f": value})
    try:
        return bool(store.search(("n",), filter={"f": flt}))
    except (TypeError, ValueError):
        return "raises"


@pytest.mark.parametrize("flt", FILTERS, ids=[repr(f) for f in FILTERS])
def test_matches_agrees_with_in_memory_store(flt):
    for value in VALUES:
        want = _reference(value, flt)
        if want == "raises":  # float() of a string/None/list: ours is False (no match), upstream raises
            assert _matches(value, flt) is False
        else:
            assert _matches(value, flt) is want, (value, flt)


@pytest.fixture
def store(tmp_path):
    db = AgentBase(tmp_path / "s.db", settings=load_settings(ner="regex", embedder={"provider": "hash", "dims": 32}))
    s = AgentBaseStore(db, wait_for_vectors=False)
    yield s
    db.sync.close()


def test_filters_through_sql_equal_the_reference(store):
    reference = InMemoryStore()
    for i, value in enumerate(VALUES):
        for s in (store, reference):
            s.put(("grid",), f"k{i:02d}", {"f": value, "i": i})
    for flt in FILTERS:
        try:
            want = [i.key for i in reference.search(("grid",), filter={"f": flt}, limit=100)]
        except (TypeError, ValueError):
            want = [f"k{i:02d}" for i, v in enumerate(VALUES) if _matches(v, flt)]
        assert [i.key for i in store.search(("grid",), filter={"f": flt}, limit=100)] == want, flt


def test_item_ids_are_stable_and_distinct():
    pairs = [(("a", "b"), "c"), (("a",), "b.c"), (("a", "b", "c"), ""), (("a",), "b"), (("a", "b"), "C")]
    ids = [item_id(ns, k) for ns, k in pairs]
    assert len(set(ids)) == len(ids)
    assert ids == [item_id(ns, k) for ns, k in pairs]


def test_missing_langgraph_names_the_extra():
    code = ("import sys; sys.modules['langgraph.store.base'] = None\n"
            "from agentbase.errors import MissingDependencyError\n"
            "try:\n    from agentbase.adapters import AgentBaseStore\n"
            "except MissingDependencyError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "pip install 'agentbase[langgraph]'" in out.stdout, out.stderr
