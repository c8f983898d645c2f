"""Differential replay of ``agents.SQLiteSession`` (openai-agents 0.24.0) behaviours: each scenario runs on the
SDK's own ``SQLiteSession`` and on ``AgentBaseSession``, and both must observe exactly the same thing (compared as
``json.dumps`` text, so dict key order and list shapes count too).

The behaviours follow the SDK's session tests (tests/memory/test_session.py, test_session_limit.py in the
openai-agents repository) and the code of ``agents/memory/sqlite_session.py``: add and read back every item
shape the Runner writes, latest-N limits (0, negative, larger than the history, ``session_settings``), pop until
empty, clear, several sessions on one file, reading a file again from new objects, concurrent writers.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import math
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from agents import SQLiteSession
from agents.memory import SessionSettings

from agentbase.testing import database_for
from agentbase.adapters import AgentBaseSession

Scenario = Callable[[Callable[..., Any]], Awaitable[Any]]

ASSISTANT = {"id": "msg_1", "content": [{"annotations": [], "text": "Paris is sunny", "type": "output_text",
                                         "logprobs": []}],
             "role": "assistant", "status": "completed", "type": "message"}
# Every item shape a Runner turn can write, plus odd-but-JSON ones SQLiteSession stores without a word.
ITEMS: list[dict[str, Any]] = [
    {"role": "user", "content": "What is the weather in Paris?"},
    {"role": "user", "content": [{"type": "input_text", "text": "and this picture"},
                                 {"type": "input_image", "image_url": "data:image/png;base64,AAAA",
                                  "detail": "auto"}]},
    {"type": "message", "role": "system", "content": "Answer briefly."},
    {"role": "developer", "content": "Use metric units."},
    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "need the weather tool"}]},
    {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather",
     "arguments": "{\"city\": \"Paris\"}", "status": "completed"},
    {"type": "function_call_output", "call_id": "call_1", "output": "sunny, 21C"},
    {"type": "custom_tool_call", "call_id": "call_2", "name": "apply_patch", "input": "*** Begin Patch"},
    {"type": "custom_tool_call_output", "call_id": "call_2", "output": [{"type": "input_text", "text": "ok"}]},
    {"type": "web_search_call", "id": "ws_1", "status": "completed",
     "action": {"type": "search", "query": "paris weather"}},
    {"type": "item_reference", "id": "msg_0"},
    ASSISTANT,
    {"role": "assistant", "content": [{"type": "refusal", "refusal": "I cannot do that"}]},
    {"role": "user", "content": "こんにちは 😊 Привет"},
    {"role": "user", "content": "O'Reilly\"); DROP TABLE agent_messages;--"},
    {"role": "user", "content": ""},
    {"role": "user", "content": "broken \ud83d surrogate"},
    {"role": "user", "content": "tuple", "extra": (1, 2)},
    {"role": "user", "content": "int keys", "meta": {1: "one", "nested": [{"a": None, "b": True, "c": 1.5}]}},
    {"foo": "an item with neither type nor role"},
]


def text(items: Any) -> str:
    """Stable text of observed values, NaN included (json.dumps writes it as NaN on both sides)."""
    return json.dumps(items, ensure_ascii=False)


async def on_both(backends: dict[str, Callable[..., Any]], scenario: Scenario) -> Any:
    """Run ``scenario(open_session)`` on SQLiteSession and on AgentBaseSession; both must observe the same."""
    seen = {name: await scenario(open_session) for name, open_session in backends.items()}
    assert text(seen["agentbase"]) == text(seen["sqlite"])
    return seen["sqlite"]


async def test_sessions_satisfy_the_protocol(backends):
    from agents.memory import Session
    for open_session in backends.values():
        session = open_session("proto")
        assert isinstance(session, Session)
        assert isinstance(session.session_settings, SessionSettings) and session.session_settings.limit is None
        assert session.session_id == "proto"
    assert not issubclass(AgentBaseSession, SQLiteSession)


async def test_every_item_shape_reads_back_as_sqlite_session_gives_it(backends):
    async def scenario(open_session):
        s = open_session("shapes")
        await s.add_items(ITEMS[:7])
        await s.add_items(ITEMS[7:])
        again = open_session("shapes")  # another object on the same file and id
        return [await s.get_items(), await again.get_items()]

    first, again = await on_both(backends, scenario)
    assert first == again and len(first) == len(ITEMS)
    assert first[0] == ITEMS[0] and first[11] == ASSISTANT
    assert first[17]["extra"] == [1, 2] and first[18]["meta"]["1"] == "one"  # JSON's own changes


async def test_a_nan_value_reads_back_as_nan(backends):
    async def scenario(open_session):
        s = open_session("nan")
        await s.add_items([{"role": "user", "content": "score", "score": float("nan")}])
        return await s.get_items()

    got = await on_both(backends, scenario)
    assert math.isnan(got[0]["score"])


@pytest.mark.parametrize("limit", [None, 1, 2, 4, 6, 10, 0, -1, -5])
async def test_limit_returns_the_latest_items_oldest_first(backends, limit):
    async def scenario(open_session):
        s = open_session("limits")
        await s.add_items([{"role": "user" if i % 2 == 0 else "assistant", "content": f"Message {i}"}
                           for i in range(6)])
        return await s.get_items(limit=limit)

    got = await on_both(backends, scenario)
    want = {None: 6, 1: 1, 2: 2, 4: 4, 6: 6, 10: 6, 0: 0, -1: 6, -5: 6}[limit]  # 0.24.0: negative is no limit
    assert [i["content"] for i in got] == [f"Message {i}" for i in range(6 - want, 6)]


async def test_session_settings_limit_is_the_default_and_an_explicit_limit_wins(backends):
    async def scenario(open_session):
        s = open_session("settings", session_settings=SessionSettings(limit=3))
        d = open_session("settings", session_settings={"limit": 0})
        await s.add_items([{"role": "user", "content": f"Message {i}"} for i in range(10)])
        seen = [s.session_settings.limit, await s.get_items(), await s.get_items(limit=2),
                await s.get_items(limit=0), await d.get_items(), await d.get_items(limit=1)]
        s.session_settings = {"limit": 4}  # a dict set later is read as SessionSettings too
        return seen + [await s.get_items()]

    got = await on_both(backends, scenario)
    assert got[0] == 3 and [i["content"] for i in got[1]] == ["Message 7", "Message 8", "Message 9"]
    assert [i["content"] for i in got[2]] == ["Message 8", "Message 9"]
    assert got[3] == [] and got[4] == [] and len(got[5]) == 1 and len(got[6]) == 4


async def test_pop_returns_and_removes_the_latest_until_empty(backends):
    async def scenario(open_session):
        s = open_session("pop")
        seen = [await s.pop_item()]
        await s.add_items([{"role": "user", "content": "Hello"}, ASSISTANT,
                           {"role": "user", "content": "How are you?"}])
        for _ in range(4):
            seen.append(await s.pop_item())
            seen.append(await s.get_items())
        await s.add_items([{"role": "user", "content": "after"}])
        seen.append(await s.get_items())
        return seen

    got = await on_both(backends, scenario)
    assert got[0] is None and got[1]["content"] == "How are you?" and len(got[2]) == 2
    assert got[3] == ASSISTANT and got[5]["content"] == "Hello" and got[6] == []
    assert got[7] is None and got[9] == [{"role": "user", "content": "after"}]


async def test_clear_empties_one_session_and_it_can_be_written_again(backends):
    async def scenario(open_session):
        s = open_session("clear")
        await s.add_items(ITEMS[:3])
        await s.clear_session()
        seen = [await s.get_items(), await s.pop_item()]
        await s.clear_session()  # twice is harmless
        await open_session("never-written").clear_session()
        await s.add_items([{"role": "user", "content": "fresh"}])
        seen.append(await s.get_items())
        return seen

    got = await on_both(backends, scenario)
    assert got == [[], None, [{"role": "user", "content": "fresh"}]]


async def test_an_empty_add_writes_nothing(backends):
    async def scenario(open_session):
        s = open_session("empty")
        await s.add_items([])
        return [await s.get_items(), await s.pop_item()]

    assert await on_both(backends, scenario) == [[], None]


async def test_sessions_on_one_file_are_isolated(backends):
    async def scenario(open_session):
        one, two = open_session("session_1"), open_session("session_2")
        await one.add_items([{"role": "user", "content": "I like cats"}])
        await two.add_items([{"role": "user", "content": "I like dogs"}, {"role": "user", "content": "a lot"}])
        seen = [await two.pop_item(), await one.get_items(), await two.get_items()]
        await one.clear_session()
        seen += [await one.get_items(), await two.get_items(limit=5)]
        return seen

    got = await on_both(backends, scenario)
    assert got[0]["content"] == "a lot" and got[1][0]["content"] == "I like cats"
    assert got[3] == [] and [i["content"] for i in got[4]] == ["I like dogs"]


async def test_special_characters_are_data(backends):
    texts = ["O'Reilly", "DROP TABLE sessions;", '"SELECT * FROM users WHERE name = "admin";"',
             "Robert'); DROP TABLE students;--", "% _ \\ ' \" ;"]

    async def scenario(open_session):
        s = open_session("special'; DROP TABLE agent_sessions;--")
        await s.add_items([{"role": "user", "content": t} for t in texts])
        return await s.get_items()

    assert [i["content"] for i in await on_both(backends, scenario)] == texts


async def test_two_sessions_written_concurrently_keep_their_own_order(backends):
    async def scenario(open_session):
        one, two = open_session("conc_1"), open_session("conc_2")
        await asyncio.gather(*[s.add_items([{"role": "user", "content": f"{s.session_id} #{i}"}])
                               for i in range(8) for s in (one, two)])
        return [await one.get_items(), await two.get_items()]

    # gather starts the writes in order, but each backend may finish them in another: compare as sets and check
    # that both sessions hold exactly their own eight items.
    seen = {name: await scenario(open_session) for name, open_session in backends.items()}
    for one, two in seen.values():
        assert {i["content"] for i in one} == {f"conc_1 #{i}" for i in range(8)} and len(one) == 8
        assert {i["content"] for i in two} == {f"conc_2 #{i}" for i in range(8)} and len(two) == 8


async def test_concurrent_batches_on_one_session_stay_whole(backends):
    for open_session in backends.values():
        s = open_session("batches")
        batches = [[{"role": "user", "content": f"batch {b} item {i}"} for i in range(5)] for b in range(6)]
        await asyncio.gather(*[s.add_items(batch) for batch in batches])
        got = await s.get_items()
        assert len(got) == 30
        # each add_items is one transaction: its five items are adjacent and in order
        chunks = [got[i:i + 5] for i in range(0, 30, 5)]
        assert sorted(chunks, key=lambda c: c[0]["content"]) == batches


def test_threads_with_their_own_event_loops_lose_no_item(backends):
    """As the SDK's concurrent-access test: ten threads, each with its own loop, add one item each."""
    for name, open_session in backends.items():
        s = open_session("threads")

        def add(i: int) -> None:
            asyncio.run(s.add_items([{"role": "user", "content": f"Message {i}"}]))

        with concurrent.futures.ThreadPoolExecutor(max_workers=5) as pool:
            list(pool.map(add, range(10)))
        got = asyncio.run(s.get_items())
        assert {i["content"] for i in got} == {f"Message {i}" for i in range(10)}, name


