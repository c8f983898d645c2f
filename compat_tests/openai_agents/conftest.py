"""Fixtures for the OpenAI Agents SDK compatibility suite: a fresh AgentBase file per test (hash embedder, regex
NER) and the SDK's own ``SQLiteSession`` as the reference each scenario is also run on.

Offline: tracing is disabled (its exporter would post to api.openai.com), ``OPENAI_API_KEY`` may be empty (nox
sets it so), and every model is :class:`fake_model.FixedModel`; pytest-socket blocks the network under nox.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENAI_API_KEY", "")
os.environ["OPENAI_AGENTS_DISABLE_TRACING"] = "1"

import pytest  # noqa: E402
from agents import SQLiteSession, set_tracing_disabled  # noqa: E402

from agentbase.testing import database_for  # noqa: E402
from agentbase import AgentBase, load_settings  # noqa: E402
from agentbase.adapters import AgentBaseSession  # noqa: E402

set_tracing_disabled(True)


def open_db(path: Path) -> AgentBase:
    """An AgentBase on ``path`` with the deterministic hash embedder and the regex entity extractor."""
    return AgentBase(database_for(path), settings=load_settings(ner="regex", embedder={"provider": "hash", "dims": 64}))


@pytest.fixture
def opener() -> Callable[[Path], AgentBase]:
    """The function that opens a database file the way the fixtures do (to test reopening)."""
    return open_db


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "openai_agents_compat.db"


@pytest.fixture
def db(db_path: Path) -> Iterator[AgentBase]:
    """Usable from sync and async tests alike (every AgentBase call runs on the engine loop)."""
    ab = open_db(db_path)
    yield ab
    ab.sync.close()


SessionFactory = Callable[..., Any]


@pytest.fixture
def backends(tmp_path: Path, db: AgentBase) -> Iterator[dict[str, SessionFactory]]:
    """``{"sqlite": open, "agentbase": open}``: each ``open(session_id, **kwargs)`` makes a session of that
    backend on one file per backend (the SDK's ``SQLiteSession`` on ``sdk.db``, ``AgentBaseSession`` on the
    ``db`` fixture), so several session ids share a file as they would in an app. Sessions are closed after the
    test."""
    made: list[Any] = []

    def sqlite(session_id: str, **kwargs: Any) -> SQLiteSession:
        made.append(SQLiteSession(session_id, tmp_path / "sdk.db", **kwargs))
        return made[-1]

    def agentbase(session_id: str, **kwargs: Any) -> AgentBaseSession:
        made.append(AgentBaseSession(session_id, db, **kwargs))
        return made[-1]

    yield {"sqlite": sqlite, "agentbase": agentbase}
    for session in made:
        session.close()
