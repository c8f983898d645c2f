"""Fixtures for the LangChain compatibility suite: a fresh AgentBase file per test, hash embedder, regex NER.

The suite runs offline (pytest-socket blocks the network) with fake LangChain models only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agentbase.testing import database_for
from agentbase import AgentBase, load_settings
from agentbase.adapters import AgentBaseChatMessageHistory


def open_db(path: Path) -> AgentBase:
    """An AgentBase on ``path`` with the deterministic hash embedder and the regex entity extractor."""
    return AgentBase(database_for(path), settings=load_settings(ner="regex", embedder={"provider": "hash", "dims": 64}))


@pytest.fixture
def opener() -> Callable[[Path], AgentBase]:
    """The function that opens a database file the way the fixtures do (to test reopening)."""
    return open_db


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "langchain_compat.db"


@pytest.fixture
def db(db_path: Path) -> Iterator[AgentBase]:
    """Usable from sync and async tests alike (every AgentBase call runs on the engine loop)."""
    ab = open_db(db_path)
    yield ab
    ab.sync.close()


@pytest.fixture
def history_for(db: AgentBase) -> Callable[[str], AgentBaseChatMessageHistory]:
    """A ``get_session_history`` factory that builds a *new* history object on every call.

    Unlike an in-memory dict of histories, nothing survives between calls except what is in the database file.
    """
    return lambda session_id: AgentBaseChatMessageHistory(db, session_id)
