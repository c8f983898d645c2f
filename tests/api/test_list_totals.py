"""Listing many memories: mem0 ``get_all`` says how many exist and pages through all of them; the CLI list, MCP's
list_entries, the HTTP API and the dashboard report the same total."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from agentbase.cli import app

from tests.conftest import make_db

N = 47  # more than mem0's default top_k of 20, not a multiple of any page size used below


@pytest.fixture
def seeded(tmp_path):
    """A file with N memories of user u3 (dedup off: every text is distinct anyway) and 3 of another user."""
    path = tmp_path / "totals.db"
    db = make_db(path)
    for i in range(N):
        db.sync.add_memory(f"note {i} about topic {i * 7 % 13}", user_id="u3", dedup=False)
    for i in range(3):
        db.sync.add_memory(f"other user's note {i}", user_id="u4", dedup=False)
    yield db, path
    db.sync.close()


def test_mem0_get_all_keeps_the_default_cap_but_reports_the_total(seeded):
    from agentbase.adapters import Mem0Adapter

    m = Mem0Adapter(seeded[0])
    out = m.get_all(user_id="u3")
    assert len(out["results"]) == 20 and out["total"] == N  # mem0's default top_k, and now says more exist
    assert m.get_all(filters={"user_id": "u3"}, top_k=100)["total"] == N
    assert len(m.get_all(filters={"user_id": "u3"}, top_k=100)["results"]) == N


def test_mem0_pages_are_disjoint_and_complete(seeded):
    from agentbase.adapters import Mem0Adapter

    m = Mem0Adapter(seeded[0])
    everything = [r["id"] for r in m.get_all(filters={"user_id": "u3"}, top_k=1000)["results"]]
    seen: list[str] = []
    for page in range(1, 7):  # 47 / 10 -> pages 1-5 hold memories, 6 is empty
        out = m.get_all(filters={"user_id": "u3"}, page=page, page_size=10)
        assert out["total"] == N and out["page"] == page and out["page_size"] == 10
        seen += [r["id"] for r in out["results"]]
        assert len(out["results"]) == (10 if page < 5 else 7 if page == 5 else 0)
    assert seen == everything and len(set(seen)) == N  # newest first, no overlap, nothing missing
    assert m.get_all(filters={"user_id": "u3"}, page_size=5)["page"] == 1  # page defaults to 1
    assert len(m.get_all(filters={"user_id": "u3"}, page=1)["results"]) == N  # page_size defaults to 100


@pytest.mark.parametrize("kwargs", [{"page": 0}, {"page": -1}, {"page_size": 0}, {"page": "2"}, {"page": True},
                                    {"page_size": 10_001}, {"page": 1.5}])
def test_mem0_bad_paging_is_a_value_error(seeded, kwargs):
    from agentbase.adapters import Mem0Adapter

    with pytest.raises(ValueError, match="page"):
        Mem0Adapter(seeded[0]).get_all(filters={"user_id": "u3"}, **kwargs)


def test_mem0_total_counts_after_operator_filters(seeded):
    from agentbase.adapters import Mem0Adapter

    m = Mem0Adapter(seeded[0])
    for i in range(5):
        m.add(f"tagged fact {i}", user_id="u3", infer=False, metadata={"n": i})
    out = m.get_all(filters={"user_id": "u3", "n": {"gte": 2}}, top_k=2)
    assert out["total"] == 3 and len(out["results"]) == 2


def test_cli_list_shows_the_total(seeded):
    db, path = seeded
    runner = CliRunner()
    env = {"AGENTBASE_EMBEDDER__PROVIDER": "hash", "AGENTBASE_NER": "regex"}
    res = runner.invoke(app, ["list", "--db", str(path), "--user-id", "u3", "--limit", "20", "--offset", "40"],
                        env=env)
    assert res.exit_code == 0, res.output
    assert "41-47 of 47 entries" in res.output
    out = json.loads(runner.invoke(app, ["list", "--db", str(path), "--user-id", "u3", "--json"], env=env).output)
    assert out["count"] == 20 and out["total"] == N and len(out["entries"]) == 20
    assert json.loads(runner.invoke(app, ["list", "--db", str(path), "--json"], env=env).output)["total"] == N + 3
    bad = runner.invoke(app, ["list", "--db", str(path), "--limit", "0"], env=env)
    assert bad.exit_code == 2


async def test_mcp_list_entries_reports_the_total(seeded):
    pytest.importorskip("mcp.server.mcpserver", reason="the MCP SDK (pip install 'agentbase[mcp]') is not installed")
    from mcp import Client

    from agentbase.mcp import create_server

    db, _ = seeded
    async with Client(create_server(db)) as client:
        r = await client.call_tool("list_entries", {"user_id": "u3", "limit": 10, "offset": 40})
        assert not r.is_error, r.content
        assert r.structured_content["count"] == 7 and r.structured_content["total"] == N


def test_http_and_dashboard_lists_report_the_total(seeded):
    pytest.importorskip("fastapi", reason="the web extra (pip install 'agentbase[web]') is not installed")
    from fastapi.testclient import TestClient

    from agentbase.web import create_app

    db, _ = seeded
    with TestClient(create_app(db), base_url="http://127.0.0.1") as c:
        r = c.get("/api/v1/entries", params={"user_id": "u3", "limit": 5})
        assert r.status_code == 200 and r.json()["count"] == 5 and r.json()["total"] == N
        page = c.get("/dashboard/entries", params={"user_id": "u3", "offset": 0})
        assert page.status_code == 200 and f"1–{N} of {N} entries" in page.text
        later = c.get("/dashboard/entries", params={"user_id": "u3", "offset": 40})
        assert later.status_code == 200 and f"41–{N} of {N} entries" in later.text


# ``agentbase list`` with an offset past the last entry shows no range it does not hold ("0-100 of 10").
def test_list_past_the_end_reports_none_shown(tmp_path):
    path = tmp_path / "l.db"
    db = make_db(path)
    for i in range(10):
        db.sync.add_memory(f"note {i}", user_id="bob")
    db.sync.close()
    run = CliRunner()
    r = run.invoke(app, ["list", "--db", str(path), "--user-id", "bob", "--limit", "3", "--offset", "100"])
    assert r.exit_code == 0, r.output
    last = r.output.strip().splitlines()[-1]
    assert last == "0 of 10 entries (offset 100 is past the end)", last
    r = run.invoke(app, ["list", "--db", str(path), "--user-id", "bob", "--limit", "3", "--offset", "8"])
    assert r.output.strip().splitlines()[-1] == "9-10 of 10 entries"
    r = run.invoke(app, ["list", "--db", str(path), "--user-id", "nobody"])
    assert r.output.strip().splitlines()[-1] == "0 of 0 entries"
