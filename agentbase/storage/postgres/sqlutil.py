"""Small helpers the PostgreSQL operations share to keep SQLite's meaning of a parameter.

SQLite reads a negative ``LIMIT`` as "no limit" and a negative ``OFFSET`` as zero
(https://www.sqlite.org/lang_select.html#limitoffset); PostgreSQL rejects both
(https://www.postgresql.org/docs/current/sql-select.html#SQL-LIMIT), where ``LIMIT NULL`` means no limit.
"""

from __future__ import annotations

__all__ = ["limit", "offset"]


def limit(n: int | None) -> int | None:
    """The ``LIMIT`` parameter for ``n`` rows: None (no limit) for None or a negative ``n``, as SQLite reads it."""
    return None if n is None or n < 0 else n


def offset(n: int | None) -> int:
    """The ``OFFSET`` parameter for ``n``: 0 for None or a negative ``n``, as SQLite reads it."""
    return 0 if n is None or n < 0 else n