async def test_concurrent_pops_each_get_a_different_item(backends):
    for open_session in backends.values():
        s = open_session("pops")
        await s.add_items([{"role": "user", "content": f"m{i}"} for i in range(6)])
        popped = await asyncio.gather(*[s.pop_item() for _ in range(8)])
        got = sorted(p["content"] for p in popped if p is not None)
        assert got == [f"m{i}" for i in range(6)] and popped.count(None) == 2
        assert await s.get_items() == []


async def test_a_closed_session_refuses_calls(backends):
    for open_session in backends.values():
        s = open_session("closed")
        await s.add_items([{"role": "user", "content": "x"}])
        s.close()
        for call in (s.get_items(), s.add_items([{"role": "user", "content": "y"}]), s.pop_item(),
                     s.clear_session(), s.add_items([])):
            with pytest.raises(RuntimeError):
                await call
        assert await open_session("closed").get_items() == [{"role": "user", "content": "x"}]


async def test_a_file_reopened_by_new_objects_reads_back(tmp_path, db_path, opener):
    items = ITEMS[:12]
    sdk = SQLiteSession("reopen", tmp_path / "sdk.db")
    await sdk.add_items(items)
    await sdk.pop_item()
    sdk.close()
    first = opener(db_path)
    ours = AgentBaseSession("reopen", first, user_id="alice")
    await ours.add_items(items)
    await ours.pop_item()
    ours.close()
    await first.close()

    sdk = SQLiteSession("reopen", tmp_path / "sdk.db")
    ours = AgentBaseSession("reopen", str(database_for(db_path)), user_id="alice")  # a path this time
    try:
        want = await sdk.get_items()
        assert text(await ours.get_items()) == text(want) and want == items[:11]
        assert text(await ours.get_items(limit=3)) == text(await sdk.get_items(limit=3))
    finally:
        sdk.close()
        ours.close()
