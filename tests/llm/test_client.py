"""LLMClient against a real HTTP server on loopback: retries, Retry-After, timeouts, dead endpoints, permanent
errors, JSON mode, concurrency bound and call records."""

from __future__ import annotations

import asyncio
import time

import pytest

from agentbase import load_settings
from agentbase.errors import AgentBaseError, ConfigError, LLMError, LLMOutputError, LLMRetryable, LLMUnavailable
from agentbase.llm import LLMClient, parse_json_answer

from .fake_server import dead_url

MSG = [{"role": "system", "content": "test\nsay ok"}, {"role": "user", "content": "hello there"}]


def client(url: str, **kw) -> LLMClient:
    kw.setdefault("backoff_base_s", 0.01)
    kw.setdefault("timeout_s", 5)
    return LLMClient(base_url=url, model="fake-model", **kw)


def test_settings_from_environment(monkeypatch):
    monkeypatch.delenv("AGENTBASE_LLM__API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-openai-env")
    assert LLMClient.from_settings(load_settings().llm) is None  # nothing configured: no client
    monkeypatch.setenv("AGENTBASE_LLM__BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("AGENTBASE_LLM__MODEL", "m")
    llm = load_settings().llm
    assert llm.configured and llm.use("summaries") and llm.use("facts") and not llm.use("rerank")
    assert llm.api_key.get_secret_value() == "sk-from-openai-env"
    assert "sk-from" not in repr(llm) and "sk-from" not in str(load_settings().model_dump(mode="json"))
    monkeypatch.setenv("AGENTBASE_LLM__API_KEY", "sk-own")
    monkeypatch.setenv("AGENTBASE_LLM__SUMMARIES", "false")
    llm = load_settings().llm
    assert llm.api_key.get_secret_value() == "sk-own" and not llm.use("summaries")
    c = LLMClient.from_settings(llm)
    assert isinstance(c, LLMClient) and "sk-own" not in repr(c)
    with pytest.raises(ConfigError):
        load_settings(llm={"base_url": "127.0.0.1:8080"})
    monkeypatch.delenv("AGENTBASE_LLM__MODEL")  # half a configuration is an error, never ignored silently
    with pytest.raises(ConfigError, match="llm.base_url is set but llm.model is not"):
        load_settings()
    monkeypatch.delenv("AGENTBASE_LLM__BASE_URL")
    with pytest.raises(ConfigError, match="llm.model is set but llm.base_url is not"):
        load_settings(llm={"model": "m"})
    with pytest.raises(ConfigError):
        load_settings(llm={"max_concurrency": 0})
    assert issubclass(LLMUnavailable, LLMRetryable) and issubclass(LLMRetryable, LLMError)
    assert issubclass(LLMError, AgentBaseError)


async def test_ok_call_reports_tokens_and_is_recorded(fake_llm):
    fake_llm.responder = lambda req: "fine thanks"
    c = client(fake_llm.url, api_key="sk-secret")
    with LLMClient.collect() as calls:
        result = await c.chat(MSG, purpose="unit")
    assert result.text == "fine thanks" and result.model == "fake-model" and result.purpose == "unit"
    assert result.prompt_tokens == 5 and result.completion_tokens == 2 and result.latency_s > 0
    assert [(x.purpose, x.outcome, x.attempts, x.prompt_tokens) for x in calls] == [("unit", "ok", 1, 5)]
    assert c.usage() == {"unit": {"calls": 1, "errors": 0, "prompt_tokens": 5, "completion_tokens": 2}}
    assert fake_llm.requests[0]["max_tokens"] == 512 and fake_llm.requests[0]["temperature"] == 0.0
    assert "sk-secret" not in str(calls[0].as_dict())
    await c.aclose()


async def test_429_and_500_retry_then_succeed_honouring_retry_after(fake_llm):
    fake_llm.script = [("status", 429, 0.3), ("status", 500)]
    c = client(fake_llm.url)
    t0 = time.perf_counter()
    result = await c.chat(MSG, purpose="unit")
    assert result.text == "ok" and len(fake_llm.requests) == 3
    assert time.perf_counter() - t0 >= 0.3  # Retry-After: 0.3 was waited out
    assert c.recent[-1].attempts == 3 and c.recent[-1].outcome == "ok"


async def test_retries_exhausted_raise_retryable(fake_llm):
    fake_llm.script = [("status", 503)] * 3
    c = client(fake_llm.url, max_retries=2)
    with pytest.raises(LLMRetryable) as info:
        await c.chat(MSG, purpose="unit")
    assert not isinstance(info.value, LLMUnavailable) and info.value.status == 503
    assert len(fake_llm.requests) == 3 and c.usage()["unit"]["errors"] == 1
    assert c.recent[-1].outcome == "retryable"


async def test_timeout_is_retried(fake_llm):
    fake_llm.script = [("hang", 1.5)]
    c = client(fake_llm.url, timeout_s=0.4)
    result = await c.chat(MSG, purpose="unit")
    assert result.text == "ok" and c.recent[-1].attempts == 2
    fake_llm.script = [("hang", 1.5), ("hang", 1.5)]
    with pytest.raises(LLMRetryable, match="timed out"):
        await client(fake_llm.url, timeout_s=0.4, max_retries=1).chat(MSG, purpose="unit")


async def test_dead_endpoint_is_unavailable():
    c = client(dead_url(), max_retries=2)
    with pytest.raises(LLMUnavailable, match="cannot reach"):
        await c.chat(MSG, purpose="unit")
    assert c.recent[-1].outcome == "unavailable" and c.recent[-1].attempts == 3


async def test_permanent_errors_are_not_retried(fake_llm):
    fake_llm.script = [("status", 404)]
    c = client(fake_llm.url)
    with pytest.raises(LLMError) as info:
        await c.chat(MSG, purpose="unit")
    assert type(info.value) is LLMError and info.value.status == 404 and len(fake_llm.requests) == 1
    fake_llm.script = [("garbage",)]
    with pytest.raises(LLMError):
        await c.chat(MSG, purpose="unit")
    assert len(fake_llm.requests) == 2


async def test_json_mode_and_a_server_without_it(fake_llm):
    fake_llm.responder = lambda req: '{"a": 1}'
    c = client(fake_llm.url)
    r = await c.chat(MSG, purpose="unit", json_mode=True, max_tokens=20)
    assert fake_llm.requests[-1]["response_format"] == {"type": "json_object"}
    assert fake_llm.requests[-1]["max_tokens"] == 20 and parse_json_answer(r.text) == {"a": 1}
    fake_llm.reject_json_mode = True
    r = await c.chat(MSG, purpose="unit", json_mode=True)
    assert parse_json_answer(r.text) == {"a": 1} and "response_format" not in fake_llm.requests[-1]
    await c.chat(MSG, purpose="unit", json_mode=True)
    assert "response_format" not in fake_llm.requests[-1]  # not sent again once refused


def test_parse_json_answer():
    assert parse_json_answer('```json\n{"x": [1, 2]}\n```') == {"x": [1, 2]}
    assert parse_json_answer('Sure! Here it is: [3, 1, 2] hope that helps') == [3, 1, 2]
    with pytest.raises(LLMOutputError):
        parse_json_answer("I cannot do that")


async def test_concurrency_is_bounded(fake_llm):
    in_flight = {"now": 0, "max": 0}
    import threading
    lock = threading.Lock()

    def slow(req):
        with lock:
            in_flight["now"] += 1
            in_flight["max"] = max(in_flight["max"], in_flight["now"])
        time.sleep(0.15)
        with lock:
            in_flight["now"] -= 1
        return "ok"

    fake_llm.responder = slow
    c = client(fake_llm.url, max_concurrency=2)
    results = await asyncio.gather(*(c.chat(MSG, purpose="unit") for _ in range(6)))
    assert len(results) == 6 and in_flight["max"] == 2


async def test_an_unreachable_endpoint_is_not_asked_again_for_a_while():
    import time

    from agentbase.llm import client as client_module

    c = client(dead_url(), max_retries=2)
    with pytest.raises(LLMUnavailable):
        await c.chat([{"role": "user", "content": "hi"}], purpose="t")
    started = time.perf_counter()
    with pytest.raises(LLMUnavailable, match="next try in"):  # at once: no request, no retries
        await c.chat([{"role": "user", "content": "hi"}], purpose="t")
    assert time.perf_counter() - started < 0.05
    c._down = (c._down[0] - client_module.UNAVAILABLE_HOLD_S, c._down[1])  # the hold has passed
    with pytest.raises(LLMUnavailable, match="cannot reach"):  # asked again
        await c.chat([{"role": "user", "content": "hi"}], purpose="t")
