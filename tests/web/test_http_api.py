"""The JSON API under /api/v1 through the real app (``create_app``): every route, auth, owner scope, bad bodies."""

from __future__ import annotations

import html
import json
import socket
import threading
import time

import pytest

pytest.importorskip("fastapi", reason="the web extra (pip install 'agentbase[web]') is not installed")

from fastapi.testclient import TestClient  # noqa: E402

from agentbase.web import create_app  # noqa: E402
from agentbase.web.api_observability import router as observability_router  # noqa: E402
from agentbase.web.api_routes import MAX_BODY_BYTES, router  # noqa: E402

from tests.conftest import make_db  # noqa: E402
from typer.testing import CliRunner
from agentbase.cli import app as cli

SECRET = "Alice's locker code is 4412"


@pytest.fixture
async def db(tmp_path):
    ab = make_db(tmp_path / "api.db")
    await ab.initialize()
    await ab.add_memory("seed memory so the vector index exists", user_id="seed")
    await ab.flush()
    yield ab
    await ab.close()


@pytest.fixture
def client(db):
    with TestClient(create_app(db), base_url="http://127.0.0.1") as c:
        yield c


def _ok(r, status: int = 200) -> dict:
    assert r.status_code == status, r.text
    return r.json()


def test_every_api_route(client):
    c = client
    e = _ok(c.post("/api/v1/memories", json={"content": "Alice prefers green tea", "user_id": "alice",
                                             "category": "preference", "tags": ["drinks"]}), 201)
    assert e["user_id"] == "alice" and e["tags"][0] == "drinks" and e["created_at"].startswith("20")
    found = _ok(c.post("/api/v1/search", json={"query": "green tea", "user_id": "alice", "top_k": 3}))
    assert found["results"][0]["entry"]["id"] == e["id"] and found["trace_id"]
    assert _ok(c.get(f"/api/v1/entries/{e['id']}"))["l2_full"] == "Alice prefers green tea"
    listed = _ok(c.get("/api/v1/entries", params={"user_id": "alice", "tags": ["drinks"]}))
    assert listed["count"] == 1 and listed["entries"][0]["id"] == e["id"]
    upd = _ok(c.patch(f"/api/v1/entries/{e['id']}", json={"content": "Alice prefers jasmine tea",
                                                          "importance": 0.9}))
    assert upd["l2_full"] == "Alice prefers jasmine tea" and upd["importance"] == 0.9
    hist = _ok(c.get(f"/api/v1/entries/{e['id']}/history"))
    assert [h["event"] for h in hist["events"]] == ["ADD", "UPDATE"]
    s = _ok(c.post("/api/v1/sessions", json={"session_id": "s1", "user_id": "alice"}), 201)
    assert s["id"] == "s1"
    m = _ok(c.post("/api/v1/sessions/s1/messages", json={"role": "user", "content": "I moved to Lisbon"}), 201)
    assert m["seq"] == 1
    _ok(c.post("/api/v1/sessions/s1/messages", json={"role": "assistant", "content": "Nice!", "name": "bot"}), 201)
    assert len(_ok(c.get("/api/v1/sessions/s1/messages"))["messages"]) == 2
    assert _ok(c.get("/api/v1/sessions/s1"))["session"]["id"] == "s1"
    assert [x["id"] for x in _ok(c.get("/api/v1/sessions", params={"user_id": "alice"}))["sessions"]] == ["s1"]
    commit = _ok(c.post("/api/v1/sessions/s1/commit", params={"wait": "false"}))
    assert commit["session_id"] == "s1" and commit["messages"] == 2 and commit["enriched"] is False
    _ok(c.post("/api/v1/sessions/s1/messages", json={"role": "user", "content": "I prefer green tea"}), 201)
    commit = _ok(c.post("/api/v1/sessions/s1/commit"))  # waits: the queued part first, then this message
    assert commit["messages"] == 1 and commit["enriched"] is True and commit["facts_added"] == 1
    facts = _ok(c.get("/api/v1/entries", params={"user_id": "alice", "category": "profile"}))["entries"]
    assert [f["l2_full"] for f in facts] == ["User moved to Lisbon"]
    res = _ok(c.post("/api/v1/resources", json={"uri": "file:///tea.md", "content": "Brew at 80C. " * 10,
                                                "title": "Tea"}), 201)
    assert res["entries"][0]["uri"] == "file:///tea.md"
    sk = _ok(c.post("/api/v1/skills", json={"name": "brew_tea", "description": "Brew a cup of tea"}), 201)
    assert sk["context_type"] == "skill"
    hits = _ok(c.post("/api/v1/skills/search", json={"query": "brew tea"}))
    assert hits["results"][0]["entry"]["id"] == sk["id"]
    stats = _ok(c.get("/api/v1/stats"))
    assert stats["sessions"] == 1 and stats["entries_total"] >= 5
    traces = _ok(c.get("/api/v1/traces"))["traces"]
    assert found["trace_id"] in [t["id"] for t in traces]
    trace = _ok(c.get(f"/api/v1/traces/{found['trace_id']}"))
    assert trace["steps"][-1]["name"] == "final" and trace["steps"][-1]["details"]["why"][0]["id"] == e["id"]
    dbg = _ok(c.get("/api/v1/debug/sessions/s1"))
    assert dbg["counts"]["messages"] == 3 and dbg["memories"]
    graph = _ok(c.get("/api/v1/debug/graph", params={"entity": "Alice"}))
    assert graph["entity"] == "ner_Alice" and graph["entries"]
    diff = _ok(c.get("/api/v1/debug/diff", params={"a": e["id"], "b": sk["id"]}))
    assert diff["fields"]["context_type"] == {"a": "memory", "b": "skill"}
    assert _ok(c.delete(f"/api/v1/entries/{e['id']}")) == {"entry_id": e["id"], "deleted": True}
    assert c.get(f"/api/v1/entries/{e['id']}").status_code == 404
    assert c.delete(f"/api/v1/entries/{e['id']}").status_code == 404


