"""The PostgreSQL engine's connection layer on a real server (agentbase/testing.py): schema creation, reopen,
version refusal, transactions, error translation and URL redaction."""

from __future__ import annotations

import pytest

from agentbase.errors import SchemaVersionError, StorageError
from agentbase.storage import SCHEMA_VERSION
from agentbase.storage.postgres.connection import is_postgres_url, open_postgres, redact_url


async def test_schema_is_created_once_at_the_current_version_and_reopens(pg_url):
    db = await open_postgres(pg_url)
    try:
        assert (await db.fetchone("SELECT MAX(version) FROM schema_version"))[0] == SCHEMA_VERSION
        async with db.transaction() as c:
            await c.execute("INSERT INTO meta(key, value) VALUES (%s, %s)", ("k", "v"))
    finally:
        await db.close()
    again = await open_postgres(pg_url)
    try:
        assert await again.fetchall("SELECT version FROM schema_version") == [(SCHEMA_VERSION,)]
        assert (await again.fetchone("SELECT value FROM meta WHERE key = %s", ("k",)))[0] == "v"
    finally:
        await again.close()


async def test_a_failed_transaction_writes_nothing_and_raises_storage_error(pg_url):
    db = await open_postgres(pg_url)
    try:
        with pytest.raises(StorageError):
            async with db.transaction() as c:
                await c.execute("INSERT INTO meta(key, value) VALUES (%s, %s)", ("a", "1"))
                await c.execute("INSERT INTO meta(key, value) VALUES (%s, %s)", ("a", "2"))  # duplicate key
        assert await db.fetchall("SELECT key FROM meta") == []
    finally:
        await db.close()


async def test_a_newer_schema_is_refused(pg_url):
    db = await open_postgres(pg_url)
    async with db.transaction() as c:
        await c.execute("INSERT INTO schema_version(version) VALUES (%s)", (SCHEMA_VERSION + 1,))
    await db.close()
    with pytest.raises(SchemaVersionError, match="newer than this AgentBase"):
        await open_postgres(pg_url)


async def test_an_unreachable_server_is_a_storage_error_without_the_password(pg_url):
    url = "postgresql://agent:s3cret@127.0.0.1:1/nowhere"
    with pytest.raises(StorageError) as err:
        await open_postgres(url, busy_timeout_s=1.0)
    assert "s3cret" not in str(err.value) and "agent:***@127.0.0.1:1" in str(err.value)


def test_url_helpers():
    assert is_postgres_url("postgresql://u@h/db") and is_postgres_url("postgres://h/db")
    assert not is_postgres_url("agent.db") and not is_postgres_url("/tmp/postgresql://x")
    assert redact_url("postgresql://u:p@h:5432/db?sslmode=require") == "postgresql://u:***@h:5432/db?sslmode=require"
    assert redact_url("postgresql://u@h/db") == "postgresql://u@h/db"


def test_a_password_in_the_query_string_is_redacted_and_the_rest_kept():
    assert redact_url("postgresql://127.0.0.1:55432/postgres?password=QUERYPW") == \
        "postgresql://127.0.0.1:55432/postgres?password=***"
    assert redact_url("postgresql://u:p@h/db?sslmode=require&password=Q%26W&%70assword=Z&passwordx=1") == \
        "postgresql://u:***@h/db?sslmode=require&password=***&%70assword=***&passwordx=1"
    assert redact_url("postgresql://[::1/db?password=QUERYPW") == "postgresql://***"  # unsplittable: nothing echoed


async def test_a_query_string_password_never_reaches_an_error_or_the_path(pg_url):
    with pytest.raises(StorageError) as err:
        await open_postgres("postgresql://127.0.0.1:1/nowhere?password=QUERYPW&connect_timeout=1", busy_timeout_s=1.0)
    assert "QUERYPW" not in str(err.value) and "password=***" in str(err.value)
    # the test server trusts local sockets, so it accepts the (unused) password: the open database never shows it
    db = await open_postgres(pg_url + ("&" if "?" in pg_url else "?") + "password=QUERYPW")
    try:
        assert "QUERYPW" not in db.path and db.path.endswith("&password=***")
    finally:
        await db.close()
