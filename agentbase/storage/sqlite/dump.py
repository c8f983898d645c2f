"""Reading a whole SQLite database table by table, for ``agentbase migrate`` (storage/migrate.py).

Only AgentBase's own tables are read (``COPY_TABLES``, parents before children); the FTS5 shadow tables, the
sqlite-vec table and the vector log are derived indexes the destination engine builds itself.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

__all__ = ["COPY_TABLES", "count", "read_batches"]

#: (table, key columns) in an order that keeps every foreign key satisfied while rows are inserted.
COPY_TABLES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("meta", ("key",)), ("entries", ("rid",)), ("entry_tags", ("tag", "rid")), ("entry_history", ("seq",)),
    ("sessions", ("id",)), ("messages", ("id",)), ("session_memory_links", ("session_id", "entry_id")),
    ("embeddings", ("rid",)), ("embedding_cache", ("model_id", "text_hash")), ("jobs", ("id",)),
    ("retrieval_traces", ("id",)), ("trace_steps", ("trace_id", "idx")), ("entities", ("id",)),
    ("relations", ("id",)), ("entity_aliases", ("norm_alias",)), ("skill_files", ("skill_id", "path")),
    ("agent_heartbeats", ("session_id",)),
    ("checkpoints", ("thread_id", "checkpoint_ns", "checkpoint_id")),
    ("checkpoint_blobs", ("thread_id", "checkpoint_ns", "channel", "version")),
    ("checkpoint_writes", ("thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx")),
)
_KEYS = dict(COPY_TABLES)


def _check(table: str) -> tuple[str, ...]:
    if table not in _KEYS:  # table names are this module's constants; never user input
        raise ValueError(f"not a copied table: {table!r}")
    return _KEYS[table]


async def count(c: Any, table: str) -> int:
    """Rows of ``table``."""
    _check(table)
    return int((await c.fetchone(f"SELECT COUNT(*) FROM {table}"))[0])


async def read_batches(c: Any, table: str, size: int = 2000) -> AsyncIterator[tuple[list[str], list[tuple]]]:
    """``(column names, rows)`` batches of ``table`` in key order (keyset pagination, so each batch is one indexed
    read); the FTS-only ``fts_text`` column of ``entries`` is included (the destination rebuilds its own index)."""
    keys = _check(table)
    cols = [r[1] for r in await c.fetchall(f"SELECT * FROM pragma_table_info('{table}') ORDER BY cid")]
    idx = [cols.index(k) for k in keys]
    order = ", ".join(keys)
    last: tuple | None = None
    while True:
        if last is None:
            rows = await c.fetchall(f"SELECT * FROM {table} ORDER BY {order} LIMIT ?", (size,))
        else:
            marks = ", ".join("?" * len(keys))
            rows = await c.fetchall(f"SELECT * FROM {table} WHERE ({order}) > ({marks}) ORDER BY {order} LIMIT ?",
                                    (*last, size))
        if not rows:
            return
        yield cols, rows
        last = tuple(rows[-1][i] for i in idx)
