"""Meta and maintenance operations (``store.ops.meta``) on both engines: every function, unknown keys,
quotes/``%``/unicode as keys and values, the vector index's presence and reset, the counts ``stats()`` reports, and
the keyword-index rebuild (on PostgreSQL: ``fts``/``doc_len`` recomputed and ``keyword_stats`` reset to the true
totals, also while another connection is writing entries)."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from agentbase.storage.sqlite.schema import SCHEMA_VERSION

from .seed import add_entry, add_session, assert_same_interface, second_connection, sql
from .test_entries import T1, check_keyword_stats, entry, insert


def _pg(store) -> bool:
    return getattr(store, "engine", "sqlite") == "postgres"


def test_same_interface_as_sqlite():
    assert_same_interface("meta")


async def test_get_and_set_values(store):
    ops = store.ops.meta
    assert await ops.get_value(store, "missing") is None
    async with store.transaction() as c:
        await c.ops.meta.set_value(c, "k'%s", "v1 100% 'ü' 東京")
        await c.ops.meta.set_value(c, "plain", "a")
        await c.ops.meta.set_value(c, "plain", "b")
        await c.ops.meta.set_value(c, "empty", "")
    assert await ops.get_value(store, "k'%s") == "v1 100% 'ü' 東京"
    assert await ops.get_value(store, "plain") == "b"
    assert await ops.get_value(store, "empty") == ""
    assert await ops.get_value(store, "K'%S") is None


async def test_vector_meta_is_recorded_once(store):
    ops = store.ops.meta
    assert await ops.vector_meta(store) == {}
    async with store.transaction() as c:
        await c.ops.meta.record_vector_model(c, 384, "model'%")
        await c.ops.meta.record_vector_model(c, 768, "other")
    assert await ops.vector_meta(store) == {"vector_dims": "384", "vector_model": "model'%"}
    async with store.transaction() as c:
        await c.execute(sql(store, "DELETE FROM meta WHERE key = ?"), ("vector_model",))
        await c.ops.meta.record_vector_model(c, 768, "second")  # the missing key only
    assert await ops.vector_meta(store) == {"vector_dims": "384", "vector_model": "second"}


async def _create_vector_index(store, dims: int) -> None:
    """The engine's vector index, as the first vector write makes it (sqlite-vec table / pgvector HNSW index)."""
    async with store.transaction() as c:
        if _pg(store):
            await c.execute(f"CREATE INDEX ix_embeddings_hnsw ON embeddings USING hnsw ((vector::vector({dims})) "
                            f"vector_cosine_ops)")
        else:
            await c.ops.vectors.create_index(c, dims)


async def _add_embedding(store, rid: int, vector: list[float]) -> None:
    async with store.transaction() as c:
        value = np.asarray(vector, dtype=np.float32)
        value = value if _pg(store) else value.tobytes()
        await c.execute(sql(store, "INSERT INTO embeddings(rid, model_id, dims, content_hash, vector, created_at) "
                                   "VALUES (?, 'm', ?, 'h', ?, ?)"),
                        (rid, len(vector), value, T1))


async def test_vector_index_exists_and_reset(store):
    if not _pg(store) and store.vector_engine != "sqlite-vec":
        pytest.skip("sqlite-vec is not loadable here: no vector table to create")
    ops = store.ops.meta
    assert await ops.vec_table_exists(store) is False
    [rid] = await insert(store, entry("a"))
    await _create_vector_index(store, 3)
    await _add_embedding(store, rid, [1.0, 0.0, 0.0])
    async with store.transaction() as c:
        await c.ops.meta.record_vector_model(c, 3, "old")
    assert await ops.vec_table_exists(store) is True
    assert (await ops.counts(store))["embeddings"] == 1
    async with store.transaction() as c:
        await c.ops.meta.reset_vectors(c, 5, "new'%")
        assert await c.ops.meta.vec_table_exists(c) is False
    assert await ops.vec_table_exists(store) is False
    assert await ops.vector_meta(store) == {"vector_dims": "5", "vector_model": "new'%"}
    assert (await ops.counts(store))["embeddings"] == 0
    assert await store.ops.entries.id_exists(store, "a")  # entries stay
    async with store.transaction() as c:
        await c.ops.meta.reset_vectors(c, 5, "again")  # no index to drop: fine
    assert await ops.vector_meta(store) == {"vector_dims": "5", "vector_model": "again"}


