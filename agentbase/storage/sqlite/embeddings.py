"""Embedding operations on SQLite: what the ``embed`` job worker (``agentbase/ingest/worker.py``) reads and writes.

* ``embedding_cache``: one float32 vector per ``(model_id, text_hash)`` (sha256 hex of the embedded text), so
  identical text is embedded once per model;
* ``embeddings``: the vector of each entry row (``rid``) for a model, with the ``content_hash`` it was made from;
* the entries still waiting for a vector, and the ``meta`` rows naming the file's vector model and dimensions.

Vectors go in and come out as numpy float32 arrays (stored here as their raw bytes); the vector index itself
(the vec0 table) is written through ``agentbase/index/vector.py``. Times are DB time text (UTC).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

_CACHE_CHUNK = 500  # text hashes per cache lookup


def _blob(vector: Any) -> bytes:
    return np.asarray(vector, dtype=np.float32).tobytes()


async def entries_to_embed(c: Any, entry_ids: Sequence[str], summary_source: str) -> list[tuple]:
    """The entries with these ids (at most a batch: one statement) as ``(id, rid, name, description, l2_full,
    content_hash, category, session_id, is_summary)``, where ``is_summary`` is true when ``metadata.source`` is
    ``summary_source`` (falsy otherwise, None when the entry has no source); ids with no entry are missing."""
    ids = list(entry_ids)
    return await c.fetchall(
        f"SELECT id, rid, name, description, l2_full, content_hash, category, session_id, "
        f"json_extract(metadata, '$.source') = ? FROM entries WHERE id IN ({','.join('?' * len(ids))})",
        [summary_source, *ids])


async def content_hash_at(c: Any, rid: int) -> str | None:
    """The current ``content_hash`` of the entry row ``rid``, or None when it is gone."""
    row = await c.fetchone("SELECT content_hash FROM entries WHERE rid = ?", (rid,))
    return row[0] if row is not None else None


async def put_embedding(conn: Any, rid: int, model_id: str, dims: int, content_hash: str, vector: Any,
                        now: str) -> None:
    """Store (or replace) the entry row's vector for ``model_id``: ``vector`` is ``dims`` floats (float32), made
    from the text whose hash is ``content_hash``."""
    await conn.execute(
        "INSERT OR REPLACE INTO embeddings(rid, model_id, dims, content_hash, vector, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?)", (rid, model_id, dims, content_hash, _blob(vector), now))


async def turn_vectors(c: Any, session_id: str, model_id: str, dims: int) -> np.ndarray:
    """The stored vectors (of ``model_id``, ``dims`` wide) of the session's turn entries, as a float32 matrix of
    shape ``(n, dims)`` in no particular order; ``n`` is 0 when there are none."""
    rows = await c.fetchall(
        "SELECT m.vector FROM embeddings m JOIN entries e ON e.rid = m.rid WHERE e.session_id = ? "
        "AND e.category = 'turn' AND m.model_id = ? AND m.dims = ?", (session_id, model_id, dims))
    return np.frombuffer(b"".join(r[0] for r in rows), dtype=np.float32).reshape(len(rows), dims)


async def turn_embedding_states(c: Any, session_ids: Sequence[str]) -> list[tuple]:
    """``(session_id, entry_id, job status, job next_run_at)`` of the turn entries of these sessions that have a
    vector or a ``pending``/``running`` ``embed`` job (status and next_run_at None when there is no job)."""
    ids = list(session_ids)
    return await c.fetchall(
        f"SELECT e.session_id, e.id, j.status, j.next_run_at FROM entries e "
        f"LEFT JOIN jobs j ON j.kind = 'embed' AND j.target = e.id LEFT JOIN embeddings m ON m.rid = e.rid "
        f"WHERE e.category = 'turn' AND e.session_id IN ({','.join('?' * len(ids))}) "
        f"AND (m.rid IS NOT NULL OR j.status IN ('pending', 'running'))", ids)


async def ensure_vector_meta(conn: Any, dims: int, model_id: str) -> None:
    """Record the file's vector dimensions and model (``meta`` keys ``vector_dims``, ``vector_model``) unless
    dimensions are recorded already."""
    row = await conn.fetchone("SELECT value FROM meta WHERE key = 'vector_dims'")
    if row is None:
        await conn.execute("INSERT INTO meta(key, value) VALUES ('vector_dims', ?), ('vector_model', ?)",
                           (str(dims), model_id))


async def trim_vector_log(conn: Any, keep: int) -> None:
    """Keep only the last ``keep`` rows of ``vector_log`` (the change log other processes' in-memory vector
    matrices catch up from)."""
    await conn.execute("DELETE FROM vector_log WHERE seq <= (SELECT MAX(seq) FROM vector_log) - ?", (keep,))


async def cached_vectors(c: Any, model_id: str, text_hashes: Sequence[str]) -> dict[str, np.ndarray]:
    """``{text_hash: float32 vector}`` of the hashes the cache holds for ``model_id`` (looked up 500 at a time)."""
    hashes = list(text_hashes)
    found: dict[str, np.ndarray] = {}
    for start in range(0, len(hashes), _CACHE_CHUNK):
        chunk = hashes[start : start + _CACHE_CHUNK]
        rows = await c.fetchall(
            f"SELECT text_hash, vector FROM embedding_cache WHERE model_id = ? AND text_hash IN "
            f"({','.join('?' * len(chunk))})", [model_id, *chunk])
        found.update((h, np.frombuffer(v, dtype=np.float32)) for h, v in rows)
    return found


async def cache_vectors(conn: Any, model_id: str, dims: int, items: Sequence[tuple[str, Any]]) -> None:
    """Add ``(text_hash, vector)`` pairs (``dims`` float32 each) to the cache for ``model_id``; a hash already
    cached keeps its vector."""
    await conn.executemany(
        "INSERT OR IGNORE INTO embedding_cache(model_id, text_hash, dims, vector) VALUES (?, ?, ?, ?)",
        [(model_id, h, dims, _blob(v)) for h, v in items])
