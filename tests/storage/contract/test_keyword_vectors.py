"""The keyword and vector legs on both engines, and PostgreSQL measured against SQLite on the same rows: BM25
scores and rankings (FTS5's ``bm25()`` on SQLite, computed in SQL from the tsvector on PostgreSQL), document counts,
filters applied before the cut, hostile query text, and exact / HNSW vector search."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from agentbase.index.fts import fts_document, query_tokens
from agentbase.storage import open_database
from tests.storage.contract.seed import T0, sql

WORDS = ("alpha beta gamma delta travel lisbon porto coffee arabica espresso dana acme globex running runs "
         "ran hiking mountains 部署 方案 café naïve résumé O'Brien's 100% quoted").split()


def _texts(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 30))) for _ in range(n)]


async def _add(store, text: str, *, user_id: str | None = None, vector: np.ndarray | None = None) -> int:
    """One entry holding ``text`` (keyword-indexed as each engine indexes it) and optionally its vector."""
    doc = fts_document(text)
    cols = {"id": f"e{abs(hash((text, user_id, random.random())))}", "l2_full": text, "fts_text": doc,
            "user_id": user_id, "created_at": T0, "updated_at": T0, "content_hash": str(random.random())}
    async with store.transaction() as c:
        if store.engine == "postgres":
            from agentbase.storage.postgres.bm25 import LEXEMES, adjust_stats, keyword_document, note_terms

            tsv, length = keyword_document(doc)
            cols.update(doc_len=length)
            names = ", ".join([*cols, "fts"])
            rid, lexemes = await c.fetchone(f"INSERT INTO entries({names}) VALUES ({', '.join(['%s'] * len(cols))}, "
                                            f"%s::tsvector) RETURNING rid, {LEXEMES}", [*cols.values(), tsv])
            await adjust_stats(c, 1, length)
            note_terms(c, added=[lexemes])
        else:
            names = ", ".join(cols)
            rid = (await c.fetchone(f"INSERT INTO entries({names}) VALUES ({', '.join('?' * len(cols))}) "
                                    "RETURNING rid", list(cols.values())))[0]
        if vector is not None:
            value = vector.astype(np.float32)
            await c.execute(sql(store, "INSERT INTO embeddings(rid, model_id, dims, content_hash, vector, created_at) "
                                       "VALUES (?, 'm', ?, 'h', ?, ?)"),
                            (rid, len(value), value if store.engine == "postgres" else value.tobytes(), T0))
            await c.ops.vectors.upsert(c, store.vector_engine, rid, value)
    return rid


def _where(store, **filters):
    from agentbase.retrieval.filters import Filters

    return Filters(**filters).where("e", store.ops)


@pytest.fixture
async def both(tmp_path, pg_url):
    """The same rows on a SQLite file and a PostgreSQL database: ``(sqlite, postgres)``."""
    from agentbase.storage.postgres.connection import open_postgres

    lite = await open_database(tmp_path / "ref.db")
    pg = await open_postgres(pg_url)
    yield lite, pg
    await lite.close()
    await pg.close()


QUERIES = ["lisbon coffee", "running hiking mountains", "部署方案", "café résumé", "o'brien 100% quoted",
           "alpha beta gamma delta travel lisbon porto coffee", "globex", "nothing matches zzz"]


async def test_bm25_rankings_and_scores_equal_sqlite(both):
    lite, pg = both
    for i, text in enumerate(_texts(120)):
        await _add(lite, text, user_id=f"u{i % 3}")
        await _add(pg, text, user_id=f"u{i % 3}")
    for query in QUERIES:
        terms = query_tokens(query)
        for filt in ({}, {"user_id": "u1"}):
            (a, _), (b, _) = [await s.ops.keyword.search(s, terms, *_where(s, **filt), 25) for s in (lite, pg)]
            assert [r for r, _ in a] == [r for r, _ in b], (query, filt)
            assert np.allclose([s for _, s in a], [s for _, s in b], rtol=1e-9, atol=2e-9), query
        counts = [await s.ops.keyword.document_counts(s, terms) for s in (lite, pg)]
        assert counts[0] == counts[1], query


async def test_split_queries_score_as_the_plain_or_on_both_engines(both):
    lite, pg = both
    for text in _texts(80, seed=3):
        await _add(lite, text)
        await _add(pg, text)
    kept, common = ["lisbon", "porto"], ["coffe", "alpha"]
    for s in (lite, pg):
        plain, _ = await s.ops.keyword.search(s, kept + common, *_where(s), 200)
        head, _ = await s.ops.keyword.search(s, kept, *_where(s), 200, common=common)
        rest = await s.ops.keyword.search_common_only(s, kept, common, *_where(s), 200)
        assert sorted(head + rest, key=lambda p: (p[1], p[0])) == plain
        grouped = await s.ops.keyword.search_common_only(s, kept, common, *_where(s), 200, groups=[["coffe", "alpha"]])
        assert {r for r, _ in grouped} < {r for r, _ in rest}
    results = [await s.ops.keyword.search_common_only(s, kept, common, *_where(s), 50, groups=[["coffe", "alpha"]])
               for s in (lite, pg)]
    assert results[0] == results[1]


async def test_the_filter_applies_before_the_cut(store):
    for i in range(60):
        await _add(store, "lisbon coffee lisbon" if i % 10 else "lisbon", user_id="many" if i % 10 else "few")
    ranked, _ = await store.ops.keyword.search(store, ["lisbon"], *_where(store, user_id="few"), 5)
    assert len(ranked) == 5  # six such entries exist; all five slots are filled from them


HOSTILE = ['AND OR NOT', '"unbalanced', "it's", "NEAR(a b)", "col:term", "a* ^b", "-draft +x", "100%", "%s %(x)s",
           "'; DROP TABLE entries; --", "\\", "(((", "ｐｒｏｊｅｃｔ", "😀", "\u0301", "a" * 300]


async def test_hostile_query_text_never_errors(store):
    await _add(store, "it's a draft near the project col term 100 percent")
    for text in HOSTILE:
        terms = query_tokens(text)
        await store.ops.keyword.search(store, terms, *_where(store), 10)
        await store.ops.keyword.document_counts(store, terms)
        if len(terms) > 1:
            await store.ops.keyword.search_common_only(store, terms[:1], terms[1:], *_where(store), 10,
                                                       groups=[terms[1:]])


async def test_exact_vector_search_equals_sqlite_with_filters(both):
    lite, pg = both
    rng = np.random.default_rng(5)
    vectors = rng.normal(size=(300, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    for s in (lite, pg):
        async with s.transaction() as c:
            await c.ops.vectors.create_index(c, 16)
        for i, v in enumerate(vectors):
            await _add(s, f"doc {i}", user_id=f"u{i % 4}", vector=v)
    for q in rng.normal(size=(5, 16)).astype(np.float32):
        q /= np.linalg.norm(q)
        for filt in ({}, {"user_id": "u2"}):
            a, b = [await s.ops.vectors.nearest(s, s.vector_engine, q, 10, *_where(s, **filt)) for s in (lite, pg)]
            assert [r for r, _ in a] == [r for r, _ in b]
            assert np.allclose([d for _, d in a], [d for _, d in b], atol=1e-5)


async def test_hnsw_search_fills_k_under_a_selective_filter(pg_url, monkeypatch):
    from agentbase.storage.postgres import vectors as pgvectors
    from agentbase.storage.postgres.connection import open_postgres

    pg = await open_postgres(pg_url)
    try:
        rng = np.random.default_rng(9)
        vectors = rng.normal(size=(400, 16)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        async with pg.transaction() as c:
            await c.ops.vectors.create_index(c, 16)
        for i, v in enumerate(vectors):
            await _add(pg, f"doc {i}", user_id="rare" if i % 40 == 0 else "common", vector=v)
        q = vectors[3]
        exact = await pg.ops.vectors.nearest(pg, "pgvector", q, 10, *_where(pg))
        monkeypatch.setattr(pgvectors, "EXACT_MAX_ROWS", 5)  # force the HNSW path
        approx = await pg.ops.vectors.nearest(pg, "pgvector", q, 10, *_where(pg))
        assert len({r for r, _ in approx} & {r for r, _ in exact}) >= 9
        rare = await pg.ops.vectors.nearest(pg, "pgvector", q, 8, *_where(pg, user_id="rare"))
        assert len(rare) == 8  # ten rare rows exist: the iterative scan goes on past the common ones
        assert [d for _, d in rare] == sorted(d for _, d in rare)
        async with pg.transaction() as c:  # the index matches the queries' expression (forced: 400 rows is small)
            await c.execute("SET LOCAL enable_seqscan = off")
            plan = await c.fetchall("EXPLAIN SELECT v.rid FROM embeddings v "
                                    "ORDER BY v.vector::vector(16) <=> %s::vector(16) LIMIT 5", (json.dumps([0.0] * 16),))
        assert any("ix_embeddings_hnsw" in r[0] for r in plan), plan
    finally:
        await pg.close()


def test_idf_never_fails_when_a_term_is_counted_in_more_entries_than_the_totals():
    from agentbase.storage.postgres.bm25 import idf

    assert idf(0, 3) == 1e-6 and idf(2, 5) == 1e-6 and idf(1000, 1) > 6
