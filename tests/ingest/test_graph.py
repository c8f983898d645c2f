"""Temporal knowledge graph: extraction at commit, contradiction closes validity, as-of queries, aliases."""

from __future__ import annotations

from datetime import date, datetime, timezone

import pytest

from agentbase import ValidationError
from agentbase.graph import extract_relation_mentions, graph_candidates, normalize_name
from agentbase.ner import RegexExtractor


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=timezone.utc)


async def _say(db, session_id: str, text: str, when: str, **kw) -> None:
    await db.create_session(session_id=session_id, user_id="u1")
    await db.add_message(session_id, "user", text, created_at=when, **kw)
    await db.commit_session(session_id)


async def test_acceptance_job_change_closes_old_relation(db):
    await _say(db, "s1", "Alice works at Acme.", "2024-01-10")
    await _say(db, "s2", "Alice joined Globex.", "2024-06-01")

    march = await db.facts("Alice", as_of="2024-03-01")
    assert [(r.predicate, r.object) for r in march] == [("works_at", "Acme")]
    july = await db.facts("alice", as_of=utc(2024, 7, 1))  # case-insensitive lookup
    assert [(r.predicate, r.object) for r in july] == [("works_at", "Globex")]

    acme = march[0]
    assert acme.valid_from == utc(2024, 1, 10) and acme.valid_to == utc(2024, 6, 1)
    assert july[0].valid_to is None and july[0].valid_from == utc(2024, 6, 1)
    # provenance: the relation points at the committed turn entry
    src = await db.get(acme.source_entry_id)
    assert src is not None and src.l2_full == "Alice works at Acme."
    # nothing deleted: the timeline keeps both, in order
    assert [(r.object, r.valid_to is None) for r in await db.timeline("Alice")] == [("Acme", False), ("Globex", True)]
    assert await db.facts("Alice", as_of="2023-12-31") == []


async def test_out_of_order_facts_fit_the_timeline(db):
    await db.add_relation("Bob", "works at", "Globex", valid_from="2024-06-01")
    await db.add_relation("Bob", "works_at", "Acme", valid_from="2024-01-01")  # learned later, happened earlier
    acme, globex = await db.timeline("Bob")
    assert (acme.object, acme.valid_to) == ("Acme", utc(2024, 6, 1))
    assert (globex.object, globex.valid_to) == ("Globex", None)
    # a third job in between splits the interval without overlap
    await db.add_relation("Bob", "works_at", "Initech", valid_from="2024-03-01")
    spans = [(r.object, r.valid_from.month, r.valid_to.month if r.valid_to else None) for r in await db.timeline("Bob")]
    assert spans == [("Acme", 1, 3), ("Initech", 3, 6), ("Globex", 6, None)]
    assert [r.object for r in await db.facts("Bob", as_of="2024-04-15")] == ["Initech"]


async def test_repeated_fact_is_one_relation_and_non_functional_predicates_coexist(db):
    r1 = await db.add_relation("Carol", "studied_at", "MIT", valid_from="2015-09-01", confidence=0.6)
    r2 = await db.add_relation("Carol", "studied_at", "MIT", valid_from="2016-01-01", confidence=0.9)
    assert r1.id == r2.id
    await db.add_relation("Carol", "studied_at", "Stanford", valid_from="2019-09-01")
    now = {r.object: r for r in await db.facts("Carol")}
    assert set(now) == {"MIT", "Stanford"} and now["MIT"].confidence == 0.9 and now["MIT"].valid_to is None


async def test_entities_merge_case_and_alias_insensitively(db):
    await db.add_relation("Dana", "works_at", "International Business Machines", valid_from="2020-01-01")
    await db.add_relation("Evan", "works_at", "IBM", valid_from="2021-01-01")
    ibm = await db.add_entity("IBM", aliases=["international business machines"], entity_type="ORG")
    assert normalize_name("International Business Machines") in {normalize_name(a) for a in ibm.aliases + [ibm.name]}
    people = {r.subject for r in await db.facts("ibm", direction="in")}
    assert people == {"Dana", "Evan"}
    assert (await db.get_entity("INTERNATIONAL BUSINESS MACHINES")).id == ibm.id
    hood = await db.neighbors("Dana", depth=2)
    assert {e.name for e in hood.entities} == {"IBM", "Evan"} and hood.depths[ibm.id] == 1


