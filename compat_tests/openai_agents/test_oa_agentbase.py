"""What ``AgentBaseSession`` adds over ``SQLiteSession``: the conversation is an AgentBase session of its owner,
``find()`` searches what was said, other adapters read it, another owner's session is refused, and bad input
gets a typed error and writes nothing."""

from __future__ import annotations

import pytest
from agents import Agent, Runner
from agents.exceptions import UserError
from fake_model import FixedModel

from agentbase.adapters import AgentBaseSession, OpenAIAssistantAdapter
from agentbase.adapters.openai_agents import OpenAIAgentsValidationError
from agentbase.errors import NotFoundError, UsageError, ValidationError


def turn_texts(results):
    return [r.entry.l2_full for r in results if r.entry.category == "turn"]


async def test_find_finds_what_was_said_in_a_run(db):
    session = AgentBaseSession("trip", db, user_id="alice")
    agent = Agent(name="travel", model=FixedModel("Lisbon is lovely in spring.", "You said Lisbon."))
    await Runner.run(agent, "I am moving to Lisbon next month", session=session)
    found = await db.find("Lisbon", user_id="alice")
    assert "I am moving to Lisbon next month" in turn_texts(found)
    assert "Lisbon is lovely in spring." in turn_texts(found)
    assert await db.find("Lisbon", user_id="bob") == []  # the memories are alice's
    stored = await db.get_session("trip")
    assert stored.user_id == "alice"
    await Runner.run(agent, "Where am I moving?", session=session)
    report = await session.commit()  # auto_commit already committed everything
    assert report["messages"] == 0


async def test_without_auto_commit_find_waits_for_commit(db):
    session = AgentBaseSession("manual", db, user_id="alice", auto_commit=False)
    assert (await session.commit())["messages"] == 0  # nothing stored yet
    await session.add_items([{"role": "user", "content": "My bicycle is a green Brompton"}])
    assert turn_texts(await db.find("Brompton bicycle", user_id="alice")) == []
    report = await session.commit()
    assert report["turns"] == 1 and report["enriched"] is True
    assert turn_texts(await db.find("Brompton bicycle", user_id="alice")) == ["My bicycle is a green Brompton"]


async def test_pop_takes_its_turn_memory_with_it_and_clear_keeps_memories(db):
    session = AgentBaseSession("undo", db, user_id="alice")
    await session.add_items([{"role": "user", "content": "My favourite colour is teal"},
                             {"role": "user", "content": "Oops, I meant my favourite cheese is brie"}])
    assert len(turn_texts(await db.find("favourite", user_id="alice"))) == 2
    popped = await session.pop_item()
    assert popped == {"role": "user", "content": "Oops, I meant my favourite cheese is brie"}
    assert turn_texts(await db.find("favourite", user_id="alice")) == ["My favourite colour is teal"]
    await session.clear_session()
    assert await session.get_items() == []
    assert turn_texts(await db.find("teal", user_id="alice")) == ["My favourite colour is teal"]


