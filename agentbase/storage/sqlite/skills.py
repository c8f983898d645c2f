"""Skill operations on SQLite: a skill's entry rows by name and owners, its files, and name/description rows
for the lexical lookup of ``find_skills``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


async def skill_rows_named(conn: Any, name: str, user_id: str | None, agent_id: str | None,
                           project_id: str | None) -> list[tuple]:
    """Entry rows (``ENTRY_COLUMNS``) of the skills with this name and exactly these owners, oldest first."""
    from ..entries import ENTRY_COLUMNS

    return await conn.fetchall(
        f"SELECT {ENTRY_COLUMNS} FROM entries WHERE context_type = 'skill' AND name = ? AND user_id IS ? "
        f"AND agent_id IS ? AND project_id IS ? ORDER BY rid", (name, user_id, agent_id, project_id))


async def replace_files(conn: Any, skill_id: str, files: Iterable[tuple]) -> None:
    """Make ``files`` (``(path, content, size_bytes, sha256)`` tuples) the skill's whole file set."""
    await conn.execute("DELETE FROM skill_files WHERE skill_id = ?", (skill_id,))
    await conn.executemany("INSERT INTO skill_files(skill_id, path, content, size_bytes, sha256) "
                           "VALUES (?, ?, ?, ?, ?)", [(skill_id, *f) for f in files])


async def files(c: Any, skill_id: str) -> list[tuple[str, str]]:
    """``(path, content)`` of the skill's files, by path."""
    rows = await c.fetchall("SELECT path, content FROM skill_files WHERE skill_id = ? ORDER BY path", (skill_id,))
    return [(p, t) for p, t in rows]


async def name_rows(c: Any, filters: Any) -> list[tuple]:
    """``(rid, id, name, description)`` of the entries passing ``filters`` (a
    :class:`~agentbase.retrieval.filters.Filters`, skills in practice)."""
    where, params = filters.where("e")
    return await c.fetchall(f"SELECT e.rid, e.id, e.name, e.description FROM entries e WHERE {where}", params)


async def entry_rows(c: Any, entry_ids: list[str]) -> list[tuple]:
    """Entry rows (``ENTRY_COLUMNS``) of these ids (unknown ids are absent)."""
    from ..entries import ENTRY_COLUMNS

    return await c.fetchall(f"SELECT {ENTRY_COLUMNS} FROM entries WHERE id IN ({','.join('?' * len(entry_ids))})",
                            entry_ids)