async def test_counts(store):
    empty = await store.ops.meta.counts(store)
    assert type(empty.pop("size_bytes")) is int  # the database's size on disk: the schema's pages at least
    assert empty == {"entries": {}, "schema_version": SCHEMA_VERSION, "vector_dims": None, "sessions": 0,
                     "messages": 0, "embeddings": 0, "traces": 0}
    await insert(store, entry("a"), entry("b"), entry("r", context_type="resource"))
    await add_session(store, "s1")
    await add_session(store, "s2")
    async with store.transaction() as c:
        await c.execute(sql(store, "INSERT INTO messages(id, session_id, seq, role, content, metadata, created_at) "
                                   "VALUES (?, 's1', 1, 'user', 'hi', '{}', ?)"), ("m1", T1))
        await c.execute(sql(store, "INSERT INTO retrieval_traces(id, query, created_at, total_ms) "
                                   "VALUES ('t1', 'q', ?, 1.5)"), (T1,))
        await c.ops.meta.record_vector_model(c, 384, "m")
    got = await store.ops.meta.counts(store)
    assert got.pop("size_bytes") > 0
    assert got == {"entries": {"memory": 2, "resource": 1}, "schema_version": SCHEMA_VERSION, "vector_dims": 384,
                   "sessions": 2, "messages": 1, "embeddings": 0, "traces": 1}
    assert all(type(v) is int for k, v in got.items() if k != "entries")
    assert all(type(v) is int for v in got["entries"].values())


async def _keyword_hits(store, word: str) -> list[str]:
    """Ids of the entries the keyword index finds ``word`` in (FTS5 MATCH / tsvector @@)."""
    if _pg(store):
        from agentbase.storage.postgres.tokens import query_lexemes, tsquery_literal

        rows = await store.fetchall("SELECT id FROM entries WHERE fts @@ %s::tsquery ORDER BY id",
                                    (tsquery_literal(query_lexemes([word])),))
    else:
        rows = await store.fetchall("SELECT e.id FROM entries_fts f JOIN entries e ON e.rid = f.rowid "
                                    "WHERE entries_fts MATCH ? ORDER BY e.id", (f'"{word}"',))
    return [r[0] for r in rows]


async def test_rebuild_keyword_index(store, engine):
    rids = await insert(store, entry("a", l2_full="apples and pears"), entry("b", l2_full="bananas"))
    # a row written without the engine's keyword bookkeeping (plain SQL: no tsvector, no doc_len, no stats)
    c_rid, _ = await add_entry(store, id="c", l2_full="cherries", fts_text="cherries ripe cherries")
    if engine == "postgres":
        async with store.transaction() as c:
            await c.execute("UPDATE keyword_stats SET docs = docs + 7, tokens = tokens - 3")
    assert await _keyword_hits(store, "kiwis") == []
    async with store.transaction() as c:
        await c.ops.meta.rebuild_keyword_index(c, [(rids[0], "kiwis 'n' 100% ü"), (10 ** 9, "no such row")])
    assert (await store.fetchone(sql(store, "SELECT fts_text FROM entries WHERE rid = ?"), (rids[0],)))[0] \
        == "kiwis 'n' 100% ü"
    assert await _keyword_hits(store, "kiwis") == ["a"]
    assert await _keyword_hits(store, "apples") == []
    assert await _keyword_hits(store, "bananas") == ["b"]
    assert await _keyword_hits(store, "cherries") == ["c"]
    assert (await store.ops.entries.row_by_rid(store, c_rid))[1] == "c"
    await check_keyword_stats(store, engine)
    async with store.transaction() as c:
        await c.ops.meta.rebuild_keyword_index(c, [])  # nothing given: rebuilt from the stored texts
    assert await _keyword_hits(store, "kiwis") == ["a"]
    await check_keyword_stats(store, engine)


async def test_rebuild_while_another_connection_writes(store, engine):
    """PostgreSQL: a rebuild waits for an entry write in flight on another connection and holds new ones back, so
    the totals it sets and the writers' changes add up to the truth."""
    if engine == "sqlite":
        pytest.skip("one SQLite writer at a time: the rebuild and the write run one after the other by design")
    await insert(store, entry("a", l2_full="one two three"))
    other = await second_connection(store)
    try:
        started = asyncio.Event()

        async def write_in_flight() -> None:
            async with other.transaction() as c:
                await c.ops.entries.insert_rows(c, [entry("w1", l2_full="four five six seven")], [], [], [])
                started.set()
                await asyncio.sleep(0.3)  # the rebuild is waiting on the table lock meanwhile
                await c.ops.entries.insert_rows(c, [entry("w2", l2_full="eight")], [], [], [])

        async def rebuild() -> None:
            await started.wait()
            async with store.transaction() as c:
                await c.ops.meta.rebuild_keyword_index(c, [])

        async def write_after() -> None:
            await started.wait()
            await asyncio.sleep(0.05)
            async with other.transaction() as c:
                await c.ops.entries.insert_rows(c, [entry("w3", l2_full="nine ten")], [], [], [])
                row = await c.ops.entries.row_by_id(c, "a")
                await c.ops.entries.delete_row(c, row[0], "a")

        await asyncio.gather(write_in_flight(), rebuild(), write_after())
    finally:
        await other.close()
    assert sorted(r[1] for r in await store.ops.entries.all_rows(store)) == ["w1", "w2", "w3"]
    await check_keyword_stats(store, engine)
