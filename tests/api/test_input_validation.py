"""Bad input raises a typed AgentBase error (ValidationError / ConfigError) and changes nothing in the file.

Each case here used to leak a builtin or third-party error (TypeError, OverflowError, ValueError,
UnicodeEncodeError, AttributeError, pydantic's ValidationError) or was silently accepted or altered.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentbase import AgentBase, ConfigError, SyncAgentBase, ValidationError, load_settings
from agentbase.embeddings import HashEmbedder

BIG = 10**30  # beyond SQLite's 64-bit INTEGER
NAN, INF = float("nan"), float("inf")


async def _snapshot(db) -> dict[str, list]:
    """Every row of the tables a bad call could touch, read from the file through the engine's own connection
    (a second SQLite library in this process would break the engine's POSIX locks when it closes the file)."""
    return {t: sorted(map(repr, await db.db.fetchall(f"SELECT * FROM {t}")))
            for t in ("entries", "entry_tags", "entry_history", "sessions", "messages", "jobs")}


@pytest.fixture
async def seeded(db):
    entry = await db.add_memory("hello world", metadata={"k": "v"}, tags=["t"])
    session = await db.create_session(session_id="s1", metadata={"m": 1})
    await db.add_message("s1", "user", "hi there")
    return entry, session


async def _rejected(db, db_path, call, error=ValidationError):
    await db.flush()  # embedding jobs of earlier writes settle first
    before = await _snapshot(db)
    with pytest.raises(error):
        await call()
    assert await _snapshot(db) == before


# ---------------------------------------------------------------- filters


@pytest.mark.parametrize("filters", [
    {"category": 5}, {"category": "a\x00"}, {"category": [None]}, {"context_type": "zzz"}, {"scope": "zzz"},
    {"context_type": ["memory", "zzz"]}, {"scope": 3}, {"metadata": {"k": BIG}}, {"metadata": {"k": -BIG}},
    {"metadata": {"k": NAN}}, {"metadata": {"k": "\ud800"}}, {"tags": {"t": 1}}, {"include_archived": "yes"},
])
async def test_bad_filters_are_validation_errors(db, db_path, seeded, filters):
    await _rejected(db, db_path, lambda: db.find("hello", **filters))
    await _rejected(db, db_path, lambda: db.count(**filters))
    await _rejected(db, db_path, lambda: db.list(**filters))


async def test_unknown_context_type_or_scope_raises_known_ones_filter(db, db_path, seeded):
    entry, _ = seeded
    await _rejected(db, db_path, lambda: db.find("hello", context_type="zzz"))
    await _rejected(db, db_path, lambda: db.find("hello", scope="zzz"))
    assert [r.entry.id for r in await db.find("hello", mode="fts", context_type="memory", scope="global")] == [entry.id]
    assert await db.count(context_type=["memory", "skill"], scope=("global",), category="fact") == 1


async def test_delete_all_validates_its_filters(db, db_path, seeded):
    await _rejected(db, db_path, lambda: db.delete_all(context_type="zzz"))
    await _rejected(db, db_path, lambda: db.delete_all(category=5))


# ---------------------------------------------------------------- integers


async def test_offsets_and_seq_bounds_are_64_bit_ints(db, db_path, seeded):
    await _rejected(db, db_path, lambda: db.list(offset=BIG))
    await _rejected(db, db_path, lambda: db.list_sessions(offset=BIG))
    await _rejected(db, db_path, lambda: db.list_sessions(offset=-1))
    await _rejected(db, db_path, lambda: db.list_sessions(offset="1"))
    for kw in ({"after_seq": BIG}, {"before_seq": -BIG}, {"after_seq": "1"}, {"before_seq": 1.5}):
        await _rejected(db, db_path, lambda kw=kw: db.get_messages("s1", **kw))
    assert [m.seq for m in await db.get_messages("s1", after_seq=0)] == [1]
    assert len(await db.list_sessions(offset=0)) == 1


async def test_flush_timeout_must_be_a_number(db, db_path, seeded):
    for bad in ("1", NAN, -1, True):
        await _rejected(db, db_path, lambda bad=bad: db.flush(timeout=bad))
    assert await db.flush(timeout=5) == 0


@pytest.mark.parametrize("chunk_chars", ["abc", NAN, 0, -5, 199, 1500.0, True])
async def test_add_resource_chunk_chars_below_minimum_or_not_int(db, db_path, seeded, chunk_chars):
    await _rejected(db, db_path, lambda: db.add_resource("u://x", "some text", chunk_chars=chunk_chars))


async def test_add_resource_chunk_chars_minimum_is_200(db, db_path):
    await _rejected(db, db_path, lambda: db.add_resource("u://x", "word " * 200, chunk_chars=199))
    assert len(await db.add_resource("u://x", "word " * 200, chunk_chars=200)) > 1


# ---------------------------------------------------------------- metadata


BAD_METADATA = [{1: "a"}, {"x": {1}}, {"x": "\ud800"}, {"\ud800": 1}, {"x": NAN}, {"x": [INF]}, {"x": {"y": -INF}},
                {"x": b"bytes"}, {"x": {2: "nested int key"}}, ["not", "a", "dict"]]


@pytest.mark.parametrize("metadata", BAD_METADATA, ids=range(len(BAD_METADATA)))
async def test_bad_metadata_is_rejected_everywhere_the_same_way(db, db_path, seeded, metadata):
    entry, _ = seeded
    await _rejected(db, db_path, lambda: db.add_memory("new text", metadata=metadata))
    await _rejected(db, db_path, lambda: db.update(entry.id, metadata=metadata))
    await _rejected(db, db_path, lambda: db.add_resource("u://x", "text", metadata=metadata))
    await _rejected(db, db_path, lambda: db.add_skill("skill", "does things", metadata=metadata))
    await _rejected(db, db_path, lambda: db.create_session(session_id="s2", metadata=metadata))
    await _rejected(db, db_path, lambda: db.update_session("s1", metadata=metadata))
    await _rejected(db, db_path, lambda: db.add_message("s1", "user", "x", metadata=metadata))
    if isinstance(metadata, dict):
        await _rejected(db, db_path, lambda: db.add_message("s1", "tool", "x", tool_calls=[metadata]))
    msg = (await db.get_messages("s1"))[0]
    await _rejected(db, db_path, lambda: db.update_message("s1", msg.id, metadata=metadata))


async def test_update_returns_what_it_stores(db, db_path, seeded):
    entry, _ = seeded
    await _rejected(db, db_path, lambda: db.update(entry.id, metadata={1: "one"}))  # was returned as {1: ...}
    updated = await db.update(entry.id, metadata={"one": 1, "nested": {"a": [1, 2.5, None, True]}})
    assert updated.metadata == (await db.get(entry.id)).metadata == {"one": 1, "nested": {"a": [1, 2.5, None, True]}}
    stored = await db.db.fetchone("SELECT metadata FROM entries WHERE id = ?", (entry.id,))
    assert json.loads(stored[0]) == updated.metadata


# ---------------------------------------------------------------- tags, category, messages


async def test_tags_must_be_a_list_of_strings(db, db_path, seeded):
    entry, _ = seeded
    await _rejected(db, db_path, lambda: db.add_memory("tagged", tags={"a": 1}))
    await _rejected(db, db_path, lambda: db.add_memory("tagged", tags={"a"}))
    await _rejected(db, db_path, lambda: db.update(entry.id, tags={"a": 1}))
    assert (await db.add_memory("tuple tags", tags=("a", "b"))).tags[:2] == ["a", "b"]


async def test_category_with_nul_is_rejected(db, db_path, seeded):
    entry, _ = seeded
    await _rejected(db, db_path, lambda: db.add_memory("x", category="a\x00"))
    await _rejected(db, db_path, lambda: db.update(entry.id, category="a\x00"))


async def test_replace_messages_needs_a_list(db, db_path, seeded):
    await _rejected(db, db_path, lambda: db.replace_messages("s1", None))
    await _rejected(db, db_path, lambda: db.replace_messages("s1", "hello"))


@pytest.mark.parametrize("name", ["   ", "\t", "_", "__", "-", "!!!", "\u200b"])
async def test_a_speaker_name_without_letters_or_digits_is_refused_before_it_blocks_commits(db, db_path, seeded,
                                                                                            name):
    await _rejected(db, db_path, lambda: db.add_message("s1", "user", "zebra?", name=name))
    await _rejected(db, db_path, lambda: db.add_messages("s1", [{"role": "user", "content": "ok", "name": "Bob"},
                                                                {"role": "user", "content": "x", "name": name}]))
    result = await db.commit_session("s1")  # the session still commits
    assert result["turns"] == 1


# ---------------------------------------------------------------- construction and settings


def test_constructor_arguments_are_config_errors(db_path):
    with pytest.raises(ConfigError):
        SyncAgentBase(path=None, embedder="hash")
    with pytest.raises(ConfigError):
        AgentBase(5)
    with pytest.raises(ConfigError):
        SyncAgentBase(path=db_path, embedder=5)
    with pytest.raises(ConfigError):
        AgentBase(db_path, embedder=object())
    with pytest.raises(ConfigError):
        AgentBase(db_path, settings=["retrieval"])
    with pytest.raises(ConfigError):
        AgentBase(db_path, settings={"retrieval": {"bogus": 1}})
    assert not db_path.exists()


@pytest.mark.parametrize("path", [":memory:", "file::memory:?cache=shared", "a\0b.db"])
def test_in_memory_or_nul_path_is_a_config_error(path):
    with pytest.raises(ConfigError):
        AgentBase(path)


def test_a_name_starting_with_file_colon_is_that_file(tmp_path, monkeypatch):
    """SQLite builds with URI filenames read "file:x.db" as a URI (the data went to x.db while stats() named
    file:x.db); the name is taken literally."""
    monkeypatch.chdir(tmp_path)
    db = SyncAgentBase(path="file:notes.db", embedder="hash")
    try:
        db.add_memory("User likes green tea", user_id="u")
        assert db.stats()["size_bytes"] > 0
    finally:
        db.close()
    assert (tmp_path / "file:notes.db").is_file() and not (tmp_path / "notes.db").exists()


@pytest.mark.parametrize("path", ["", "   ", "dir"])
def test_empty_or_directory_path_is_a_config_error_at_construction(tmp_path, path):
    """An empty path or a directory fails when the object is made, not at its first call (the OpenAI adapters
    took "" and failed on first use: Path("") is the working directory)."""
    from agentbase.adapters.openai_assistants import OpenAIAssistantAdapter

    (tmp_path / "dir").mkdir()
    target = tmp_path / "dir" if path == "dir" else path
    with pytest.raises(ConfigError, match="directory" if path == "dir" else "empty"):
        AgentBase(target)
    with pytest.raises(ConfigError):
        OpenAIAssistantAdapter(str(target))
    assert list((tmp_path / "dir").iterdir()) == []


def test_settings_dict_is_loaded_like_load_settings(db_path):
    db = SyncAgentBase(path=db_path, embedder="hash", settings={"retrieval": {"rrf_k": 33}, "ner": "regex"})
    try:
        assert db.aio.settings.retrieval.rrf_k == 33
        assert db.aio.settings.embedder.provider == "hash"
        assert db.stats()["entries_total"] == 0
    finally:
        db.close()


async def test_embedder_with_bad_dims_is_a_config_error(db_path):
    emb = HashEmbedder(dims=8)
    emb.dims = "8"
    ab = AgentBase(db_path, settings=load_settings(ner="regex"), embedder=emb)
    with pytest.raises(ConfigError):
        await ab.initialize()
    await ab.close()


@pytest.mark.parametrize(("overrides", "name"), [({"retrieval": {"bogus": 1}}, "bogus"),
                                                 ({"storage": {"busy_timeout": 3}}, "busy_timeout"),
                                                 ({"retreival": {"rrf_k": 1}}, "retreival")])
def test_unknown_setting_keys_raise_config_error_naming_them(overrides, name):
    with pytest.raises(ConfigError, match=name):
        load_settings(**overrides)


def test_unknown_key_in_yaml_is_a_config_error_and_benchmark_configs_load(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("retrieval:\n  rrf_k: 30\n  weight_ft: 0.5\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="weight_ft"):
        load_settings(cfg)
    cfg.write_text("retrieval:\n  rrf_k: 30\nretreival:\n  rrf_k: 1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="retreival"):
        load_settings(cfg)
    configs = sorted((Path(__file__).resolve().parents[2] / "benchmarks" / "configs").glob("*.yaml"))
    assert configs
    for path in configs:
        load_settings(path)


@pytest.mark.parametrize(("section", "key"), [("ingest", "turn_context_embed_chars"),
                                              ("retrieval", "assistant_turn_factor"), ("retrieval", "rrf_k")])
def test_numeric_settings_refuse_booleans(section, key):
    """pydantic reads True as 1: "turn_context_embed_chars: true" (the old boolean key's habit) would embed one
    character of context. Loading and assigning both refuse it and change nothing."""
    from agentbase.config import load_settings
    from agentbase.errors import ConfigError

    with pytest.raises(ConfigError, match="boolean"):
        load_settings(**{section: {key: True}})
    settings = load_settings()
    before = getattr(getattr(settings, section), key)
    with pytest.raises(ConfigError, match="boolean"):
        setattr(getattr(settings, section), key, False)
    assert getattr(getattr(settings, section), key) == before
    settings.ingest.drop_vocatives = False  # a boolean setting still takes booleans
    assert settings.ingest.drop_vocatives is False


def test_the_renamed_context_key_says_what_replaced_it():
    from agentbase.config import load_settings
    from agentbase.errors import ConfigError

    with pytest.raises(ConfigError, match="turn_context_embed_chars"):
        load_settings(ingest={"turn_context_embed": False})


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
