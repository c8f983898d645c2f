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
