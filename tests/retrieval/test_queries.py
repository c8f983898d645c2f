"""Queries are data, never syntax; CJK and glued ASCII are found by the keyword leg alone, and so are words whose
case folding differs (German sharp s, Greek)."""

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


async def test_compatibility_forms_match_their_plain_forms(db):
    # Fullwidth Latin and digits (CJK input methods), halfwidth katakana and ligatures are NFKC-folded on both
    # sides, so either spelling finds the other.
    wide = await db.add_memory("ｐｒｏｊｅｃｔ ｓｔａｔｕｓ　２０２４ 完成", user_id="u")
    kana = await db.add_memory("ｶﾀｶﾅ の メモ", user_id="u")
    liga = await db.add_memory("the ﬁnal ﬁle", user_id="u")
    plain = await db.add_memory("project kickoff agenda", user_id="u")
    for query, want in [("project status", [wide.id, plain.id]), ("２０２４", [wide.id]), ("2024", [wide.id]),
                        ("ＰＲＯＪＥＣＴ ＫＩＣＫＯＦＦ", [plain.id, wide.id]), ("カタカナ", [kana.id]),
                        ("ｶﾀｶﾅ", [kana.id]), ("final file", [liga.id]), ("ﬁle", [liga.id])]:
        hits = await db.find(query, mode="fts", user_id="u")
        assert [h.entry.id for h in hits] == want, query


async def test_single_cjk_character_query(db):
    e = await db.add_memory("我喜欢猫", user_id="u")
    hits = await db.find("猫", mode="fts", user_id="u")
    assert hits and hits[0].entry.id == e.id


async def test_temporal_leg_brings_turns_of_the_named_day(tmp_path):
    from agentbase import AgentBase, load_settings

    settings = load_settings(ner="regex")
    settings.retrieval.weight_temporal = 0.4
    db = AgentBase(tmp_path / "t.db", settings=settings, embedder=None)
    for i in range(150):  # more better keyword matches on other days than the keyword leg's 100 candidates
        await db.add_memory(f"volunteer volunteer shelter shift number {i}",
                            event_time=f"2023-05-{i % 28 + 1:02d}T10:00:00Z")
    target = await db.add_memory("started a volunteer mentoring program", event_time="2023-06-03T10:00:00Z")
    hits = await db.find("what volunteer thing did I do on 3 June, 2023?", top_k=3, mode="fts",
                         reference_time="2023-12-01T00:00:00Z")
    assert hits[0].entry.id == target.id
    trace = await db.get_trace(hits[0].trace_id)
    assert any(s.name == "candidates_temporal" and s.candidates_out == 1 for s in trace.steps)
    # a relative word alone ("last week") does not run the leg: how far back it reaches is a guess; nor does an
    # open or long range ("before 2023", "in 2021 and in 2023"); a bounded span does ("the week before June 10")
    for query, runs in [("what volunteer thing did I do last week?", False),
                        ("what volunteer thing did I do before 2023?", False),
                        ("what volunteer thing did I do in 2021 and in 2023?", False),
                        ("what volunteer thing did I do the week before June 10, 2023?", True)]:
        hits = await db.find(query, top_k=3, mode="fts", reference_time="2023-06-07T00:00:00Z")
        trace = await db.get_trace(hits[0].trace_id)
        assert any(s.name == "candidates_temporal" for s in trace.steps) is runs, query
        assert (hits[0].entry.id == target.id) is runs, query
    await db.close()

    settings.retrieval.weight_temporal = 0.0
    off = AgentBase(tmp_path / "t.db", settings=settings, embedder=None)
    hits = await off.find("what volunteer thing did I do on 3 June, 2023?", top_k=3, mode="fts",
                          reference_time="2023-12-01T00:00:00Z")
    assert target.id not in [h.entry.id for h in hits]
    trace = await off.get_trace(hits[0].trace_id)
    assert not any(s.name == "candidates_temporal" for s in trace.steps)
    await off.close()


async def test_temporal_vector_leg_brings_a_turn_of_the_named_day_without_the_words(tmp_path):
    from agentbase import AgentBase, load_settings
    from agentbase.embeddings import HashEmbedder

    settings = load_settings(ner="regex")
    db = AgentBase(tmp_path / "v.db", settings=settings, embedder=HashEmbedder(dims=64))
    for i in range(150):  # every keyword and most of the vector match on other days
        await db.add_memory(f"volunteer shift at the shelter number {i}",
                            event_time=f"2023-05-{i % 28 + 1:02d}T10:00:00Z")
    target = await db.add_memory("mentored kids in the library",
                                 event_time="2023-06-03T10:00:00Z")
    query = "what volunteer thing did I do on 3 June, 2023?"
    hits = await db.find(query, top_k=5, reference_time="2023-12-01T00:00:00Z")
    assert target.id in [h.entry.id for h in hits]
    trace = await db.get_trace(hits[0].trace_id)
    step = next(s for s in trace.steps if s.name == "candidates_temporal")
    assert step.details["vector_candidates_out"] == 1
    db.settings.retrieval.weight_temporal = 0.0
    hits = await db.find(query, top_k=5, reference_time="2023-12-01T00:00:00Z")
    assert target.id not in [h.entry.id for h in hits]
    await db.close()


