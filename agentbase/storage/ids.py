"""Id lookups by prefix (the short ids the CLI prints), engine-neutral: the SQL is each engine's
``db.ops.entries.ids_with_prefix`` / ``db.ops.traces.ids_with_prefix``; this module picks the group and holds the
pure-Python helpers those operations share (no SQL here)."""

from __future__ import annotations

from typing import Any

__all__ = ["ids_with_prefix", "like_prefix", "prefix_successor"]

# The op groups whose ``ids_with_prefix`` may be called; the kind is never taken from user input.
_GROUPS = ("entries", "traces")


def prefix_successor(prefix: str) -> str | None:
    """The smallest string greater than every string starting with ``prefix`` (code point order, which is the
    byte order of UTF-8 that SQLite's BINARY collation and PostgreSQL's ``"C"`` collation compare); None when no
    such string exists (``prefix`` is all U+10FFFF)."""
    chars = list(prefix)
    while chars:
        code = ord(chars[-1]) + 1
        if code > 0x10FFFF:
            chars.pop()
            continue
        chars[-1] = chr(0xE000 if 0xD800 <= code <= 0xDFFF else code)  # skip the surrogate block
        return "".join(chars)
    return None


def like_prefix(prefix: str) -> str:
    """A ``LIKE ... ESCAPE '\\'`` pattern matching exactly the strings that start with ``prefix``: ``\\``, ``%``
    and ``_`` in ``prefix`` are escaped so they match themselves."""
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


async def ids_with_prefix(db: Any, kind: str, prefix: str, limit: int) -> list[str]:
    """Ids of ``kind`` (``"entries"`` or ``"traces"``) starting with ``prefix``, smallest first (code point order).

    Args:
        db: the open storage Database (either engine). kind: which group. prefix: a validated id start (the
            caller checks it: non-empty, no NUL). limit: most ids (validated, >= 1).

    Returns:
        Up to ``limit`` full ids (``db.ops.<kind>.ids_with_prefix``).
    """
    if kind not in _GROUPS:
        raise ValueError(f"no id-prefix lookup for {kind!r}")
    return await getattr(db.ops, kind).ids_with_prefix(db, prefix, limit)
