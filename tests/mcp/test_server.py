"""The MCP server: every tool in process (modern and legacy protocol), over a stdio subprocess and over HTTP.

The database is also written by the mem0 adapter (a second AgentBase on the same file), and that memory must be
found by the MCP ``find`` tool.
"""

from __future__ import annotations

import inspect
import json
import os
import socket
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("mcp.server.mcpserver", reason="the MCP SDK (pip install 'agentbase[mcp]') is not installed")

from mcp import Client, StdioServerParameters  # noqa: E402

from agentbase import AgentBase, Filters, load_settings  # noqa: E402
from agentbase.embeddings import HashEmbedder  # noqa: E402
from agentbase.mcp import create_server, http_app, is_loopback, main  # noqa: E402

from tests.conftest import make_db  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DIMS = 64
MEM0_TEXT = "Maya is allergic to peanuts and keeps an epinephrine pen in her bag"
# MCP tool -> AgentBase method it mirrors.
TOOL_METHODS = {"add_memory": "add_memory", "find": "find", "get_entry": "get", "update_entry": "update",
                "delete_entry": "delete", "list_entries": "list", "history": "history",
                "create_session": "create_session", "add_message": "add_message", "get_messages": "get_messages",
                "commit_session": "commit_session", "add_resource": "add_resource", "add_skill": "add_skill",
                "find_skills": "find_skills", "get_trace": "get_trace", "stats": "stats",
                "facts": "facts", "timeline": "timeline", "neighbors": "neighbors"}
OWNER_KWARGS = {"user_id", "agent_id", "project_id", "session_id", "scope"}
FILTER_KWARGS = {f for f in Filters.__dataclass_fields__} - {"extra", "include_archived", "exclude_superseded"}


def _mem0_adapter() -> tuple[object | None, str]:
    """The mem0 adapter class, or None and the reason it cannot be imported."""
    try:
        from agentbase.adapters import Mem0Adapter
    except ImportError as exc:
        return None, f"agentbase.adapters.mem0 (Mem0Adapter) is not importable: {exc}"
    return Mem0Adapter, ""


@pytest.fixture
async def shared(tmp_path):
    """A database file with one memory written by the mem0 adapter (a second AgentBase on the same file).

    Without the adapter module the memory is written with ``add_memory`` and the mem0-specific test skips.
    Yields ``(db, path, memory_id)`` where ``db`` is the AgentBase the server uses.
    """
    path = tmp_path / "shared.db"
    adapter, _ = _mem0_adapter()
    mem0_id = None
    if adapter is not None:
        m = adapter(str(path), embedder=HashEmbedder(dims=DIMS), settings=load_settings(ner="regex"))
        try:
            mem0_id = m.add(MEM0_TEXT, user_id="maya", infer=False)["results"][0]["id"]
        finally:
            m.close()
    db = make_db(path, dims=DIMS)
    await db.initialize()
    if mem0_id is None:
        mem0_id = (await db.add_memory(MEM0_TEXT, user_id="maya")).id
    await db.flush()
    yield db, path, mem0_id
    await db.close()


async def test_memory_written_by_the_mem0_adapter_is_found_by_mcp_find(shared):
    adapter, reason = _mem0_adapter()
    if adapter is None:
        pytest.skip(reason)
    db, _, mem0_id = shared
    entry = await db.get(mem0_id)
    assert entry is not None and entry.user_id == "maya" and entry.metadata.get("role") == "user"
    async with Client(create_server(db)) as client:
        r = await client.call_tool("find", {"query": "what is Maya allergic to", "user_id": "maya", "top_k": 1})
    assert r.structured_content["results"][0]["entry"]["id"] == mem0_id


def _check_parameters(name: str, params: set[str], method: object) -> None:
    sig = inspect.signature(method)
    named = {p.name for p in sig.parameters.values()
             if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL) and p.name != "self"}
    var_kw = any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())
    allowed = named | (FILTER_KWARGS if "filters" in sig.parameters else set()) | \
        (OWNER_KWARGS if "owners" in sig.parameters else set())
    assert params <= allowed, f"{name}: {params - allowed} are not arguments of AgentBase.{method.__name__}"
    # a Python callable (find's reranker) cannot cross a transport; the server's AgentBase can be given one
    missing = named - params - {"reranker"}
    assert not missing, f"{name}: AgentBase.{method.__name__} arguments {missing} are missing"
    if var_kw and "filters" in sig.parameters:  # the owner and tag filters are always exposed
        assert {"user_id", "tags"} <= params
        assert "context_type" in params or name == "find_skills"


