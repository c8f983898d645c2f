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
from agentbase.errors import ValidationError  # noqa: E402
from tests.conftest import make_db  # noqa: E402

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


# AgentBaseStore.search with a query of only whitespace lists the prefix's items as no query does (and as
# InMemoryStore, which ignores a query without an index), instead of returning nothing: no word of it can rank.
@pytest.mark.parametrize("query", [" ", "  \t\n "])
def test_blank_query_lists_like_no_query(tmp_path, query):
    db = make_db(tmp_path / "lg.db")
    try:
        ours, ref = AgentBaseStore(db), InMemoryStore()
        for s in (ours, ref):
            for i in range(3):
                s.put(("notes",), f"k{i}", {"text": f"note {i}"})
        want = [i.key for i in ref.search(("notes",), query=query)]
        got = ours.search(("notes",), query=query)
        assert [i.key for i in got] == want == ["k0", "k1", "k2"]
        assert all(i.score is None for i in got)
    finally:
        db.sync.close()


# AgentBaseStore: a key or a filter key holding a lone surrogate (not UTF-8, so never storable) is refused with
# AgentBase's ValidationError (a ValueError), as a surrogate namespace label is refused with InvalidNamespaceError,
# instead of a UnicodeEncodeError from hashing the id or binding the SQL; nothing is written.
@pytest.fixture
def alice_store(tmp_path):
    db = make_db(tmp_path / "lg.db")
    s = AgentBaseStore(db, user_from_namespace=-1)
    s.put(("memories", "alice"), "ok", {"text": "tea", "tag": "x"})
    yield s, db
    db.sync.close()


@pytest.mark.parametrize("op", ["put", "get", "delete"])
def test_surrogate_key_is_a_validation_error(alice_store, op):
    s, db = alice_store
    args = {"put": (("memories", "alice"), "k\ud800", {"text": "a"}), "get": (("memories", "alice"), "k\ud800"),
            "delete": (("memories", "alice"), "k\ud800")}[op]
    with pytest.raises(ValidationError, match="key"):
        getattr(s, op)(*args)
    assert db.sync.count(category="langgraph") == 1


def test_surrogate_filter_key_is_a_validation_error(alice_store):
    s, _ = alice_store
    with pytest.raises(ValidationError):
        s.search(("memories",), filter={"t\ud800": "x"})
    assert [i.key for i in s.search(("memories",), filter={"tag": "x"})] == ["ok"]
