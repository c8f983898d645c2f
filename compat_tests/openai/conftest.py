"""Fixtures for the OpenAI SDK compatibility suite.

The real ``openai`` SDK (strict response validation, no retries) talks to AgentBase's OpenAI-compatible routes:
- ``server``: ``create_app`` served by uvicorn in a background thread on a free 127.0.0.1 port (loopback is the
  only network the nox session allows);
- ``asgi_client``: the async SDK through ``httpx2.ASGITransport`` (in process, no socket).
One SQLite file per module (hash embedder, regex NER); the ``db`` fixture exposes it for cross-checks.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
import uvicorn

from agentbase.testing import database_for
from agentbase import AgentBase, load_settings
from agentbase.web import create_app

TOKEN = "sk-agentbase-compat"


def pytest_configure(config: pytest.Config) -> None:
    # Every Assistants call is marked deprecated by the SDK (FRAMEWORK_CONTRACTS.md 4.1).
    config.addinivalue_line("filterwarnings", "ignore:The Assistants API is deprecated:DeprecationWarning")


def open_db(path: Path) -> AgentBase:
    """An AgentBase on ``path`` with the deterministic hash embedder and the regex entity extractor."""
    return AgentBase(database_for(path), settings=load_settings(ner="regex", embedder={"provider": "hash", "dims": 64}))


class LiveServer:
    """uvicorn serving an app on 127.0.0.1 in a daemon thread; ``url`` is the OpenAI ``base_url``."""

    def __init__(self, app: Any):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AgentBase]:
    ab = open_db(tmp_path_factory.mktemp("openai") / "openai_compat.db")
    yield ab
    ab.sync.close()


@pytest.fixture(scope="module")
def server(db: AgentBase) -> Iterator[LiveServer]:
    with LiveServer(create_app(db)) as live:
        yield live


@pytest.fixture(scope="module")
def client(server: LiveServer) -> Iterator[openai.OpenAI]:
    """The sync SDK client exactly as a user would build it, pointed at the live server."""
    with openai.OpenAI(base_url=server.url, api_key="x", max_retries=0, _strict_response_validation=True) as c:
        yield c


@pytest.fixture
async def async_client(server: LiveServer):
    async with openai.AsyncOpenAI(base_url=server.url, api_key="x", max_retries=0,
                                  _strict_response_validation=True) as c:
        yield c


@pytest.fixture
def token() -> str:
    """The bearer token the in-process app accepts."""
    return TOKEN


@pytest.fixture
async def asgi_client(db: AgentBase, token: str):
    """The async SDK in process (httpx2.ASGITransport), with bearer auth switched on."""
    app = create_app(db, tokens=[token])
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://agentbase.test/v1") as http:
        async with openai.AsyncOpenAI(base_url="http://agentbase.test/v1", api_key=token, http_client=http,
                                      max_retries=0, _strict_response_validation=True) as c:
            yield c