async def test_tool_parameters_mirror_the_public_api(shared):
    db, _, _ = shared
    server = create_server(db)
    async with Client(server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == set(TOOL_METHODS)
    for name, tool in tools.items():
        assert tool.output_schema, f"{name} has no output schema (no structured content)"
        assert tool.description and len(tool.description) > 20
        method = getattr(AgentBase, TOOL_METHODS[name], None)
        if method is None:  # find_skills before the engine grows it: mirrors find() restricted to skills
            method = AgentBase.find
            params = set(tool.input_schema["properties"])
            assert params <= {p for p in inspect.signature(method).parameters} | FILTER_KWARGS
            continue
        _check_parameters(name, set(tool.input_schema["properties"]), method)


async def _exercise_every_tool(client: Client, mem0_id: str) -> dict[str, object]:
    """Call every tool once with valid arguments; returns structured results by tool name."""
    out: dict[str, object] = {}

    async def call(name: str, args: dict) -> dict:
        r = await client.call_tool(name, args)
        assert not r.is_error, f"{name} failed: {r.content}"
        assert r.structured_content is not None, name
        out[name] = r.structured_content
        return r.structured_content

    found = await call("find", {"query": "peanut allergy epinephrine", "user_id": "maya", "top_k": 3})
    assert found["results"][0]["entry"]["id"] == mem0_id
    assert found["results"][0]["entry"]["l2_full"] == MEM0_TEXT
    entry = await call("add_memory", {"content": "Maya prefers green tea over coffee", "user_id": "maya",
                                      "category": "preference", "tags": ["drinks"], "metadata": {"src": "mcp"}})
    assert entry["category"] == "preference" and entry["tags"][0] == "drinks"
    assert (await call("get_entry", {"entry_id": entry["id"]}))["l2_full"] == "Maya prefers green tea over coffee"
    upd = await call("update_entry", {"entry_id": entry["id"], "content": "Maya prefers jasmine tea",
                                      "user_id": "maya"})
    assert upd["l2_full"] == "Maya prefers jasmine tea"
    hist = await call("history", {"entry_id": entry["id"]})
    assert [e["event"] for e in hist["events"]] == ["ADD", "UPDATE"]
    listed = await call("list_entries", {"user_id": "maya", "limit": 10})
    assert {e["id"] for e in listed["entries"]} >= {entry["id"], mem0_id}
    session = await call("create_session", {"session_id": "s-mcp", "user_id": "maya"})
    assert session["id"] == "s-mcp"
    msg = await call("add_message", {"session_id": "s-mcp", "role": "user",
                                     "content": "I adopted a beagle named Biscuit last week"})
    assert msg["seq"] == 1
    await call("add_message", {"session_id": "s-mcp", "role": "assistant", "content": "Congratulations!"})
    assert len((await call("get_messages", {"session_id": "s-mcp"}))["messages"]) == 2
    committed = await call("commit_session", {"session_id": "s-mcp"})
    assert committed["session_id"] == "s-mcp" and committed["messages"] == 2
    res = await call("add_resource", {"uri": "file:///docs/tea.md", "content": "Jasmine tea is brewed at 80C. " * 5,
                                      "mime_type": "text/markdown", "title": "Tea"})
    assert res["entries"][0]["context_type"] == "resource"
    skill = await call("add_skill", {"name": "brew_tea", "description": "Brew a cup of tea for the user",
                                     "content": "Boil water, steep 3 minutes", "input_schema": {"type": "object"}})
    assert skill["context_type"] == "skill"
    skills = await call("find_skills", {"query": "brew tea"})
    assert skills["results"] and skills["results"][0]["entry"]["name"] == "brew_tea"
    trace = await call("get_trace", {"trace_id": found["trace_id"]})
    assert trace["steps"][-1]["name"] == "final" and trace["steps"][-1]["details"]["why"]
    facts = await call("facts", {"entity": "Maya"})
    assert facts["entity"] == "Maya" and isinstance(facts["relations"], list)
    timeline = await call("timeline", {"entity": "Maya"})
    assert isinstance(timeline["relations"], list)
    r = await client.call_tool("neighbors", {"entity": "Maya"})
    if r.is_error:  # no relation was extracted for Maya: a clear not-found
        assert "not found" in r.content[0].text
        out["neighbors"] = r.content[0].text
    else:
        out["neighbors"] = r.structured_content
        assert r.structured_content["center"]["name"]
    stats = await call("stats", {})
    assert stats["entries_total"] >= 5 and stats["sessions"] == 1
    gone = await call("delete_entry", {"entry_id": entry["id"], "user_id": "maya"})
    assert gone == {"entry_id": entry["id"], "deleted": True}
    assert (await call("delete_entry", {"entry_id": entry["id"]}))["deleted"] is False
    return out


async def test_every_tool_in_process_finds_the_mem0_memory(shared):
    db, _, mem0_id = shared
    async with Client(create_server(db)) as client:
        out = await _exercise_every_tool(client, mem0_id)
    assert set(out) == set(TOOL_METHODS)


async def test_legacy_protocol_handshake(shared):
    db, _, mem0_id = shared
    async with Client(create_server(db), mode="legacy") as client:
        r = await client.call_tool("find", {"query": "epinephrine pen", "user_id": "maya"})
        assert r.structured_content["results"][0]["entry"]["id"] == mem0_id


async def test_bad_arguments_are_tool_errors_and_the_server_keeps_working(shared):
    db, _, mem0_id = shared
    async with Client(create_server(db)) as client:
        cases = [
            ("add_memory", {"content": ""}, "content must not be empty"),
            ("add_memory", {"content": "x", "confidence": 3}, "confidence must be a number between 0 and 1"),
            ("add_memory", {"text": "wrong name"}, "unknown argument"),
            ("find", {"query": "x", "userid": "maya"}, "unknown argument(s) ['userid']"),
            ("find", {"query": "x", "top_k": 0}, "top_k must be an integer"),
            ("find", {"query": "x", "mode": "magic"}, "mode"),
            ("get_entry", {"entry_id": "does-not-exist"}, "not found"),
            ("update_entry", {"entry_id": "does-not-exist", "content": "y"}, "not found"),
            ("add_message", {"session_id": "nope", "role": "user", "content": "hi"}, "not found"),
            ("commit_session", {"session_id": "nope"}, "not found"),
            ("get_trace", {"trace_id": "nope"}, "not found"),
            ("list_entries", {"limit": -1}, "limit"),
            ("no_such_tool", {}, "Unknown tool"),
            # the SDK's own argument check: one line per problem, no echoed input, no docs link
            ("add_memory", {}, "Error executing tool add_memory: ValidationError: content: Field required"),
            ("add_memory", {"content": "x", "scope": "bad"}, "ValidationError: scope: Input should be"),
            ("find", {"query": "x", "tags": "a"}, "ValidationError: tags: Input should be a valid list"),
        ]
        for name, args, needle in cases:
            r = await client.call_tool(name, args)
            text = r.content[0].text
            assert r.is_error, (name, args)
            assert needle in text, (name, text)
            assert "Traceback" not in text and 'File "' not in text
            assert "errors.pydantic.dev" not in text and "input_value" not in text, text
        r = await client.call_tool("find", {"query": "peanuts", "user_id": "maya"})
        assert not r.is_error and r.structured_content["results"][0]["entry"]["id"] == mem0_id


async def test_resources(shared):
    db, _, mem0_id = shared
    async with Client(create_server(db)) as client:
        templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
        assert "agentbase://entries/{entry_id}" in templates
        got = await client.read_resource(f"agentbase://entries/{mem0_id}")
        assert json.loads(got.contents[0].text)["l2_full"] == MEM0_TEXT
        stats = json.loads((await client.read_resource("agentbase://stats")).contents[0].text)
        assert stats["entries_total"] >= 1
        with pytest.raises(Exception, match="not found"):
            await client.read_resource("agentbase://entries/missing-id")


async def test_pinned_user_cannot_reach_other_owners(shared):
    db, _, mem0_id = shared
    other = await db.add_memory("Tom's locker code is 4412", user_id="tom")
    async with Client(create_server(db, user_id="maya")) as client:
        r = await client.call_tool("get_entry", {"entry_id": other.id})
        assert r.is_error and "not found" in r.content[0].text
        r = await client.call_tool("delete_entry", {"entry_id": other.id})
        assert r.structured_content["deleted"] is False
        r = await client.call_tool("find", {"query": "locker code", "user_id": "tom"})
        assert r.is_error and "pinned" in r.content[0].text
        r = await client.call_tool("find", {"query": "locker code"})
        assert all(x["entry"]["user_id"] == "maya" for x in r.structured_content["results"])
        r = await client.call_tool("add_memory", {"content": "Maya runs on Sundays"})
        assert r.structured_content["user_id"] == "maya"
        assert (await client.call_tool("get_entry", {"entry_id": mem0_id})).structured_content["id"] == mem0_id
    assert await db.get(other.id) is not None


def _server_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTBASE_")}
    env.update(PYTHONPATH=str(ROOT), AGENTBASE_EMBEDDER__PROVIDER="hash", AGENTBASE_EMBEDDER__DIMS=str(DIMS),
               AGENTBASE_NER="regex", HF_HUB_OFFLINE="1")
    return env


@pytest.mark.slow
async def test_stdio_subprocess_calls_every_tool(shared):
    db, path, mem0_id = shared
    await db.close()  # the subprocess owns the file now (several processes on one file also work)
    params = StdioServerParameters(command=sys.executable, args=["-m", "agentbase.mcp", "--db", str(path)],
                                   env=_server_env(), cwd=str(ROOT))
    async with Client(params) as client:
        out = await _exercise_every_tool(client, mem0_id)
    assert set(out) == set(TOOL_METHODS)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Uvicorn:
    """Run an ASGI app with uvicorn on a loopback port in a thread."""

    def __init__(self, app: object):
        import uvicorn

        self.port = _free_port()
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> _Uvicorn:
        self.thread.start()
        deadline = time.time() + 20
        while not self.server.started and time.time() < deadline:
            time.sleep(0.05)
        assert self.server.started
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)