async def test_items_map_to_message_columns(db):
    session = AgentBaseSession("columns", db)
    await session.add_items([
        {"role": "user", "content": [{"type": "input_text", "text": "weather?"}]},
        {"role": "developer", "content": "be brief"},
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "call the tool"}]},
        {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "-3C"},
        {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
         "content": [{"type": "output_text", "text": "Cold.", "annotations": []}]},
    ])
    rows = await db.get_messages("columns")
    assert [(m.role, m.content) for m in rows] == [("user", "weather?"), ("developer", "be brief"),
                                                   ("reasoning", "call the tool"), ("assistant", ""),
                                                   ("tool", "-3C"), ("assistant", "Cold.")]
    assert rows[3].tool_calls == [{"id": "call_1", "type": "function",
                                   "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]
    assert rows[4].tool_call_id == "call_1"
    # the OpenAI Conversations view of the same session: the tool call and its output are items, and the
    # adapter's own metadata key is not shown as user metadata
    with OpenAIAssistantAdapter(db) as threads:
        items = threads.list_items("columns", order="asc")["data"]
    assert [i["type"] for i in items] == ["message", "message", "message", "function_call",
                                          "function_call_output", "message"]
    assert items[3]["call_id"] == "call_1" and items[4]["output"] == "-3C"


async def test_messages_written_by_other_adapters_read_as_items(db):
    await db.create_session(session_id="shared", user_id="alice")
    await db.add_message("shared", "human", "hi from LangChain")
    await db.add_message("shared", "assistant", "", tool_calls=[
        {"id": "call_9", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}])
    await db.add_message("shared", "tool", "found it", tool_call_id="call_9")
    await db.add_message("shared", "critic", "no item form")  # left out
    await db.add_message("shared", "ai", "done")
    session = AgentBaseSession("shared", db, user_id="alice")
    assert await session.get_items() == [
        {"role": "user", "content": "hi from LangChain"},
        {"type": "function_call", "call_id": "call_9", "name": "lookup", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_9", "output": "found it"},
        {"role": "assistant", "content": "done"}]
    assert await session.get_items(limit=2) == (await session.get_items())[-2:]
    assert await session.pop_item() == {"role": "assistant", "content": "done"}
    # a run continues the conversation: the model sees the other adapter's messages as history
    model = FixedModel("ok")
    await Runner.run(Agent(name="a", model=model), "next", session=session)
    assert model.inputs[0][0] == {"role": "user", "content": "hi from LangChain"}


async def test_another_owners_session_is_unknown_and_refuses_writes(db):
    bob = AgentBaseSession("bobs", db, user_id="bob")
    await bob.add_items([{"role": "user", "content": "bob's secret"}])
    alice = AgentBaseSession("bobs", db, user_id="alice")
    assert await alice.get_items() == [] and await alice.pop_item() is None
    with pytest.raises(NotFoundError):
        await alice.add_items([{"role": "user", "content": "alice writes"}])
    with pytest.raises(NotFoundError):
        await alice.clear_session()
    with pytest.raises(NotFoundError):
        await alice.commit()
    assert await bob.get_items() == [{"role": "user", "content": "bob's secret"}]


@pytest.mark.parametrize("bad", [
    ["not a dict"],
    [{"role": "user", "content": "ok"}, 42],
    [{"role": "user", "content": "a set", "tags": {"x"}}],
    [{"role": "user", "content": "bytes", "raw": b"\x00"}],
    {"role": "user", "content": "a dict, not a list"},
    "a string",
])
async def test_bad_items_raise_and_write_nothing(db, bad):
    session = AgentBaseSession("bad-items", db, user_id="alice")
    await session.add_items([{"role": "user", "content": "kept"}])
    with pytest.raises(OpenAIAgentsValidationError) as err:
        await session.add_items(bad)
    assert isinstance(err.value, UserError) and isinstance(err.value, ValidationError)
    assert await session.get_items() == [{"role": "user", "content": "kept"}]
    assert len(await db.get_messages("bad-items")) == 1


@pytest.mark.parametrize("limit", ["3", 2.5, True, [1]])
async def test_a_limit_that_is_not_an_int_raises(db, limit):
    session = AgentBaseSession("bad-limit", db)
    await session.add_items([{"role": "user", "content": "x"}])
    with pytest.raises(OpenAIAgentsValidationError, match="limit must be an int"):
        await session.get_items(limit=limit)


@pytest.mark.parametrize("session_id", ["", None, 7, "x" * 257, "nul\x00"])
def test_a_bad_session_id_raises_before_anything_opens(db, session_id):
    with pytest.raises(OpenAIAgentsValidationError, match="session_id"):
        AgentBaseSession(session_id, db)
    with pytest.raises(UserError):
        AgentBaseSession("ok", db, user_id="")
    assert db.sync.list_sessions() == []


async def test_closing_hands_the_file_back_and_refuses_calls(db_path):
    session = AgentBaseSession("paths", str(db_path), user_id="alice")
    await session.add_items([{"role": "user", "content": "through a path"}])
    session.close()
    session.close()  # idempotent
    with pytest.raises(UsageError, match="closed"):
        await session.get_items()
    again = AgentBaseSession("paths", db_path, user_id="alice")
    assert await again.get_items() == [{"role": "user", "content": "through a path"}]
    again.close()
