"""The PostgreSQL engine's per-lexeme document counts (``keyword_terms``, storage/postgres/bm25.py) on a real server:
after every kind of write they equal the counts of the stored ``tsvector`` values (what the GIN index holds), a
version-10 database is upgraded to them, and the BM25 scores read from them equal FTS5's on the same rows."""

from __future__ import annotations

import numpy as np

from agentbase import AgentBase
from agentbase.config import load_settings
from agentbase.embeddings import HashEmbedder
from agentbase.storage import SCHEMA_VERSION

_TRUTH = "SELECT u.lexeme, count(*) FROM entries e CROSS JOIN LATERAL unnest(e.fts) AS u GROUP BY 1"
_FTS_STORAGE = "SELECT attstorage FROM pg_attribute WHERE attrelid = 'entries'::regclass AND attname = 'fts'"
_KEPT = "SELECT lexeme, SUM(docs) FROM keyword_terms GROUP BY 1 HAVING SUM(docs) <> 0"


async def _counts_hold(ab: AgentBase) -> dict[str, int]:
    truth = {x: int(n) for x, n in await ab.db.fetchall(_TRUTH)}
    kept = {x: int(n) for x, n in await ab.db.fetchall(_KEPT)}
    assert kept == truth
    return truth


def _open(url: str) -> AgentBase:
    return AgentBase(url, settings=load_settings(ner="regex"), embedder=HashEmbedder(dims=32))


async def test_document_counts_follow_every_write(pg_url, tmp_path):
    ab = _open(pg_url)
    await ab.initialize()
    try:
        a = await ab.add_memory("The courier reached the depot with parcels", user_id="u1")
        b = await ab.add_memory("Parcels for Lisbon leave on Monday", user_id="u2")
        truth = await _counts_hold(ab)
        assert truth["parcel"] == 2 and truth["courier"] == 1
        await ab.update(a.id, "The van reached the warehouse")  # lexemes leave and enter
        truth = await _counts_hold(ab)
        assert "courier" not in truth and truth["parcel"] == 1 and truth["van"] == 1
        await ab.delete(b.id)
        assert "parcel" not in await _counts_hold(ab)
        session = await ab.create_session(user_id="u1")
        await ab.add_messages(session.id, [{"role": "user", "content": "I moved to Porto in March"},
                                           {"role": "assistant", "content": "Porto is lovely in spring"}])
        await ab.commit_session(session.id)  # turns, facts, summary, derived text rewritten by enrichment
        await ab.flush()
        assert (await _counts_hold(ab))["porto"] >= 2
        archive = tmp_path / "u1.jsonl"
        await ab.export_archive(archive)
        await ab.delete_all(user_id="u1")
        assert await _counts_hold(ab) == {}
        await ab.import_archive(archive)
        assert (await _counts_hold(ab))["porto"] >= 2
        await ab.reindex()
        await _counts_hold(ab)
    finally:
        await ab.close()


async def test_a_failed_write_leaves_the_counts_unchanged(pg_url):
    ab = _open(pg_url)
    await ab.initialize()
    try:
        await ab.add_memory("Alpha bravo charlie", user_id="u1")
        before = await _counts_hold(ab)
        try:
            async with ab.db.transaction() as conn:
                await conn.ops.entries.delete_row(conn, 1, "no-such-id")
                raise RuntimeError("the caller fails after the delete")
        except RuntimeError:
            pass
        assert await _counts_hold(ab) == before
    finally:
        await ab.close()


