"""Fixtures for the LangGraph compatibility suite: a fresh AgentBase file per test, hash embedder, regex NER.

Runs offline (pytest-socket blocks the network); models are langchain-core's fake chat models.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agentbase.testing import database_for
from agentbase import AgentBase, load_settings


def open_db(path: Path) -> AgentBase:
    """An AgentBase on ``path`` with the deterministic hash embedder and the regex entity extractor."""
    return AgentBase(database_for(path), settings=load_settings(ner="regex", embedder={"provider": "hash", "dims": 64}))


@pytest.fixture
def opener() -> Callable[[Path], AgentBase]:
    """The function that opens a database file the way the fixtures do (to test reopening)."""
    return open_db


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "langgraph_compat.db"


@pytest.fixture
def db(db_path: Path) -> Iterator[AgentBase]:
    """Usable from sync and async tests alike (every AgentBase call runs on the engine loop)."""
    ab = open_db(db_path)
    yield ab
    ab.sync.close()