def test_openapi_lists_every_route(client):
    spec = _ok(client.get("/openapi.json"))
    ours = {(r.path, m.lower()) for r in [*router.routes, *observability_router.routes] for m in r.methods}
    listed = {(p, m) for p, ops in spec["paths"].items() for m in ops}
    assert ours <= listed
    assert len({p for p, _ in ours}) >= 20


def test_unknown_ids_and_bad_values_are_4xx_in_openai_shape(client):
    for method, url, body in [("get", "/api/v1/entries/nope", None), ("get", "/api/v1/traces/nope", None),
                              ("post", "/api/v1/sessions/nope/messages", {"role": "user", "content": "x"}),
                              ("post", "/api/v1/sessions/nope/commit", None),
                              ("get", "/api/v1/debug/sessions/nope", None)]:
        r = client.request(method, url, json=body)
        assert r.status_code == 404, (url, r.text)
        assert set(r.json()["error"]) == {"message", "type", "param", "code"} and "not found" in r.text
    r = client.post("/api/v1/search", json={"query": "x", "top_k": 0})
    assert r.status_code == 400 and "top_k" in r.json()["error"]["message"]
    r = client.post("/api/v1/memories", json={"content": ""})
    assert r.status_code == 400 and "empty" in r.json()["error"]["message"]


