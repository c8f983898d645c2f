"""What PostgreSQL limits that SQLite does not, on a real server: over-long tokens and huge texts in the keyword
index, vectors above HNSW's 2,000 dimensions, an HNSW scan that returns too few rows, and servers too old for the
engine (refused at open with a clear message)."""

from __future__ import annotations

import numpy as np
import pytest

from agentbase import AgentBase
from agentbase.config import load_settings
from agentbase.embeddings import HashEmbedder
from agentbase.errors import StorageError
from agentbase.storage.postgres import connection as pgconnection
from agentbase.storage.postgres import vectors as pgvectors
from agentbase.testing import drop_database, fresh_database


def _open(url: str, embedder=None) -> AgentBase:
    return AgentBase(url, settings=load_settings(ner="regex"), embedder=embedder or "none")


async def test_over_long_tokens_are_stored_found_and_committed(pg_url):
    ab = _open(pg_url)
    await ab.initialize()
    try:
        token = "a" * 2100  # longer than a tsvector lexeme may be (2,046 bytes)
        entry = await ab.add_memory(f"see https://example.com/{token} for the log", user_id="u1")
        await ab.update(entry.id, f"the log lives at {token}q and {'q' * 3000}")
        found = await ab.find(f"{token}q", user_id="u1", mode="fts")
        assert [r.entry.id for r in found] == [entry.id]
        assert await ab.find("z" * 2100, user_id="u1", mode="fts") == []
        session = await ab.create_session(user_id="u1")
        await ab.add_message(session.id, "user", "log: " + "A" * 2100)
        await ab.commit_session(session.id)
        assert (await ab.get_session(session.id)).committed_seq == 1
    finally:
        await ab.close()


async def test_a_text_with_more_distinct_words_than_a_tsvector_holds_is_stored(pg_url):
    ab = _open(pg_url)
    await ab.initialize()
    try:
        words = [f"w{i:06d}x" for i in range(200_000)]  # ~1.8 MB of distinct tokens
        entry = await ab.add_memory(" ".join(words), user_id="u1")
        assert (await ab.get(entry.id)).content.endswith(words[-1])
        assert [r.entry.id for r in await ab.find(words[0], user_id="u1", mode="fts")] == [entry.id]
        doc_len = await ab.db.fetchone("SELECT doc_len FROM entries WHERE id = %s", (entry.id,))
        assert doc_len[0] == len(words)  # BM25's |D| counts every token, indexed or not
    finally:
        await ab.close()


async def test_vectors_above_the_hnsw_limit_are_searched_exactly(pg_url):
    ab = _open(pg_url, HashEmbedder(dims=2001))
    await ab.initialize()
    try:
        texts = ["ferry to the island", "tram to the harbour", "invoice for the crane"]
        ids = [(await ab.add_memory(t, user_id="u1")).id for t in texts]
        await ab.flush()
        assert (await ab.stats())["embeddings"] == 3
        found = await ab.find("ferry to the island", user_id="u1", mode="vector", top_k=3)
        assert found[0].entry.id == ids[0] and len(found) == 3
        assert await ab.db.fetchone("SELECT to_regclass('ix_embeddings_hnsw')") == (None,)
    finally:
        await ab.close()


async def test_an_hnsw_scan_short_of_k_is_filled_by_the_exact_scan(pg_url, monkeypatch):
    ab = _open(pg_url, HashEmbedder(dims=32))
    await ab.initialize()
    try:
        for i in range(40):
            await ab.add_memory(f"note {i} about parcel {i % 7} and depot {i % 5}", user_id="u1")
        await ab.flush()
        db = ab.db
        where, params = ("e.user_id = %s", ["u1"])
        query = np.asarray(HashEmbedder(dims=32).embed_query("parcel 3 depot 2"), dtype=np.float32)
        exact = await pgvectors.nearest(db, "pgvector", query, 12, where, params)  # 40 rows: exact scan
        real_hnsw = pgvectors._hnsw

        async def short(*args):
            return (await real_hnsw(*args))[:3]  # a graph that gives up early

        monkeypatch.setattr(pgvectors, "EXACT_MAX_ROWS", 5)
        monkeypatch.setattr(pgvectors, "_hnsw", short)
        filled = await pgvectors.nearest(db, "pgvector", query, 12, where, params)
        assert [r for r, _ in filled] == [r for r, _ in exact] and len(filled) == 12
    finally:
        await ab.close()


@pytest.mark.parametrize("setting, value, message", [
    ("MIN_SERVER_VERSION", 990000, "needs PostgreSQL 18 or newer"),
    ("MIN_PGVECTOR", (99, 0), "needs pgvector 0.8 or newer"),
])
async def test_a_server_too_old_is_refused_at_open_and_nothing_is_written(pg_admin_url, monkeypatch, setting, value,
                                                                         message):
    admin = pg_admin_url
    url, name = fresh_database(admin)
    try:
        monkeypatch.setattr(pgconnection, setting, value)
        with pytest.raises(StorageError, match=message):
            await pgconnection.open_postgres(url)
        import psycopg

        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT to_regclass('entries')").fetchone() == (None,)
    finally:
        drop_database(admin, name)
