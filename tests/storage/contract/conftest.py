"""The storage contract suite runs every test on both engines: a real SQLite file and a real PostgreSQL database
(agentbase/testing.py). A test receives ``store``, an open engine connection (``Database`` or ``PgDatabase``),
and calls only its named operations (``store.ops.<group>``) and transactions, so one assertion holds for both."""

from __future__ import annotations

import pytest

from agentbase.storage import open_database


@pytest.fixture(params=["sqlite", "postgres"])
def engine(request) -> str:
    return request.param


@pytest.fixture
async def store(engine, tmp_path, request):
    if engine == "sqlite":
        db = await open_database(tmp_path / "contract.db")
    else:
        from agentbase.storage.postgres.connection import open_postgres

        db = await open_postgres(request.getfixturevalue("pg_url"))
    yield db
    await db.close()


@pytest.fixture
async def ab(engine, tmp_path, request):
    """An :class:`~agentbase.AgentBase` on the engine under test (a SQLite file, or a PostgreSQL database of its
    own), regex NER and a 64-d hash embedder."""
    from agentbase import AgentBase
    from agentbase.config import load_settings
    from agentbase.embeddings import HashEmbedder

    target = tmp_path / "e2e.db" if engine == "sqlite" else request.getfixturevalue("pg_url")
    db = AgentBase(target, settings=load_settings(ner="regex"), embedder=HashEmbedder(dims=64))
    await db.initialize()
    yield db
    await db.close()
