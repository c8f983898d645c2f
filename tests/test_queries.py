"""Queries are data, never syntax; CJK and glued ASCII are found by the keyword leg alone."""

from __future__ import annotations

import pytest

ODD_QUERIES = ["ABC-123", "-draft", "don't deploy", "TODO: rotate", "status:done", 'he said "ok', "(draft", "AND",
               "NOT", "ANDROID", "", "   ", "party \ud83d", "NEAR(a b)", "a OR", "*", "^start", "col:val AND NOT x"]


@pytest.fixture
async def seeded(db):
    texts = ["TODO: rotate the staging keys", "ticket ABC-123 is blocked", "don't deploy on Fridays",
             "status:done for the migration", 'he said "ok" to the draft', "AND gate logic", "ANDROID build fixed",
             "NOT a drill", "-draft version saved", "(draft notes"]
    ids = {t: (await db.add_memory(t, user_id="u")).id for t in texts}
    await db.flush()
    return ids


@pytest.mark.parametrize("query", ODD_QUERIES)
@pytest.mark.parametrize("mode", ["fts", "hybrid", "vector"])
async def test_odd_queries_never_raise(db, seeded, query, mode):
    results = await db.find(query, mode=mode, user_id="u")
    assert isinstance(results, list)


@pytest.mark.parametrize("query,expected", [
    ("TODO: rotate", "TODO: rotate the staging keys"),
    ("ABC-123", "ticket ABC-123 is blocked"),
    ("don't deploy", "don't deploy on Fridays"),
    ("status:done", "status:done for the migration"),
    ('he said "ok', 'he said "ok" to the draft'),
    ("ANDROID", "ANDROID build fixed"),
    ("AND", "AND gate logic"),
    ("NOT", "NOT a drill"),
    ("(draft", "(draft notes"),
])
async def test_stored_words_are_found_by_fts(db, seeded, query, expected):
    results = await db.find(query, mode="fts", user_id="u")
    assert expected in [r.entry.l2_full for r in results[:3]]


async def test_empty_query_returns_nothing_without_embedding(db, seeded):
    calls = []
    original = db.embedder.embed_query
    db.embedder.embed_query = lambda q: calls.append(q) or original(q)
    try:
        assert await db.find("") == []
        assert await db.find("   ") == []
        assert await db.find("?!") == []
    finally:
        db.embedder.embed_query = original
    assert calls == []


async def test_cjk_found_by_keyword_leg(db):
    zh = await db.add_memory("明天讨论部署方案", user_id="u")
    ja = await db.add_memory("東京で新しいプロジェクトを始めました", user_id="u")
    ko = await db.add_memory("서울에서 회의가 있습니다", user_id="u")
    glued = await db.add_memory("修复gen-abc后验证通过", user_id="u")
    await db.add_memory("unrelated english text", user_id="u")
    for query, want in [("部署", zh), ("方案", zh), ("東京", ja), ("プロジェクト", ja), ("서울", ko), ("회의", ko),
                        ("abc", glued), ("验证", glued), ("gen-abc", glued)]:
        hits = await db.find(query, mode="fts", user_id="u")
        assert hits and hits[0].entry.id == want.id, query


async def test_single_cjk_character_query(db):
    e = await db.add_memory("我喜欢猫", user_id="u")
    hits = await db.find("猫", mode="fts", user_id="u")
    assert hits and hits[0].entry.id == e.id
