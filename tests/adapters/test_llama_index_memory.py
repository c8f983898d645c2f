"""AgentBaseMemoryBlock on real SQLite files in the core environment (the full suite is compat_tests/llama_index)."""

from __future__ import annotations

import importlib
import sys

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core.llms import ChatMessage  # noqa: E402
from llama_index.core.memory import Memory  # noqa: E402

import agentbase.adapters as adapters  # noqa: E402
from agentbase import ConfigError, MissingDependencyError, ValidationError  # noqa: E402


def test_exported_lazily():
    assert "AgentBaseMemoryBlock" in adapters.__all__
    from agentbase.adapters.llama_index_memory import AgentBaseMemoryBlock

    assert adapters.AgentBaseMemoryBlock is AgentBaseMemoryBlock


async def test_flush_then_recall_in_a_new_session(db):
    block = adapters.AgentBaseMemoryBlock(db, user_id="alice")
    first = Memory.from_defaults(session_id="one", token_limit=30, token_flush_size=10, memory_blocks=[block])
    await first.aput_messages([ChatMessage(role="user", content="My favourite city is Kyoto, I go every spring."),
                               ChatMessage(role="assistant", content="Kyoto in spring is beautiful."),
                               ChatMessage(role="user", content="Please also note that I am allergic to peanuts."),
                               ChatMessage(role="assistant", content="Noted, no peanuts.")])
    stored = await db.get_messages(block.session_for("one"))
    assert stored and stored[0].content == "My favourite city is Kyoto, I go every spring."
    second = Memory.from_defaults(session_id="two", token_limit=4000, memory_blocks=[block])
    await second.aput(ChatMessage(role="user", content="Which city do I visit in spring?"))
    system = (await second.aget())[0]
    assert system.role.value == "system" and "Kyoto" in system.content


async def test_bad_input_writes_nothing(db):
    import pydantic

    with pytest.raises(pydantic.ValidationError):
        adapters.AgentBaseMemoryBlock(db, user_id="")
    with pytest.raises(pydantic.ValidationError):
        adapters.AgentBaseMemoryBlock(db, user_id="alice", token_budget=-5)
    block = adapters.AgentBaseMemoryBlock(db, user_id="alice")
    with pytest.raises(ValidationError):
        await block.aput([ChatMessage(role="user", content="I live in Oslo"), "not a message"])
    assert await db.list_sessions() == [] and await db.count(user_id="alice") == 0


def test_a_bad_path_fails_when_the_block_is_made(tmp_path):
    with pytest.raises(ConfigError):
        adapters.AgentBaseMemoryBlock(str(tmp_path), user_id="alice")


def test_missing_framework_raises_missing_dependency(monkeypatch):
    monkeypatch.setitem(sys.modules, "llama_index.core.memory.memory", None)
    monkeypatch.delitem(sys.modules, "agentbase.adapters.llama_index_memory", raising=False)
    with pytest.raises(MissingDependencyError) as err:
        importlib.import_module("agentbase.adapters.llama_index_memory")
    assert err.value.extra == "llama-index"
