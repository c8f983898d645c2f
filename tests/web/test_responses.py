"""``POST /v1/responses`` / ``GET /v1/responses/{id}`` on ``agentbase serve``'s app, driven by the real ``openai``
SDK (strict response validation, no retries) over loopback: uvicorn serves ``create_app`` and the model is the
scripted chat-completions server of ``tests/llm/fake_server.py`` (also on 127.0.0.1)."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import pytest

openai = pytest.importorskip("openai")
uvicorn = pytest.importorskip("uvicorn")

from agentbase import AgentBase, load_settings  # noqa: E402
from agentbase.embeddings import HashEmbedder  # noqa: E402
from agentbase.web import create_app  # noqa: E402

from tests.llm.fake_server import FakeLLMServer, dead_url  # noqa: E402


class LiveServer:
    """uvicorn serving ``app`` on a free 127.0.0.1 port in a daemon thread; ``url`` is an OpenAI base_url."""

    def __init__(self, app: Any):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            assert self.thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()


def _responder(request: dict[str, Any]) -> str:
    system = next((m["content"] for m in request["messages"] if m["role"] == "system"), "")
    last = request["messages"][-1]["content"]
    return f"reply to: {last} | memories: {'yes' if 'Relevant memories' in system else 'no'}"


def _open(path, llm: dict[str, Any] | None) -> AgentBase:
    settings = load_settings(ner="regex", embedder={"provider": "hash", "dims": 64}, **({"llm": llm} if llm else {}))
    return AgentBase(path, settings=settings, embedder=HashEmbedder(dims=64))


@pytest.fixture
def fake():
    server = FakeLLMServer()
    server.responder = _responder
    yield server
    server.close()


@pytest.fixture
def served(tmp_path, fake):
    # the ingest uses are off: only the Responses route calls the model here (tests/llm/ covers the jobs)
    db = _open(tmp_path / "resp.db", {"base_url": fake.url, "model": "fake-model", "max_retries": 0,
                                      "summaries": False, "retrieval_keys": False, "facts": False})
    with LiveServer(create_app(db)) as live:
        with openai.OpenAI(base_url=live.url, api_key="x", max_retries=0, _strict_response_validation=True) as c:
            yield c, db
    db.sync.close()


def test_create_returns_response_and_stores_turns(served, fake):
    client, db = served
    db.sync.add_memory("The user's favourite colour is teal", user_id="alice")
    db.sync.flush()
    conv = client.conversations.create(metadata={"user_id": "alice"})
    r = client.responses.create(model="fake-model", input="What is my favourite colour?",
                                conversation=conv.id, instructions="Answer briefly.")
    assert r.id.startswith("resp_") and r.object == "response" and r.status == "completed"
    assert r.output_text == "reply to: What is my favourite colour? | memories: yes"
    assert r.output[0].type == "message" and r.output[0].role == "assistant"
    assert r.output[0].content[0].type == "output_text"
    assert r.usage.input_tokens > 0 and r.usage.output_tokens == len(r.output_text.split())
    assert r.usage.total_tokens == r.usage.input_tokens + r.usage.output_tokens
    assert r.conversation.id == conv.id and r.instructions == "Answer briefly."
    sent = fake.requests[-1]
    assert sent["model"] == "fake-model"
    assert sent["messages"][0]["role"] == "system"
    assert sent["messages"][0]["content"].startswith("Answer briefly.")
    assert "favourite colour is teal" in sent["messages"][0]["content"]  # the user's memory, found by find()
    items = client.conversations.items.list(conv.id, order="asc").data
    assert [(i.role, i.content[0].text) for i in items] == [
        ("user", "What is my favourite colour?"), ("assistant", r.output_text)]
    got = client.responses.retrieve(r.id)
    assert got.id == r.id and got.output_text == r.output_text and got.usage.total_tokens == r.usage.total_tokens
    counted = db.sync.stats()["llm"]["by_purpose"]["responses"]  # the route's calls are in the file's totals
    assert counted["calls"] == 1 and counted["completion_tokens"] == r.usage.output_tokens
    # and the call is a trace of its own (the conversation's id, never the text)
    traced = [db.sync.get_trace(t["id"]) for t in db.sync.list_traces(limit=50) if t["query"] == "llm responses"]
    assert len(traced) == 1 and traced[0].params == {"kind": "responses", "conversation": conv.id}
    (call,) = [s.details for s in traced[0].steps if s.name == "llm_call"]
    assert call["purpose"] == "responses" and call["outcome"] == "ok"
    assert call["completion_tokens"] == r.usage.output_tokens and call["prompt_tokens"] == r.usage.input_tokens


def test_previous_response_id_continues_the_session(served, fake):
    client, db = served
    first = client.responses.create(model="fake-model", input="My dog is called Rex.")
    assert first.conversation is not None and first.conversation.id.startswith("conv_")
    second = client.responses.create(model="fake-model", input="What is my dog called?",
                                     previous_response_id=first.id)
    sent = [(m["role"], m["content"]) for m in fake.requests[-1]["messages"] if m["role"] != "system"]
    assert sent == [("user", "My dog is called Rex."), ("assistant", first.output_text),
                    ("user", "What is my dog called?")]
    assert second.previous_response_id == first.id and second.conversation.id == first.conversation.id
    msgs = db.sync.get_messages(first.conversation.id)
    assert [m.role for m in msgs] == ["user", "assistant", "user", "assistant"]
    db.sync.flush()  # the background commit made the turns memories
    assert db.sync.count(session_id=first.conversation.id) >= 2


def test_store_false_writes_nothing(served, fake):
    client, db = served
    before = db.sync.stats()
    r = client.responses.create(model="fake-model", input=[{"role": "user", "content": "just once"}], store=False)
    assert r.output_text.startswith("reply to: just once") and r.store is False
    assert db.sync.list_sessions() == [] and db.sync.stats()["entries"] == before["entries"]
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(r.id)


def test_streaming_events(served):
    client, _ = served
    with client.responses.stream(model="fake-model", input="stream me") as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert "response.output_text.delta" in kinds
    assert final.output_text.startswith("reply to: stream me") and final.id.startswith("resp_")


def test_bad_input_and_unknown_ids(served, fake):
    client, db = served
    n = len(fake.requests)
    with pytest.raises(openai.BadRequestError) as exc:
        client.responses.create(model="fake-model", input="")
    assert exc.value.body["param"] == "input"
    with pytest.raises(openai.NotFoundError):
        client.responses.create(model="fake-model", input="hi", conversation="conv_" + "0" * 32)
    with pytest.raises(openai.NotFoundError):
        client.responses.create(model="fake-model", input="hi", previous_response_id="resp_nope")
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve("resp_" + "ab" * 30)
    assert len(fake.requests) == n and db.sync.list_sessions() == []  # no model call, nothing written


def test_without_llm_configured_answers_503(tmp_path):
    db = _open(tmp_path / "nollm.db", None)
    try:
        with LiveServer(create_app(db)) as live:
            with openai.OpenAI(base_url=live.url, api_key="x", max_retries=2) as client:
                started = time.monotonic()
                with pytest.raises(openai.InternalServerError) as exc:
                    client.responses.create(model="m", input="hello")
                assert time.monotonic() - started < 2  # x-should-retry: false, so the SDK did not back off
        assert exc.value.status_code == 503 and exc.value.body["code"] == "llm_not_configured"
        assert "llm.base_url" in exc.value.body["message"]
        assert db.sync.list_sessions() == []
    finally:
        db.sync.close()


def test_model_unreachable_answers_503_and_writes_nothing(tmp_path):
    db = _open(tmp_path / "dead.db", {"base_url": dead_url(), "model": "m", "max_retries": 0})
    try:
        with LiveServer(create_app(db)) as live:
            with openai.OpenAI(base_url=live.url, api_key="x", max_retries=0) as client:
                with pytest.raises(openai.InternalServerError) as exc:
                    client.responses.create(model="m", input="hello")
        assert exc.value.status_code == 503 and exc.value.body["code"] == "llm_unavailable"
        assert db.sync.list_sessions() == []
    finally:
        db.sync.close()
