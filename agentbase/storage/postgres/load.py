"""Writing copied rows into an empty PostgreSQL database, for ``agentbase migrate`` (storage/migrate.py).

Rows arrive as the SQLite engine stores them; what this engine keeps differently is filled in here: the keyword
``tsvector``/``doc_len``, ``keyword_stats`` and ``keyword_terms`` of each entry (storage/postgres/bm25.py), vectors as pgvector values,
and the identity sequences moved past the copied ids.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .bm25 import adjust_stats, keyword_document, rebuild_terms

__all__ = ["IDENTITY", "begin", "finish", "insert_rows", "row_count"]

IDENTITY = {"entries": "rid", "entry_history": "seq", "jobs": "id"}  # identity columns whose sequences move on
_TABLES = frozenset({"meta", "entries", "entry_tags", "entry_history", "sessions", "messages",
                     "session_memory_links", "embeddings", "embedding_cache", "jobs", "retrieval_traces",
                     "trace_steps", "entities", "relations", "entity_aliases", "skill_files", "agent_heartbeats",
                     "checkpoints", "checkpoint_blobs", "checkpoint_writes"})


def _check(table: str) -> None:
    if table not in _TABLES:  # table names come from the copy plan; never user input
        raise ValueError(f"not a copied table: {table!r}")


async def row_count(c: Any, table: str) -> int:
    """Rows of ``table``."""
    _check(table)
    return int((await c.fetchone(f"SELECT COUNT(*) FROM {table}"))[0])


async def begin(conn: Any) -> None:
    """Prepare the copy's transaction: no statement timeout (``storage.busy_timeout_s`` bounds a query's wait, not a
    bulk copy's statements, nor the HNSW build at :func:`finish`)."""
    await conn.execute("SET LOCAL statement_timeout = 0")


async def insert_rows(conn: Any, table: str, columns: list[str], rows: list[tuple]) -> int:
    """Insert one batch of ``rows`` (tuples in ``columns`` order) into ``table``; returns how many."""
    _check(table)
    cols, out = list(columns), [list(r) for r in rows]
    if table == "entries":
        text_at = cols.index("fts_text")
        docs = [keyword_document(r[text_at]) for r in out]
        cols += ["fts", "doc_len"]
        for r, (vector, length) in zip(out, docs):
            r += [vector, length]
        await adjust_stats(conn, len(out), sum(length for _, length in docs))
    elif table == "embeddings":
        at = cols.index("vector")
        for r in out:
            r[at] = np.frombuffer(r[at], dtype=np.float32)
    casts = ["%s::tsvector" if c == "fts" else "%s" for c in cols]
    overriding = " OVERRIDING SYSTEM VALUE" if table in IDENTITY else ""
    await conn.executemany(f"INSERT INTO {table} ({', '.join(cols)}){overriding} VALUES ({', '.join(casts)})", out)
    return len(out)


async def finish(conn: Any) -> None:
    """Move each identity sequence past the largest copied id, so new rows never collide with copied ones, and
    count every lexeme's documents (``keyword_terms``) from the copied entries, and build the HNSW index of the
    copied vectors when their dimension is known (``meta.vector_dims``), so the first open does not build it; then
    ANALYZE, so the first queries are planned on the copied rows' statistics."""
    await rebuild_terms(conn)
    row = await conn.fetchone("SELECT value FROM meta WHERE key = 'vector_dims'")
    if row is not None and str(row[0]).isdigit() and int(row[0]) > 0:
        from .vectors import create_index

        await create_index(conn, int(row[0]))
    await conn.execute("ANALYZE")  # planner statistics of the copied tables, before the first query plans them
    for table, column in IDENTITY.items():
        await conn.execute(f"SELECT setval(pg_get_serial_sequence('{table}', '{column}'), "
                           f"GREATEST((SELECT COALESCE(MAX({column}), 0) FROM {table}), 1), "
                           f"(SELECT COUNT(*) > 0 FROM {table}))")
