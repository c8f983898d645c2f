"""AgentBaseStore.search with a query of only whitespace lists the prefix's items as no query does (and as
InMemoryStore, which ignores a query without an index), instead of returning nothing: no word of it can rank."""

from __future__ import annotations

import pytest

pytest.importorskip("langgraph.store.memory")

from langgraph.store.memory import InMemoryStore  # noqa: E402

from agentbase.adapters.langgraph_store import AgentBaseStore  # noqa: E402

from .conftest import make_db  # noqa: E402


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
