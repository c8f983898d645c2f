"""Meta and maintenance operations on PostgreSQL: the ``meta`` key/value table (the vectors' dimension and model,
the LLM usage totals, the demo's mark), the counts ``stats()`` reports, and the rebuilds of ``reindex()`` (keyword
index, stored vectors). Same functions, arguments and return shapes as ``storage/sqlite/meta.py``.

Values are text; times are DB time text (UTC).

What differs from SQLite, and why:

- The vector index is pgvector's HNSW index :data:`HNSW_INDEX` on ``embeddings.vector`` (created for the model's
  dimension when the first vector is written, ``storage/postgres/vectors.py``), where SQLite has the sqlite-vec
  table ``vec_entries``: :func:`vec_table_exists` tells whether that index exists, and :func:`reset_vectors` drops
  it with the stored vectors.
- :func:`rebuild_keyword_index` has no FTS5 ``'rebuild'``: it recomputes every entry's ``fts`` tsvector and
  ``doc_len`` from its keyword text in Python (:func:`.bm25.keyword_document`) and resets ``keyword_stats`` to the
  true totals (``COUNT(*)``, ``SUM(doc_len)``). Other processes write entries meanwhile, so it first takes
  ``LOCK TABLE entries IN SHARE ROW EXCLUSIVE MODE``: it waits for the writers in flight to commit (every
  ``keyword_stats`` change is made after its entry write, in the same transaction) and holds new ones back until
  it commits, so no change to the totals is counted twice or lost; readers are not blocked.
- ``counts()["vector_dims"]`` parses the stored text's leading integer in Python (SQLite's ``CAST(... AS
  INTEGER)`` reading; PostgreSQL's cast would fail on anything else) and every count is a Python int on both.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from .bm25 import SHARDS, keyword_document, rebuild_terms

__all__ = ["HNSW_INDEX", "counts", "get_value", "rebuild_keyword_index", "record_vector_model", "reset_vectors",
           "set_value", "vec_table_exists", "vector_meta"]

#: The pgvector HNSW index of the entries' vectors (``storage/postgres/vectors.py`` creates it).
HNSW_INDEX = "ix_embeddings_hnsw"
_LEADING_INT = re.compile(r"\s*([-+]?\d+)")


# ------------------------------------------------------------------------------------------------ key/value
async def get_value(c: Any, key: str) -> str | None:
    """The value stored under ``key``, or None."""
    row = await c.fetchone("SELECT value FROM meta WHERE key = %s", (key,))
    return row[0] if row else None


async def set_value(conn: Any, key: str, value: str) -> None:
    """Store ``value`` under ``key``, replacing what was there (concurrent setters: the last to commit wins)."""
    await conn.execute("INSERT INTO meta(key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET "
                       "value = excluded.value", (key, value))


# ------------------------------------------------------------------------------------------------ vectors
async def vector_meta(c: Any) -> dict[str, str]:
    """``{"vector_dims": text, "vector_model": text}``, each key only when recorded: the embedder the database's
    vectors were made with."""
    return dict(await c.fetchall("SELECT key, value FROM meta WHERE key IN ('vector_dims', 'vector_model')"))


async def record_vector_model(conn: Any, dims: int, model_id: str) -> None:
    """Record the vectors' dimension and model unless already recorded (each key kept if present; of two
    processes recording at once, the first to commit wins, the other's insert does nothing)."""
    await conn.execute("INSERT INTO meta(key, value) VALUES ('vector_dims', %s), ('vector_model', %s) "
                       "ON CONFLICT (key) DO NOTHING", (str(dims), model_id))


async def vec_table_exists(c: Any) -> bool:
    """Whether the vector index of the entries' vectors (:data:`HNSW_INDEX`) has been created in this database."""
    row = await c.fetchone("SELECT to_regclass(%s) IS NOT NULL", (HNSW_INDEX,))
    return bool(row and row[0])


