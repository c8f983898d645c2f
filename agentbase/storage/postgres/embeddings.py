"""Embedding operations on PostgreSQL: what the ``embed`` job worker (``agentbase/ingest/worker.py``) reads and
writes. Same functions, arguments and return shapes as ``storage/sqlite/embeddings.py``:

* ``embedding_cache``: one float32 vector per ``(model_id, text_hash)`` (sha256 hex of the embedded text), kept as
  its raw float32 bytes (``BYTEA``), so identical text is embedded once per model;
* ``embeddings``: the vector of each entry row (``rid``) for a model, with the ``content_hash`` it was made from;
* the entries still waiting for a vector, and the ``meta`` rows naming the database's vector model and dimensions.

Vectors go in and come out as numpy float32 arrays. Times are DB time text (UTC).

What differs from SQLite, and why:

- ``embeddings.vector`` is a pgvector ``vector`` column (SQLite keeps float32 bytes): vectors are written as
  :class:`pgvector.Vector` (the adapter is registered on every pooled connection) and read back with
  ``Vector.to_numpy()`` as float32, so callers get the same arrays. The vector is at most 16,000 dimensions
  (pgvector's limit for ``vector``; https://github.com/pgvector/pgvector#vector-type), and pgvector refuses NaN
  and infinity in it, so such a vector is a StorageError here (SQLite stores its bytes); the cache keeps bytes on
  both engines.
- Lists of ids and hashes bind as one array parameter (``= ANY(%s::text[])``): no 500-at-a-time chunking.
- ``entries_to_embed`` returns ``is_summary`` as 1/0/None (SQLite's comparison result), cast from PostgreSQL's
  boolean; ``metadata`` is read with :func:`.sqlutil.json_doc` (NULL, so ``is_summary`` None, for a metadata
  text holding the ``\\u0000`` escape, which PostgreSQL cannot read as text; SQLite reads it).
- Several writers at once: ``put_embedding`` is an ``INSERT ... ON CONFLICT (rid) DO UPDATE`` (SQLite's
  ``INSERT OR REPLACE``), ``cache_vectors`` an ``ON CONFLICT DO NOTHING`` (first vector of a hash wins), and
  ``ensure_vector_meta`` inserts the dimensions with ``ON CONFLICT DO NOTHING`` and writes the model only when its
  own insert took, so of two hosts recording different models at once exactly one pair is kept (SQLite reads, then
  writes, under its single writer).
- ``trim_vector_log`` does nothing: there is no ``vector_log`` on PostgreSQL (the in-process vector matrix that
  catches up from it is a SQLite-engine detail; pgvector's index is the server's).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .sqlutil import json_doc as _doc

__all__ = ["cache_vectors", "cached_vectors", "content_hash_at", "ensure_vector_meta", "entries_to_embed",
           "put_embedding", "trim_vector_log", "turn_embedding_states", "turn_vectors"]


def _blob(vector: Any) -> bytes:
    return np.asarray(vector, dtype=np.float32).tobytes()


def _vector(vector: Any) -> Any:
    from pgvector import Vector

    return Vector(np.asarray(vector, dtype=np.float32).reshape(-1))


def _array(value: Any) -> np.ndarray:
    """A ``vector`` column value (``pgvector.Vector``; text if no adapter is registered) as float32 numpy."""
    if hasattr(value, "to_numpy"):
        return np.asarray(value.to_numpy(), dtype=np.float32)
    from pgvector import Vector

    return np.asarray(Vector._from_db(value).to_numpy(), dtype=np.float32)


async def entries_to_embed(c: Any, entry_ids: Sequence[str], summary_source: str) -> list[tuple]:
    """The entries with these ids (at most a batch: one statement) as ``(id, rid, name, description, l2_full,
    content_hash, category, session_id, is_summary)``, where ``is_summary`` is 1 when ``metadata.source`` is
    ``summary_source`` (0 otherwise, None when the entry has no source); ids with no entry are missing."""
    ids = list(entry_ids)
    if not ids:
        return []
    return await c.fetchall(
        "SELECT id, rid, name, description, l2_full, content_hash, category, session_id, "
        f"(({_doc('metadata')} ->> 'source') = %s)::int FROM entries WHERE id = ANY(%s::text[])",
        [summary_source, ids])


async def content_hash_at(c: Any, rid: int) -> str | None:
    """The current ``content_hash`` of the entry row ``rid``, or None when it is gone."""
    row = await c.fetchone("SELECT content_hash FROM entries WHERE rid = %s", (rid,))
    return row[0] if row is not None else None


async def put_embedding(conn: Any, rid: int, model_id: str, dims: int, content_hash: str, vector: Any,
                        now: str) -> None:
    """Store (or replace) the entry row's vector for ``model_id``: ``vector`` is ``dims`` floats (float32), made
    from the text whose hash is ``content_hash``; one statement (``ON CONFLICT (rid) DO UPDATE``), so two workers
    writing one row leave one of their vectors, whole."""
    await conn.execute(
        "INSERT INTO embeddings(rid, model_id, dims, content_hash, vector, created_at) "
        "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (rid) DO UPDATE SET model_id = EXCLUDED.model_id, "
        "dims = EXCLUDED.dims, content_hash = EXCLUDED.content_hash, vector = EXCLUDED.vector, "
        "created_at = EXCLUDED.created_at", (rid, model_id, dims, content_hash, _vector(vector), now))


async def turn_vectors(c: Any, session_id: str, model_id: str, dims: int) -> np.ndarray:
    """The stored vectors (of ``model_id``, ``dims`` wide) of the session's turn entries, as a float32 matrix of
    shape ``(n, dims)`` in no particular order; ``n`` is 0 when there are none."""
    rows = await c.fetchall(
        "SELECT m.vector FROM embeddings m JOIN entries e ON e.rid = m.rid WHERE e.session_id = %s "
        "AND e.category = 'turn' AND m.model_id = %s AND m.dims = %s", (session_id, model_id, dims))
    if not rows:
        return np.zeros((0, dims), dtype=np.float32)
    return np.stack([_array(r[0]) for r in rows]).astype(np.float32, copy=False).reshape(len(rows), dims)


async def turn_embedding_states(c: Any, session_ids: Sequence[str]) -> list[tuple]:
    """``(session_id, entry_id, job status, job next_run_at)`` of the turn entries of these sessions that have a
    vector or a ``pending``/``running`` ``embed`` job (status and next_run_at None when there is no job)."""
    ids = list(session_ids)
    if not ids:
        return []
    return await c.fetchall(
        "SELECT e.session_id, e.id, j.status, j.next_run_at FROM entries e "
        "LEFT JOIN jobs j ON j.kind = 'embed' AND j.target = e.id LEFT JOIN embeddings m ON m.rid = e.rid "
        "WHERE e.category = 'turn' AND e.session_id = ANY(%s::text[]) "
        "AND (m.rid IS NOT NULL OR j.status IN ('pending', 'running'))", [ids])


async def ensure_vector_meta(conn: Any, dims: int, model_id: str) -> None:
    """Record the database's vector dimensions and model (``meta`` keys ``vector_dims``, ``vector_model``) unless
    dimensions are recorded already. Safe against a concurrent caller: the dimensions insert is ``ON CONFLICT DO
    NOTHING`` (a second inserter waits for the first to commit, then skips), and the model is written only by the
    caller whose dimensions were inserted."""
    row = await conn.fetchone("INSERT INTO meta(key, value) VALUES ('vector_dims', %s) "
                              "ON CONFLICT (key) DO NOTHING RETURNING key", (str(dims),))
    if row is not None:
        await conn.execute("INSERT INTO meta(key, value) VALUES ('vector_model', %s) "
                           "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value", (model_id,))


async def trim_vector_log(conn: Any, keep: int) -> None:
    """Nothing to do: PostgreSQL has no ``vector_log`` (see the module docstring); ``keep`` is ignored."""
    return None


async def cached_vectors(c: Any, model_id: str, text_hashes: Sequence[str]) -> dict[str, np.ndarray]:
    """``{text_hash: float32 vector}`` of the hashes the cache holds for ``model_id`` (one statement)."""
    hashes = list(text_hashes)
    if not hashes:
        return {}
    rows = await c.fetchall("SELECT text_hash, vector FROM embedding_cache WHERE model_id = %s "
                            "AND text_hash = ANY(%s::text[])", [model_id, hashes])
    return {h: np.frombuffer(bytes(v), dtype=np.float32) for h, v in rows}


async def cache_vectors(conn: Any, model_id: str, dims: int, items: Sequence[tuple[str, Any]]) -> None:
    """Add ``(text_hash, vector)`` pairs (``dims`` float32 each) to the cache for ``model_id``; a hash already
    cached keeps its vector (``ON CONFLICT DO NOTHING``, also against a concurrent writer)."""
    rows = [(model_id, h, dims, _blob(v)) for h, v in items]
    if rows:
        await conn.executemany("INSERT INTO embedding_cache(model_id, text_hash, dims, vector) "
                               "VALUES (%s, %s, %s, %s) ON CONFLICT (model_id, text_hash) DO NOTHING", rows)
