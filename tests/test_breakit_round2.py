"""Regressions from a second break-it pass: owner checks that must not be cached, demo paths, flags, times."""

from __future__ import annotations

import subprocess
import sys

import pytest

from agentbase import ConfigError, ValidationError, load_settings

from .conftest import make_db


def test_llama_index_store_rechecks_a_key_it_wrote_after_another_user_took_it(tmp_path):
    pytest.importorskip("llama_index.core")
    from llama_index.core.base.llms.types import ChatMessage

    from agentbase.adapters import AgentBaseChatStore

    db = make_db(tmp_path / "k.db")
    try:
        a1, a2, bob = (AgentBaseChatStore(db, user_id=u) for u in ("alice", "alice", "bob"))
        a1.add_message("k", ChatMessage(role="user", content="alice hello"))
        a2.delete_messages("k")
        bob.add_message("k", ChatMessage(role="user", content="bob private"))
        assert a1.get_messages("k") == []
        with pytest.raises(ValidationError):
            a1.add_message("k", ChatMessage(role="user", content="alice again"))
        assert a1.delete_messages("k") is None
        assert [m.content for m in bob.get_messages("k")] == ["bob private"]
    finally:
        db.sync.close()


@pytest.mark.parametrize("name", ["a.db#notes", "b?x.db", "c%41.db"])
def test_demo_refuses_a_foreign_file_whose_name_needs_uri_escaping(tmp_path, name):
    import sqlite3

    marked = sqlite3.connect(tmp_path / "a.db")  # a demo's file, which the unescaped URI check read instead
    marked.execute("CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT)")
    marked.execute("INSERT INTO meta VALUES ('created_by', 'agentbase demo')")
    marked.commit()
    marked.close()
    target = tmp_path / name
    target.write_text("my precious notes")
    res = subprocess.run([sys.executable, "-m", "agentbase.cli", "demo", "--db", str(target), "--embedder", "hash"],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert res.returncode != 0 and "not written by `agentbase demo`" in res.stderr + res.stdout
    assert target.read_text() == "my precious notes"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted({"a.db", name})


async def test_flags_must_be_bools_and_update_session_needs_a_dict(db):
    s = await db.create_session(session_id="S", user_id="u", metadata={"important": "keep"})
    await db.add_message(s.id, "user", "My favorite color is blue.")
    await db.commit_session(s.id)
    with pytest.raises(ValidationError):
        await db.delete_session("S", delete_memories="no")
    with pytest.raises(ValidationError):
        await db.add_memory("x", dedup="no")
    with pytest.raises(ValidationError):
        await db.find("color", trace="yes")
    with pytest.raises(ValidationError):
        await db.update_session("S", metadata=None)
    assert (await db.get_session("S")).metadata == {"important": "keep"}
    assert len(await db.list(user_id="u")) > 0


async def test_time_of_day_alone_is_refused_and_a_dated_offset_is_that_day_there(db):
    for text in ("10:00", "noon", "at 10am"):
        with pytest.raises(ValidationError, match="needs a date"):
            await db.add_memory("x", event_time=text)
    e = await db.add_memory("offset day", event_time="2024-05-31+02:00", user_id="t")
    assert e.event_time.isoformat() == "2024-05-30T22:00:00+00:00"
    assert [r.id for r in await db.list(user_id="t", date_from="2024-05-31+02:00", date_to="2024-05-31+02:00")] \
        == [e.id]


async def test_a_curly_apostrophe_in_the_query_gets_the_strong_entity_boost(db):
    e = await db.add_memory("Conan O'Brien hosted the show", user_id="u")
    for query in ("What did Conan O'Brien do?", "What did Conan O’Brien do?"):
        hits = await db.find(query, user_id="u", mode="fts")
        assert hits[0].entry.id == e.id and hits[0].score_parts["ner_boost"] == pytest.approx(1.3), query


async def test_resource_arguments_are_checked(db):
    with pytest.raises(ValidationError):
        await db.add_resource("u://4", "abc", mime_type=5)
    with pytest.raises(ValidationError, match="user_idd"):
        await db.add_resource("u://5", "abc", user_idd="alice")
    assert await db.list(context_type="resource") == []


async def test_message_without_content_is_refused_unless_it_calls_tools(db):
    s = await db.create_session(user_id="u")
    with pytest.raises(ValidationError):
        await db.add_messages(s.id, [{"role": "user", "content": "ok"}, {"role": "user"}])
    with pytest.raises(ValidationError):
        await db.add_message(s.id, "user", None)
    assert await db.get_messages(s.id) == []


async def test_duplicate_keeps_stored_metadata_values_and_confidence_steps_exactly(db):
    first = await db.add_memory("I like oolong", user_id="y", confidence=0.5, metadata={"x": 1})
    await db.add_memory("I like oolong", user_id="y", metadata={"x": 9, "y": 2})
    await db.add_memory("I like oolong", user_id="y")
    await db.add_memory("I like oolong", user_id="y")
    stored = await db.get(first.id)
    assert stored.metadata == {"x": 1, "y": 2} and stored.confidence == 0.8


def test_unparseable_settings_in_the_environment_are_a_config_error(monkeypatch):
    monkeypatch.setenv("AGENTBASE_RETRIEVAL", "x")
    with pytest.raises(ConfigError, match="environment"):
        load_settings()