async def test_neighbors_depth_and_expired_edges(db):
    await db.add_relation("Fay", "lives_in", "Oslo", valid_from="2020-01-01")
    await db.add_relation("Fay", "lives_in", "Berlin", valid_from="2022-01-01")
    await db.add_relation("Berlin", "located_in", "Germany", valid_from="2000-01-01")
    hood = await db.neighbors("Fay", depth=1)
    assert [e.name for e in hood.entities] == ["Berlin"]
    hood2 = await db.neighbors("Fay", depth=2, include_expired=True)
    assert {e.name: hood2.depths[e.id] for e in hood2.entities} == {"Berlin": 1, "Oslo": 1, "Germany": 2}
    old = await db.neighbors("Fay", as_of="2021-01-01")
    assert [e.name for e in old.entities] == ["Oslo"]
    assert await db.neighbors("Nobody") is None
    with pytest.raises(ValidationError):
        await db.neighbors("Fay", depth=0)


def test_extraction_patterns():
    ner = RegexExtractor()

    def rel(text: str, speaker: str | None = "Me"):
        return [(m.subject, m.predicate, m.object, m.ends) for m in
                extract_relation_mentions(text, ner.extract(text), speaker=speaker)]

    assert rel("Alice works at Acme") == [("Alice", "works_at", "Acme", False)]
    assert rel("Alice moved to New York last year.") == [("Alice", "lives_in", "New York", False)]
    assert rel("Bob lives in Paris and works at Google.") == [("Bob", "lives_in", "Paris", False),
                                                              ("Bob", "works_at", "Google", False)]
    assert rel("I have lived in Oslo for years") == [("Me", "lives_in", "Oslo", False)]
    assert rel("I work at Microsoft", speaker=None) == []
    assert rel("My sister is Jane.") == [("Me", "sister", "Jane", False)]
    assert rel("Carol said Bob works at Acme") == [("Bob", "works_at", "Acme", False)]
    assert rel("Alice left Acme in May") == [("Alice", "works_at", "Acme", True)]
    assert rel("Alice met Bob in Paris") == []


async def test_speaker_first_person_and_leaving(db):
    await db.create_session(session_id="loc", user_id="u1")
    await db.add_messages("loc", [
        {"role": "user", "name": "Caroline", "content": "I moved to Sweden four years ago.", "created_at": "2023-05-08"},
        {"role": "user", "name": "Melanie", "content": "My husband is Paul.", "created_at": "2023-05-08T00:01"},
        {"role": "assistant", "content": "I work at OpenAI.", "created_at": "2023-05-08T00:02"},
    ])
    await db.commit_session("loc")
    assert [(r.predicate, r.object) for r in await db.facts("Caroline")] == [("lives_in", "Sweden")]
    assert [(r.predicate, r.object) for r in await db.facts("Melanie")] == [("husband", "Paul")]
    assert await db.get_entity("OpenAI") is None  # assistant "I" has no speaker
    await _say(db, "later", "Caroline moved out of Sweden.", "2024-01-01")
    assert await db.facts("Caroline") == []
    assert (await db.timeline("Caroline"))[0].valid_to == utc(2024, 1, 1)


async def test_backfill_after_a_commit_leaves_the_turns_timeline_alone(db):
    # The commit's summary ("Facts: Ann joined Google ...") is dated at the session's end: reading it again reopened
    # the ended job there, a new zero-length relation on every call.
    s = await db.create_session(user_id="ann")
    await db.add_message(s.id, "user", "I've just joined Google.", name="Ann", created_at="2024-01-05")
    await db.add_message(s.id, "user", "I quit Google.", name="Ann", created_at="2024-03-01")
    await db.commit_session(s.id)
    before = [(r.object, r.valid_from, r.valid_to) for r in await db.timeline("Ann")]
    assert before == [("Google", utc(2024, 1, 5), utc(2024, 3, 1))]
    assert await db.extract_relations() == 0
    assert await db.extract_relations() == 0
    assert [(r.object, r.valid_from, r.valid_to) for r in await db.timeline("Ann")] == before
    assert await db.facts("Ann") == []