def test_malformed_json_and_oversize_bodies(client):
    bad = [b'{"content": ', b"not json", b"[1, 2]", b'"text"', b'{"content": 5}', b'{"content": "x", "userid": "a"}']
    for body in bad:
        r = client.post("/api/v1/memories", content=body, headers={"content-type": "application/json"})
        assert 400 <= r.status_code < 500, (body, r.status_code)
        assert "Traceback" not in r.text and "File \"" not in r.text
    big = json.dumps({"content": "x" * (MAX_BODY_BYTES + 10)}).encode()
    r = client.post("/api/v1/memories", content=big, headers={"content-type": "application/json"})
    assert r.status_code == 413 and r.json()["error"]["code"] == "request_too_large"

    def chunks():  # no Content-Length: streamed with chunked transfer encoding
        for _ in range(30):
            yield b"x" * 100_000

    r = client.post("/api/v1/memories", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413
    assert client.get("/api/v1/stats").json()["entries_total"] == 1  # nothing was written


def test_strict_types_one_segment_ids_single_query_values_and_clear_body_errors(client):
    """What a break pass found: coerced types, ids no route can address, a repeated user_id where the last one
    won, and error messages naming no real problem. Each is a 400 that writes nothing."""
    before = client.get("/api/v1/stats").json()["entries_total"]
    for body in ({"query": "tea", "top_k": True}, {"query": "tea", "top_k": "5"}):
        r = client.post("/api/v1/search", json=body)
        assert r.status_code == 400 and r.json()["error"]["param"] == "top_k", body
    for url, body in [("/api/v1/memories", {"content": "x", "dedup": "yes"}),
                      ("/api/v1/memories", {"content": "slash id", "entry_id": "e/1"}),
                      ("/api/v1/sessions", {"session_id": "p/q"})]:
        r = client.post(url, json=body)
        assert r.status_code == 400, (body, r.text)
    assert "path segment" in client.post("/api/v1/sessions", json={"session_id": "p/q"}).json()["error"]["message"]
    assert client.get("/api/v1/sessions/p%2Fq").status_code == 404  # nothing was created
    e = _ok(client.post("/api/v1/memories", json={"content": "mine", "user_id": "alice", "confidence": 1}), 201)
    r = client.get("/api/v1/entries?user_id=bob&user_id=alice")
    assert r.status_code == 400 and r.json()["error"]["param"] == "user_id"
    assert client.get("/api/v1/entries?limit=1&limit=500").status_code == 400
    assert _ok(client.get("/api/v1/entries?user_id=alice&tags=a&tags=b"))["entries"] == []  # a list repeats
    r = client.post("/api/v1/memories", content=b"", headers={"content-type": "application/json"})
    assert r.status_code == 400 and "no body" in r.json()["error"]["message"]
    r = client.post("/api/v1/memories", content=b'{"content": "x', headers={"content-type": "application/json"})
    err = r.json()["error"]
    assert r.status_code == 400 and err["param"] is None and "character 12" in err["message"]
    r = client.post("/api/v1/memories", content=b'{"content": "x"}', headers={"content-type": "text/plain"})
    assert r.status_code == 400 and "Content-Type: application/json" in r.json()["error"]["message"]
    assert client.get("/api/v1/stats").json()["entries_total"] == before + 1
    assert _ok(client.delete(f"/api/v1/entries/{e['id']}?user_id=alice"))["deleted"] is True


def test_owner_scope_cannot_reach_another_owners_entries(client):
    alice, bob = {"X-AgentBase-User": "alice"}, {"X-AgentBase-User": "bob"}
    e = _ok(client.post("/api/v1/memories", json={"content": SECRET}, headers=alice), 201)
    assert e["user_id"] == "alice"
    for method, url, body in [("get", f"/api/v1/entries/{e['id']}", None),
                              ("patch", f"/api/v1/entries/{e['id']}", {"content": "hacked"}),
                              ("delete", f"/api/v1/entries/{e['id']}", None),
                              ("get", f"/api/v1/entries/{e['id']}/history", None),
                              ("get", f"/api/v1/debug/diff?a={e['id']}&b={e['id']}", None)]:
        sep = "&" if "?" in url else "?"
        for headers, full in ((bob, url), ({}, f"{url}{sep}user_id=bob")):
            r = client.request(method, full, json=body, headers=headers)
            assert r.status_code == 404, (method, url, r.status_code)
            assert SECRET not in r.text and "4412" not in r.text
    hits = _ok(client.post("/api/v1/search", json={"query": "locker code 4412"}, headers=bob))
    assert hits["results"] == []
    assert _ok(client.get("/api/v1/entries", headers=bob))["entries"] == []
    r = client.post("/api/v1/search", json={"query": "locker", "user_id": "alice"}, headers=bob)
    assert r.status_code == 400 and "does not match" in r.text
    for url in ("/api/v1/traces", "/api/v1/debug/graph"):
        assert client.get(url, headers=bob).status_code == 403
    assert _ok(client.get("/api/v1/stats", headers=bob))["entries_total"] == 0
    # sessions are scoped the same way
    _ok(client.post("/api/v1/sessions", json={"session_id": "sa"}, headers=alice), 201)
    _ok(client.post("/api/v1/sessions/sa/messages", json={"role": "user", "content": SECRET}, headers=alice), 201)
    for method, url, body in [("get", "/api/v1/sessions/sa", None), ("get", "/api/v1/sessions/sa/messages", None),
                              ("post", "/api/v1/sessions/sa/messages", {"role": "user", "content": "x"}),
                              ("post", "/api/v1/sessions/sa/commit", None),
                              ("post", "/api/v1/sessions", {"session_id": "sa"}),
                              ("get", "/api/v1/debug/sessions/sa", None)]:
        r = client.request(method, url, json=body, headers=bob)
        assert r.status_code == 404 and SECRET not in r.text, (method, url, r.status_code)
    assert _ok(client.get("/api/v1/sessions", headers=bob))["sessions"] == []
    # the owner still reads and deletes her own entry
    assert _ok(client.get(f"/api/v1/entries/{e['id']}", headers=alice))["l2_full"] == SECRET
    assert _ok(client.delete(f"/api/v1/entries/{e['id']}", headers=alice))["deleted"] is True


def test_cors_is_off_by_default(client):
    r = client.options("/api/v1/stats", headers={"Origin": "https://evil.example",
                                                 "Access-Control-Request-Method": "GET"})
    assert "access-control-allow-origin" not in {k.lower() for k in r.headers}
    r = client.get("/api/v1/stats", headers={"Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in {k.lower() for k in r.headers}


def test_bearer_tokens_guard_api_dashboard_and_mcp(db):
    app = create_app(db, tokens=["tok-1", "tok-2"])
    urls = [("get", "/api/v1/stats"), ("get", "/api/v1/entries"), ("post", "/api/v1/search"),
            ("post", "/api/v1/memories"), ("get", "/api/v1/traces"), ("get", "/api/v1/debug/graph"),
            ("get", "/dashboard/"), ("get", "/dashboard/entries"), ("get", "/dashboard/static/plotly.min.js"),
            ("post", "/mcp"), ("get", "/openapi.json"), ("get", "/v1/threads/x")]
    with TestClient(app, base_url="http://127.0.0.1") as c:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "tok-1"},
                        {"Authorization": "Basic tok-1"}):
            for method, url in urls:
                r = c.request(method, url, headers=headers, json={"query": "seed", "content": "x"})
                assert r.status_code == 401, (url, headers, r.status_code)
                assert "seed memory" not in r.text
        assert c.get("/api/v1/stats").status_code == 401
        assert c.get("/api/v1/stats", headers={"Authorization": "Bearer tok-1"}).json()["entries_total"] == 1
        assert c.get("/dashboard/", headers={"Authorization": "Bearer tok-2"}).status_code == 200
        assert c.get("/api/v1/entries", headers={"Authorization": "Bearer tok-2"}).json()["count"] == 1


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_mcp_is_served_at_slash_mcp_with_tokens(db):
    pytest.importorskip("mcp.server.mcpserver", reason="the mcp extra is not installed")
    import httpx2
    import uvicorn
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(db, tokens=["tok"]), host="127.0.0.1", port=port,
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.time() + 20
        while not server.started and time.time() < deadline:
            time.sleep(0.05)
        url = f"http://127.0.0.1:{port}/mcp"
        async with httpx2.AsyncClient() as raw:
            assert (await raw.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})).status_code == 401
        async with httpx2.AsyncClient(headers={"Authorization": "Bearer tok"}) as http:
            async with Client(streamable_http_client(url, http_client=http)) as mcp_client:
                r = await mcp_client.call_tool("find", {"query": "seed memory"})
                assert r.structured_content["results"][0]["entry"]["l2_full"].startswith("seed memory")
    finally:
        server.should_exit = True
        thread.join(10)