async def test_temporal_legs_also_search_the_day_after_the_named_range(tmp_path):
    """"Last week we went to a military memorial", told on August 3, answers "the week before August 3": the
    legs search the named range and the day after it, not later days."""
    from agentbase import AgentBase, load_settings

    db = AgentBase(tmp_path / "lag.db", settings=load_settings(ner="regex"), embedder=None)
    for i in range(150):  # better keyword matches on other days than the keyword leg's 100 candidates
        await db.add_memory(f"kids kids kids playground number {i}", event_time=f"2023-06-{i % 28 + 1:02d}T10:00:00Z")
    told_next_day = await db.add_memory("Last week we took the kids to a military memorial",
                                        event_time="2023-08-03T18:00:00Z")
    told_later = await db.add_memory("We took the kids to a memorial concert", event_time="2023-08-05T18:00:00Z")
    hits = await db.find("What did John do the week before August 3, 2023 involving his kids?", top_k=3,
                         mode="fts", reference_time="2023-09-01T00:00:00Z")
    ids = [h.entry.id for h in hits]
    assert ids[0] == told_next_day.id and told_later.id not in ids
    step = next(s for s in (await db.get_trace(hits[0].trace_id)).steps if s.name == "candidates_temporal")
    assert step.candidates_out == 1
    await db.close()


async def test_overlong_query_is_a_typed_error_and_the_limit_is_a_setting(db, seeded):
    from agentbase import ValidationError

    with pytest.raises(ValidationError, match="max_query_chars"):
        await db.find("rotate " * 2000, user_id="u")  # 14,000 characters
    db.settings.retrieval.max_query_chars = 20_000
    assert (await db.find("rotate " * 2000, user_id="u", mode="fts"))[0].entry.l2_full.startswith("TODO: rotate")


async def test_a_name_on_much_of_the_memory_is_left_out_of_the_vector_query(db):
    """In a chat between Ann and Bob, "Ann" tags half of what is stored: it is left out of the text embedded for
    the vector leg (the keyword leg and the entity boost still see it); a rarer name stays, and share 0 turns it
    off."""
    s = await db.create_session(user_id="bob")
    for i in range(12):  # Ann then tags 24 entries (her turns and their facts), half of the file
        await db.add_message(s.id, role="user", name="Ann", content=f"I painted landscape number {i} today.")
        await db.add_message(s.id, role="user", name="Bob", content=f"Nice work on piece {i}, I liked the colors.")
    await db.add_message(s.id, role="user", name="Bob", content="My cousin Zelda visited us in Oslo.")
    await db.commit_session(s.id)
    await db.flush()

    async def embedded(query: str) -> tuple[str | None, list[str]]:
        hits = await db.find(query, user_id="bob", trace=True)
        step = next(st for st in (await db.get_trace(hits[0].trace_id)).steps if st.name == "embed_query")
        return step.details.get("text"), step.details.get("dropped_names")

    assert await embedded("What did Ann paint?") == ("What did paint?", ["Ann"])
    assert await embedded("What does Ann's cousin do?") == ("What does cousin do?", ["Ann"])
    assert await embedded("When did Zelda visit Oslo?") == (None, [])
    db.settings.retrieval.vector_name_share = 0.0
    assert await embedded("What did Ann paint?") == (None, [])


async def test_a_turn_whose_value_was_replaced_ranks_below_the_new_value(db):
    """'Where does Maya live?' ranked "Hi! I live in Toronto ..." first after the user said they moved to
    Vancouver (the fact was superseded, the turn and its session's summary still said Toronto; a new-user
    helper's finding). They are demoted when the fact with the new value is a candidate too."""
    s1 = await db.create_session(user_id="maya")
    await db.add_messages(s1.id, [{"role": "user", "content": "Hi! I live in Toronto, close to the lake.",
                                   "created_at": "2026-01-05T10:00:00Z"}])
    await db.commit_session(s1.id)
    s2 = await db.create_session(user_id="maya")
    await db.add_messages(s2.id, [{"role": "user", "content": "Big news: we just moved to Vancouver last week!",
                                   "created_at": "2026-03-05T10:00:00Z"}])
    assert (await db.commit_session(s2.id))["facts_superseded"] == 1
    res = await db.find("Where does Maya live?", user_id="maya", top_k=5, mode="fts")
    texts = [r.text for r in res]
    stale = texts.index("Hi! I live in Toronto, close to the lake.")
    assert texts.index("User just moved to Vancouver last week") < stale
    assert res[stale].score_parts["superseded_source"] == 0.6
    summary = next(r for r in res if r.entry.category == "summary" and "Toronto" in r.text)
    assert summary.score_parts["superseded_source"] == 0.6  # its "Facts:" line names the old value too
    assert texts.index("User just moved to Vancouver last week") == 0
    flat = await db.find("Where does Maya live?", user_id="maya", top_k=5, mode="fts", strategy="flat")
    assert all("superseded_source" not in r.score_parts for r in flat)