async def test_a_version_10_database_is_upgraded(pg_url):
    ab = _open(pg_url)
    await ab.initialize()
    await ab.add_memory("Harbour cranes unload containers at night", user_id="u1")
    await ab.add_memory("Containers wait at the harbour", user_id="u1")
    async with ab.db.transaction() as conn:  # what the version-10 schema lacked, and how it stored fts
        await conn.execute("DROP TABLE keyword_terms")
        for index in ("ix_entries_id_prefix", "ix_traces_id_prefix"):
            await conn.execute(f"DROP INDEX {index}")
        await conn.execute("ALTER TABLE entries ALTER COLUMN fts SET STORAGE EXTENDED")
        await conn.execute("DELETE FROM schema_version")
        await conn.execute("INSERT INTO schema_version(version) VALUES (10)")
    await ab.close()
    again = _open(pg_url)
    await again.initialize()
    try:
        assert (await again.stats())["schema_version"] == SCHEMA_VERSION
        assert (await _counts_hold(again))["contain"] == 2
        for index in ("ix_entries_id_prefix", "ix_traces_id_prefix"):
            assert await again.db.fetchone("SELECT to_regclass(%s) IS NOT NULL", (index,)) == (True,)
        # version 11 added the superseded-facts index, version 12 dropped it and keeps fts in the row
        assert await again.db.fetchone("SELECT to_regclass('ix_entries_superseded_facts')") == (None,)
        assert await again.db.fetchone(_FTS_STORAGE) == ("m",)
        found = await again.find("harbour containers", user_id="u1", mode="fts")
        assert len(found) == 2
    finally:
        await again.close()


async def test_a_long_entrys_tsvector_stays_in_its_row(pg_url):
    # A row over the 2 KB TOAST threshold moves its largest columns out of line; the keyword leg reads fts of every
    # candidate, so fts stays in the row (STORAGE MAIN, schema 12) and the display text moves out instead.
    # pg_column_toast_chunk_id (PostgreSQL 17+) is NULL for a value stored in the row.
    ab = _open(pg_url)
    await ab.initialize()
    try:
        text = " ".join(f"word{i} courier parcel depot" for i in range(160))  # about 3.5 KB, 160+ lexemes
        entry = await ab.add_memory(text, user_id="u1")
        row = await ab.db.fetchone("SELECT pg_column_toast_chunk_id(fts) IS NULL, "
                                   "pg_column_toast_chunk_id(l2_full) IS NULL, pg_column_size(fts) FROM entries "
                                   "WHERE id = %s", (entry.id,))
        assert row[2] > 1000  # a tsvector large enough that EXTENDED storage moved it out
        assert row[:2] == (True, False)
        assert await ab.db.fetchone(_FTS_STORAGE) == ("m",)
        assert [r.entry.id for r in await ab.find("courier word7", user_id="u1", mode="fts")] == [entry.id]
        # a row written under schema 11's storage moves fts into the row once reindex rewrites it
        async with ab.db.transaction() as conn:
            await conn.execute("ALTER TABLE entries ALTER COLUMN fts SET STORAGE EXTENDED")
        old = await ab.add_memory(text + " ferry", user_id="u1")
        async with ab.db.transaction() as conn:
            await conn.execute("ALTER TABLE entries ALTER COLUMN fts SET STORAGE MAIN")
        inline = "SELECT pg_column_toast_chunk_id(fts) IS NULL FROM entries WHERE id = %s"
        assert await ab.db.fetchone(inline, (old.id,)) == (False,)
        await ab.reindex()
        assert await ab.db.fetchone(inline, (old.id,)) == (True,)
    finally:
        await ab.close()


async def test_bm25_from_the_kept_counts_equals_fts5(pg_url, tmp_path):
    rng = np.random.default_rng(3)
    words = ["parcel", "depot", "courier", "harbour", "crane", "invoice", "tram", "ferry", "lisbon", "porto"]
    texts = [" ".join(rng.choice(words, size=int(rng.integers(3, 12)))) for _ in range(120)]
    lite = AgentBase(tmp_path / "lite.db", settings=load_settings(ner="regex"), embedder="none")
    pg = AgentBase(pg_url, settings=load_settings(ner="regex"), embedder="none")
    try:
        for ab in (lite, pg):
            for i, text in enumerate(texts):
                await ab.add_memory(text, user_id="u1", metadata={"i": i})
            for victim in (await ab.list(user_id="u1", limit=200))[::7]:
                await ab.delete(victim.id)
        await _counts_hold(pg)
        for query in ("parcel ferry", "courier depot lisbon", "tram"):
            got = [{r.entry.metadata["i"]: r.score_parts["bm25"] for r in
                    await ab.find(query, user_id="u1", mode="fts", top_k=50)} for ab in (lite, pg)]
            shared = set(got[0]) & set(got[1])
            assert len(shared) >= 30, query
            assert all(abs(got[0][i] - got[1][i]) < 1e-9 for i in shared), query
    finally:
        await lite.close()
        await pg.close()
