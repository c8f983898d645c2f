"""Small helpers the PostgreSQL operations share to keep SQLite's meaning of a parameter.

SQLite reads a negative ``LIMIT`` as "no limit" and a negative ``OFFSET`` as zero
(https://www.sqlite.org/lang_select.html#limitoffset); PostgreSQL rejects both
(https://www.postgresql.org/docs/current/sql-select.html#SQL-LIMIT), where ``LIMIT NULL`` means no limit.
"""

from __future__ import annotations

__all__ = ["in_transaction", "json_doc", "limit", "lock_key", "offset"]


def in_transaction(c: object) -> bool:
    """Whether ``c`` is the writer of an open transaction (where a read may lock what it reads)."""
    from .connection import PgWriter

    return isinstance(c, PgWriter)


async def lock_key(c: object, key: str) -> None:
    """Inside a transaction, wait for and hold until it ends the advisory lock of ``key`` (a 64-bit hash of the
    text: ``pg_advisory_xact_lock(hashtextextended(key, 0))``); outside one, nothing. Several hosts checking
    "does X exist yet?" before writing X take the lock of X first, so the second waits for the first's COMMIT and
    then sees X, as SQLite's single writer sees it."""
    if in_transaction(c):
        await c.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (key,))  # type: ignore[attr-defined]


def limit(n: int | None) -> int | None:
    """The ``LIMIT`` parameter for ``n`` rows: None (no limit) for None or a negative ``n``, as SQLite reads it."""
    return None if n is None or n < 0 else n


def offset(n: int | None) -> int:
    """The ``OFFSET`` parameter for ``n``: 0 for None or a negative ``n``, as SQLite reads it."""
    return 0 if n is None or n < 0 else n


def json_doc(column: str) -> str:
    """SQL reading the JSON text ``column`` (an identifier such as ``e.metadata``) as ``json``, or NULL when the
    text holds the escape ``\\u0000``: PostgreSQL cannot turn that escape into ``text`` and fails the whole
    statement on the first row that holds it, even reading another key
    (https://www.postgresql.org/docs/current/datatype-json.html). ``json`` rather than ``jsonb`` keeps the text's
    key order, as SQLite's ``json_extract`` does."""
    return f"(CASE WHEN strpos({column}, '\\u0000') = 0 THEN {column}::json END)"
