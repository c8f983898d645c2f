"""An empty bearer token is no authentication: ``agentbase serve`` on a non-loopback host must refuse it, as it
refuses no token at all (the app drops empty tokens, so the server would answer anyone who sends a loopback Host
header)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from agentbase.cli import app as cli


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