async def test_backfill_from_memories_and_graph_candidates(db):
    db.relator.enabled = False  # backfill of memories whose queued extraction has not run (or predates it)
    e = await db.add_memory("Grace works at Umbrella", event_time="2024-02-02", user_id="u1")
    other = await db.add_memory("Heidi lives in Rome", user_id="u2")
    assert await db.extract_relations() == 2
    assert await db.extract_relations() == 0  # idempotent
    fact = (await db.facts("Grace"))[0]
    assert fact.source_entry_id == e.id and fact.valid_from == utc(2024, 2, 2)
    from agentbase.retrieval.filters import Filters

    rids = await graph_candidates(db, ["grace"], Filters(user_id="u1"))
    row = await db.db.fetchone("SELECT id FROM entries WHERE rid = ?", (rids[0],))
    assert row[0] == e.id and len(rids) == 1
    assert await graph_candidates(db, ["Heidi"], Filters(user_id="u1")) == []
    assert other.id


async def test_add_memory_feeds_the_graph_at_its_event_time(db):
    await db.add_memory("Dana works at Acme Corp.", event_time="2023-03-01", user_id="u1")
    await db.add_memory("Dana joined Globex last month.", event_time="2024-05-01", user_id="u1")
    assert await db.flush(timeout=30) == 0
    assert [(r.object, r.valid_from, r.valid_to) for r in await db.facts("Dana", as_of="2023-06-01")] == \
        [("Acme Corp", utc(2023, 3, 1), utc(2024, 5, 1))]
    assert [(r.object, r.valid_to) for r in await db.facts("Dana", as_of="2024-06-01")] == [("Globex", None)]
    assert await db.extract_relations() == 0  # already read: the backfill finds nothing new


async def test_queued_relations_survive_a_close_and_skip_deleted_memories(db_path):
    from tests.conftest import make_db

    first = make_db(db_path)
    await first.initialize()
    first.relator.enabled = False  # the process ends before its relation jobs run
    await first.add_memory("Erin lives in Oslo.", user_id="u1")
    gone = await first.add_memory("Frank works at Initech.", user_id="u1")
    await first.delete(gone.id)
    await first.close()
    second = make_db(db_path)
    try:
        assert await second.flush(timeout=30) == 0
        assert [(r.predicate, r.object) for r in await second.facts("Erin")] == [("lives_in", "Oslo")]
        assert await second.facts("Frank") == []
        rows = await second.db.fetchall("SELECT status FROM jobs WHERE kind = 'relations'")
        assert sorted(r[0] for r in rows) == ["done", "done"]
    finally:
        await second.close()


async def test_bad_input_is_rejected(db):
    with pytest.raises(ValidationError):
        await db.add_relation("A", "", "B")
    with pytest.raises(ValidationError):
        await db.add_relation("A", "knows", "a")  # same entity
    with pytest.raises(ValidationError):
        await db.add_relation("A", "knows", "B", valid_from="2024-02-01", valid_to="2024-01-01")
    with pytest.raises(ValidationError):
        await db.facts("A", direction="sideways")
    assert await db.facts("never seen") == []
    assert await db.timeline("never seen") == []


def test_sync_twins_exist(tmp_path):
    from tests.conftest import make_db

    sdb = make_db(tmp_path / "sync.db").sync
    try:
        sdb.add_relation("Ann", "lives_in", "Oslo", valid_from="2020-01-01")
        assert [r.object for r in sdb.facts("ann")] == ["Oslo"]
        assert sdb.neighbors("Oslo").entities[0].name == "Ann"
        assert sdb.active_sessions() == []
    finally:
        sdb.close()


async def test_valid_at_reads_any_time_argument(db):
    r = await db.add_relation("Ann", "works_at", "Acme", valid_from="2024-01-01", valid_to="2024-06-01")
    assert r.valid_at("2024-03-01") and r.valid_at(datetime(2024, 3, 1)) and r.valid_at(1704067200)
    assert not r.valid_at(date(2024, 6, 1)) and not r.valid_at("2023-12-31")
    with pytest.raises(ValidationError):
        r.valid_at("bar")


async def test_deleting_a_memory_forgets_its_relations_and_reopens_what_they_closed(db):
    acme = await db.add_memory("Dana works at Acme Corp.", event_time="2023-03-01", user_id="u1")
    globex = await db.add_memory("Dana joined Globex.", event_time="2024-05-01", user_id="u1")
    assert await db.flush(timeout=30) == 0
    assert [r.object for r in await db.facts("Dana")] == ["Globex"]
    assert await db.delete(globex.id)
    assert [(r.object, r.valid_to) for r in await db.facts("Dana")] == [("Acme Corp", None)]  # reopened
    assert [r.object for r in await db.timeline("Dana")] == ["Acme Corp"]
    assert await db.delete_all(user_id="u1") == 1  # what a user asks to forget leaves no relation behind
    assert await db.timeline("Dana") == [] and acme.id
