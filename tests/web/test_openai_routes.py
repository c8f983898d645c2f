"""The OpenAI-compatible HTTP routes (FastAPI TestClient, no sockets): every route, errors, auth."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from agentbase.web import create_app  # noqa: E402

from tests.conftest import make_db  # noqa: E402

BETA = {"OpenAI-Beta": "assistants=v2"}


@pytest.fixture
def sdb(tmp_path):
    db = make_db(tmp_path / "web.db")
    yield db
    db.sync.close()


@pytest.fixture
def client(sdb):
    with TestClient(create_app(sdb), raise_server_exceptions=False, base_url="http://127.0.0.1") as c:
        yield c


def assert_error(resp, status, *, param=None, code=None):
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert set(body) == {"error"} and set(body["error"]) == {"message", "type", "param", "code"}
    assert body["error"]["type"] == ("server_error" if status == 500 else "invalid_request_error")
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    if param is not None:
        assert body["error"]["param"] == param
    if code is not None:
        assert body["error"]["code"] == code
    assert "Traceback" not in resp.text
    return body["error"]


def test_thread_crud(client):
    r = client.post("/v1/threads", json={"messages": [{"role": "user", "content": "hello"}],
                                         "metadata": {"a": "1"}}, headers=BETA)
    assert r.status_code == 200
    t = r.json()
    assert t["object"] == "thread" and t["id"].startswith("thread_") and t["metadata"] == {"a": "1"}
    assert client.get(f"/v1/threads/{t['id']}", headers=BETA).json() == t
    up = client.post(f"/v1/threads/{t['id']}", json={"metadata": {"b": "2"}}, headers=BETA).json()
    assert up["metadata"] == {"b": "2"} and up["id"] == t["id"]
    assert client.post("/v1/threads").json()["object"] == "thread"  # no body at all
    assert client.delete(f"/v1/threads/{t['id']}").json() == {"id": t["id"], "object": "thread.deleted",
                                                              "deleted": True}
    assert_error(client.get(f"/v1/threads/{t['id']}"), 404)
    assert_error(client.delete(f"/v1/threads/{t['id']}"), 404)


def test_message_crud_and_pagination(client):
    tid = client.post("/v1/threads", json={}).json()["id"]
    ids = []
    for i in range(5):
        r = client.post(f"/v1/threads/{tid}/messages", json={"role": "user", "content": f"m{i}"}, headers=BETA)
        assert r.status_code == 200 and r.json()["object"] == "thread.message"
        ids.append(r.json()["id"])
    page = client.get(f"/v1/threads/{tid}/messages", params={"limit": 2}).json()
    assert [m["id"] for m in page["data"]] == ids[:-3:-1] and page["has_more"] is True
    assert page["object"] == "list" and page["first_id"] == ids[4] and page["last_id"] == ids[3]
    page = client.get(f"/v1/threads/{tid}/messages", params={"order": "asc", "after": ids[1], "limit": 2}).json()
    assert [m["content"][0]["text"]["value"] for m in page["data"]] == ["m2", "m3"]
    page = client.get(f"/v1/threads/{tid}/messages", params={"order": "asc", "before": ids[2]}).json()
    assert [m["id"] for m in page["data"]] == ids[:2] and page["has_more"] is False
    msg = client.get(f"/v1/threads/{tid}/messages/{ids[0]}").json()
    assert msg["content"] == [{"type": "text", "text": {"value": "m0", "annotations": []}}]
    up = client.post(f"/v1/threads/{tid}/messages/{ids[0]}", json={"metadata": {"k": "v"}}).json()
    assert up["metadata"] == {"k": "v"}
    assert client.delete(f"/v1/threads/{tid}/messages/{ids[0]}").json() == {
        "id": ids[0], "object": "thread.message.deleted", "deleted": True}
    assert_error(client.get(f"/v1/threads/{tid}/messages/{ids[0]}"), 404)
    assert_error(client.post(f"/v1/threads/{tid}/messages/msg_x", json={"metadata": {}}), 404)
    assert_error(client.delete(f"/v1/threads/{tid}/messages/msg_x"), 404)
    assert_error(client.get("/v1/threads/thread_x/messages"), 404)
    assert_error(client.post("/v1/threads/thread_x/messages", json={"role": "user", "content": "x"}), 404)
    assert_error(client.get(f"/v1/threads/{tid}/messages", params={"after": "msg_gone"}), 404, param="after")


def test_bad_input_is_400_with_the_param(client):
    tid = client.post("/v1/threads", json={}).json()["id"]
    assert_error(client.get(f"/v1/threads/{tid}/messages", params={"limit": 0}), 400, param="limit")
    assert_error(client.get(f"/v1/threads/{tid}/messages", params={"limit": "many"}), 400, param="limit")
    assert_error(client.get(f"/v1/threads/{tid}/messages", params={"order": "sideways"}), 400, param="order")
    assert_error(client.post(f"/v1/threads/{tid}/messages", json={"role": "system", "content": "x"}), 400,
                 param="role")
    assert_error(client.post(f"/v1/threads/{tid}/messages", json={"role": "user"}), 400, param="content")
    assert_error(client.post("/v1/threads", json={"metadata": {"k": 1}}), 400, param="metadata.k")
    assert_error(client.post("/v1/threads", json={"messages": [{"role": "user", "content": []}]}), 400,
                 param="messages[0].content")
    assert_error(client.post("/v1/threads", content=b"{not json", headers={"content-type": "application/json"}),
                 400)
    assert_error(client.post("/v1/conversations/conv_x", json={}), 400, param="metadata")
    # an unknown (or misspelt) field is a 400 as on OpenAI, not silently dropped
    n_threads = len(client.app.state.agentbase.sync.list_sessions())
    assert_error(client.post("/v1/threads", json={"metdata": {"user_id": "x"}}), 400, param="metdata")
    assert_error(client.post(f"/v1/threads/{tid}", json={"bogus": 1}), 400, param="bogus")
    assert_error(client.post(f"/v1/threads/{tid}/messages", json={"role": "user", "content": "x", "bogus": 1}),
                 400, param="bogus")
    assert_error(client.post("/v1/conversations", json={"bogus": 1}), 400, param="bogus")
    assert len(client.app.state.agentbase.sync.list_sessions()) == n_threads


def test_runs_are_501_without_retry(client):
    tid = client.post("/v1/threads", json={}).json()["id"]
    for method, path in [("post", f"/v1/threads/{tid}/runs"), ("get", f"/v1/threads/{tid}/runs"),
                         ("get", f"/v1/threads/{tid}/runs/run_1"), ("post", f"/v1/threads/{tid}/runs/run_1/cancel"),
                         ("get", f"/v1/threads/{tid}/runs/run_1/steps"), ("post", "/v1/threads/runs")]:
        r = getattr(client, method)(path, **({"json": {"assistant_id": "asst_1"}} if method == "post" else {}))
        assert_error(r, 501, code="not_implemented")
        assert r.headers["x-should-retry"] == "false"


def test_conversations_and_items(client):
    r = client.post("/v1/conversations", json={"items": [{"type": "message", "role": "user", "content": "hi"}],
                                               "metadata": {"x": "y"}})
    conv = r.json()
    assert r.status_code == 200 and conv["object"] == "conversation" and conv["id"].startswith("conv_")
    assert client.get(f"/v1/conversations/{conv['id']}").json() == conv
    assert client.post(f"/v1/conversations/{conv['id']}", json={"metadata": {"x": "z"}}).json()["metadata"] == \
        {"x": "z"}
    created = client.post(f"/v1/conversations/{conv['id']}/items", params={"include": ["message.output_text.logprobs"]},
                          json={"items": [{"type": "message", "role": "assistant",
                                           "content": [{"type": "output_text", "text": "yo", "annotations": []}]}]})
    listed = created.json()
    assert created.status_code == 200 and listed["object"] == "list" and listed["first_id"] == listed["last_id"]
    item = listed["data"][0]
    assert item["content"] == [{"type": "output_text", "text": "yo", "annotations": []}]
    page = client.get(f"/v1/conversations/{conv['id']}/items", params={"limit": 1, "order": "asc"}).json()
    assert page["data"][0]["content"] == [{"type": "input_text", "text": "hi"}] and page["has_more"] is True
    page = client.get(f"/v1/conversations/{conv['id']}/items", params={"after": page["last_id"], "order": "asc"})
    assert [i["id"] for i in page.json()["data"]] == [item["id"]]
    assert client.get(f"/v1/conversations/{conv['id']}/items/{item['id']}").json() == item
    deleted = client.delete(f"/v1/conversations/{conv['id']}/items/{item['id']}").json()
    assert deleted["object"] == "conversation" and deleted["id"] == conv["id"]
    assert_error(client.get(f"/v1/conversations/{conv['id']}/items/{item['id']}"), 404)
    assert_error(client.delete(f"/v1/conversations/{conv['id']}/items/{item['id']}"), 404)
    assert_error(client.post(f"/v1/conversations/{conv['id']}/items", json={"items": []}), 400, param="items")
    assert_error(client.post(f"/v1/conversations/{conv['id']}/items", json={}), 400, param="items")
    assert client.delete(f"/v1/conversations/{conv['id']}").json() == {
        "id": conv["id"], "object": "conversation.deleted", "deleted": True}
    for method, path in [("get", conv["id"]), ("delete", conv["id"]), ("get", f"{conv['id']}/items")]:
        assert_error(getattr(client, method)(f"/v1/conversations/{path}"), 404)


def test_unknown_routes_and_methods_use_the_error_shape(client):
    assert_error(client.get("/v1/nothing-here"), 404)
    assert_error(client.put("/v1/threads/thread_x"), 405)


def test_unexpected_errors_do_not_leak(sdb, monkeypatch):
    app = create_app(sdb)

    async def boom(*args, **kwargs):
        raise RuntimeError("secret internal detail /etc/passwd")

    monkeypatch.setattr(app.state.openai_adapter, "retrieve_thread", boom)
    with TestClient(app, raise_server_exceptions=False, base_url="http://127.0.0.1") as c:
        r = c.get("/v1/threads/thread_x")
    err = assert_error(r, 500)
    assert "secret" not in r.text and "RuntimeError" not in r.text and err["type"] == "server_error"


def test_bearer_tokens(sdb):
    with TestClient(create_app(sdb, tokens=["t1", "t2"]), raise_server_exceptions=False) as c:
        assert_error(c.post("/v1/threads", json={}), 401, code="invalid_api_key")
        assert_error(c.get("/v1/threads/x", headers={"Authorization": "Bearer nope"}), 401)
        assert_error(c.get("/v1/threads/x", headers={"Authorization": "Basic dDE="}), 401)
        assert c.get("/v1/threads/x").headers["www-authenticate"] == "Bearer"
        r = c.post("/v1/threads", json={}, headers={"Authorization": "Bearer t2", **BETA})
        assert r.status_code == 200
        assert c.get(f"/v1/threads/{r.json()['id']}", headers={"authorization": "bearer t1"}).status_code == 200
    with TestClient(create_app(sdb, tokens=[]), base_url="http://127.0.0.1") as c:  # empty list: no auth
        assert c.post("/v1/threads", json={}).status_code == 200


def test_create_app_from_a_path_owns_the_database(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTBASE_EMBEDDER__PROVIDER", "hash")
    app = create_app(tmp_path / "owned.db")
    with TestClient(app, base_url="http://127.0.0.1") as c:
        assert c.post("/v1/threads", json={}).status_code == 200
    assert app.state.agentbase.db is None  # closed on shutdown


def test_serve_cli_refuses_public_hosts_without_tokens(tmp_path, monkeypatch):
    import uvicorn
    from typer.testing import CliRunner

    from agentbase.cli import app as cli

    calls = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: calls.append((app, kw)))
    monkeypatch.delenv("AGENTBASE_AUTH__TOKENS", raising=False)
    monkeypatch.setenv("AGENTBASE_EMBEDDER__PROVIDER", "hash")
    runner, path = CliRunner(), str(tmp_path / "cli.db")
    r = runner.invoke(cli, ["serve", "--db", path, "--host", "0.0.0.0"])
    assert r.exit_code == 2 and "refusing" in r.output and not calls
    r = runner.invoke(cli, ["serve", "--db", path, "--port", "8123"])
    assert r.exit_code == 0, r.output
    assert "http://127.0.0.1:8123/v1" in r.output and calls[-1][1] == {"host": "127.0.0.1", "port": 8123,
                                                                          "log_level": "info"}
    r = runner.invoke(cli, ["serve", "--db", path, "--host", "0.0.0.0", "--token", "t"])
    assert r.exit_code == 0 and "bearer token required" in r.output
    monkeypatch.setenv("AGENTBASE_AUTH__TOKENS", '["from-env"]')
    r = runner.invoke(cli, ["serve", "--db", path, "--host", "192.168.1.5"])
    assert r.exit_code == 0 and calls[-1][1]["host"] == "192.168.1.5"
    with TestClient(calls[-1][0], raise_server_exceptions=False, base_url="http://127.0.0.1") as c:  # (its database is closed by now)
        assert c.post("/v1/threads", json={}).status_code == 401
        assert c.post("/v1/threads", json={}, headers={"Authorization": "Bearer from-env"}).status_code != 401
