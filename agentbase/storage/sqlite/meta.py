"""Meta and maintenance operations on SQLite: the ``meta`` key/value table (the vectors' dimension and model, the
LLM usage totals, the demo's mark), the counts ``stats()`` reports, and the rebuilds of ``reindex()`` (keyword
index, stored vectors).

Values are text; times are DB time text (UTC).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def _vec_table() -> str:
    from ...index.vector import VEC_TABLE  # the sqlite-vec table's name, kept with the vector writes

    return VEC_TABLE


# ------------------------------------------------------------------------------------------------ key/value
async def get_value(c: Any, key: str) -> str | None:
    """The value stored under ``key``, or None."""
    row = await c.fetchone("SELECT value FROM meta WHERE key = ?", (key,))
    return row[0] if row else None


async def set_value(conn: Any, key: str, value: str) -> None:
    """Store ``value`` under ``key``, replacing what was there."""
    await conn.execute("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET "
                       "value = excluded.value", (key, value))


# ------------------------------------------------------------------------------------------------ vectors
async def vector_meta(c: Any) -> dict[str, str]:
    """``{"vector_dims": text, "vector_model": text}``, each key only when recorded: the embedder the file's vectors
    were made with."""
    return dict(await c.fetchall("SELECT key, value FROM meta WHERE key IN ('vector_dims','vector_model')"))


async def record_vector_model(conn: Any, dims: int, model_id: str) -> None:
    """Record the vectors' dimension and model unless already recorded (each key kept if present)."""
    await conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('vector_dims', ?), ('vector_model', ?)",
                       (str(dims), model_id))


async def vec_table_exists(c: Any) -> bool:
    """Whether the sqlite-vec table of the entries' vectors has been created in this file."""
    return bool(await c.fetchall("SELECT 1 FROM sqlite_master WHERE name = ?", (_vec_table(),)))


async def reset_vectors(conn: Any, dims: int, model_id: str) -> None:
    """Drop every stored vector (the sqlite-vec table and the embedding cache) and record ``dims`` and ``model_id``
    as the vectors' new dimension and model; the caller creates the vector table again."""
    await conn.execute("DELETE FROM embeddings")
    await conn.execute(f"DROP TABLE IF EXISTS {_vec_table()}")
    await conn.execute("DELETE FROM meta WHERE key IN ('vector_dims', 'vector_model')")
    await conn.execute("INSERT INTO meta(key, value) VALUES ('vector_dims', ?), ('vector_model', ?)",
                       (str(dims), model_id))


# ------------------------------------------------------------------------------------------------ maintenance
async def rebuild_keyword_index(conn: Any, texts: Sequence[tuple[int, str]]) -> None:
    """Set each ``(rid, fts_text)`` row's keyword text, then rebuild the FTS5 index from the entries."""
    for rid, text in texts:
        await conn.execute("UPDATE entries SET fts_text = ? WHERE rid = ?", (text, rid))
    await conn.execute("INSERT INTO entries_fts(entries_fts) VALUES ('rebuild')")


async def counts(c: Any) -> dict[str, Any]:
    """What ``stats()`` counts: ``{"schema_version": int, "vector_dims": int or None, "entries": {context_type:
    n}, "sessions", "messages", "embeddings" (cached vectors), "traces": n, "size_bytes": the database's pages
    (``page_count x page_size``; the file, its WAL aside)}``."""
    async def scalar(sql: str) -> Any:
        row = await c.fetchone(sql)
        return row[0] if row else None
    return {
        "entries": dict(await c.fetchall("SELECT context_type, COUNT(*) FROM entries GROUP BY context_type")),
        "schema_version": await scalar("SELECT MAX(version) FROM schema_version"),
        "vector_dims": await scalar("SELECT CAST(value AS INTEGER) FROM meta WHERE key='vector_dims'"),
        "sessions": await scalar("SELECT COUNT(*) FROM sessions"),
        "messages": await scalar("SELECT COUNT(*) FROM messages"),
        "embeddings": await scalar("SELECT COUNT(*) FROM embeddings"),
        "traces": await scalar("SELECT COUNT(*) FROM retrieval_traces"),
        "size_bytes": await scalar("SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()"),
    }

