"""Id lookups by prefix on both engines (``store.ops.entries.ids_with_prefix``, ``store.ops.traces.ids_with_prefix``
and the public ``AgentBase.ids_with_prefix`` / ``trace_ids_with_prefix`` the CLI uses): LIKE wildcards, the escape
character, quotes and case are plain characters, order is code point order, ``limit`` is honoured."""

from __future__ import annotations

import json

import pytest

from agentbase import ValidationError

from .seed import add_entry

# ids in code point order; each special character would match more (LIKE wildcards), break the statement (quotes)
# or sort elsewhere in a locale collation (case, punctuation) if it reached SQL as anything but a plain value.
IDS = ["AbC-0001", "Abc%0001", "abc\"q", "abc%0001", "abc'q", "abc-0001", "abc-0002", "abc\\0001", "abc_0001",
       "abcx0001", "abc\u00e9", "b"]


def trace(tid):
    return (tid, "q", "{}", "2024-05-01T10:00:00.000000+00:00", 1.0, json.dumps([]), None)


@pytest.fixture
async def filled(store):
    for i in IDS:
        await add_entry(store, id=i)
    async with store.transaction() as c:
        await c.ops.traces.insert_traces(c, [trace(i) for i in IDS], [])
    return store


@pytest.mark.parametrize("group", ["entries", "traces"])
async def test_ids_with_prefix_treats_every_character_literally(filled, group):
    ops = getattr(filled.ops, group)
    assert await ops.ids_with_prefix(filled, "abc", 100) == [i for i in IDS if i.startswith("abc")]
    assert await ops.ids_with_prefix(filled, "abc%", 100) == ["abc%0001"]  # not every "abc..."
    assert await ops.ids_with_prefix(filled, "abc_", 100) == ["abc_0001"]  # not "abc-", "abcx"
    assert await ops.ids_with_prefix(filled, "abc\\", 100) == ["abc\\0001"]
    assert await ops.ids_with_prefix(filled, "abc'", 100) == ["abc'q"]
    assert await ops.ids_with_prefix(filled, 'abc"', 100) == ['abc"q']
    assert await ops.ids_with_prefix(filled, "abc-", 100) == ["abc-0001", "abc-0002"]
    assert await ops.ids_with_prefix(filled, "abc-", 1) == ["abc-0001"]
    assert await ops.ids_with_prefix(filled, "ABC", 100) == []  # case matters
    assert await ops.ids_with_prefix(filled, "Ab", 100) == ["AbC-0001", "Abc%0001"]  # code point order: C < c
    assert await ops.ids_with_prefix(filled, "abc\u00e9", 100) == ["abc\u00e9"]
    assert await ops.ids_with_prefix(filled, "zzz", 100) == []
    assert await ops.ids_with_prefix(filled, "a" * 300, 100) == []


async def test_ids_with_prefix_of_the_last_code_point(store):
    top = "\U0010ffff"
    for i in (f"ab{top}", f"ab{top}zz", "ac"):
        await add_entry(store, id=i)
    assert await store.ops.entries.ids_with_prefix(store, "ab", 10) == [f"ab{top}", f"ab{top}zz"]
    assert await store.ops.entries.ids_with_prefix(store, f"ab{top}", 10) == [f"ab{top}", f"ab{top}zz"]
    assert await store.ops.entries.ids_with_prefix(store, top, 10) == []


async def test_public_prefix_lookups_on_both_engines(ab):
    e = await ab.add_memory("Dana moved to Lisbon")
    assert await ab.ids_with_prefix(e.id[:8]) == [e.id]
    odd = [await ab.add_memory(f"note {n}", entry_id=i) for n, i in enumerate(["X_1%'\"\\a", "X_1%'\"\\b", "Xa1"])]
    assert await ab.ids_with_prefix("X_1%'\"\\") == [odd[0].id, odd[1].id]
    assert await ab.ids_with_prefix("X_1%'\"\\", limit=1) == [odd[0].id]
    assert await ab.ids_with_prefix("x_1") == []
    hits = await ab.find("Lisbon")
    tid = hits[0].trace_id
    assert await ab.trace_ids_with_prefix(tid[:8]) == [tid]
    assert await ab.trace_ids_with_prefix(tid[:8].upper()) == ([tid] if tid[:8].upper() == tid[:8] else [])
    assert await ab.trace_ids_with_prefix("%") == []
    for bad in ("", "a\x00b"):
        with pytest.raises(ValidationError):
            await ab.ids_with_prefix(bad)
        with pytest.raises(ValidationError):
            await ab.trace_ids_with_prefix(bad)
