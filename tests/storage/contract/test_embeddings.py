"""Embedding operations (``store.ops.embeddings``) on both engines: every function, float32 vectors in and out
(pgvector ``vector`` on PostgreSQL, bytes on SQLite), unknown ids, empty lists, 600+ cache hashes (past SQLite's
500 per statement), unicode/quotes/``%`` as data, and two connections writing one row at once."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from agentbase.errors import StorageError

from .seed import T0, add_entry, add_job, assert_same_interface, second_connection, sql

T1 = "2024-05-01T10:05:00.000000+00:00"
DIMS = 4


def vec(*xs: float) -> np.ndarray:
    return np.asarray(xs, dtype=np.float32)


async def meta(store) -> dict[str, str]:
    return dict(await store.fetchall(sql(store, "SELECT key, value FROM meta WHERE key IN (?, ?)"),
                                     ("vector_dims", "vector_model")))


async def stored(store, rid) -> tuple | None:
    return await store.fetchone(sql(store, "SELECT model_id, dims, content_hash, created_at FROM embeddings "
                                           "WHERE rid = ?"), (rid,))


async def test_entries_to_embed_reads_the_batch(store):
    ops = store.ops.embeddings
    r1, e1 = await add_entry(store, id="e'1", name="Ünïcode 100%", description="d", l2_full="héllo",
                             content_hash="h1", category="turn", session_id="s1", metadata={"source": "summary"})
    r2, e2 = await add_entry(store, id="e2", content_hash="h2", metadata={"source": "session"})
    r3, e3 = await add_entry(store, id="e3", content_hash="h3", metadata={"other": 1})
    rows = await ops.entries_to_embed(store, [e1, e2, e3, "missing"], "summary")
    by_id = {r[0]: r for r in rows}
    assert set(by_id) == {"e'1", "e2", "e3"}
    assert by_id["e'1"] == ("e'1", r1, "Ünïcode 100%", "d", "héllo", "h1", "turn", "s1", 1)
    assert by_id["e2"] == ("e2", r2, None, None, "text", "h2", "fact", None, 0)
    assert by_id["e3"][8] is None  # no source
    assert await ops.entries_to_embed(store, [], "summary") == []
    assert await ops.entries_to_embed(store, ["missing"], "summary") == []
    # the source value is bound, never written into the SQL
    assert (await ops.entries_to_embed(store, [e1], "x' OR '1'='1"))[0][8] == 0


async def test_put_embedding_replace_and_read_turn_vectors(store):
    ops = store.ops.embeddings
    r1, _ = await add_entry(store, category="turn", session_id="s1", content_hash="h1")
    r2, _ = await add_entry(store, category="turn", session_id="s1", content_hash="h2")
    r3, _ = await add_entry(store, category="fact", session_id="s1", content_hash="h3")  # not a turn
    r4, _ = await add_entry(store, category="turn", session_id="s2", content_hash="h4")  # another session
    async with store.transaction() as c:
        await c.ops.embeddings.put_embedding(c, r1, "m", DIMS, "h1", vec(1, 0, 0, 0), T0)
        await c.ops.embeddings.put_embedding(c, r2, "m", DIMS, "h2", [0.5, 0.25, -1.5, 3.0], T0)  # a list
        await c.ops.embeddings.put_embedding(c, r3, "m", DIMS, "h3", vec(9, 9, 9, 9), T0)
        await c.ops.embeddings.put_embedding(c, r4, "m", DIMS, "h4", vec(7, 7, 7, 7), T0)
    got = await ops.turn_vectors(store, "s1", "m", DIMS)
    assert got.dtype == np.float32 and got.shape == (2, DIMS)
    assert sorted(map(tuple, got.tolist())) == [(0.5, 0.25, -1.5, 3.0), (1.0, 0.0, 0.0, 0.0)]
    async with store.transaction() as c:  # replace: one row per rid, the new vector and hash
        await c.ops.embeddings.put_embedding(c, r1, "m2", 2, "h1b", vec(0.1, 0.2), T1)
    assert await stored(store, r1) == ("m2", 2, "h1b", T1)
    got = await ops.turn_vectors(store, "s1", "m", DIMS)
    assert got.tolist() == [[0.5, 0.25, -1.5, 3.0]]
    m2 = await ops.turn_vectors(store, "s1", "m2", 2)
    np.testing.assert_array_equal(m2, vec(0.1, 0.2).reshape(1, 2))  # float32 round trip, bit for bit
    empty = await ops.turn_vectors(store, "nobody", "m", DIMS)
    assert empty.shape == (0, DIMS) and empty.dtype == np.float32
    assert (await ops.turn_vectors(store, "s1", "m", 3)).shape == (0, 3)  # other dims: none


async def test_content_hash_at(store):
    ops = store.ops.embeddings
    rid, _ = await add_entry(store, content_hash="ḧash'%")
    assert await ops.content_hash_at(store, rid) == "ḧash'%"
    assert await ops.content_hash_at(store, rid + 1000) is None


async def test_turn_embedding_states(store):
    ops = store.ops.embeddings
    r1, e1 = await add_entry(store, id="t1", category="turn", session_id="s1")  # has a vector, no job
    _, e2 = await add_entry(store, id="t2", category="turn", session_id="s1")   # pending job
    _, e3 = await add_entry(store, id="t3", category="turn", session_id="s2")   # running job
    _, e4 = await add_entry(store, id="t4", category="turn", session_id="s1")   # done job, no vector: left out
    _, e5 = await add_entry(store, id="t5", category="fact", session_id="s1")   # not a turn
    await add_entry(store, id="t6", category="turn", session_id="s1")           # nothing at all
    async with store.transaction() as c:
        await c.ops.embeddings.put_embedding(c, r1, "m", DIMS, "h", vec(1, 2, 3, 4), T0)
    await add_job(store, "embed", e2, next_run_at=T1)
    await add_job(store, "embed", e3, status="running")
    await add_job(store, "embed", e4, status="done")
    await add_job(store, "embed", e5)
    await add_job(store, "other", "t6")  # another kind
    rows = sorted(await ops.turn_embedding_states(store, ["s1", "s2", "s-none"]))
    assert rows == [("s1", "t1", None, None), ("s1", "t2", "pending", T1), ("s2", "t3", "running", T0)]
    assert await ops.turn_embedding_states(store, []) == []
    assert sorted(await ops.turn_embedding_states(store, ["s2"])) == [("s2", "t3", "running", T0)]


async def test_ensure_vector_meta_records_once(store):
    assert await meta(store) == {}
    async with store.transaction() as c:
        await c.ops.embeddings.ensure_vector_meta(c, 384, "módel'%")
    assert await meta(store) == {"vector_dims": "384", "vector_model": "módel'%"}
    async with store.transaction() as c:  # already recorded: kept
        await c.ops.embeddings.ensure_vector_meta(c, 768, "other")
    assert await meta(store) == {"vector_dims": "384", "vector_model": "módel'%"}


async def test_trim_vector_log(store, engine):
    """SQLite keeps the last ``keep`` rows of its vector change log; PostgreSQL has none (a no-op there)."""
    rids = [(await add_entry(store, content_hash=f"h{i}"))[0] for i in range(5)]
    async with store.transaction() as c:
        for i, rid in enumerate(rids):
            await c.ops.embeddings.put_embedding(c, rid, "m", DIMS, f"h{i}", vec(i, 0, 0, 0), T0)
    if engine == "sqlite":
        before = (await store.fetchone("SELECT COUNT(*) FROM vector_log"))[0]
        assert before >= 5
    async with store.transaction() as c:
        await c.ops.embeddings.trim_vector_log(c, 2)
    if engine == "sqlite":
        assert (await store.fetchone("SELECT COUNT(*) FROM vector_log"))[0] == 2
    # the vectors themselves are untouched on both engines
    assert (await store.fetchone("SELECT COUNT(*) FROM embeddings"))[0] == 5


async def test_embedding_cache_many_hashes(store):
    ops = store.ops.embeddings
    items = [(f"hash-{i:04d}", vec(i, -i, i / 4, 0.5)) for i in range(650)]  # past SQLite's 500 per statement
    async with store.transaction() as c:
        await c.ops.embeddings.cache_vectors(c, "m", DIMS, items)
        await c.ops.embeddings.cache_vectors(c, "m", DIMS, [])
        await c.ops.embeddings.cache_vectors(c, "m", DIMS, [("hash-0001", vec(9, 9, 9, 9))])  # cached: kept
        await c.ops.embeddings.cache_vectors(c, "other'%", DIMS, [("hash-0001", vec(5, 5, 5, 5))])
        await c.ops.embeddings.cache_vectors(c, "m", DIMS, [("ünï'%", [0.25, 0.5, 0.75, 1.0])])
    asked = [h for h, _ in items] + ["missing", "ünï'%"]
    found = await ops.cached_vectors(store, "m", asked)
    assert len(found) == 651
    for h, v in items:
        assert found[h].dtype == np.float32
        np.testing.assert_array_equal(found[h], v)
    np.testing.assert_array_equal(found["ünï'%"], vec(0.25, 0.5, 0.75, 1.0))
    assert found["hash-0001"].tolist() == [1.0, -1.0, 0.25, 0.5]
    other = await ops.cached_vectors(store, "other'%", ["hash-0001", "hash-0002"])
    assert list(other) == ["hash-0001"] and other["hash-0001"].tolist() == [5.0] * 4
    assert await ops.cached_vectors(store, "m", []) == {}
    assert await ops.cached_vectors(store, "nope", ["hash-0001"]) == {}


async def test_a_nan_vector(store, engine):
    """pgvector refuses NaN and infinity in a ``vector``: such an embedding is a StorageError on PostgreSQL and
    writes nothing; SQLite stores the bytes as given. The cache (bytes on both engines) keeps it on both."""
    rid, _ = await add_entry(store, category="turn", session_id="s1")
    bad = vec(1, float("nan"), 0, 0)
    if engine == "postgres":
        with pytest.raises(StorageError):
            async with store.transaction() as c:
                await c.ops.embeddings.put_embedding(c, rid, "m", DIMS, "h", bad, T0)
        assert await stored(store, rid) is None
    else:
        async with store.transaction() as c:
            await c.ops.embeddings.put_embedding(c, rid, "m", DIMS, "h", bad, T0)
        assert np.isnan((await store.ops.embeddings.turn_vectors(store, "s1", "m", DIMS))[0, 1])
    async with store.transaction() as c:
        await c.ops.embeddings.cache_vectors(c, "m", DIMS, [("nan", bad)])
    assert np.isnan((await store.ops.embeddings.cached_vectors(store, "m", ["nan"]))["nan"][1])


async def test_two_connections_write_one_embedding_and_one_cache_hash(store):
    """Concurrent writers of one embedding row, one cache hash and the vector meta: no error, one row each."""
    rid, _ = await add_entry(store, content_hash="h")
    other = await second_connection(store)

    async def write(db, i):
        async with db.transaction() as c:
            await c.ops.embeddings.put_embedding(c, rid, "m", DIMS, f"h{i}", vec(i, i, i, i), T0)
            await c.ops.embeddings.cache_vectors(c, "m", DIMS, [("same", vec(i, i, i, i))])
            await c.ops.embeddings.ensure_vector_meta(c, DIMS + i, f"model-{i}")

    try:
        await asyncio.gather(*(write(store if i % 2 else other, i) for i in range(1, 7)))
    finally:
        await other.close()
    (n,) = await store.fetchone("SELECT COUNT(*) FROM embeddings")
    assert n == 1
    model, dims, content_hash, _ = await stored(store, rid)
    i = int(content_hash[1:])
    (vector,) = (await store.ops.embeddings.cached_vectors(store, "m", ["same"])).values()
    assert vector.tolist()[0] == vector.tolist()[3] and 1 <= vector[0] <= 6  # one writer's vector, whole
    got = await store.fetchone(sql(store, "SELECT COUNT(*) FROM embedding_cache WHERE text_hash = ?"), ("same",))
    assert got[0] == 1
    recorded = await meta(store)
    j = int(recorded["vector_dims"]) - DIMS
    assert recorded == {"vector_dims": str(DIMS + j), "vector_model": f"model-{j}"}  # one writer's pair
    assert 1 <= i <= 6 and model == "m" and dims == DIMS


def test_same_functions_and_signatures_as_the_sqlite_engine():
    assert_same_interface("embeddings")
