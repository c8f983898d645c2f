"""find()'s other reads (``store.ops.retrieval``) on both engines: every function with the engine's own filter SQL
(``Filters.where("e", store.ops)``), empty lists, unknown rids, 600+ rids (past SQLite's 500 per statement),
unicode/quotes/``%`` as data, JSON values as SQLite's ``json_extract`` returns them, ASCII-only tag folding."""

from __future__ import annotations

import json

import pytest

from agentbase.retrieval.filters import filters_from_kwargs
from agentbase.storage.entries import ENTRY_FIELDS

from .seed import add_entry, assert_same_interface, link, sql

ID_AT = ENTRY_FIELDS.index("id")


def where(store, **kw):
    return filters_from_kwargs(kw).where("e", store.ops)


async def test_filter_checks_over_many_rids(store):
    ops = store.ops.retrieval
    rids = []
    async with store.transaction() as c:  # 650 entries in one transaction (faster than one each)
        for i in range(650):
            row = await c.fetchone(sql(store, "INSERT INTO entries(id, l2_full, fts_text, created_at, updated_at, "
                                              "content_hash, user_id, status) VALUES (?, 't', 't', ?, ?, ?, ?, ?) "
                                              "RETURNING rid"),
                                   (f"e{i}", "2024-05-01T10:00:00.000000+00:00", "2024-05-01T10:00:00.000000+00:00",
                                    f"h{i}", "u'1%" if i % 3 else "u2", "archived" if i % 5 == 0 else "active"))
            rids.append(row[0])
    w, p = where(store, user_id="u'1%")
    expected = {r for i, r in enumerate(rids) if i % 3 and i % 5}
    assert await ops.rids_passing(store, rids + [10**9], w, p) == expected
    assert await ops.rids_passing(store, rids[:10], w, p) == {r for r in expected if r in rids[:10]}
    assert await ops.rids_passing(store, [], w, p) == set()
    assert sorted(await ops.passing_rids(store, w, p)) == sorted(expected)
    assert await ops.any_passing(store, w, p) is True
    w0, p0 = where(store, user_id="nobody")
    assert await ops.any_passing(store, w0, p0) is False
    assert await ops.passing_rids(store, w0, p0) == []
    assert await ops.rids_passing(store, rids, w0, p0) == set()
    wa, pa = where(store, include_archived=True)
    assert len(await ops.passing_rids(store, wa, pa)) == 650
    rows = await ops.entry_rows(store, rids + [10**9])
    assert len(rows) == 650 and {r[0] for r in rows} == set(rids)
    assert all(len(r) == len(ENTRY_FIELDS) for r in rows)
    assert await ops.entry_rows(store, []) == []
    assert await ops.entry_rows(store, [10**9]) == []


async def test_entry_rows_read_back_unicode_and_quotes(store):
    rid, eid = await add_entry(store, id="ü'%\"", l2_full="naïve 100% 'quoted'", tags=("ä", "b%"),
                               metadata={"k": "v'%"}, user_id="u")
    (row,) = await store.ops.retrieval.entry_rows(store, [rid])
    d = dict(zip(ENTRY_FIELDS, row))
    assert (d["rid"], d["id"], d["l2_full"]) == (rid, eid, "naïve 100% 'quoted'")
    assert json.loads(d["tags"]) == ["ä", "b%"] and json.loads(d["metadata"]) == {"k": "v'%"}
    assert d["confidence"] == 1.0 and isinstance(d["confidence"], float)