async def test_streamable_http_with_tokens(shared):
    pytest.importorskip("uvicorn")
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    db, _, mem0_id = shared
    with _Uvicorn(http_app(db, tokens=["s3cret"])) as srv:
        url = f"http://127.0.0.1:{srv.port}/mcp"
        async with httpx2.AsyncClient() as raw:
            for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic s3cret"}):
                r = await raw.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=headers)
                assert r.status_code == 401 and "bearer" in r.text.lower()
        async with httpx2.AsyncClient(headers={"Authorization": "Bearer s3cret"}) as http:
            async with Client(streamable_http_client(url, http_client=http)) as client:
                r = await client.call_tool("find", {"query": "peanuts", "user_id": "maya"})
                assert r.structured_content["results"][0]["entry"]["id"] == mem0_id


async def test_http_refuses_non_loopback_without_tokens(shared, capsys):
    from agentbase.errors import ConfigError

    db, path, _ = shared
    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4")
    with pytest.raises(ConfigError, match="AGENTBASE_AUTH__TOKENS"):
        http_app(db, host="0.0.0.0")
    http_app(db, host="0.0.0.0", tokens=["t"])  # allowed with a token
    await db.close()
    old = os.environ.pop("AGENTBASE_AUTH__TOKENS", None)
    try:
        assert main(["--db", str(path), "--http", "--host", "0.0.0.0", "--embedder", "none"]) == 2
    finally:
        if old is not None:
            os.environ["AGENTBASE_AUTH__TOKENS"] = old
    assert "refusing to listen" in capsys.readouterr().err


@pytest.mark.parametrize("engine", ["sqlite", "postgres"])
async def test_instructions_name_no_storage_engine(engine, tmp_path, request):
    """The instructions a client reads at initialize hold for either engine (they said "one SQLite file")."""
    target = tmp_path / "m.db" if engine == "sqlite" else request.getfixturevalue("pg_url")
    db = AgentBase(target, settings=load_settings(ner="regex"), embedder=HashEmbedder(dims=DIMS))
    try:
        async with Client(create_server(db)) as client:
            text = client.instructions
        assert text and "long-term memory" in text and "`find`" in text
        assert "sqlite" not in text.lower() and "postgres" not in text.lower()
        assert (await db.stats())["engine"] == engine
    finally:
        await db.close()
