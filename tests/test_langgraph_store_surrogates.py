"""AgentBaseStore: a key or a filter key holding a lone surrogate (not UTF-8, so never storable) is refused with
AgentBase's ValidationError (a ValueError), as a surrogate namespace label is refused with InvalidNamespaceError,
instead of a UnicodeEncodeError from hashing the id or binding the SQL; nothing is written."""

from __future__ import annotations

import pytest

pytest.importorskip("langgraph.store.base")

from agentbase.adapters.langgraph_store import AgentBaseStore  # noqa: E402
from agentbase.errors import ValidationError  # noqa: E402

from .conftest import make_db  # noqa: E402


@pytest.fixture
def store(tmp_path):
    db = make_db(tmp_path / "lg.db")
    s = AgentBaseStore(db, user_from_namespace=-1)
    s.put(("memories", "alice"), "ok", {"text": "tea", "tag": "x"})
    yield s, db
    db.sync.close()


@pytest.mark.parametrize("op", ["put", "get", "delete"])
def test_surrogate_key_is_a_validation_error(store, op):
    s, db = store
    args = {"put": (("memories", "alice"), "k\ud800", {"text": "a"}), "get": (("memories", "alice"), "k\ud800"),
            "delete": (("memories", "alice"), "k\ud800")}[op]
    with pytest.raises(ValidationError, match="key"):
        getattr(s, op)(*args)
    assert db.sync.count(category="langgraph") == 1


def test_surrogate_filter_key_is_a_validation_error(store):
    s, _ = store
    with pytest.raises(ValidationError):
        s.search(("memories",), filter={"t\ud800": "x"})
    assert [i.key for i in s.search(("memories",), filter={"tag": "x"})] == ["ok"]
