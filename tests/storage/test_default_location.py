"""With no path given, every entry point opens what ``AgentBase()`` opens: ``storage.url``
(``AGENTBASE_STORAGE__URL``) when set, else ``agentbase.db``; an explicit path or ``AGENTBASE_DB`` wins. On a real
PostgreSQL server and real files."""

from __future__ import annotations

import pytest

from agentbase import AgentBase, SyncAgentBase
from agentbase.storage.postgres.connection import redact_url

UNREACHABLE = "postgresql://agent:secretpw@127.0.0.1:1/nowhere?connect_timeout=1"


@pytest.fixture
def hashed(monkeypatch):
    monkeypatch.setenv("AGENTBASE_EMBEDDER__PROVIDER", "hash")
    monkeypatch.setenv("AGENTBASE_NER", "regex")


def test_sync_agentbase_without_a_path_follows_storage_url(pg_url, monkeypatch, tmp_path, hashed):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENTBASE_STORAGE__URL", pg_url)
    assert SyncAgentBase().location == AgentBase().location == redact_url(pg_url)
    with SyncAgentBase() as db:
        db.add_memory("Rotate the API keys on Friday")
        assert db.stats()["engine"] == "postgres" and db.count() == 1
    with SyncAgentBase(url=pg_url) as db:  # url= alone (it was refused: "give path or url, not both")
        assert db.count() == 1
    assert not (tmp_path / "agentbase.db").exists()
    # an explicit path keeps meaning that file, the same as AgentBase("agentbase.db")
    assert SyncAgentBase("agentbase.db").location == AgentBase("agentbase.db").location == "agentbase.db"


def test_sync_agentbase_without_a_path_or_url_opens_agentbase_db(monkeypatch, tmp_path, hashed):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AGENTBASE_STORAGE__URL", raising=False)
    with SyncAgentBase() as db:
        db.add_memory("Lisbon trip in May")
        assert db.location == "agentbase.db"
    assert (tmp_path / "agentbase.db").is_file()


def test_mcp_and_web_servers_without_a_path_follow_storage_url(monkeypatch, tmp_path, capsys):
    """The servers try the URL (unreachable here: exit 2, the URL in the error, its password hidden)."""
    from agentbase.mcp import main as mcp_main
    from agentbase.web.dashboard import main as web_main

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AGENTBASE_DB", raising=False)
    monkeypatch.setenv("AGENTBASE_STORAGE__URL", UNREACHABLE)
    for main in (mcp_main, web_main):
        assert main([]) == 2
        err = capsys.readouterr().err
        assert "cannot open postgresql://agent:***@127.0.0.1:1/nowhere" in err and "secretpw" not in err
    assert list(tmp_path.iterdir()) == []  # no agentbase.db made
