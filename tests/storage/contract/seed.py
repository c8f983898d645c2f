"""Rows the contract tests need before the ops under test can run (entries, their tags, sessions, links), written
with plain SQL in the engine's dialect (``?`` on SQLite, ``%s`` on PostgreSQL). Entry CRUD is not an op yet on both
engines, so the tests insert entries here; everything they assert goes through ``store.ops``."""

from __future__ import annotations

import json
import uuid
from typing import Any

T0 = "2024-05-01T10:00:00.000000+00:00"


def sql(store: Any, text: str) -> str:
    """``text`` (written with ``?``) in the placeholder style of ``store``'s engine."""
    return text.replace("?", "%s") if getattr(store, "engine", "sqlite") == "postgres" else text


async def add_entry(store: Any, *, tags: tuple[str, ...] = (), **cols: Any) -> tuple[int, str]:
    """Insert one entry (defaults for what ``cols`` leaves out) and its ``entry_tags`` rows; returns ``(rid, id)``.

    ``metadata`` may be a dict (dumped as JSON) or JSON text."""
    row: dict[str, Any] = {
        "id": cols.pop("id", None) or str(uuid.uuid4()), "context_type": "memory", "category": "fact",
        "l2_full": "text", "fts_text": "text", "tags": json.dumps(list(tags)), "metadata": "{}", "scope": "global",
        "created_at": T0, "updated_at": T0, "content_hash": uuid.uuid4().hex, "status": "active"}
    row.update(cols)
    if isinstance(row["metadata"], dict):
        row["metadata"] = json.dumps(row["metadata"])
    names = ", ".join(row)
    async with store.transaction() as c:
        rid = (await c.fetchone(sql(store, f"INSERT INTO entries({names}) VALUES ({', '.join('?' * len(row))}) "
                                           "RETURNING rid"), list(row.values())))[0]
        for tag in dict.fromkeys(tags):
            await c.execute(sql(store, "INSERT INTO entry_tags(rid, tag) VALUES (?, ?)"), (rid, tag))
    return rid, row["id"]


async def add_session(store: Any, session_id: str, *, user_id: str | None = None, agent_id: str | None = None,
                      project_id: str | None = None, created_at: str = T0) -> None:
    """Insert an open session row."""
    async with store.transaction() as c:
        await c.execute(sql(store, "INSERT INTO sessions(id, user_id, agent_id, project_id, status, metadata, "
                                   "created_at, updated_at) VALUES (?, ?, ?, ?, 'open', '{}', ?, ?)"),
                        (session_id, user_id, agent_id, project_id, created_at, created_at))


async def link(store: Any, session_id: str, entry_id: str, kind: str = "turn", message_seq: int | None = None) -> None:
    """Link an entry to a session (``session_memory_links``)."""
    async with store.transaction() as c:
        await c.execute(sql(store, "INSERT INTO session_memory_links(session_id, entry_id, kind, message_seq) "
                                   "VALUES (?, ?, ?, ?)"), (session_id, entry_id, kind, message_seq))


async def add_job(store: Any, kind: str, target: str, *, status: str = "pending", next_run_at: str = T0,
                  attempts: int = 0) -> int:
    """Insert one job row; returns its id."""
    async with store.transaction() as c:
        row = await c.fetchone(sql(store, "INSERT INTO jobs(kind, target, status, attempts, next_run_at, created_at, "
                                          "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id"),
                               (kind, target, status, attempts, next_run_at, T0, T0))
    return row[0]


async def second_connection(store: Any) -> Any:
    """Another open connection to the same database as ``store`` (its own pool or file handles), as a second
    process would hold; close it after use."""
    if getattr(store, "engine", "sqlite") == "postgres":
        from agentbase.storage.postgres.connection import open_postgres

        return await open_postgres(store.url)
    from agentbase.storage import open_database

    return await open_database(store.path)


def assert_same_interface(group: str) -> None:
    """The PostgreSQL module of ``group`` has every public function of the SQLite one, with the same signature, and
    the same column-order constants (what engine-neutral callers rely on)."""
    import importlib
    import inspect

    lite = importlib.import_module(f"agentbase.storage.sqlite.{group}")
    pg = importlib.import_module(f"agentbase.storage.postgres.{group}")
    for name, fn in vars(lite).items():
        if name.startswith("_") or not inspect.isfunction(fn) or fn.__module__ != lite.__name__:
            continue
        other = getattr(pg, name, None)
        assert other is not None, f"postgres.{group} lacks {name}"
        assert inspect.signature(other) == inspect.signature(fn), f"{group}.{name} signatures differ"
        assert inspect.iscoroutinefunction(other) == inspect.iscoroutinefunction(fn), f"{group}.{name}"
    for name, value in vars(lite).items():
        if name.isupper() and not name.startswith("_"):
            assert getattr(pg, name, None) == value, f"{group}.{name} differs"
