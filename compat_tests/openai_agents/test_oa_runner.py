"""``Runner.run`` / ``run_sync`` / ``run_streamed`` (openai-agents 0.24.0) with ``session=``: every run is made on
``SQLiteSession`` and on ``AgentBaseSession`` with the same offline :class:`FixedModel`, and the model must be
given the same history by both (the patterns of the SDK's tests/memory/test_session.py and test_session_limit.py).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from agents import Agent, RunConfig, Runner, function_tool
from agents.memory import SessionSettings
from fake_model import FixedModel, tool_call

METHODS = ["run", "run_sync", "run_streamed"]


def _run_sync_in_thread(agent: Agent, given: Any, **kwargs: Any) -> Any:
    return Runner.run_sync(agent, given, **kwargs)  # run_sync makes its own loop; this thread has none


async def run(method: str, agent: Agent, given: Any, **kwargs: Any) -> Any:
    """One Runner call by ``method``; returns its result (a streamed run is consumed to the end)."""
    if method == "run":
        return await Runner.run(agent, given, **kwargs)
    if method == "run_sync":
        return await asyncio.to_thread(_run_sync_in_thread, agent, given, **kwargs)
    result = Runner.run_streamed(agent, given, **kwargs)
    async for _ in result.stream_events():
        pass
    return result


async def on_both(backends, play) -> dict[str, Any]:
    """``play(session_factory) -> observed`` on both backends; the observations must be equal."""
    seen = {name: await play(open_session) for name, open_session in backends.items()}
    assert json.dumps(seen["agentbase"]) == json.dumps(seen["sqlite"])
    return seen["sqlite"]


@pytest.mark.parametrize("method", METHODS)
async def test_second_turn_sees_the_first_turns_user_and_assistant_items(backends, method):
    async def play(open_session):
        session = open_session("golden-gate", **({"user_id": "alice"} if open_session is backends["agentbase"]
                                                 else {}))
        model = FixedModel("San Francisco", "California")
        agent = Agent(name="guide", model=model, instructions="Answer briefly.")
        first = await run(method, agent, "What city is the Golden Gate Bridge in?", session=session)
        second = await run(method, agent, "What state is it in?", session=session)
        return {"outputs": [first.final_output, second.final_output], "inputs": model.inputs,
                "stored": await session.get_items()}

    seen = await on_both(backends, play)
    assert seen["outputs"] == ["San Francisco", "California"]
    history = seen["inputs"][1]
    assert history[0] == {"content": "What city is the Golden Gate Bridge in?", "role": "user"}
    assert history[1]["role"] == "assistant" and history[1]["content"][0]["text"] == "San Francisco"
    assert history[2] == {"content": "What state is it in?", "role": "user"} and len(history) == 3
    assert len(seen["stored"]) == 4 and seen["stored"][-1]["content"][0]["text"] == "California"


@pytest.mark.parametrize("method", METHODS)
async def test_different_sessions_keep_different_histories(backends, method):
    async def play(open_session):
        model = FixedModel("I like cats", "I like dogs", "Yes, you mentioned cats")
        agent = Agent(name="pets", model=model)
        cats, dogs = open_session("session_1"), open_session("session_2")
        await run(method, agent, "I like cats", session=cats)
        await run(method, agent, "I like dogs", session=dogs)
        await run(method, agent, "What did I say I like?", session=cats)
        return model.inputs

    inputs = await on_both(backends, play)
    assert [i.get("content") for i in inputs[2] if i.get("role") == "user"] == ["I like cats",
                                                                                "What did I say I like?"]


@pytest.mark.parametrize("method", METHODS)
async def test_list_input_is_appended_to_the_stored_history(backends, method):
    history = [{"role": "user", "content": "Earlier message"}, {"role": "assistant", "content": "Saved reply"}]

    async def play(open_session):
        session = open_session("list-input")
        await session.add_items(history)
        model = FixedModel("This should run")
        await run(method, Agent(name="a", model=model), [{"role": "user", "content": "Test message"}],
                  session=session)
        return model.inputs[0]

    assert await on_both(backends, play) == history + [{"role": "user", "content": "Test message"}]


async def test_session_input_callback_sees_the_stored_history(backends):
    async def play(open_session):
        session = open_session("callback")
        await session.add_items([{"role": "user", "content": "Hello there."},
                                 {"role": "assistant", "content": "Hi, I'm here to assist you."}])
        model = FixedModel("I'm a fixed model")

        def only_user(stored, new):
            return [item for item in stored if item["role"] == "user"] + new

        await Runner.run(Agent(name="a", model=model), [{"role": "user", "content": "What is your name?"}],
                         session=session, run_config=RunConfig(session_input_callback=only_user))
        return model.inputs[0]

    assert await on_both(backends, play) == [{"role": "user", "content": "Hello there."},
                                             {"role": "user", "content": "What is your name?"}]


@pytest.mark.parametrize("limit,expected", [(2, ["Message 3", "Reply 3", "Message 4"]), (0, ["Message 4"]),
                                            (None, None), (100, None)])
async def test_run_config_session_settings_limit_bounds_the_history(backends, limit, expected):
    async def play(open_session):
        session = open_session("limit")
        model = FixedModel("Reply 1", "Reply 2", "Reply 3", "Reply 4")
        agent = Agent(name="a", model=model)
        for n in (1, 2, 3):
            await Runner.run(agent, f"Message {n}", session=session)
        await Runner.run(agent, "Message 4", session=session,
                         run_config=RunConfig(session_settings=SessionSettings(limit=limit)))
        return model.inputs[-1]

    given = await on_both(backends, play)
    texts = [i["content"] if isinstance(i["content"], str) else i["content"][0]["text"] for i in given]
    assert texts == (expected or ["Message 1", "Reply 1", "Message 2", "Reply 2", "Message 3", "Reply 3",
                                  "Message 4"])


async def test_session_settings_of_the_session_apply_to_runs(backends):
    async def play(open_session):
        session = open_session("own-limit", session_settings=SessionSettings(limit=1))
        model = FixedModel("one", "two")
        agent = Agent(name="a", model=model)
        await Runner.run(agent, "first", session=session)
        await Runner.run(agent, "second", session=session)
        return model.inputs[-1]

    given = await on_both(backends, play)
    assert len(given) == 2 and given[0]["content"][0]["text"] == "one" and given[1]["content"] == "second"


async def test_a_tool_call_turn_is_stored_and_replayed(backends):
    @function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    async def play(open_session):
        session = open_session("tools")
        model = FixedModel([tool_call("get_weather", {"city": "Paris"}, 1)], "It is sunny in Paris.", "You asked")
        agent = Agent(name="weather", model=model, tools=[get_weather])
        result = await Runner.run(agent, "Weather in Paris?", session=session)
        await Runner.run(agent, "What did I ask?", session=session)
        return {"final": result.final_output, "stored": await session.get_items(), "last": model.inputs[-1]}

    seen = await on_both(backends, play)
    kinds = [i.get("type", "message") for i in seen["stored"]]
    assert kinds[:4] == ["message", "function_call", "function_call_output", "message"]
    assert seen["stored"][2]["output"] == "sunny in Paris" and seen["final"] == "It is sunny in Paris."
    assert seen["last"][:4] == seen["stored"][:4]
