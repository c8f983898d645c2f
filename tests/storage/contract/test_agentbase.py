"""AgentBase end to end on both engines (a SQLite file, a PostgreSQL database): the same calls give the same
answers. Entries, filters, find() in every mode, sessions and commit, the temporal graph, lifecycle, and bad input
that must raise a typed error and write nothing."""

from __future__ import annotations

import pytest

from agentbase import AgentBase, NotFoundError, ValidationError, load_settings
from agentbase.embeddings import HashEmbedder


async def test_entries_round_trip_with_history(ab):
    e = await ab.add_memory("User prefers Python 3.12 for O'Brien's 100% \"typed\" scripts", category="preference",
                            tags=["python", "café"], user_id="alice", metadata={"source": "chat", "n": 2})
    got = await ab.get(e.id)
    assert got.l2_full.startswith("User prefers Python 3.12") and got.metadata["n"] == 2
    assert {"python", "café"} <= set(got.tags)
    await ab.update(e.id, "User prefers Python 3.13")
    assert (await ab.get(e.id)).l2_full == "User prefers Python 3.13"
    assert await ab.delete(e.id) and await ab.get(e.id) is None
    assert [h.event for h in await ab.history(e.id)] == ["ADD", "UPDATE", "DELETE"]
    dup_a = await ab.add_memory("I like pizza", user_id="alice")
    dup_b = await ab.add_memory("  i like PIZZA ", user_id="alice")
    assert dup_a.id == dup_b.id and await ab.count(user_id="alice") == 1
    assert (await ab.stats())["size_bytes"] > 0  # the file's size, or the PostgreSQL database's


async def test_find_ranks_the_relevant_memory_first_in_every_mode(ab):
    await ab.add_memory("Dana moved to Lisbon in March 2023", user_id="dana")
    await ab.add_memory("Dana's favourite coffee is a flat white", user_id="dana")
    await ab.add_memory("Erin hikes in the Alps every summer", user_id="erin")
    for i in range(20):
        await ab.add_memory(f"Routine note number {i} about groceries", user_id="dana")
    await ab.flush()
    for mode in ("hybrid", "fts", "vector"):
        hits = await ab.find("where did Dana move to? Lisbon", user_id="dana", mode=mode, top_k=3)
        assert hits and "Lisbon" in hits[0].entry.l2_full, mode
        assert all(h.entry.user_id == "dana" for h in hits)
    assert not [h for h in await ab.find("Alps summer hiking", user_id="dana") if "Alps" in h.entry.l2_full]


async def test_session_commit_makes_turns_and_facts_searchable(ab):
    s = await ab.create_session(user_id="sam")
    await ab.add_messages(s.id, [{"role": "user", "content": "My sister Maya lives in Porto and loves surfing"},
                                 {"role": "assistant", "content": "Porto has great waves!"},
                                 {"role": "user", "content": "I'm allergic to shellfish"}])
    out = await ab.commit_session(s.id)
    assert out["turns"] >= 3 or out
    await ab.flush()
    hits = await ab.find("what is Sam allergic to", user_id="sam", top_k=5)
    assert any("shellfish" in h.entry.l2_full for h in hits)
    assert [m.content for m in await ab.get_messages(s.id)][0].startswith("My sister Maya")


async def test_graph_facts_over_time(ab):
    await ab.add_memory("Dana works at Acme", user_id="dana", event_time="2023-03-01")
    await ab.add_memory("Dana works at Globex", user_id="dana", event_time="2024-05-01")
    await ab.flush()
    now = await ab.facts("Dana")
    assert [r.object for r in now if r.predicate == "works_at"] == ["Globex"]
    then = await ab.facts("Dana", as_of="2023-06-01")
    assert [r.object for r in then if r.predicate == "works_at"] == ["Acme"]


HOSTILE = ['AND OR NOT', '"unbalanced', "NEAR(a b)", "col:term*", "'; DROP TABLE entries; --", "%s %(x)s 100%",
           "\\", "(((", "😀", "部署", ""]


async def test_hostile_queries_never_error_and_bad_input_writes_nothing(ab):
    await ab.add_memory("a plain note", user_id="u")
    for text in HOSTILE:
        if text:
            await ab.find(text, user_id="u")
    before = await ab.count()
    with pytest.raises(ValidationError):
        await ab.add_memory("", user_id="u")
    with pytest.raises(ValidationError):
        await ab.find("x", top_k=0)
    with pytest.raises(ValidationError):
        await ab.add_memory("ok", user_id="u", metadata={"k": float("nan")})
    with pytest.raises(NotFoundError):
        await ab.add_messages("no-such-session", [{"role": "user", "content": "hi"}])
    assert await ab.count() == before


async def test_id_prefix_lookups_in_code_point_order(ab):
    """ids_with_prefix (what the CLI's short ids use) on both engines: code point order ("-" sorts before digits
    and "B" before "a", as SQLite's BINARY), wildcards plain, trace ids too."""
    a = await ab.add_memory("alpha", entry_id="abcdef12-0001")
    b = await ab.add_memory("beta", entry_id="abcdef120002")
    c = await ab.add_memory("gamma", entry_id="abcdef12B")
    await ab.add_memory("delta", entry_id="abcdef13-0001")
    assert await ab.ids_with_prefix("abcdef12") == [a.id, b.id, c.id]
    assert await ab.ids_with_prefix("abcdef12-") == [a.id]
    assert await ab.ids_with_prefix("abcdef12", limit=2) == [a.id, b.id]
    assert await ab.ids_with_prefix("abcdef1%") == [] and await ab.ids_with_prefix("zzzzzzzz") == []
    found = await ab.find("alpha", top_k=1)
    await ab.flush()
    trace_id = (await ab.get_trace(found[0].trace_id)).id
    assert await ab.trace_ids_with_prefix(trace_id[:8]) == [trace_id]


async def test_reindex_moves_to_an_embedder_of_another_dimension(engine, tmp_path, request):
    # the degrade message for a new embedder's dimension tells the user to run reindex: it must work on both engines
    target = tmp_path / "dims.db" if engine == "sqlite" else request.getfixturevalue("pg_url")
    old = AgentBase(target, settings=load_settings(ner="regex"), embedder=HashEmbedder(dims=64))
    await old.initialize()
    kept = [await old.add_memory(f"parcel {i} left the depot", user_id="u") for i in range(3)]
    await old.flush()
    await old.close()
    new = AgentBase(target, settings=load_settings(ner="regex"), embedder=HashEmbedder(dims=96))
    await new.initialize()
    try:
        assert (await new.reindex())["jobs"] == 3
        await new.flush()
        stats = await new.stats()
        assert stats["vector_dims"] == 96 and stats["embeddings"] == 3 and stats["degrade_reason"] is None
        found = await new.find("parcel depot", user_id="u", mode="vector", top_k=5)
        assert {r.entry.id for r in found} == {e.id for e in kept}
    finally:
        await new.close()
