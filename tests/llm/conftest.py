"""Fixtures for the LLM tests: a fault-injecting loopback chat-completions server."""

from __future__ import annotations

import pytest

from .fake_server import FakeLLMServer


@pytest.fixture
def fake_llm():
    server = FakeLLMServer()
    yield server
    server.close()
