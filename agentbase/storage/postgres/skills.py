"""Skill operations on PostgreSQL: a skill's entry rows by name and owners, its files, and name/description rows
for the lexical lookup of ``find_skills``. Same functions, arguments and row shapes as ``storage/sqlite/skills.py``.

What differs from SQLite, and why:

- Owner equality that treats two NULLs as equal is ``IS NOT DISTINCT FROM`` (SQLite: ``IS``).
- ``replace_files`` first locks the skill's entry row (``SELECT ... FOR UPDATE``): with several writers at once,
  two replacements of one skill's files would otherwise both delete the old set and then collide on the new
  rows' primary key; locked, they run one after the other and the last one's set stays, as on SQLite's single
  writer.
- Files are listed by path in code-point order (``COLLATE "C"``), SQLite's BINARY order.
- ``name_rows`` builds its filter with the PostgreSQL filter SQL (``Filters.where("e", c.ops)``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["entry_rows", "files", "name_rows", "replace_files", "skill_rows_named"]


async def skill_rows_named(conn: Any, name: str, user_id: str | None, agent_id: str | None,
                           project_id: str | None) -> list[tuple]:
    """Entry rows (``ENTRY_COLUMNS``) of the skills with this name and exactly these owners (None matches only
    None), oldest first."""
    from ..entries import ENTRY_COLUMNS

    return await conn.fetchall(
        f"SELECT {ENTRY_COLUMNS} FROM entries WHERE context_type = 'skill' AND name = %s "
        "AND user_id IS NOT DISTINCT FROM %s::text AND agent_id IS NOT DISTINCT FROM %s::text "
        "AND project_id IS NOT DISTINCT FROM %s::text ORDER BY rid", (name, user_id, agent_id, project_id))


async def replace_files(conn: Any, skill_id: str, files: Iterable[tuple]) -> None:
    """Make ``files`` (``(path, content, size_bytes, sha256)`` tuples) the skill's whole file set."""
    rows = [(skill_id, *f) for f in files]
    await conn.execute("SELECT 1 FROM entries WHERE id = %s FOR UPDATE", (skill_id,))
    await conn.execute("DELETE FROM skill_files WHERE skill_id = %s", (skill_id,))
    if rows:
        await conn.executemany("INSERT INTO skill_files(skill_id, path, content, size_bytes, sha256) "
                               "VALUES (%s, %s, %s, %s, %s)", rows)


async def files(c: Any, skill_id: str) -> list[tuple[str, str]]:
    """``(path, content)`` of the skill's files, by path (code-point order)."""
    rows = await c.fetchall('SELECT path, content FROM skill_files WHERE skill_id = %s ORDER BY path COLLATE "C"',
                            (skill_id,))
    return [(p, t) for p, t in rows]


async def name_rows(c: Any, filters: Any) -> list[tuple]:
    """``(rid, id, name, description)`` of the entries passing ``filters`` (a
    :class:`~agentbase.retrieval.filters.Filters`, skills in practice; validated by its ``where``)."""
    where, params = filters.where("e", c.ops)
    return await c.fetchall(f"SELECT e.rid, e.id, e.name, e.description FROM entries e WHERE {where}", params)


async def entry_rows(c: Any, entry_ids: list[str]) -> list[tuple]:
    """Entry rows (``ENTRY_COLUMNS``) of these ids (unknown ids are absent)."""
    from ..entries import ENTRY_COLUMNS

    if not entry_ids:
        return []
    return await c.fetchall(f"SELECT {ENTRY_COLUMNS} FROM entries WHERE id = ANY(%s::text[])", (list(entry_ids),))