def test_servers_refuse_non_loopback_hosts_without_tokens(tmp_path, monkeypatch, capsys):
    from typer.testing import CliRunner

    from agentbase.cli import app as cli
    from agentbase.web.dashboard import main as web_main

    monkeypatch.delenv("AGENTBASE_AUTH__TOKENS", raising=False)
    monkeypatch.setenv("AGENTBASE_EMBEDDER__PROVIDER", "none")
    path = str(tmp_path / "x.db")
    r = CliRunner().invoke(cli, ["serve", "--db", path, "--host", "0.0.0.0", "--port", "1"])
    assert r.exit_code == 2 and "refusing" in r.output
    assert web_main([path, "1", "--host", "0.0.0.0"]) == 2
    assert "refusing to listen" in capsys.readouterr().err
    assert web_main([path, "1", "--host", "192.168.1.20"]) == 2


def test_dashboard_links_reach_ids_with_reserved_characters(db, client):
    """Ids are the caller's (LangChain and LlamaIndex keys become session ids): "chat#1" linked to /sessions/chat,
    "q?x=1" to /sessions/q. Links escape the id as one path segment; a "/" the Python API allowed routes too."""
    for sid in ("chat#1", "q?x=1"):
        _ok(client.post("/api/v1/sessions", json={"session_id": sid}), 201)
    db.sync.create_session(session_id="team/alice")
    e = _ok(client.post("/api/v1/memories", json={"content": "hash id", "entry_id": "note#1", "session_id": "chat#1"}),
            201)
    listing = client.get("/dashboard/sessions").text
    for sid, link in (("chat#1", "chat%231"), ("q?x=1", "q%3Fx%3D1"), ("team/alice", "team%2Falice")):
        assert f'href="/dashboard/sessions/{link}"' in listing, sid
        page = client.get(f"/dashboard/sessions/{link}")
        assert page.status_code == 200 and sid in html.unescape(page.text), sid
    entries = client.get("/dashboard/entries").text
    assert 'href="/dashboard/entries/note%231"' in entries
    assert "hash id" in client.get("/dashboard/entries/note%231").text and e["id"] == "note#1"


