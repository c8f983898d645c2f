"""AgentBaseSession (OpenAI Agents SDK) in the core environment: the item <-> message mapping, the reserved
metadata key, owner scope and bad input. The differential replay against ``SQLiteSession`` and the Runner runs
are in compat_tests/openai_agents."""

from __future__ import annotations

import json

import pytest

from agentbase import NotFoundError, ValidationError

from tests.conftest import make_db

pytest.importorskip("agents")

from agentbase.adapters import AgentBaseSession, OpenAIAssistantAdapter  # noqa: E402
from agentbase.adapters.openai_agents import (  # noqa: E402
    OpenAIAgentsValidationError,
    item_to_row,
    row_to_items,
)


@pytest.fixture
def sdb(tmp_path):
    db = make_db(tmp_path / "agents.db")
    yield db
    db.sync.close()


def test_item_to_row_maps_roles_text_and_tool_calls():
    row = item_to_row({"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"})
    assert (row["role"], row["content"]) == ("assistant", "")
    assert row["tool_calls"] == [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]
    row = item_to_row({"type": "function_call_output", "call_id": "c1", "output": [{"type": "input_text",
                                                                                   "text": "42"}]})
    assert (row["role"], row["content"], row["tool_call_id"]) == ("tool", "42", "c1")
    row = item_to_row({"role": "assistant", "content": [{"type": "output_text", "text": "a"},
                                                        {"type": "refusal", "refusal": "no"}]})
    assert (row["role"], row["content"]) == ("assistant", "a\nno")
    assert item_to_row({"type": "reasoning", "summary": [{"text": "hm"}]})["role"] == "reasoning"
    assert item_to_row({"type": "User Weird"})["role"] == "item"  # not a role name: a neutral role
    assert item_to_row({"type": "user"})["role"] == "item"  # never a turn role by accident
    item = {"role": "user", "content": "x \ud83d", "k": (1,)}
    row = item_to_row(item)
    assert row["content"] == "x \ufffd" and row["metadata"]["openai_agents"] == json.dumps(item)


@pytest.mark.parametrize("bad", ["text", 1, None, ["a", "list"], {"k": {1, 2}}, {"k": object()}])
def test_item_to_row_refuses_what_is_not_a_json_dict(bad):
    with pytest.raises(OpenAIAgentsValidationError):
        item_to_row(bad)


async def test_items_round_trip_and_the_key_is_hidden_from_openai_threads(sdb):
    session = AgentBaseSession("t", sdb, user_id="alice")
    items = [{"role": "user", "content": "hello", "b": 1, "a": 2},
             {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}", "id": "fc_1"}]
    await session.add_items(items)
    assert json.dumps(await session.get_items()) == json.dumps(items)
    assert [row_to_items(m) for m in await sdb.get_messages("t")] == [[items[0]], [items[1]]]
    with OpenAIAssistantAdapter(sdb) as threads:
        shown = threads.list_messages("t")["data"]
    assert [m["metadata"] for m in shown] == [{}]  # the tool call is no thread message; the key is not shown


async def test_another_owners_session_reads_empty_and_refuses_writes(sdb):
    await sdb.create_session(session_id="s", user_id="alice")
    await sdb.add_message("s", "user", "alice only")
    bob = AgentBaseSession("s", sdb, user_id="bob")
    assert await bob.get_items() == [] and await bob.pop_item() is None
    with pytest.raises(NotFoundError):
        await bob.add_items([{"role": "user", "content": "bob"}])
    assert [m.content for m in await sdb.get_messages("s")] == ["alice only"]


async def test_bad_arguments_are_typed_errors(sdb):
    from agents.exceptions import UserError

    with pytest.raises(OpenAIAgentsValidationError):
        AgentBaseSession("", sdb)
    with pytest.raises(OpenAIAgentsValidationError):
        AgentBaseSession("s", sdb, auto_commit="yes")
    session = AgentBaseSession("s", sdb)
    with pytest.raises(UserError):
        await session.get_items(limit="2")
    with pytest.raises(ValidationError):
        await session.add_items([{"role": "user", "content": "ok"}, "bad"])
    assert await sdb.get_messages("s") == []