async def reset_vectors(conn: Any, dims: int, model_id: str) -> None:
    """Drop every stored vector (the ``embeddings`` rows and their HNSW index) and record ``dims`` and ``model_id``
    as the vectors' new dimension and model; the first vector written creates the index again.

    TRUNCATE, not DELETE: an index built later in the same transaction (``vectors.create_index``, as ``reindex``
    does) would still index the rows a DELETE removed, and cast the old model's vectors to the new dimension."""
    await conn.execute("TRUNCATE embeddings")
    await conn.execute(f"DROP INDEX IF EXISTS {HNSW_INDEX}")
    await conn.execute("DELETE FROM meta WHERE key IN ('vector_dims', 'vector_model')")
    await conn.execute("INSERT INTO meta(key, value) VALUES ('vector_dims', %s), ('vector_model', %s)",
                       (str(dims), model_id))


# ------------------------------------------------------------------------------------------------ maintenance
async def rebuild_keyword_index(conn: Any, texts: Sequence[tuple[int, str]]) -> None:
    """Set each ``(rid, fts_text)`` row's keyword text, recompute every entry's ``fts``/``doc_len`` from its
    keyword text, and reset ``keyword_stats`` and ``keyword_terms`` to the true totals (see the module docstring for the lock)."""
    await conn.execute("LOCK TABLE entries IN SHARE ROW EXCLUSIVE MODE")
    given = {int(rid): text for rid, text in texts}
    stored = await conn.fetchall("SELECT rid, fts_text FROM entries ORDER BY rid")
    updates = []
    for rid, text in stored:
        text = given.get(int(rid), text)
        vector, length = keyword_document(text)
        updates.append((text, vector, length, rid))
    if updates:
        await conn.executemany("UPDATE entries SET fts_text = %s, fts = %s::tsvector, doc_len = %s WHERE rid = %s",
                               updates)
    docs, tokens = await conn.fetchone("SELECT COUNT(*), COALESCE(SUM(doc_len), 0) FROM entries")
    await conn.execute(f"INSERT INTO keyword_stats(shard) SELECT s FROM generate_series(0, {SHARDS - 1}) AS s "
                       f"ON CONFLICT DO NOTHING")
    await conn.execute("UPDATE keyword_stats SET docs = CASE WHEN shard = 0 THEN %s ELSE 0 END, "
                       "tokens = CASE WHEN shard = 0 THEN %s ELSE 0 END", (int(docs), int(tokens)))
    await rebuild_terms(conn)


async def counts(c: Any) -> dict[str, Any]:
    """What ``stats()`` counts: ``{"schema_version": int, "vector_dims": int or None, "entries": {context_type:
    n}, "sessions", "messages", "embeddings" (stored vectors), "traces": n, "size_bytes": the database's size on
    disk (``pg_database_size``)}``, every count a Python int."""
    async def scalar(sql: str) -> Any:
        row = await c.fetchone(sql)
        return row[0] if row else None

    dims = await get_value(c, "vector_dims")
    match = _LEADING_INT.match(dims) if dims is not None else None
    version = await scalar("SELECT MAX(version) FROM schema_version")
    return {
        "entries": {k: int(n) for k, n in await c.fetchall(
            "SELECT context_type, COUNT(*) FROM entries GROUP BY context_type ORDER BY context_type")},
        "schema_version": int(version) if version is not None else None,
        "vector_dims": None if dims is None else (int(match.group(1)) if match else 0),
        "sessions": int(await scalar("SELECT COUNT(*) FROM sessions")),
        "messages": int(await scalar("SELECT COUNT(*) FROM messages")),
        "embeddings": int(await scalar("SELECT COUNT(*) FROM embeddings")),
        "traces": int(await scalar("SELECT COUNT(*) FROM retrieval_traces")),
        "size_bytes": int(await scalar("SELECT pg_database_size(current_database())")),
    }