def test_dashboard_views_render_and_escape_user_text(db, client):
    """Every dashboard view answers 200 HTML without a browser; user text is escaped, never markup."""
    evil = "<script>alert('x')</script> Alice met Bob in Paris"
    e = _ok(client.post("/api/v1/memories", json={"content": evil, "user_id": "alice", "category": "<b>cat</b>"}),
            201)
    s = _ok(client.post("/api/v1/sessions", json={"session_id": "s1", "user_id": "alice"}), 201)
    _ok(client.post(f"/api/v1/sessions/{s['id']}/messages", json={"role": "user", "content": evil}), 201)
    _ok(client.post(f"/api/v1/sessions/{s['id']}/commit"))
    trace_id = _ok(client.post("/api/v1/search", json={"query": "Alice Paris"}))["trace_id"]
    pages = ["/dashboard/", "/dashboard/entries", "/dashboard/entries?q=Alice&context_type=memory",
             f"/dashboard/entries/{e['id']}", "/dashboard/sessions", f"/dashboard/sessions/{s['id']}",
             "/dashboard/traces", f"/dashboard/traces/{trace_id}", "/dashboard/graph",
             "/dashboard/graph?entity=Alice", f"/dashboard/diff?a={e['id']}&b={e['id']}"]
    for page in pages:
        r = client.get(page)
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/html"), page
        assert "<script>alert(" not in r.text and "<b>cat</b>" not in r.text, page
        assert 'src="http' not in r.text and "cdn." not in r.text, page  # plotly.js comes from this server
    overview = client.get("/dashboard/").text
    for chart in ("chart-timeline", "chart-heatmap", "chart-sunburst", "chart-freshness"):
        assert f'id="{chart}"' in overview
    assert client.get("/dashboard/entries/nope").status_code == 404
    assert client.get("/dashboard/traces/nope").status_code == 404
    assert client.get("/dashboard/graph?entity=Nobody_Here").status_code == 404
    assert client.get("/dashboard/", headers={"X-AgentBase-User": "alice"}).status_code == 403
    js = client.get("/dashboard/static/plotly.min.js")
    assert js.status_code == 200 and len(js.content) > 1_000_000 and "javascript" in js.headers["content-type"]
    assert client.get("/dashboard/static/plotly.min.js",
                      headers={"If-None-Match": js.headers["etag"]}).status_code == 304


# An empty bearer token is no authentication: ``agentbase serve`` on a non-loopback host must refuse it, as it
# refuses no token at all (the app drops empty tokens, so the server would answer anyone who sends a loopback Host
# header).
@pytest.mark.parametrize("how", ["flag", "env"])
def test_serve_refuses_a_public_host_with_only_an_empty_token(tmp_path, monkeypatch, how):
    import uvicorn

    started = []
    monkeypatch.setattr(uvicorn, "run", lambda *a, **k: started.append((a, k)))  # records, binds nothing
    monkeypatch.setenv("AGENTBASE_EMBEDDER__PROVIDER", "none")
    args = ["serve", "--db", str(tmp_path / "x.db"), "--host", "0.0.0.0", "--port", "8000"]
    if how == "flag":
        monkeypatch.delenv("AGENTBASE_AUTH__TOKENS", raising=False)
        args += ["--token", ""]
    else:
        monkeypatch.setenv("AGENTBASE_AUTH__TOKENS", '[""]')
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 2 and "refusing" in r.output, r.output
    assert started == []


def test_serve_with_a_real_token_next_to_an_empty_one_requires_it(tmp_path, monkeypatch):
    import uvicorn
    from starlette.testclient import TestClient

    codes = []

    def run(app, **_):  # what a client gets from the app serve would run (its file is open only meanwhile)
        with TestClient(app) as client:
            for header in ({}, {"Authorization": "Bearer "}, {"Authorization": "Bearer tok-a"}):
                codes.append(client.get("/api/v1/entries", headers=header).status_code)

    monkeypatch.setattr(uvicorn, "run", run)
    monkeypatch.setenv("AGENTBASE_EMBEDDER__PROVIDER", "none")
    monkeypatch.setenv("AGENTBASE_AUTH__TOKENS", '["", "tok-a"]')
    r = CliRunner().invoke(cli, ["serve", "--db", str(tmp_path / "x.db"), "--host", "0.0.0.0", "--port", "8000"])
    assert r.exit_code == 0, r.output
    assert codes == [401, 401, 200]
