"""The engine's filter SQL (``store.ops.filters``) run against real entries rows: every filter keeps the same
entries on SQLite and PostgreSQL, metadata equality with its JSON-type rules included."""

from __future__ import annotations

import pytest

from agentbase.errors import ValidationError
from agentbase.retrieval.filters import filters_from_kwargs
from agentbase.scopes import visibility_clause

from .seed import add_entry, assert_same_interface

ROWS = {
    "e1": dict(tags=("a", "b"), user_id="u1", metadata={
        "lang": "py", "n": 1, "flag": True, "arr": ["x", "y"], "nul": None, "obj": {"k": 1},
        "quote": "it's 100%", "キー": "値", "a b": "sp"}),
    "e2": dict(tags=("a", "50%'\"?"), context_type="resource", category="note", scope="agent", agent_id="a1",
               metadata={"n": 1.0, "flag": False, "arr": [[1]], "lang": "PY"}),
    "e3": dict(tags=("b",), context_type="skill", category="howto", scope="project", project_id="p1", user_id="u2",
               metadata={"n": "1", "arr": [1, {"x": 1}], "empty": [], "lang": "py "}),
    "e4": dict(scope="session", session_id="s1", status="archived", metadata="[]"),
    "e5": dict(superseded_by="e1", event_time="2023-01-01T00:00:00.000000+00:00", metadata={"n": 1}),
    "e6": dict(metadata={"lang": "a\x00b", "n": 2}),
}

CASES = [
    ({}, "e1 e2 e3 e6"),
    ({"context_type": "memory"}, "e1 e6"),
    ({"context_type": ["resource", "skill"]}, "e2 e3"),
    ({"context_type": []}, ""),
    ({"category": ["fact", "note"]}, "e1 e2 e6"),
    ({"category": "howto", "context_type": "skill"}, "e3"),
    ({"scope": "agent"}, "e2"),
    ({"scope": ["agent", "project", "session"], "include_archived": True}, "e2 e3 e4"),
    ({"user_id": "u1"}, "e1"),
    ({"agent_id": "a1"}, "e2"),
    ({"project_id": "p1"}, "e3"),
    ({"session_id": "s1", "include_archived": True}, "e4"),
    ({"tags": ["a"]}, "e1 e2"),
    ({"tags": ["a", "b"]}, "e1"),
    ({"tags": ["a", "a"]}, "e1 e2"),
    ({"tags": []}, "e1 e2 e3 e6"),
    ({"tags": ["zzz"]}, ""),
    ({"tags": ["50%'\"?"]}, "e2"),
    ({"metadata": {"lang": "py"}}, "e1"),
    ({"metadata": {"n": 1}}, "e1 e2"),
    ({"metadata": {"n": 1.0}}, "e1 e2"),
    ({"metadata": {"n": "1"}}, "e3"),
    ({"metadata": {"flag": True}}, "e1"),
    ({"metadata": {"flag": False}}, "e2"),
    ({"metadata": {"flag": 1}}, ""),
    ({"metadata": {"n": True}}, ""),
    ({"metadata": {"arr": "x"}}, "e1"),
    ({"metadata": {"arr": 1}}, "e3"),
    ({"metadata": {"arr": "z"}}, ""),
    ({"metadata": {"nul": None}}, "e1"),
    ({"metadata": {"missing": None}}, ""),
    ({"metadata": {"empty": None}}, ""),
    ({"metadata": {"obj": 1}}, ""),
    ({"metadata": {"quote": "it's 100%"}}, "e1"),
    ({"metadata": {"キー": "値"}}, "e1"),
    ({"metadata": {"a b": "sp"}}, "e1"),
    ({"metadata": {"lang": "py", "n": 1}}, "e1"),
    ({"metadata": {"lang": "py", "n": 2}}, ""),
    ({"metadata": {"n": 1}, "exclude_superseded": False}, "e1 e2 e5"),
    ({"date_to": "2023-12-31", "exclude_superseded": False}, "e5"),
    ({"date_from": "2024-05-01"}, "e1 e2 e3 e6"),
    ({"date_from": "2024-05-01T10:00:00.000001Z"}, ""),
    ({"date_to": "2024-04-30"}, ""),
    ({"include_archived": True}, "e1 e2 e3 e4 e6"),
    ({"include_archived": True, "exclude_superseded": False}, "e1 e2 e3 e4 e5 e6"),
    ({"visible_to": {"user_id": "u1"}}, "e1 e6"),
    ({"visible_to": {"agent_id": "a1"}}, "e1 e2 e6"),
    ({"visible_to": {"user_id": "u2", "project_id": "p1"}}, "e3 e6"),
    ({"visible_to": {"session_id": "s1"}, "include_archived": True}, "e1 e4 e6"),
    ({"visible_to": {"user_id": None, "agent_id": None}}, "e1 e6"),
    ({"visible_to": {"agent_id": "a1"}, "tags": ["a"], "metadata": {"n": 1}, "context_type": "resource"}, "e2"),
]