async def test_superseded_fact_links_of_the_candidate_sessions(store):
    ops = store.ops.retrieval
    await add_entry(store, id="new", fact_key="city", user_id="u1")
    await add_entry(store, id="old1", fact_key="city", superseded_by="new", user_id="u1", agent_id="a'1")
    await add_entry(store, id="old2", fact_key="city", superseded_by="new", user_id="u1")
    await add_entry(store, id="old3", fact_key="city", superseded_by="new", user_id="u2")
    await add_entry(store, id="gone", fact_key="city", superseded_by="new", user_id="u1", status="archived")
    await add_entry(store, id="nokey", superseded_by="new", user_id="u1")
    await add_entry(store, id="ü'%", fact_key="k", superseded_by="new", user_id="u1")
    for sid, eid, kind, seq in [("s1", "old1", "fact", 3), ("s2", "old1", "fact", 7), ("s1", "old2", "turn", 4),
                                ("s1", "old3", "fact", 5), ("s1", "gone", "fact", 6), ("s1", "nokey", "fact", 8),
                                ("s1", "new", "fact", 9), ("s'3", "ü'%", "fact", 1), ("s4", "old2", "fact", 2)]:
        await link(store, sid, eid, kind, seq)
    got = sorted(await ops.superseded_fact_links(store, ["s1", "s'3", "missing"], {"user_id": "u1"}))
    # not old2's turn link, not u2's fact, not an archived or unkeyed or current fact, not session s2 or s4
    assert got == [("old1", "city", "u1", "a'1", None, "s1", 3), ("ü'%", "k", "u1", None, None, "s'3", 1)]
    assert sorted(await ops.superseded_fact_links(store, ["s1", "s2"], {"user_id": "u1", "agent_id": "a'1"})) == \
        [("old1", "city", "u1", "a'1", None, "s1", 3), ("old1", "city", "u1", "a'1", None, "s2", 7)]
    assert sorted(await ops.superseded_fact_links(store, ["s1"], {})) == [
        ("old1", "city", "u1", "a'1", None, "s1", 3), ("old3", "city", "u2", None, None, "s1", 5)]
    assert await ops.superseded_fact_links(store, [], {"user_id": "u1"}) == []
    with pytest.raises(ValueError):
        await ops.superseded_fact_links(store, ["s1"], {"scope; --": "x"})


async def test_current_fact_keys_of_candidate_rids(store):
    ops = store.ops.retrieval
    now, _ = await add_entry(store, id="now", fact_key="maya|city", user_id="u1")
    old, _ = await add_entry(store, id="old", fact_key="maya|city", superseded_by="now", user_id="u1")
    gone, _ = await add_entry(store, id="gone", fact_key="maya|pet", user_id="u1", status="archived")
    plain, _ = await add_entry(store, id="plain", user_id="u1")
    other, _ = await add_entry(store, id="o'1", fact_key="ü'%|k", user_id=None, agent_id="a'1", project_id="p")
    got = sorted(await ops.current_fact_keys(store, [now, old, gone, plain, other, 10**9]), key=lambda r: r[0])
    assert got == sorted([(now, "maya|city", "u1", None, None), (other, "ü'%|k", None, "a'1", "p")])
    assert await ops.current_fact_keys(store, []) == []


async def test_following_user_turns(store):
    ops = store.ops.retrieval
    turns = {}  # seq -> (rid, id)
    for seq, role, extra in [(1, "user", {}), (2, "assistant", {}), (3, "user", {}), (5, "user", {}),
                             (8, "user", {"status": "archived"}), (9, "user", {})]:
        turns[seq] = await add_entry(store, id=f"t{seq}", category="turn", session_id="s1",
                                     metadata={"role": role, "message_seq": seq}, **extra)
        await link(store, "s1", f"t{seq}", "turn", seq)
    _, fid = await add_entry(store, id="fact4", metadata={"role": "user"})
    await link(store, "s1", fid, "fact", 4)  # a fact link between turns does not count as a turn
    other, _ = await add_entry(store, id="o1", category="turn", session_id="s2", metadata={"role": "user"})
    await link(store, "s2", "o1", "turn", 1)
    lone, _ = await add_entry(store, id="lone", category="turn")  # no link
    w, p = where(store)
    rows = await ops.following_user_turns(store, [turns[1][0], turns[3][0], turns[5][0], turns[9][0], other, lone,
                                                  10**9], w, p)
    got = sorted((r[0], r[1], r[2 + ID_AT]) for r in rows)
    assert got == sorted([
        (turns[1][0], 0, "t3"),  # after seq 1: seq 2 (the assistant's, left out) then seq 3
        (turns[3][0], 1, "t5"),  # after seq 3: seq 5, then 8 (archived: the filter leaves it out)
        (turns[5][0], 0, "t9"),  # after seq 5: 8 (filtered) then 9
    ])
    assert all(len(r) == 2 + len(ENTRY_FIELDS) for r in rows)
    wa, pa = where(store, include_archived=True)
    got = sorted((r[0], r[1], r[2 + ID_AT]) for r in await ops.following_user_turns(store, [turns[3][0]], wa, pa))
    assert got == [(turns[3][0], 0, "t8"), (turns[3][0], 1, "t5")]
    assert await ops.following_user_turns(store, [], w, p) == []
    wn, pn = where(store, user_id="nobody")
    assert await ops.following_user_turns(store, [turns[1][0]], wn, pn) == []


