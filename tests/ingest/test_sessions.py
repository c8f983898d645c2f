"""Sessions: strict order, tool calls, empty batches, and the zero-LLM commit (idempotent, dedup, supersede);
racing commits store each turn once; a turn's reply context is the same however the session is committed."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone
from pathlib import Path

import pytest

from agentbase import AgentBase, NotFoundError, ValidationError, load_settings
from agentbase.embeddings import HashEmbedder
from agentbase.ingest._text import cut_text
from tests._helpers import _db, _prefs, _session_saying


async def test_identical_timestamps_keep_insertion_order_and_tool_calls_round_trip(db):
    s = await db.create_session(user_id="alice", agent_id="bot")
    t = datetime(2024, 1, 1, tzinfo=timezone.utc)
    call = [{"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Oslo"}'}}]
    await db.add_messages(s.id, [
        {"role": "user", "content": "first", "created_at": t},
        {"role": "assistant", "content": "", "tool_calls": call, "created_at": t},
        {"role": "tool", "content": "12C", "tool_call_id": "call_1", "created_at": t},
        {"role": "assistant", "content": "fourth", "created_at": t},
    ])
    msgs = await db.get_messages(s.id)
    assert [m.content for m in msgs] == ["first", "", "12C", "fourth"]
    assert [m.seq for m in msgs] == [1, 2, 3, 4]
    assert msgs[1].tool_calls == call and msgs[2].tool_call_id == "call_1"
    assert [m.content for m in await db.get_messages(s.id, order="desc", limit=2)] == ["fourth", "12C"]


async def test_openai_tool_call_message_with_null_content_is_accepted(db):
    s = await db.create_session(user_id="u")
    call = [{"id": "call_9", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]
    await db.add_messages(s.id, [{"role": "user", "content": "weather in Oslo?"},
                                 {"role": "assistant", "content": None, "tool_calls": call},
                                 {"role": "tool", "content": "sunny", "tool_call_id": "call_9"}])
    msgs = await db.get_messages(s.id)
    assert [(m.role, m.content) for m in msgs] == [("user", "weather in Oslo?"), ("assistant", ""), ("tool", "sunny")]
    assert msgs[1].tool_calls == call
    for bad in (0, False, 5):  # only None means "no text"
        with pytest.raises(ValidationError):
            await db.add_messages(s.id, [{"role": "assistant", "content": bad}])
    assert len(await db.get_messages(s.id)) == 3


async def test_empty_batch_and_bad_messages_write_nothing(db):
    s = await db.create_session(user_id="u")
    assert await db.add_messages(s.id, []) == []
    with pytest.raises(ValidationError):
        await db.add_messages(s.id, [{"role": "user", "content": "ok"}, {"role": "", "content": "bad"}])
    with pytest.raises(ValidationError):
        await db.add_message(s.id, "user", "bad \udc00 surrogate")
    assert await db.get_messages(s.id) == []
    with pytest.raises(NotFoundError):
        await db.add_message("no-such-session", "user", "hi")


async def test_commit_is_idempotent_and_links_memories(db):
    s = await db.create_session(user_id="maya")
    await db.add_messages(s.id, [
        {"role": "user", "content": "My favorite color is blue."},
        {"role": "assistant", "content": "Noted!"},
        {"role": "user", "content": "I live in Lisbon and I work at Nordlys Energy."},
    ])
    first = await db.commit_session(s.id)
    assert first["turns"] == 3 and first["facts_added"] >= 2 and first["summary_id"]
    count = await db.count(user_id="maya")
    second = await db.commit_session(s.id)
    assert second["messages"] == 0 and await db.count(user_id="maya") == count
    links = await db.db.fetchall("SELECT kind, COUNT(*) FROM session_memory_links WHERE session_id = ? GROUP BY kind",
                                 (s.id,))
    kinds = dict(links)
    assert kinds["turn"] == 3 and kinds["summary"] == 1 and kinds["fact"] >= 2


async def test_repeated_fact_hardens_and_changed_fact_supersedes(db):
    s1 = await db.create_session(user_id="maya")
    await db.add_message(s1.id, "user", "My favorite color is blue.")
    await db.commit_session(s1.id)
    s2 = await db.create_session(user_id="maya")
    await db.add_message(s2.id, "user", "My favorite color is blue.")
    r2 = await db.commit_session(s2.id)
    assert r2["facts_hardened"] == 1
    s3 = await db.create_session(user_id="maya")
    await db.add_message(s3.id, "user", "My favorite color is green.")
    r3 = await db.commit_session(s3.id)
    assert r3["facts_superseded"] == 1 and r3["facts_added"] == 1
    facts = await db.list(user_id="maya", category="preference")
    assert len(facts) == 1 and "green" in facts[0].l2_full
    everything = await db.list(user_id="maya", category="preference", exclude_superseded=False)
    old = [e for e in everything if "blue" in e.l2_full]
    assert len(old) == 1 and old[0].superseded_by == facts[0].id and old[0].confidence > facts[0].confidence - 1
    hits = await db.find("favorite color", user_id="maya", category="preference")
    assert hits[0].entry.id == facts[0].id


async def test_session_crud(db):
    s = await db.create_session(session_id="thread-1", user_id="u", metadata={"topic": "x"})
    again = await db.create_session(session_id="thread-1", user_id="u")
    assert again.id == s.id and again.metadata == {"topic": "x"}
    m = await db.add_message(s.id, "user", "hello")
    await db.update_message(s.id, m.id, metadata={"k": 1})
    assert (await db.get_message(s.id, m.id)).metadata == {"k": 1}
    assert (await db.delete_message(s.id, m.id)).id == m.id
    assert await db.get_messages(s.id) == []
    assert await db.delete_session(s.id) is True
    assert await db.get_session(s.id) is None


async def test_summary_tags_are_the_turns_entities_it_mentions(db):
    s = await db.create_session(user_id="maya")
    await db.add_messages(s.id, [
        {"role": "user", "content": "I visited Lisbon with Carmen last spring and we loved the tram rides."},
        {"role": "assistant", "content": "Lisbon trams are great. Did Carmen enjoy the Alfama district?"},
    ])
    first = await db.commit_session(s.id)
    summary = await db.get(first["summary_id"])
    low = summary.l2_full.casefold()
    assert "lisbon" in low and "ner_Lisbon" in summary.tags
    # every tag names something the summary mentions; its own headings ("Topics", "User asked") are not names
    assert all(t.removeprefix("ner_").replace("_", " ").casefold() in low for t in summary.tags)
    assert not {"ner_Topics", "ner_User", "ner_Facts", "ner_Assistant"} & set(summary.tags)

    # a later commit rewrites the summary (its "Assistant:" line is the last reply): tags follow the new text
    await db.add_messages(s.id, [
        {"role": "user", "content": "Next I am flying to Oslo, LISBON was fun."},
        {"role": "assistant", "content": "Oslo in winter is lovely; say hi to Farid from me."},
    ])
    await db.commit_session(s.id)
    again = await db.get(first["summary_id"])
    assert "Alfama" not in again.l2_full and "Farid" in again.l2_full
    assert again.tags == ["ner_Lisbon", "ner_Carmen", "ner_Oslo", "ner_Farid"]


async def test_summary_tags_keep_user_tags_and_ignore_lowercase_words(db):
    s = await db.create_session(user_id="u")
    await db.add_messages(s.id, [
        {"role": "user", "content": "Could you help us plan a party? It may rain and we will need a tent."},
        {"role": "assistant", "content": "Ask May and Will from the US team; Mark can bring an Apple TV."},
        {"role": "assistant", "content": "Anything else?"},
    ])
    sid = (await db.commit_session(s.id))["summary_id"]
    summary = await db.get(sid)
    # "us", "will", "mark", "ask" are words of the summary, not the names of the middle reply (left out of it)
    assert "Will" not in summary.l2_full and summary.tags == []
    await db.update(sid, tags=["pinned"])
    await db.add_messages(s.id, [{"role": "assistant", "content": "Will from the US team says hi."}])
    await db.commit_session(s.id)
    again = await db.get(sid)
    assert again.tags[0] == "pinned" and "ner_Will" in again.tags  # the user's tag survives the rewrite
    assert [r.entry.id for r in await db.find("party", tags=["pinned"], user_id="u")] == [sid]


async def test_summary_tags_do_not_depend_on_how_the_session_was_committed(db):
    turns = [
        {"role": "user", "content": "I visited \uf963京市 and Lisbon last year."},  # U+F963: a compatibility 北
        {"role": "assistant", "content": "Nice. What did you like?"},
        {"role": "user", "content": "The food in Lisbon, mostly."},
        {"role": "assistant", "content": "Lisbon food is great, and 北京市 too."},
    ]
    tags = []
    for steps in ([4], [1, 1, 1, 1], [2, 2]):
        s = await db.create_session(user_id="u")
        done = 0
        for n in steps:
            await db.add_messages(s.id, turns[done:done + n])
            done += n
            result = await db.commit_session(s.id)
        summary_id = result["summary_id"] or (await db.db.fetchone(
            "SELECT entry_id FROM session_memory_links WHERE session_id = ? AND kind = 'summary'", (s.id,)))[0]
        tags.append((await db.get(summary_id)).tags)
    assert tags[0] == tags[1] == tags[2] and "ner_Lisbon" in tags[0] and "ner_北京市" in tags[0]


async def test_a_profile_fact_is_found_by_the_question_it_answers(db):
    """'where do I live now?' shares no word with 'I moved to Denver last month': the residence fact's description
    (ingest/facts.py KEY_DESCRIPTIONS) carries the question's words, so the current value is a keyword match
    (without it the fact was not one at all), and the superseded Boston fact is not returned. (The older session's
    summary and turn still say "live" more often and rank above it on keywords alone.)"""
    filler = ["I baked sourdough bread on Sunday.", "My cat knocked over a plant.", "I started learning the piano.",
              "I finished reading a novel about sailors.", "We watched a documentary on whales."]
    for day, text in enumerate(["I live in Boston with my partner.", *filler,
                                "I moved to Denver last month, still unpacking boxes."], start=1):
        s = await db.create_session(user_id="f")
        await db.add_message(s.id, role="user", content=text, created_at=f"2026-11-{day:02d}T10:00:00Z")
        await db.commit_session(s.id)
    results = await db.find("where do I live now?", user_id="f", top_k=5, mode="fts",
                            reference_time="2026-11-20T10:00:00Z")
    by_text = {r.entry.l2_full: r for r in results}
    fact = by_text["User moved to Denver last month"]
    assert fact.entry.description == "where they live: home, city, lives"
    # said on 7 November 2026: the month it meant is in the metadata
    assert fact.entry.metadata["when"] == {"expr": "last month", "from": "2026-10-01", "to": "2026-10-31"}
    assert "User lives in Boston with their partner" not in by_text


@pytest.mark.parametrize(("before", "after", "old_fact", "new_fact", "key"), [
    ("I work at Google.", "I left Google and joined Netflix.", "User works at Google",
     "User left Google and joined Netflix", "employer"),
    ("I work at Google.", "I got hired by Stripe.", "User works at Google", "User got hired by Stripe", "employer"),
    ("I live in Boston.", "We just moved to Austin.", "User lives in Boston", "User just moved to Austin",
     "residence"),
    ("My name is Sam.", "I changed my name to Robin.", "User's name is Sam", "User's name is Robin", "name"),
    ("I work as a nurse at Northwestern.", "I left Northwestern and joined Denver Health.",
     "User works as a nurse at Northwestern", "User left Northwestern and joined Denver Health", "employer"),
])
async def test_a_changed_profile_value_supersedes_the_old_one(db, before, after, old_fact, new_fact, key):
    """Knowledge updates worded as a change ("left X and joined Y", "got hired by", "we moved", "changed my name
    to") close the old value: it leaves search and its history records what replaced it."""
    for text in (before, after):
        s = await db.create_session(user_id="k")
        await db.add_message(s.id, role="user", content=text)
        await db.commit_session(s.id)
    facts = {e.l2_full: e for e in await db.list(user_id="k", category="profile", exclude_superseded=False)}
    assert facts[new_fact].superseded_by is None and facts[new_fact].metadata["fact_key"] == key
    assert facts[old_fact].superseded_by == facts[new_fact].id
    found = [r.entry.l2_full for r in await db.find(after, user_id="k", mode="fts", category="profile")]
    assert new_fact in found and old_fact not in found


async def test_an_older_value_committed_late_does_not_replace_the_newer_one(db):
    """Supersession follows the messages' times, not the commit order (importing history out of order)."""
    for text, when in (("We just moved to Austin.", "2024-03-01T10:00:00Z"),
                       ("I live in Boston.", "2020-05-01T10:00:00Z")):
        s = await db.create_session(user_id="b")
        await db.add_message(s.id, role="user", content=text, created_at=when)
        result = await db.commit_session(s.id)
    assert result["facts_superseded"] == 1
    facts = {e.l2_full: e for e in await db.list(user_id="b", category="profile", exclude_superseded=False)}
    assert facts["User just moved to Austin"].superseded_by is None
    assert facts["User lives in Boston"].superseded_by == facts["User just moved to Austin"].id
    assert [e.l2_full for e in await db.list(user_id="b", category="profile")] == ["User just moved to Austin"]


@pytest.mark.parametrize("text", ["We moved to a new topic.", "I moved to the couch.", "I work at night.",
                                  "My name is on the list.", "I left the keys and joined the queue.",
                                  "When I moved to Denver in 2010, rent was cheap.", "Let's say I work at Netflix.",
                                  "I went vegan for a week as an experiment."])
async def test_sentences_that_name_no_new_value_supersede_nothing(db, text):
    for t in ("I live in Boston, I work at Google, I am vegetarian.", text):
        s = await db.create_session(user_id="n")
        await db.add_message(s.id, role="user", content=t)
        await db.commit_session(s.id)
    current = {e.l2_full for e in await db.list(user_id="n", category="profile")}
    assert {"User lives in Boston", "User works at Google", "User is vegetarian"} <= current


async def test_each_named_speaker_keeps_their_own_profile_facts(db):
    """Two friends chat in one of Bob's sessions: Ann's "I live in Boston" is Ann's, it does not replace Bob's
    "I live in Seattle", and the session summary names who said what."""
    s = await db.create_session(user_id="bob")
    await db.add_message(s.id, role="user", name="Bob", content="I live in Seattle, I work at Amazon.")
    await db.add_message(s.id, role="user", name="Ann", content="Nice! I live in Boston and I work at Stripe.")
    result = await db.commit_session(s.id)
    assert result["facts_superseded"] == 0
    current = {e.l2_full for e in await db.list(user_id="bob", category="profile")}
    assert current == {"Bob lives in Seattle", "Bob works at Amazon", "Ann lives in Boston", "Ann works at Stripe"}
    summary = (await db.get(result["summary_id"])).l2_full
    assert "Ann lives in Boston" in summary and "Bob lives in Seattle" in summary and "User lives" not in summary
    # a later move of Bob's replaces Bob's value only
    s2 = await db.create_session(user_id="bob")
    await db.add_message(s2.id, role="user", name="Bob", content="We just moved to Portland.")
    await db.commit_session(s2.id)
    current = {e.l2_full for e in await db.list(user_id="bob", category="profile")}
    assert "Bob just moved to Portland" in current and "Ann lives in Boston" in current
    assert "Bob lives in Seattle" not in current


async def test_seq_is_never_reused_after_delete_or_clear(db):
    """A message added after the last one was deleted, or after the history was cleared, is still committed, and
    earlier commits' turns keep their order (a break-it helper found both reusing committed seq numbers)."""
    s = await db.create_session(user_id="q")
    await db.add_messages(s.id, [{"role": "user", "content": "Which vaccine clinic should I visit downtown?"},
                                 {"role": "assistant", "content": "The Elm Street clinic opens at nine."}])
    await db.commit_session(s.id)
    last = (await db.get_messages(s.id))[-1]
    await db.delete_message(s.id, last.id)
    again = await db.add_message(s.id, role="user", content="I live in Denver now.")
    assert again.seq == 3
    assert (await db.commit_session(s.id))["messages"] == 1
    await db.clear_messages(s.id)
    fresh = await db.add_messages(s.id, [{"role": "user", "content": "Let's plan the birthday party."},
                                         {"role": "user", "content": "Buy balloons and a chocolate cake."}])
    assert [m.seq for m in fresh] == [4, 5]
    assert (await db.commit_session(s.id))["messages"] == 2
    # the old question's next turn is the assistant's answer: nothing from the new conversation is lifted
    got = await db.find("which vaccine clinic downtown", user_id="q", mode="fts", category="turn")
    assert all("reply_to_question" not in r.score_parts for r in got)


async def test_a_name_that_addresses_a_participant_is_not_a_tag_of_the_turn(db):
    """In a chat between Ann and Bob, Bob's "Thanks, Ann!" is addressed to Ann, not about her: it gets no ner_Ann
    tag (so entity boosts for a question about Ann prefer her turns), while "I met Ann at the gym" keeps it."""
    s = await db.create_session(user_id="bob")
    await db.add_message(s.id, role="user", name="Ann", content="I researched adoption agencies all week.")
    await db.add_message(s.id, role="user", name="Bob", content="Wow, Ann, that's huge! Good luck with it.")
    await db.add_message(s.id, role="user", name="Bob", content="I met Ann's sister at the gym, by the way.")
    await db.commit_session(s.id)
    tags = {e.l2_full: e.tags for e in await db.list(user_id="bob", category="turn")}
    assert tags["I researched adoption agencies all week."][0] == "ner_Ann"  # the speaker
    assert "ner_Ann" not in tags["Wow, Ann, that's huge! Good luck with it."]
    assert "ner_Ann" in tags["I met Ann's sister at the gym, by the way."]
    settings = load_settings(ner="regex")
    settings.ingest.drop_vocatives = False
    async with AgentBase(db.db.path.parent / "keep.db", settings=settings, embedder=HashEmbedder(dims=64)) as other:
        s2 = await other.create_session(user_id="bob")
        await other.add_message(s2.id, role="user", name="Ann", content="Hi!")
        await other.add_message(s2.id, role="user", name="Bob", content="Wow, Ann, that's huge!")
        await other.commit_session(s2.id)
        assert "ner_Ann" in (await other.list(user_id="bob", category="turn"))[-1].tags


async def test_replace_messages_with_expected_ids_is_a_compare_and_replace(db):
    from agentbase import ConflictError

    await db.replace_messages("cas", [{"role": "user", "content": "one", "id": "m1"}], expected_ids=[])
    read = [m.id for m in await db.get_messages("cas")]
    await db.add_messages("cas", [{"role": "user", "content": "two", "id": "m2"}])  # another writer, later
    with pytest.raises(ConflictError, match="changed since"):
        await db.replace_messages("cas", [{"role": "user", "content": "zero"},
                                          {"role": "user", "content": "one", "id": "m1"}], expected_ids=read)
    assert [m.content for m in await db.get_messages("cas")] == ["one", "two"]  # nothing was written
    fresh = [m.id for m in await db.get_messages("cas")]
    out = await db.replace_messages("cas", [{"role": "user", "content": "only"}], expected_ids=fresh)
    assert [m.content for m in out] == ["only"]
    with pytest.raises(ValidationError, match="expected_ids"):
        await db.replace_messages("cas", [], expected_ids="m1")
    with pytest.raises(ConflictError):  # a missing session holds no ids
        await db.replace_messages("new-cas", [], expected_ids=["m1"])
    assert await db.get_session("new-cas") is None


async def test_guarded_session_delete_and_metadata_update(db):
    from agentbase import ConflictError

    await db.replace_messages("g", [{"role": "user", "content": "one", "id": "g1"}])
    with pytest.raises(ConflictError):
        await db.delete_session("g", expected_ids=[])  # it holds g1: nothing is deleted
    assert [m.id for m in await db.get_messages("g")] == ["g1"]
    with pytest.raises(ValidationError, match="expected_ids"):
        await db.delete_session("g", expected_ids=[1])
    msg = await db.update_message("g", "g1", metadata={"status": "active"})
    await db.update_message("g", "g1", metadata={"status": "archived"}, expected_metadata={"status": "active"})
    with pytest.raises(ConflictError):  # a second archiver read "active" too
        await db.update_message("g", "g1", metadata={"status": "archived", "by": "b"}, expected_metadata=msg.metadata)
    assert (await db.get_message("g", "g1")).metadata == {"status": "archived"}
    with pytest.raises(ConflictError):  # a deleter that read it active must not take it once archived
        await db.delete_message("g", "g1", expected_metadata={"status": "active"})
    assert await db.get_message("g", "g1") is not None
    assert await db.delete_session("g", expected_ids=["g1"]) is True
    assert await db.delete_message("g", "g1") is None


async def test_replace_messages_rejects_ids_used_twice_or_by_another_session(db):
    await db.replace_messages("r1", [{"role": "user", "content": "x", "id": "shared-id"}])
    await db.replace_messages("r2", [{"role": "user", "content": "keep", "id": "r2-a"}])
    with pytest.raises(ValidationError, match="another session"):
        await db.replace_messages("r2", [{"role": "user", "content": "y", "id": "shared-id"}])
    with pytest.raises(ValidationError, match="twice"):
        await db.replace_messages("r2", [{"role": "user", "content": "y", "id": "d"},
                                         {"role": "user", "content": "z", "id": "d"}])
    assert [m.content for m in await db.get_messages("r2")] == ["keep"]  # nothing changed
    # its own ids may be written again (the replace deletes them first)
    out = await db.replace_messages("r2", [{"role": "user", "content": "again", "id": "r2-a"}])
    assert [(m.id, m.content) for m in out] == [("r2-a", "again")]


@pytest.mark.parametrize("wait", [True, False])
async def test_a_replace_that_keeps_committed_messages_does_not_commit_them_twice(db, wait):
    """LlamaIndex set_messages / add_message(idx=...) rewrite the session; its next commit stored every earlier
    turn again (each came back twice in find(), a helper's finding)."""
    s = await db.create_session(user_id="u")
    await db.add_messages(s.id, [{"role": "user", "content": "I moved to Lisbon last week.", "id": "a"},
                                 {"role": "assistant", "content": "Nice, how is Lisbon?", "id": "b"}])
    await db.commit_session(s.id)
    kept = [{"role": m.role, "content": m.content, "id": m.id} for m in await db.get_messages(s.id)]
    await db.replace_messages(s.id, [{"role": "user", "content": "I adopted a cat named Miso.", "id": "c"}, *kept])
    await db.commit_session(s.id, wait=wait)
    await db.flush()
    turns = await db.list(session_id=s.id, category="turn", limit=100)
    assert sorted(t.metadata["message_id"] for t in turns) == ["a", "b", "c"]
    hits = [r.text for r in await db.find("Lisbon move", user_id="u", top_k=5)]
    assert hits.count("I moved to Lisbon last week.") == 1
    facts = await db.list(user_id="u", category="event", limit=100) + await db.list(user_id="u",
                                                                                      category="possession",
                                                                                      limit=100)
    assert any("Miso" in f.content for f in facts)  # the new message was enriched
    lisbon = [(f.content, f.confidence) for f in await db.list(user_id="u", category="profile", limit=100)]
    assert lisbon == [("User moved to Lisbon last week", 0.8)]  # not read (and hardened) a second time


async def test_a_kept_id_with_new_text_is_committed_again(db):
    await db.replace_messages("e", [{"role": "user", "content": "My dog is named Rex.", "id": "m1"}])
    await db.commit_session("e")
    await db.replace_messages("e", [{"role": "user", "content": "I live in Oslo.", "id": "m1"}])  # an edit
    await db.commit_session("e")
    turns = sorted(t.content for t in await db.list(session_id="e", category="turn", limit=10))
    assert turns == ["I live in Oslo.", "My dog is named Rex."]  # the old turn stays, as a deleted message's
    assert "User lives in Oslo" in [f.content for f in await db.list(category="profile", limit=10)]


async def test_expected_metadata_tells_true_from_one(db):
    from agentbase import ConflictError

    await db.replace_messages("b", [{"role": "user", "content": "x", "id": "b1", "metadata": {"flag": 1}}])
    with pytest.raises(ConflictError):
        await db.update_message("b", "b1", metadata={"flag": 2}, expected_metadata={"flag": True})
    await db.update_message("b", "b1", metadata={"flag": 2}, expected_metadata={"flag": 1})


async def test_a_turn_replies_to_the_other_party_not_to_its_own_previous_message(db):
    """A turn's description is the turn it replies to; a second message in a row by the same speaker replies to
    nothing: "My favorite cuisine is Ethiopian food." matched "travel plans" through the trip before it."""
    s = await db.create_session(user_id="u")
    await db.add_messages(s.id, [{"role": "user", "content": "I'm planning a trip to Japan in October."},
                                 {"role": "user", "content": "My favorite cuisine is Ethiopian food."},
                                 {"role": "assistant", "content": "Ethiopian food is great."}])
    await db.commit_session(s.id)
    turns = {t.content: t.description for t in await db.list(session_id=s.id, category="turn", limit=10)}
    assert turns["My favorite cuisine is Ethiopian food."] is None
    assert turns["Ethiopian food is great."] == "user: My favorite cuisine is Ethiopian food."
    top = await db.find("travel plans", user_id="u", top_k=1)
    assert top[0].text == "I'm planning a trip to Japan in October."


async def test_a_sliding_window_replace_keeps_the_ids_of_the_messages_it_keeps(db):
    """[A, B, C, D] sent again as [B, C, D, E] (a window that drops its oldest message) kept no id, so the next
    commit stored B, C and D a second time (a break-pass helper)."""
    s = await db.create_session(user_id="u")
    texts = ["I like tea.", "I live in Oslo.", "I have a cat.", "I work at Google."]
    await db.add_messages(s.id, [{"role": "user", "content": t} for t in texts])
    await db.commit_session(s.id)
    ids = {m.content: m.id for m in await db.get_messages(s.id)}
    window = [{"role": "user", "content": t} for t in [*texts[1:], "I play chess."]]
    out = await db.replace_messages(s.id, window)
    assert [m.id for m in out[:3]] == [ids[t] for t in texts[1:]]
    assert (await db.commit_session(s.id))["turns"] == 1


async def test_deleting_a_session_keeps_facts_another_session_stated(db):
    s1 = await _session_saying(db, "u", "My favorite color is blue.")
    s2 = await _session_saying(db, "u", "My favorite color is blue.")  # hardens s1's fact
    assert await _prefs(db, "u") == ["User's favorite color is blue"]
    assert await db.delete_session(s2, delete_memories=True)
    assert await _prefs(db, "u") == ["User's favorite color is blue"]
    assert await db.get_session(s2) is None
    # Once no session links to it any more, deleting the last one removes it.
    assert await db.delete_session(s1, delete_memories=True)
    assert await _prefs(db, "u") == []
    assert await db.list(user_id="u") == []


async def test_concurrent_commits_store_each_turn_once(tmp_path: Path):
    db = _db(tmp_path / "s.db")
    s = await db.create_session(user_id="u")
    await db.add_messages(s.id, [{"role": "user", "content": "I adopted a cat named Miso"},
                                 {"role": "assistant", "content": "Miso is a lovely name"}])
    results = await asyncio.gather(db.commit_session(s.id), db.commit_session(s.id), db.commit_session(s.id))
    assert sorted(r["turns"] for r in results) == [0, 0, 2]
    turns = await db.list(session_id=s.id, category="turn")
    assert len(turns) == 2
    await db.close()


async def test_reply_context_is_the_same_when_committed_in_steps(tmp_path: Path):
    msgs = [{"role": "user", "content": "What is the weather in Lisbon?"},
            {"role": "tool", "content": '{"temp": 21}', "tool_call_id": "c1"},
            {"role": "system", "content": "tool finished"},
            {"role": "assistant", "content": "It is 21 degrees and sunny."}]
    described = []
    for steps in ([4], [1, 3], [1, 1, 1, 1]):
        db = _db(tmp_path / f"r{len(steps)}.db")
        s = await db.create_session(user_id="u")
        start = 0
        for n in steps:
            await db.add_messages(s.id, msgs[start:start + n])
            await db.commit_session(s.id)
            start += n
        turns = sorted(await db.list(session_id=s.id, category="turn"), key=lambda e: e.metadata["message_seq"])
        described.append([t.description for t in turns])
        await db.close()
    assert described[0] == [None, "user: What is the weather in Lisbon?"]
    assert described[1] == described[0] and described[2] == described[0]


def test_reply_context_cut_keeps_most_of_the_text():
    assert cut_text("short", 300) == "short"
    cjk = "看看 " + "我们明天讨论部署方案" * 60
    assert len(cut_text(cjk, 300)) >= 300  # hard cut: the only space is far from the limit
    words = "word " * 100
    assert cut_text(words, 300).endswith("word ...") and len(cut_text(words, 300)) <= 304


async def test_message_without_content_is_refused_unless_it_calls_tools(db):
    s = await db.create_session(user_id="u")
    with pytest.raises(ValidationError):
        await db.add_messages(s.id, [{"role": "user", "content": "ok"}, {"role": "user"}])
    with pytest.raises(ValidationError):
        await db.add_message(s.id, "user", None)
    assert await db.get_messages(s.id) == []
