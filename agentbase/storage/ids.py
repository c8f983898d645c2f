"""Id lookups by prefix (the short ids the CLI prints): one bounded range scan on a table's unique id index."""

from __future__ import annotations

from typing import Any

__all__ = ["ids_with_prefix"]

# The tables whose ``id`` column may be looked up; the name is never taken from user input.
_TABLES = {"entries": "entries", "traces": "retrieval_traces", "sessions": "sessions"}


def _prefix_successor(prefix: str) -> str | None:
    """The smallest string greater than every string starting with ``prefix`` (code point order, which is the
    byte order of UTF-8 that SQLite's BINARY collation compares); None when no such string exists."""
    chars = list(prefix)
    while chars:
        code = ord(chars[-1]) + 1
        if code > 0x10FFFF:
            chars.pop()
            continue
        chars[-1] = chr(0xE000 if 0xD800 <= code <= 0xDFFF else code)  # skip the surrogate block
        return "".join(chars)
    return None


async def ids_with_prefix(db: Any, kind: str, prefix: str, limit: int) -> list[str]:
    """Ids of ``kind`` (``"entries"``, ``"traces"`` or ``"sessions"``) starting with ``prefix``, smallest first.

    ``prefix <= id < successor(prefix)`` on the unique ``id`` index, so on SQLite it costs the same at any size
    (on PostgreSQL it compares with ``COLLATE "C"`` and scans the ids); ``prefix`` is a bound parameter (LIKE
    wildcards are plain characters).

    Args:
        db: the open storage Database. kind: which table. prefix: a validated id start. limit: most ids.

    Returns:
        Up to ``limit`` full ids.
    """
    table = _TABLES[kind]
    upper = _prefix_successor(prefix)
    if getattr(db, "engine", "sqlite") == "postgres":
        # psycopg's placeholders; code point order whatever collation the database was made with (SQLite's
        # BINARY): under a linguistic collation ("en_US.UTF-8") "-" is skipped and the range would miss ids. The
        # id index has the database's collation, so on PostgreSQL this is a scan of the table's ids.
        col, mark = 'id COLLATE "C"', "%s"
    else:
        col, mark = "id", "?"
    if upper is None:  # the prefix is all U+10FFFF: every id from it on starts with it
        rows = await db.fetchall(f"SELECT id FROM {table} WHERE {col} >= {mark} ORDER BY {col} LIMIT {mark}",
                                 (prefix, limit))
    else:
        rows = await db.fetchall(f"SELECT id FROM {table} WHERE {col} >= {mark} AND {col} < {mark} ORDER BY {col} "
                                 f"LIMIT {mark}", (prefix, upper, limit))
    return [r[0] for r in rows]
