"""The in-process vector matrix: same results as sqlite-vec, kept current across connections, exact under filters;
ties come back in one order from memory and disk; vectors replaced by another dimension are dropped."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agentbase import AgentBase, DimensionMismatchError, load_settings
from agentbase.embeddings import HashEmbedder
from agentbase.index.matrix import VectorMatrix
from agentbase.index.vector import knn
from tests._helpers import _db

TEXTS = [f"note {i} about {topic}" for i, topic in enumerate(
    ["pizza dough", "hiking boots", "tax return", "pizza oven", "garden beds", "piano lessons", "road bike",
     "pizza night", "chess club", "tax deadline", "sourdough", "marathon"] * 3)]


def _open(path: Path, cache_mb: int) -> AgentBase:
    settings = load_settings(ner="regex")
    settings.storage.vector_cache_mb = cache_mb
    return AgentBase(path, settings=settings, embedder=HashEmbedder(dims=64))


async def _ids(db: AgentBase, query: str, **kw) -> list[str]:
    return [r.entry.id for r in await db.find(query, mode="vector", top_k=10, **kw)]


async def _engine(db: AgentBase) -> str:
    trace = await db.get_trace((await db.find("pizza", mode="vector"))[0].trace_id)
    return next(s.details["engine"] for s in trace.steps if s.name == "candidates_vector")


def _same_ranking(a: list[tuple[int, float]], b: list[tuple[int, float]]) -> bool:
    """Equal distances (float32 tolerance) and the same rowids, except among rows tied with the last one kept."""
    if len(a) != len(b) or not np.allclose([d for _, d in a], [d for _, d in b], atol=1e-5):
        return False
    cut = round(a[-1][1], 4) if a else 0.0
    return {rid for rid, d in a if round(d, 4) < cut} == {rid for rid, d in b if round(d, 4) < cut}


async def test_matrix_matches_sqlite_vec(tmp_path: Path):
    db = _open(tmp_path / "m.db", 512)
    for i, text in enumerate(TEXTS):
        await db.add_memory(text, user_id="a" if i % 2 else "b")
    await db.flush()
    for query, where, params in [("pizza", "e.status = ?", ["active"]), ("tax", "e.status = ?", ["active"]),
                                 ("pizza", "e.user_id = ?", ["b"]), ("bike", "e.user_id = ?", ["a"])]:
        q = np.asarray(db.embedder.embed_query(query), dtype=np.float32)
        memory, engine = await knn(db.db, "sqlite-vec", q, 10, where, params, db.matrix)
        assert engine == "memory"
        disk, engine = await knn(db.db, "sqlite-vec", q, 10, where, params, None)
        assert engine == "sqlite-vec"
        scan, engine = await knn(db.db, "numpy", q, 10, where, params, None)
        assert _same_ranking(memory, disk) and _same_ranking(memory, scan), (query, where)
    assert await _engine(db) == "memory"
    assert (await db.stats())["vector_cache"]["rows"] == len(TEXTS)
    await db.close()

    disk_only = _open(tmp_path / "m.db", 0)
    assert await _engine(disk_only) == "sqlite-vec"
    await disk_only.close()


async def test_matrix_sees_writes_of_another_connection(tmp_path: Path):
    path = tmp_path / "m.db"
    reader, writer = _open(path, 512), _open(path, 512)
    first = await reader.add_memory("the pizza oven reaches 450 C", user_id="u")
    await reader.flush()
    assert await _ids(reader, "pizza oven", user_id="u") == [first.id]

    second = await writer.add_memory("a new pizza oven stone arrived", user_id="u")
    await writer.flush()
    assert set(await _ids(reader, "pizza oven", user_id="u")) == {first.id, second.id}

    await writer.update(second.id, content="the garden beds need compost")
    await writer.flush()
    await writer.delete(first.id)
    hits = await reader.find("garden compost", mode="vector", user_id="u")
    assert [r.entry.id for r in hits] == [second.id]
    assert reader.matrix is not None and reader.matrix.rows == 1
    await writer.close()
    await reader.close()


async def test_selective_filter_fills_top_k(tmp_path: Path):
    db = _open(tmp_path / "m.db", 512)
    for i in range(300):
        await db.add_memory(f"pizza memory number {i}", user_id="a")
    mine = [await db.add_memory(f"pizza for b, take {i}", user_id="b") for i in range(3)]
    await db.flush()
    hits = await _ids(db, "pizza", user_id="b")
    assert sorted(hits) == sorted(e.id for e in mine)
    await db.close()


async def test_cap_falls_back_and_pruned_log_reloads(tmp_path: Path, caplog):
    db = _open(tmp_path / "m.db", 512)
    for text in TEXTS[:6]:
        await db.add_memory(text)
    await db.flush()
    tiny = VectorMatrix(max_bytes=64 * 4 * 3)  # room for three 64-d vectors
    with caplog.at_level("WARNING", logger="agentbase.index.matrix"):
        assert await tiny.refresh(db.db) is False and tiny.rows == 0
        assert await tiny.refresh(db.db) is False  # still too big: said once, not per query
    said = [r.getMessage() for r in caplog.records if r.name == "agentbase.index.matrix"]
    assert len(said) == 1 and "storage.vector_cache_mb" in said[0] and "6 stored 64-d vectors" in said[0]

    big = VectorMatrix(max_bytes=1 << 20)
    assert await big.refresh(db.db) and big.rows == 6
    async with db.db.transaction() as conn:  # simulate pruning far past this reader's position
        await conn.execute("UPDATE embeddings SET created_at = created_at")
        await conn.execute("DELETE FROM vector_log")
        await conn.execute("DELETE FROM embeddings WHERE rid = (SELECT MIN(rid) FROM embeddings)")
    assert await big.refresh(db.db) and big.rows == 5
    q = np.asarray(db.embedder.embed_query(TEXTS[1]), dtype=np.float32)
    assert big.nearest(q, 1)[0][1] < 1e-5
    await db.close()


def test_similarities_match_the_matrix_product_in_both_paths():
    """Small matrices are scored in one call, tall ones in parallel slices: both equal ``mat @ q``."""
    from agentbase.index.matrix import _SPLIT_ROWS, similarities

    rng = np.random.default_rng(7)
    q = rng.standard_normal(16).astype(np.float32)
    for rows in (1, 37, _SPLIT_ROWS + 3):
        mat = rng.standard_normal((rows, 16)).astype(np.float32)
        got = similarities(mat, q)
        assert got.shape == (rows,) and got.dtype == np.float32
        assert np.allclose(got, mat @ q, rtol=1e-5, atol=1e-5)


def test_similarities_work_in_a_forked_child():
    """The slice pool is per process: a child forked after the parent used it starts its own (no hang)."""
    import multiprocessing
    import sys

    if sys.platform == "win32" or "fork" not in multiprocessing.get_all_start_methods():
        import pytest

        pytest.skip("no fork start method here")
    from agentbase.index.matrix import _SPLIT_ROWS, similarities

    mat = np.ones((_SPLIT_ROWS + 1, 4), dtype=np.float32)
    q = np.ones(4, dtype=np.float32)
    assert float(similarities(mat, q).sum()) == 4.0 * (_SPLIT_ROWS + 1)  # the parent's pool now has threads
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(1) as pool:
        total = pool.apply_async(_child_sum, (mat, q)).get(timeout=60)
    assert total == 4.0 * (_SPLIT_ROWS + 1)


def _child_sum(mat: np.ndarray, q: np.ndarray) -> float:
    from agentbase.index.matrix import similarities

    return float(similarities(mat, q).sum())


def test_nearest_cuts_ties_by_rid():
    """Rows tied with the m-th best are ordered by rid before the cut (argpartition alone picked any of them)."""
    vm = VectorMatrix(1 << 20)
    same = np.array([1.0, 0.0], dtype=np.float32).tobytes()
    other = np.array([0.0, 1.0], dtype=np.float32).tobytes()
    for rid in (9, 7, 5, 3, 1, 8, 6, 4, 2):  # slots out of rid order
        vm._put(rid, same if rid % 2 == 0 else other)
    q = np.array([1.0, 0.0], dtype=np.float32)
    assert [rid for rid, _ in vm.nearest(q, 3)] == [2, 4, 6]
    assert [rid for rid, _ in vm.nearest(q, 6)] == [2, 4, 6, 8, 1, 3]
    vm._drop(4)
    assert [rid for rid, _ in vm.nearest(q, 3)] == [2, 6, 8]
    assert [rid for rid, _ in vm.nearest(q, 20)] == [2, 6, 8, 1, 3, 5, 7, 9]


def test_similarities_accept_float64_in_both_paths():
    from agentbase.index.matrix import _SPLIT_ROWS, similarities

    mat = np.ones((_SPLIT_ROWS + 1, 3), dtype=np.float32)
    for q in (np.ones(3), np.ones(3, dtype=np.float32)):
        assert np.allclose(similarities(mat, q), 3.0) and np.allclose(similarities(mat[:5], q), 3.0)


async def test_ties_come_back_in_the_same_order_from_memory_and_disk(tmp_path: Path):
    db = _db(tmp_path / "t.db")
    for user in ("alice", "bob", "carol", "dave"):
        await db.add_memory("I like pizza", user_id=user, dedup=False)
    await db.flush()
    q = np.asarray(db.embedder.embed_query("pizza"), dtype=np.float32)
    memory, _ = await knn(db.db, "sqlite-vec", q, 2, "e.status = ?", ["active"], db.matrix)
    disk, _ = await knn(db.db, "sqlite-vec", q, 4, "e.status = ?", ["active"], None)
    assert [rid for rid, _ in memory] == sorted(rid for rid, _ in disk)[:2]
    assert [rid for rid, _ in disk] == sorted(rid for rid, _ in disk)
    await db.close()


async def test_matrix_drops_vectors_replaced_by_another_dimension(tmp_path: Path):
    path = tmp_path / "d.db"
    old = _db(path, dims=64)
    for i in range(5):
        await old.add_memory(f"apple note {i}")
    await old.flush()
    assert len(await old.find("apple", mode="vector")) == 5
    new = _db(path, dims=32)
    await new.reindex()
    await new.flush()
    with pytest.raises(DimensionMismatchError):
        await old.find("apple", mode="vector")
    assert len(await new.find("apple", mode="vector")) == 5
    await new.close()
    await old.close()
