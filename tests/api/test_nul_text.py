"""NUL (U+0000) in text gets one answer on both engines (a SQLite file and a PostgreSQL database, whose ``text``
cannot hold NUL): stored text with NUL is a ValidationError that writes nothing, a lookup value with NUL
(entity name, tag filter) is a ValidationError, and a query with NUL is read with NUL as a space, its trace
stored. Metadata values may hold NUL (stored as the JSON escape), as before."""

from __future__ import annotations

import pytest

from agentbase import AgentBase, ValidationError, load_settings
from agentbase.embeddings import HashEmbedder


@pytest.fixture(params=["sqlite", "postgres"])
async def ab(request, tmp_path):
    target = tmp_path / "nul.db" if request.param == "sqlite" else request.getfixturevalue("pg_url")
    db = AgentBase(target, settings=load_settings(ner="regex"), embedder=HashEmbedder(dims=32))
    await db.initialize()
    yield db
    await db.close()


async def _nothing_written(ab, session_id="s1"):
    assert await ab.count() == 0
    assert [m.content for m in await ab.get_messages(session_id)] == ["kept"]


WRITES = {
    "memory content": lambda ab: ab.add_memory("Dana moved\x00 to Lisbon"),
    "memory tag": lambda ab: ab.add_memory("Dana moved to Lisbon", tags=["ok", "ci\x00ty"]),
    "memory category": lambda ab: ab.add_memory("Dana moved to Lisbon", category="fa\x00ct"),
    "memory user_id": lambda ab: ab.add_memory("Dana moved to Lisbon", user_id="da\x00na"),
    "message role": lambda ab: ab.add_message("s1", "us\x00er", "hello"),
    "message content": lambda ab: ab.add_message("s1", "user", "hel\x00lo"),
    "message name": lambda ab: ab.add_message("s1", "user", "hello", name="da\x00na"),
    "messages batch": lambda ab: ab.add_messages("s1", [{"role": "user", "content": "fine"},
                                                      {"role": "user", "content": "\x00"}]),
    "resource uri": lambda ab: ab.add_resource("doc://a\x00b", "Brew at 80C."),
    "resource content": lambda ab: ab.add_resource("doc://ab", "Brew\x00 at 80C."),
    "resource title": lambda ab: ab.add_resource("doc://ab", "Brew at 80C.", title="t\x00"),
    "skill name": lambda ab: ab.add_skill("brew\x00tea", "Brew a cup of tea"),
    "skill description": lambda ab: ab.add_skill("brew_tea", "Brew a cup\x00 of tea"),
    "skill content": lambda ab: ab.add_skill("brew_tea", "Brew a cup of tea", "steep\x00"),
    "skill tag": lambda ab: ab.add_skill("brew_tea", "Brew a cup of tea", tags=["\x00"]),
    "entity name": lambda ab: ab.add_entity("Da\x00na"),
    "relation object": lambda ab: ab.add_relation("Dana", "lives in", "Lis\x00bon"),
    "entity type": lambda ab: ab.add_entity("Dana", entity_type="per\x00son"),
    "entity alias": lambda ab: ab.add_entity("Dana", aliases=["D\x00"]),
    "relation subject type": lambda ab: ab.add_relation("Dana", "lives in", "Lisbon", subject_type="p\x00"),
}


@pytest.mark.parametrize("what", list(WRITES))
async def test_nul_in_stored_text_is_refused_and_writes_nothing(ab, what):
    await ab.create_session(session_id="s1")
    await ab.add_message("s1", "user", "kept")
    with pytest.raises(ValidationError, match="NUL|must be"):
        await WRITES[what](ab)
    await _nothing_written(ab)
    assert await ab.get_entity("Dana") is None


async def test_nul_in_update_is_refused(ab):
    e = await ab.add_memory("Dana moved to Lisbon", tags=["city"])
    with pytest.raises(ValidationError, match="NUL"):
        await ab.update(e.id, "Dana moved\x00 to Porto")
    with pytest.raises(ValidationError, match="NUL"):
        await ab.update(e.id, tags=["\x00x"])
    got = await ab.get(e.id)
    assert got.l2_full == "Dana moved to Lisbon" and "city" in got.tags


async def test_nul_in_metadata_still_round_trips(ab):
    e = await ab.add_memory("Dana moved to Lisbon", metadata={"raw": "a\x00b"})
    assert (await ab.get(e.id)).metadata == {"raw": "a\x00b"}


READS = {
    "get_entity": lambda ab: ab.get_entity("Da\x00na"),
    "facts": lambda ab: ab.facts("Da\x00na"),
    "timeline": lambda ab: ab.timeline("Da\x00na"),
    "neighbors": lambda ab: ab.neighbors("Da\x00na"),
    "find tags": lambda ab: ab.find("Lisbon", tags=["city\x00"]),
    "count tags": lambda ab: ab.count(tags=["city\x00"]),
    "list tags": lambda ab: ab.list(tags=["city\x00"]),
}


@pytest.mark.parametrize("what", list(READS))
async def test_nul_in_a_lookup_value_is_a_validation_error(ab, what):
    await ab.add_memory("Dana moved to Lisbon", tags=["city"])
    await ab.add_relation("Dana", "lives in", "Lisbon")
    with pytest.raises(ValidationError, match="NUL"):
        await READS[what](ab)


async def test_query_with_nul_finds_and_keeps_its_trace(ab):
    e = await ab.add_memory("Dana moved to Lisbon")
    await ab.flush()
    for mode in ("hybrid", "fts", "vector"):
        hits = await ab.find("Lisbon \x00", mode=mode)
        assert [h.entry.id for h in hits] == [e.id], mode
        trace = await ab.get_trace(hits[0].trace_id)
        assert trace.query == "Lisbon" and trace.result_ids == [e.id]
    hits = await ab.find("Lis\x00bon moved")  # NUL separates words, as the keyword leg always read it
    assert (await ab.get_trace(hits[0].trace_id)).query == "Lis bon moved"
    assert await ab.find("\x00") == []
