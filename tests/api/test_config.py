"""Settings from the environment: list settings as plain text, comma-separated or JSON; errors name the variable."""

from __future__ import annotations

import subprocess
import sys

import pytest

from agentbase import ConfigError, load_settings


@pytest.mark.parametrize(("value", "tokens"), [
    ("tok-a", ["tok-a"]),                     # one token, as the README's servers section reads
    ("tok-a,tok-b", ["tok-a", "tok-b"]),      # the TOKENS=token1,token2 convention
    (" tok-a , tok-b ,", ["tok-a", "tok-b"]),  # spaces and a trailing comma
    ('["tok-a", "tok,b"]', ["tok-a", "tok,b"]),  # JSON still works, and carries a comma inside a value
    ("12345", ["12345"]),                     # a token of digits stays a string
    ("", []),                                 # an empty variable is no tokens
])
def test_a_list_setting_reads_plain_comma_separated_or_json(monkeypatch, value, tokens):
    monkeypatch.setenv("AGENTBASE_AUTH__TOKENS", value)
    assert load_settings().auth.tokens == tokens


def test_every_list_setting_takes_the_same_rule(monkeypatch):
    monkeypatch.setenv("AGENTBASE_INGEST__EMBED_ROLES", "user,assistant")
    monkeypatch.setenv("AGENTBASE_INGEST__NER_ROLES", "assistant")
    s = load_settings()
    assert s.ingest.embed_roles == ["user", "assistant"] and s.ingest.ner_roles == ["assistant"]


def test_json_that_does_not_parse_is_an_error_naming_the_variable(monkeypatch):
    monkeypatch.setenv("AGENTBASE_AUTH__TOKENS", '["tok1"')  # the error named only the section "auth"
    with pytest.raises(ConfigError, match=r"AGENTBASE_AUTH__TOKENS must hold JSON"):
        load_settings()


def test_the_json_hint_names_a_lower_case_variable_too(monkeypatch):
    monkeypatch.setenv("agentbase_auth__tokens", "[tok1")  # pydantic-settings reads names in any case
    with pytest.raises(ConfigError, match=r"agentbase_auth__tokens must hold JSON"):
        load_settings()


@pytest.mark.slow
def test_serve_accepts_a_plain_token_from_the_environment(tmp_path):
    """``AGENTBASE_AUTH__TOKENS=tok-a agentbase serve`` exited with a pydantic error asking for JSON; now the
    server starts and requires that token."""
    import os
    import socket
    import time

    import httpx

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "AGENTBASE_AUTH__TOKENS": "tok-a,tok-b", "AGENTBASE_EMBEDDER__PROVIDER": "hash"}
    cmd = [sys.executable, "-m", "agentbase.cli", "serve", "--db", str(tmp_path / "s.db"), "--port", str(port)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        url, deadline, status = f"http://127.0.0.1:{port}/api/v1/stats", time.monotonic() + 60, None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                status = httpx.get(url, timeout=2).status_code
                break
            except httpx.TransportError:
                time.sleep(0.2)
        assert proc.poll() is None, proc.stdout.read()
        assert status == 401
        assert httpx.get(url, headers={"Authorization": "Bearer tok-b"}, timeout=5).status_code == 200
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_unparseable_settings_in_the_environment_are_a_config_error(monkeypatch):
    monkeypatch.setenv("AGENTBASE_RETRIEVAL", "x")
    with pytest.raises(ConfigError, match="environment"):
        load_settings()