async def test_name_fact_values_as_json_extract_returns_them(store):
    values = ["Zoë", 42, 2.5, True, False, None, ["a", "b"], {"first": "Ann", "last": "O'Neil"}, "100% 'x'"]
    for i, v in enumerate(values):
        await add_entry(store, id=f"n{i}", fact_key="name", user_id="u1", metadata={"value": v, "k": i})
    await add_entry(store, id="nv", fact_key="name", user_id="u1", metadata={"other": 1})  # no value: None
    await add_entry(store, id="x1", fact_key="name", user_id="u1", metadata={"value": "Old"}, superseded_by="n0")
    await add_entry(store, id="x2", fact_key="name", user_id="u1", metadata={"value": "Gone"}, status="archived")
    await add_entry(store, id="x3", fact_key="name", user_id="u2", metadata={"value": "Other"})
    await add_entry(store, id="x4", fact_key="city", user_id="u1", metadata={"value": "Oslo"})
    got = await store.ops.retrieval.name_fact_values(store, "u1", 20)
    expected = ["Zoë", 42, 2.5, 1, 0, None, '["a","b"]', '{"first":"Ann","last":"O\'Neil"}', "100% 'x'", None]
    assert sorted(map(repr, got)) == sorted(map(repr, expected))  # types too: 1 not True, text not lists
    assert len(await store.ops.retrieval.name_fact_values(store, "u1", 3)) == 3
    assert len(await store.ops.retrieval.name_fact_values(store, "u1", -1)) == 10  # negative: no limit
    assert await store.ops.retrieval.name_fact_values(store, "nobody") == []


async def test_tag_counts_in_latest(store):
    ops = store.ops.retrieval
    await add_entry(store, tags=("Travel", "x"), user_id="u1")   # oldest: outside a sample of 3
    await add_entry(store, tags=("travel",), user_id="u1")
    await add_entry(store, tags=("TRAVEL", "Ünï"), user_id="u1")
    await add_entry(store, tags=("ünï", "50%'"), user_id="u1")
    await add_entry(store, tags=("travel",), user_id="u2")       # fails the filter
    w, p = where(store, user_id="u1")
    # case-insensitive in ASCII only (SQLite's NOCASE): "ünï" does not match "Ünï"
    assert await ops.tag_counts_in_latest(store, ["travel", "ünï", "50%'", "x", "none"], w, p, 3) == (
        3, [2, 1, 1, 0, 0])
    assert await ops.tag_counts_in_latest(store, ["travel", "X"], w, p, 10) == (4, [3, 1])
    assert await ops.tag_counts_in_latest(store, ["travel"], w, p, -1) == (4, [3])  # negative: no limit
    w0, p0 = where(store, user_id="nobody")
    assert await ops.tag_counts_in_latest(store, ["travel", "x"], w0, p0, 10) == (0, [0, 0])


def test_same_functions_and_signatures_as_the_sqlite_engine():
    assert_same_interface("retrieval")
