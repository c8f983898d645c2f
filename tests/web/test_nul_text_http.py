"""NUL (U+0000) in a request's text is a 400 on both engines (SQLite, PostgreSQL), never a 500, and writes
nothing: the JSON API under /api/v1 and the OpenAI-compatible /v1 routes, through the real app."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi", reason="the web extra (pip install 'agentbase[web]') is not installed")

from fastapi.testclient import TestClient  # noqa: E402

from agentbase import AgentBase, load_settings  # noqa: E402
from agentbase.embeddings import HashEmbedder  # noqa: E402
from agentbase.web import create_app  # noqa: E402

BETA = {"OpenAI-Beta": "assistants=v2"}


@pytest.fixture(params=["sqlite", "postgres"])
def client(request, tmp_path):
    target = tmp_path / "nul.db" if request.param == "sqlite" else request.getfixturevalue("pg_url")
    db = AgentBase(target, settings=load_settings(ner="regex"), embedder=HashEmbedder(dims=32))
    with TestClient(create_app(db), raise_server_exceptions=False, base_url="http://127.0.0.1") as c:
        c.ab = db
        yield c
    db.sync.close()


API = [
    ("/api/v1/memories", {"content": "Dana moved\x00 to Lisbon"}),
    ("/api/v1/memories", {"content": "Dana moved to Lisbon", "tags": ["ci\x00ty"]}),
    ("/api/v1/memories", {"content": "Dana moved to Lisbon", "category": "a\x00"}),
    ("/api/v1/sessions/s1/messages", {"role": "user", "content": "hel\x00lo"}),
    ("/api/v1/sessions/s1/messages", {"role": "us\x00er", "content": "hello"}),
    ("/api/v1/sessions/s1/messages", {"role": "user", "content": "hello", "name": "da\x00na"}),
    ("/api/v1/resources", {"uri": "file:///a\x00.md", "content": "Brew at 80C."}),
    ("/api/v1/resources", {"uri": "file:///a.md", "content": "Brew\x00 at 80C."}),
    ("/api/v1/skills", {"name": "brew\x00tea", "description": "Brew a cup of tea"}),
    ("/api/v1/skills", {"name": "brew_tea", "description": "Brew a cup of tea", "tags": ["\x00"]}),
]


@pytest.mark.parametrize("path,body", API, ids=[f"{p}:{sorted(b)}:{i}" for i, (p, b) in enumerate(API)])
def test_api_v1_refuses_nul_with_400(client, path, body):
    assert client.post("/api/v1/sessions", json={"session_id": "s1"}).status_code == 201
    assert client.post("/api/v1/sessions/s1/messages", json={"role": "user", "content": "kept"}).status_code == 201
    r = client.post(path, json=body)
    assert r.status_code == 400, r.text
    assert "NUL" in r.text and "Traceback" not in r.text
    assert client.ab.sync.count() == 0
    assert [m.content for m in client.ab.sync.get_messages("s1")] == ["kept"]


def test_api_v1_reads_with_nul_are_400(client):
    client.post("/api/v1/memories", json={"content": "Dana moved to Lisbon", "tags": ["city"]})
    r = client.post("/api/v1/search", json={"query": "Lisbon", "tags": ["city\x00"]})
    assert r.status_code == 400, r.text
    r = client.post("/api/v1/search", json={"query": "Lisbon \x00"})
    assert r.status_code == 200 and r.json()["results"], r.text
    trace = client.get(f"/api/v1/traces/{r.json()['trace_id']}")
    assert trace.status_code == 200 and trace.json()["query"] == "Lisbon", trace.text


def test_openai_threads_and_conversations_refuse_nul_with_400(client):
    tid = client.post("/v1/threads", json={}, headers=BETA).json()["id"]
    for body in ({"role": "user", "content": "hel\x00lo"},
                 {"role": "user", "content": [{"type": "text", "text": "hel\x00lo"}]}):
        r = client.post(f"/v1/threads/{tid}/messages", json=body, headers=BETA)
        assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request_error", r.text
    assert client.get(f"/v1/threads/{tid}/messages", headers=BETA).json()["data"] == []
    r = client.post("/v1/threads", json={"messages": [{"role": "user", "content": "a\x00"}]}, headers=BETA)
    assert r.status_code == 400, r.text
    r = client.post("/v1/conversations", json={"items": [{"type": "message", "role": "user", "content": "h\x00"}]})
    assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request_error", r.text
    conv = client.post("/v1/conversations", json={}).json()["id"]
    r = client.post(f"/v1/conversations/{conv}/items",
                    json={"items": [{"type": "message", "role": "user", "content": "fine"},
                                    {"type": "message", "role": "user", "content": "h\x00"}]})
    assert r.status_code == 400, r.text
    assert client.get(f"/v1/conversations/{conv}/items").json()["data"] == []
    assert client.ab.sync.count() == 0
