"""Skill operations (``store.ops.skills``) on both engines: rows by name and exact owners, the file set (replace,
list, concurrent replacement), name rows under filters, entry rows by id."""

from __future__ import annotations

import asyncio

import pytest

from agentbase.errors import StorageError, ValidationError
from agentbase.retrieval.filters import filters_from_kwargs

from .seed import add_entry, assert_same_interface, second_connection


async def _skills(store):
    await add_entry(store, id="k1", context_type="skill", name="deploy", description="ship it", user_id="u1")
    await add_entry(store, id="k2", context_type="skill", name="deploy", description="100% safe")
    await add_entry(store, id="k3", context_type="skill", name="deploy", user_id="u1", agent_id="a1")
    await add_entry(store, id="k4", context_type="skill", name="it's", description="quote", project_id="p")
    await add_entry(store, id="m1", name="deploy")  # a memory, not a skill


async def test_skill_rows_named_matches_owners_exactly(store):
    await _skills(store)
    named = store.ops.skills.skill_rows_named
    assert [r[1] for r in await named(store, "deploy", "u1", None, None)] == ["k1"]
    assert [r[1] for r in await named(store, "deploy", None, None, None)] == ["k2"]
    assert [r[1] for r in await named(store, "deploy", "u1", "a1", None)] == ["k3"]
    assert [r[1] for r in await named(store, "it's", None, None, "p")] == ["k4"]
    assert await named(store, "it's", None, None, None) == []
    assert await named(store, "nope", None, None, None) == []
    await add_entry(store, id="k5", context_type="skill", name="deploy")
    assert [r[1] for r in await named(store, "deploy", None, None, None)] == ["k2", "k5"]  # oldest first


async def test_files_replace_and_list(store):
    await _skills(store)
    files = [("b.md", "B 100%", 6, "h1"), ("a/x.py", "print('ü')", 11, "h2"), ("B.md", "", 0, "h3")]
    async with store.transaction() as c:
        await c.ops.skills.replace_files(c, "k1", files)
    assert await store.ops.skills.files(store, "k1") == [("B.md", ""), ("a/x.py", "print('ü')"), ("b.md", "B 100%")]
    async with store.transaction() as c:
        await c.ops.skills.replace_files(c, "k1", [("only.md", "x", 1, "h")])
        await c.ops.skills.replace_files(c, "k2", iter([("k2.md", "y", 1, "h")]))
    assert await store.ops.skills.files(store, "k1") == [("only.md", "x")]
    assert await store.ops.skills.files(store, "k2") == [("k2.md", "y")]
    async with store.transaction() as c:
        await c.ops.skills.replace_files(c, "k1", [])
    assert await store.ops.skills.files(store, "k1") == []
    assert await store.ops.skills.files(store, "nope") == []


async def test_a_file_of_an_unknown_skill_or_a_duplicate_path_writes_nothing(store):
    await _skills(store)
    with pytest.raises(StorageError):
        async with store.transaction() as c:
            await c.ops.skills.replace_files(c, "k1", [("a.md", "1", 1, "h"), ("a.md", "2", 1, "h")])
    assert await store.ops.skills.files(store, "k1") == []


async def test_concurrent_replacements_leave_one_whole_set(store):
    await _skills(store)
    other = await second_connection(store)

    async def replace(db, i):
        async with db.transaction() as c:
            await c.ops.skills.replace_files(c, "k1", [(f"f{i}.md", str(i), 1, "h"), ("common.md", str(i), 1, "h")])
            await asyncio.sleep(0.01)

    try:
        await asyncio.gather(*(replace(store if i % 2 else other, i) for i in range(6)))
    finally:
        await other.close()
    got = await store.ops.skills.files(store, "k1")
    assert len(got) == 2 and got[0][0] == "common.md"
    winner = got[0][1]
    assert got[1] == (f"f{winner}.md", winner)  # one replacement's whole set, not a mix


async def test_name_rows_and_entry_rows(store):
    await _skills(store)
    f = filters_from_kwargs({"context_type": "skill", "visible_to": {"user_id": "u1"}})
    rows = await store.ops.skills.name_rows(store, f)
    assert sorted((r[1], r[2], r[3]) for r in rows) == [("k1", "deploy", "ship it"), ("k2", "deploy", "100% safe"),
                                                        ("k3", "deploy", None), ("k4", "it's", "quote")]
    assert all(isinstance(r[0], int) for r in rows)
    none = filters_from_kwargs({"context_type": "skill", "metadata": {"x": "it's"}})
    assert await store.ops.skills.name_rows(store, none) == []
    bad = filters_from_kwargs({"metadata": {'bad"key': 1}})
    with pytest.raises(ValidationError):  # validated before any SQL is built
        await store.ops.skills.name_rows(store, bad)
    only = filters_from_kwargs({"context_type": "skill", "user_id": "u1", "agent_id": "a1"})
    assert [r[1] for r in await store.ops.skills.name_rows(store, only)] == ["k3"]
    got = await store.ops.skills.entry_rows(store, ["k4", "nope", "k1"])
    assert sorted(r[1] for r in got) == ["k1", "k4"]
    assert await store.ops.skills.entry_rows(store, []) == []


def test_same_functions_and_signatures_as_the_sqlite_engine():
    assert_same_interface("skills")
