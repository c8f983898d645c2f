"""A chat adapter bound to one user never reads or writes another user's session, whatever id it is handed."""

from __future__ import annotations

import pytest

from agentbase import NotFoundError, ValidationError

from tests.conftest import make_db


@pytest.fixture
def sdb(tmp_path):
    db = make_db(tmp_path / "owners.db")
    yield db
    db.sync.close()


def _alice_session(sdb) -> None:
    sdb.sync.create_session(session_id="shared", user_id="alice")
    sdb.sync.add_message("shared", "user", "alice's private note: the safe code is 4711")


def test_core_get_or_create_never_returns_another_owners_session(sdb):
    _alice_session(sdb)
    assert sdb.sync.create_session(session_id="shared", user_id="alice").user_id == "alice"
    assert sdb.sync.create_session(session_id="shared").user_id == "alice"  # no owner given: any
    with pytest.raises(ValidationError, match="another user_id"):
        sdb.sync.create_session(session_id="shared", user_id="bob")


def test_langchain_history_of_another_user_reads_empty_and_refuses_writes(sdb):
    pytest.importorskip("langchain_core")
    from langchain_core.messages import HumanMessage

    from agentbase.adapters import AgentBaseChatMessageHistory

    _alice_session(sdb)
    bob = AgentBaseChatMessageHistory(sdb, "shared", user_id="bob")
    assert bob.messages == []
    with pytest.raises(NotFoundError):
        bob.add_messages([HumanMessage("bob was here")])
    with pytest.raises(NotFoundError):
        bob.clear()
    alice = AgentBaseChatMessageHistory(sdb, "shared", user_id="alice")
    assert [m.content for m in alice.messages] == ["alice's private note: the safe code is 4711"]


async def test_llama_index_store_of_another_user_reads_empty_and_refuses_writes(sdb):
    pytest.importorskip("llama_index.core")
    from llama_index.core.base.llms.types import ChatMessage

    from agentbase.adapters import AgentBaseChatStore

    await sdb.create_session(session_id="shared", user_id="alice")
    await sdb.add_message("shared", "user", "alice's private note")
    bob = AgentBaseChatStore(sdb, user_id="bob")
    assert await bob.aget_messages("shared") == []
    assert await bob.adelete_messages("shared") is None
    with pytest.raises(ValidationError):
        await bob.async_add_message("shared", ChatMessage(role="user", content="bob was here"))
    assert [m.content for m in await sdb.get_messages("shared")] == ["alice's private note"]


def test_openai_adapter_and_http_scope_threads_to_their_user(sdb):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from agentbase.adapters import OpenAIAssistantAdapter
    from agentbase.web import create_app

    _alice_session(sdb)
    with pytest.raises(Exception, match="No thread found"):
        OpenAIAssistantAdapter(sdb, user_id="bob").retrieve_thread("shared")
    assert OpenAIAssistantAdapter(sdb, user_id="alice").retrieve_thread("shared")["id"] == "shared"
    beta = {"OpenAI-Beta": "assistants=v2"}
    with TestClient(create_app(sdb), raise_server_exceptions=False, base_url="http://127.0.0.1") as client:
        made = client.post("/v1/threads", json={}, headers={**beta, "X-AgentBase-User": "alice"}).json()
        assert sdb.sync.get_session(made["id"]).user_id == "alice"
        as_bob = {**beta, "X-AgentBase-User": "bob"}
        assert client.get(f"/v1/threads/{made['id']}", headers=as_bob).status_code == 404
        assert client.get(f"/v1/threads/{made['id']}/messages", headers=as_bob).status_code == 404
        assert client.get(f"/v1/threads/{made['id']}", headers={**beta, "X-AgentBase-User": "alice"}).status_code \
            == 200


def test_http_scope_hides_unowned_threads_and_is_never_dropped_on_mcp(sdb):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from agentbase.web import create_app

    sdb.sync.create_session(session_id="admin-s")  # no owner
    sdb.sync.add_message("admin-s", "user", "admin secret")
    beta = {"OpenAI-Beta": "assistants=v2"}
    alice = {**beta, "X-AgentBase-User": "alice"}
    with TestClient(create_app(sdb), raise_server_exceptions=False, base_url="http://127.0.0.1") as client:
        assert client.get("/v1/threads/admin-s/messages", headers=alice).status_code == 404
        assert client.delete("/v1/conversations/admin-s", headers=alice).status_code == 404
        assert client.get("/v1/threads/admin-s/messages", headers=beta).status_code == 200  # unscoped: allowed
        # the MCP endpoint is not owner-scoped: a scoped request is refused, not silently widened
        mcp = client.post("/mcp", headers={"X-AgentBase-User": "alice"}, json={})
        assert mcp.status_code == 403
        # a second, different owner header (a gateway that appends) is refused
        both = client.get("/api/v1/entries", headers=[("X-AgentBase-User", "bob"), ("X-AgentBase-User", "alice")])
        assert both.status_code == 400
        # DNS rebinding: another Host or Origin than this machine gets 421 without tokens
        assert client.get("/api/v1/entries", headers={"Host": "evil.example:8000"}).status_code == 421
        assert client.get("/api/v1/entries", headers={"Origin": "http://evil.example"}).status_code == 421
        assert client.get("/api/v1/entries", headers={"Origin": "http://localhost:3000"}).status_code == 200
        # a misspelt owner query parameter is refused, not ignored (it would read every owner)
        assert client.get("/api/v1/entries", params={"userid": "alice"}).status_code == 400
        assert client.get("/api/v1/entries", params={"user_id": "alice"}).status_code == 200
        # bodies above 2 MiB on the OpenAI routes too
        made = client.post("/v1/threads", json={}, headers=alice).json()
        big = {"role": "user", "content": "word " * (1024 * 1024)}
        assert client.post(f"/v1/threads/{made['id']}/messages", json=big, headers=alice).status_code == 413
        # bad input that reached the database as a 500
        assert client.get("/api/v1/traces", params={"offset": 10**20}).status_code == 400
        bad_role = client.post("/api/v1/sessions", json={"session_id": "s1"})
        assert bad_role.status_code in (200, 201)
        raw = b'{"role": "\\ud800", "content": "x"}'
        r = client.post("/api/v1/sessions/s1/messages", content=raw, headers={"content-type": "application/json"})
        assert r.status_code == 400
    assert [m.content for m in sdb.sync.get_messages("admin-s")] == ["admin secret"]


def test_llama_index_store_rechecks_a_key_it_wrote_after_another_user_took_it(tmp_path):
    pytest.importorskip("llama_index.core")
    from llama_index.core.base.llms.types import ChatMessage

    from agentbase.adapters import AgentBaseChatStore

    db = make_db(tmp_path / "k.db")
    try:
        a1, a2, bob = (AgentBaseChatStore(db, user_id=u) for u in ("alice", "alice", "bob"))
        a1.add_message("k", ChatMessage(role="user", content="alice hello"))
        a2.delete_messages("k")
        bob.add_message("k", ChatMessage(role="user", content="bob private"))
        assert a1.get_messages("k") == []
        with pytest.raises(ValidationError):
            a1.add_message("k", ChatMessage(role="user", content="alice again"))
        assert a1.delete_messages("k") is None
        assert [m.content for m in bob.get_messages("k")] == ["bob private"]
    finally:
        db.sync.close()
