"""Small helpers the PostgreSQL operations share to keep SQLite's meaning of a parameter.

SQLite reads a negative ``LIMIT`` as "no limit" and a negative ``OFFSET`` as zero
(https://www.sqlite.org/lang_select.html#limitoffset); PostgreSQL rejects both
(https://www.postgresql.org/docs/current/sql-select.html#SQL-LIMIT), where ``LIMIT NULL`` means no limit.
"""

from __future__ import annotations

__all__ = ["json_doc", "limit", "offset"]


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