async def test_another_agents_current_fact_does_not_demote_a_turn(db):
    """Facts supersede within their owners (user, agent, project): agent A's Oslo -> Bergen move must not let agent
    B's current "lives in Oslo" fact demote agent A's Oslo turn (a helper's finding: the demotion matched the new
    fact on key and user only)."""
    async def say(agent: str, text: str, day: int) -> None:
        s = await db.create_session(user_id="zed", agent_id=agent)
        await db.add_messages(s.id, [{"role": "user", "content": text, "created_at": f"2026-01-{day:02d}T10:00:00Z"}])
        await db.commit_session(s.id)

    await say("A", "I live in Oslo.", 1)
    await say("A", "We just moved to Bergen.", 6)
    await say("B", "I live in Oslo.", 2)
    res = await db.find("Oslo", user_id="zed", top_k=8, mode="fts")
    a_turn = [r for r in res if r.entry.category == "turn" and r.entry.agent_id == "A" and "Oslo" in r.text]
    assert a_turn and all("superseded_source" not in r.score_parts for r in a_turn)
    moved = await db.find("Where does zed live? Bergen", user_id="zed", agent_id="A", top_k=8, mode="fts")
    stale = [r for r in moved if r.entry.category == "turn" and "Oslo" in r.text]
    assert stale and all(r.score_parts.get("superseded_source") == 0.6 for r in stale)  # its own agent's move


async def test_a_fact_and_the_turn_it_was_read_from_come_back_once(db):
    """One statement came back as its turn and as its fact (and filled two of three LangChain long-term slots,
    a new-user helper's finding): with collapse_sources on, a fact after its source turn is skipped and named
    in the trace."""
    db.settings.retrieval.collapse_sources = True
    s = await db.create_session(user_id="u")
    await db.add_messages(s.id, [{"role": "user", "content": "I'm allergic to peanuts, so no satay for me."},
                                 {"role": "user", "content": "I have a cat named Miso."}])
    await db.commit_session(s.id)
    res = await db.find("satay peanuts allergic", user_id="u", top_k=5, trace=True)
    assert res[0].text == "I'm allergic to peanuts, so no satay for me."  # the turn holds every query word
    fact = next(e for e in await db.list(user_id="u", limit=20) if e.content == "User is allergic to peanuts")
    assert fact.id not in [r.entry.id for r in res]
    trace = await db.get_trace(res[0].trace_id)
    assert fact.id in next(st for st in trace.steps if st.name == "final").details["collapsed"]
    flat = await db.find("satay peanuts allergic", user_id="u", top_k=5, strategy="flat")
    assert fact.id in [r.entry.id for r in flat]  # strategy="flat" returns every entry as ranked


async def test_collapse_keeps_every_fact_of_a_message_and_respects_the_token_budget(db):
    """A break-pass helper: two facts of one message collapsed into one (mem0 search lost "works at Google"),
    and with a token budget the turn that did not fit still hid its facts (find returned nothing)."""
    db.settings.retrieval.collapse_sources = True
    s = await db.create_session(user_id="u")
    await db.add_messages(s.id, [{"role": "user", "content": "I live in Toronto and I work at Google."}])
    await db.commit_session(s.id)
    facts = await db.find("Toronto Google", user_id="u", top_k=10, category=["profile"])
    assert sorted(r.text for r in facts) == ["User lives in Toronto", "User works at Google"]
    tight = await db.find("Toronto Google", user_id="u", top_k=5, token_budget=8)
    assert tight and all(r.entry.category != "turn" for r in tight)  # the 10-token turn does not fit


async def test_set_messages_after_a_delete_does_not_bring_the_memories_back(db):
    """A user deleted a committed turn and its facts; sending the conversation again (LlamaIndex set_messages)
    re-committed the kept message and restored them (a break-pass helper)."""
    s = await db.create_session(user_id="u")
    await db.add_messages(s.id, [{"role": "user", "content": "My bank PIN is 4321 and I live in Oslo."}])
    await db.commit_session(s.id)
    for e in await db.list(user_id="u", limit=50):
        if e.category != "summary":
            await db.delete(e.id)
    again = [{"role": m.role, "content": m.content} for m in await db.get_messages(s.id)]
    await db.replace_messages(s.id, [*again, {"role": "user", "content": "I like tea."}])
    await db.commit_session(s.id)
    left = [e.content for e in await db.list(user_id="u", limit=50) if e.category != "summary"]
    assert not any("4321" in t or "Oslo" in t for t in left)
    assert "I like tea." in left


async def test_keyword_search_finds_words_whose_casefold_differs(db):
    e = await db.add_memory("Wir wohnen in der Hauptstraße, der Fußball ist groß", user_id="u")
    g = await db.add_memory("ᾄδω τῇ θεᾷ", user_id="u")
    for query, want in [("Hauptstraße", e), ("FUSSBALL", None), ("Fußball", e), ("groß", e), ("θεᾷ", g)]:
        hits = await db.find(query, mode="fts", user_id="u")
        assert [h.entry.id for h in hits] == ([want.id] if want else []), query
