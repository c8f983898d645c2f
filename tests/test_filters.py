"""Filters apply inside the candidate queries (before top-k); owners never see each other's entries."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from agentbase import ValidationError


async def test_filters_apply_before_top_k(db):
    for i in range(200):
        await db.add_memory(f"pizza night number {i} with friends", user_id="A")
    b_ids = {(await db.add_memory(f"pizza with {x} topping", user_id="B")).id for x in ("olive", "basil", "ham")}
    await db.flush()
    for mode in ("vector", "hybrid", "fts"):
        results = await db.find("pizza", top_k=3, user_id="B", mode=mode)
        assert {r.entry.id for r in results} == b_ids, mode


async def test_date_filter_fills_even_when_matches_are_older_than_global_top_k(db):
    old = datetime(2020, 1, 1, tzinfo=timezone.utc)
    for i in range(150):
        await db.add_memory(f"coffee order {i} latte", user_id="u", event_time=datetime(2024, 6, 1, tzinfo=timezone.utc)
                            + timedelta(minutes=i))
    old_ids = {(await db.add_memory(f"old coffee {i} espresso", user_id="u", event_time=old + timedelta(days=i))).id
               for i in range(5)}
    await db.flush()
    for mode in ("vector", "hybrid", "fts"):
        res = await db.find("coffee latte", top_k=5, mode=mode, date_to=datetime(2021, 1, 1, tzinfo=timezone.utc))
        assert {r.entry.id for r in res} == old_ids, mode


async def test_mixed_utc_offsets_compare_correctly(db):
    # 10:00 at +02:00 is 08:00 UTC; 09:00 at -05:00 is 14:00 UTC.
    a = await db.add_memory("event alpha", event_time="2024-03-01T10:00:00+02:00")
    b = await db.add_memory("event bravo", event_time="2024-03-01T09:00:00-05:00")
    assert (await db.get(a.id)).event_time == datetime(2024, 3, 1, 8, tzinfo=timezone.utc)
    got = await db.find("event", mode="fts", date_from="2024-03-01T12:00:00Z")
    assert [r.entry.id for r in got] == [b.id]
    got = await db.find("event", mode="fts", date_to=datetime(2024, 3, 1, 9, tzinfo=timezone.utc))
    assert [r.entry.id for r in got] == [a.id]


async def test_user_isolation_on_every_path(db):
    secret = await db.add_memory("u1 bank pin is 4417", user_id="u1")
    await db.add_memory("u2 likes tea", user_id="u2")
    await db.flush()
    for mode in ("fts", "vector", "hybrid"):
        for strategy in ("auto", "flat", "hierarchical"):
            hits = await db.find("bank pin 4417", user_id="u2", mode=mode, strategy=strategy)
            assert secret.id not in [h.entry.id for h in hits]
    assert secret.id not in [e.id for e in await db.list(user_id="u2")]
    assert await db.get(secret.id, user_id="u2") is None
    # ids go to SQL as parameters: an injection attempt is just an unknown owner.
    assert await db.find("bank", user_id="u2' OR '1'='1") == []
    assert await db.list(user_id="x' OR 1=1 --") == []


async def test_tags_category_metadata_filters(db):
    a = await db.add_memory("deploy checklist", tags=["ops", "prod"], category="procedure", metadata={"team": "infra"})
    await db.add_memory("deploy party", tags=["fun"], category="event", metadata={"team": "social"})
    assert [e.id for e in await db.list(tags=["ops", "prod"])] == [a.id]
    assert [r.entry.id for r in await db.find("deploy", mode="fts", category="procedure")] == [a.id]
    assert [r.entry.id for r in await db.find("deploy", mode="fts", metadata={"team": "infra"})] == [a.id]
    with pytest.raises(ValidationError):
        await db.find("deploy", metadata={"team') OR 1=1 --": "x"})
    with pytest.raises(ValidationError):
        await db.find("deploy", unknown_filter=1)