@pytest.fixture
async def entries(store):
    ids = {}
    for label, cols in ROWS.items():
        _, ids[label] = await add_entry(store, id=label, **dict(cols))
    return ids


async def _kept(store, filters: dict) -> str:
    f = filters_from_kwargs(dict(filters))
    where, params = f.where("e", store.ops)
    rows = await store.fetchall(f"SELECT e.id FROM entries e WHERE {where} ORDER BY e.id", params)
    return " ".join(r[0] for r in rows)


@pytest.mark.parametrize("filters, expected", CASES, ids=[str(c[0]) for c in CASES])
async def test_each_filter_keeps_the_same_entries(store, entries, filters, expected):
    assert await _kept(store, filters) == expected


async def test_values_are_bound_never_written_into_the_sql(store, entries):
    f = filters_from_kwargs({"tags": ["50%'\"?"], "metadata": {"quote": "it's 100%"}, "user_id": "o'x"})
    where, params = f.where("e", store.ops)
    assert "it's" not in where and "50%" not in where and "o'x" not in where
    assert "o'x" in params
    assert await store.fetchall(f"SELECT e.id FROM entries e WHERE {where}", params) == []


async def test_visibility_alone(store, entries):
    sql, params = store.ops.filters.visibility({"agent_id": "a1", "user_id": "u1"}, "x")
    rows = await store.fetchall(f"SELECT x.id FROM entries x WHERE {sql} ORDER BY x.id", params)
    assert [r[0] for r in rows] == ["e1", "e2", "e5", "e6"]  # visibility alone keeps archived/superseded rows
    sql, params = visibility_clause({"agent_id": "a1", "user_id": "u1"}, "x", store.ops)
    rows = await store.fetchall(f"SELECT x.id FROM entries x WHERE {sql} ORDER BY x.id", params)
    assert [r[0] for r in rows] == ["e1", "e2", "e5", "e6"]
    with pytest.raises(ValidationError):
        visibility_clause({"agent_id": "a1"}, "x; DROP TABLE entries", store.ops)
    sql, params = store.ops.filters.visibility({}, "x")
    assert params == []
    rows = await store.fetchall(f"SELECT x.id FROM entries x WHERE {sql} ORDER BY x.id", params)
    assert [r[0] for r in rows] == ["e1", "e5", "e6"]


async def test_metadata_holding_u0000(store, entries, engine):
    """SQLite compares a stored U+0000; PostgreSQL's jsonb cannot hold it, so such a row never matches a metadata
    filter there (and the query does not fail); a filter value holding U+0000 matches nothing on PostgreSQL."""
    expected = "e6" if engine == "sqlite" else ""
    assert await _kept(store, {"metadata": {"n": 2}}) == expected
    assert await _kept(store, {"metadata": {"lang": "a\x00b"}}) == expected
    assert await _kept(store, {"metadata": {"lang": "a\x00b"}, "user_id": "u1"}) == ""


def test_same_functions_and_signatures_as_the_sqlite_engine():
    assert_same_interface("filters")
